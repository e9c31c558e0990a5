package convert

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// This file holds the text formats convert reads: how a file's first line
// is recognised (header or data), and one parser per format that turns one
// line into a parsedRow. The parsers allocate nothing on good input and never
// panic on any input (see FuzzParseCriteoLine, FuzzParseAvazuLine).

// columnKind says what one field of a text line holds.
type columnKind uint8

const (
	colSkip  columnKind = iota // ignored (Avazu's id)
	colLabel                   // 0/1 label
	colInt                     // Criteo integer feature -> log(1+max(x,0))
	colHex                     // Criteo categorical: 1-16 hex digits
	colHour                    // Avazu YYMMDDHH -> hour_of_day, weekday (and Time)
	colStr                     // Avazu or csv categorical: any string, hashed
	colFloat                   // csv dense feature, stored as is (empty -> 0)
	colTime                    // csv time -> hour of day, weekday (and Time)
	colMulti                   // csv multi-hot: strings joined by column.sep, each hashed
	colStd                     // csv dense feature to standardize: also kept as float64 in Raw
)

// column maps one field of a line to a column of the output.
type column struct {
	kind columnKind
	// idx is the index among the dense columns (colInt, colFloat; the first
	// of two for colHour and colTime), the one-hot sparse columns (colHex,
	// colStr) or the multi-hot columns (colMulti).
	idx  int
	name string      // column name, for error messages
	sep  byte        // colMulti: separator of the values within the field
	raw  int         // colStd: index in parsedRow.Raw
	time *timeFormat // colTime: how the field is written
}

// layout describes the fields of the lines of one input file.
type layout struct {
	sep    byte
	cols   []column
	header bool // the file's first line is a header and holds no data
	// quoted: a field may be enclosed in double quotes, and then hold the
	// separator and doubled quotes (csv). The field's value is the text
	// between the quotes, doubled quotes left as they are (values are only
	// hashed or read as numbers). A quoted field cannot span lines.
	quoted bool
}

// parsedRow is one parsed line. Cat holds the 64-bit value of each one-hot
// sparse column; Missing marks empty categorical fields (their Cat is 0).
// Multi holds the values of each multi-hot column (empty when the field is).
// Time is the row's time in Unix seconds, when its format has a time column.
type parsedRow struct {
	Label   float32
	Dense   []float32
	Cat     []uint64
	Missing []bool
	Multi   [][]uint64
	Time    int64
	Raw     []float64 // the values of the colStd columns, before rounding to float32
}

func newParsedRow(nDense, nSparse int) *parsedRow {
	return &parsedRow{Dense: make([]float32, nDense), Cat: make([]uint64, nSparse), Missing: make([]bool, nSparse)}
}

// fieldError is a parser's complaint about one field (or the whole line
// when Field is 0). The converter adds the file and line number.
type fieldError struct {
	Field int    // 1-based index of the field in the line
	Name  string // column name; empty for a field beyond the layout
	Msg   string
}

func (e *fieldError) Error() string {
	if e.Field == 0 {
		return e.Msg
	}
	return fmt.Sprintf("field %d (%s): %s", e.Field, e.Name, e.Msg)
}

// quote shows a field in an error message, shortened when long.
func quote(b []byte) string {
	const max = 40
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "..."
	}
	return strconv.Quote(string(b))
}

// ---- Criteo ----

// Criteo's columns: label, 13 integer features, 26 hex categoricals.
var (
	criteoDense  = numbered("I", 13)
	criteoSparse = numbered("C", 26)
)

func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i+1)
	}
	return out
}

// criteoDefaultLayout is the headerless layout: label, I1..I13, C1..C26.
func criteoDefaultLayout(sep byte) *layout {
	lay := &layout{sep: sep}
	lay.cols = append(lay.cols, column{kind: colLabel, name: "label"})
	for i, n := range criteoDense {
		lay.cols = append(lay.cols, column{kind: colInt, idx: i, name: n})
	}
	for i, n := range criteoSparse {
		lay.cols = append(lay.cols, column{kind: colHex, idx: i, name: n})
	}
	return lay
}

// detectCriteo reads a Criteo file's first line: tab-separated when it holds
// a tab, comma-separated otherwise; a header when one of its fields is named
// "label" (data lines start with a 0/1 label), in which case the header's
// column order is used for every line of the file.
func detectCriteo(first []byte) (*layout, error) {
	sep := byte(',')
	if bytes.IndexByte(first, '\t') >= 0 {
		sep = '\t'
	}
	for _, f := range bytes.Split(first, []byte{sep}) {
		if string(headerName(f)) == "label" {
			return parseCriteoHeader(first, sep)
		}
	}
	return criteoDefaultLayout(sep), nil
}

// headerName trims spaces and one pair of double quotes around a header field.
func headerName(f []byte) []byte {
	f = bytes.TrimSpace(f)
	if len(f) >= 2 && f[0] == '"' && f[len(f)-1] == '"' {
		f = f[1 : len(f)-1]
	}
	return f
}

// parseCriteoHeader maps a header line naming label, I1..I13 and C1..C26,
// each once, in any order.
func parseCriteoHeader(line []byte, sep byte) (*layout, error) {
	known := map[string]column{"label": {kind: colLabel, name: "label"}}
	for i, n := range criteoDense {
		known[n] = column{kind: colInt, idx: i, name: n}
	}
	for i, n := range criteoSparse {
		known[n] = column{kind: colHex, idx: i, name: n}
	}
	return parseHeader(line, sep, known, nil)
}

// parseHeader maps each header field to a known column; every known column
// but those in optional must appear exactly once.
func parseHeader(line []byte, sep byte, known map[string]column, optional map[string]bool) (*layout, error) {
	lay := &layout{sep: sep, header: true}
	seen := map[string]bool{}
	for i, f := range bytes.Split(line, []byte{sep}) {
		name := string(headerName(f))
		c, ok := known[name]
		if !ok {
			return nil, &fieldError{Field: i + 1, Name: name, Msg: fmt.Sprintf("unknown column %q in header", name)}
		}
		if seen[name] {
			return nil, &fieldError{Field: i + 1, Name: name, Msg: fmt.Sprintf("column %q appears twice in header", name)}
		}
		seen[name] = true
		lay.cols = append(lay.cols, c)
	}
	var missing []string
	for name := range known {
		if !seen[name] && !optional[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sortNames(missing)
		return nil, &fieldError{Msg: "header lacks column(s) " + strings.Join(missing, ", ")}
	}
	return lay, nil
}

// sortNames sorts column names with their numbers in numeric order (C2 before C10).
func sortNames(s []string) {
	key := func(n string) (string, int) {
		i := len(n)
		for i > 0 && n[i-1] >= '0' && n[i-1] <= '9' {
			i--
		}
		v, _ := strconv.Atoi(n[i:])
		return n[:i], v
	}
	for i := 1; i < len(s); i++ {
		for j := i; j > 0; j-- {
			pa, na := key(s[j-1])
			pb, nb := key(s[j])
			if pa < pb || (pa == pb && na <= nb) {
				break
			}
			s[j-1], s[j] = s[j], s[j-1]
		}
	}
}

// parseLine parses one Criteo or Avazu line (no line terminator) into
// row, each field as its column in lay says:
//   - label (Criteo's first field, Avazu's click): 0 or 1 (also 0.0 / 1.0);
//   - Criteo integer feature: empty means 0; a decimal number (integers may
//     be written as floats, "260.0") is clamped below at 0 and stored as
//     log(1+x);
//   - Criteo categorical: empty is missing; otherwise 1 to 16 hex digits,
//     read as a 64-bit value;
//   - Avazu hour: YYMMDDHH, a valid date and hour;
//   - Avazu categorical: empty is missing; any other string is hashed
//     (FNV-1a 64 of its bytes); fields holding a double quote are rejected,
//     since CSV quoting is not supported;
//   - skipped (Avazu's id): not looked at.
func parseLine(line []byte, lay *layout, row *parsedRow) error {
	if len(line) == 0 {
		return &fieldError{Msg: fmt.Sprintf("empty line, want %d fields", len(lay.cols))}
	}
	n := 0
	for pos := 0; pos <= len(line); n++ {
		if n >= len(lay.cols) {
			return tooMany(line, lay)
		}
		c := &lay.cols[n]
		end := pos
		var f []byte
		if lay.quoted && pos < len(line) && line[pos] == '"' {
			var ok bool
			if f, end, ok = quotedField(line, pos, lay.sep); !ok {
				return &fieldError{Field: n + 1, Name: c.name, Msg: fmt.Sprintf("%s: a quoted field must end with a quote before the next separator or the line end", quote(line[pos:]))}
			}
		} else {
			for end < len(line) && line[end] != lay.sep { // fields are short: a plain loop beats IndexByte
				end++
			}
			f = line[pos:end]
		}
		pos = end + 1
		switch c.kind {
		case colLabel:
			v, ok := parseLabel(f)
			if !ok {
				return &fieldError{Field: n + 1, Name: c.name, Msg: fmt.Sprintf("label %s is not 0 or 1", quote(f))}
			}
			row.Label = v
		case colInt:
			if len(f) == 0 {
				row.Dense[c.idx] = 0
				continue
			}
			x, ok := parseDecimal(f)
			if !ok {
				return &fieldError{Field: n + 1, Name: c.name, Msg: fmt.Sprintf("%s is not a finite number", quote(f))}
			}
			row.Dense[c.idx] = logTransform(x)
		case colHex:
			if len(f) == 0 {
				row.Cat[c.idx], row.Missing[c.idx] = 0, true
				continue
			}
			v, ok := parseHex(f)
			if !ok {
				return &fieldError{Field: n + 1, Name: c.name, Msg: fmt.Sprintf("%s is not 1 to 16 hex digits", quote(f))}
			}
			row.Cat[c.idx], row.Missing[c.idx] = v, false
		case colHour:
			hod, wd, ok := parseAvazuHour(f)
			if !ok {
				return &fieldError{Field: n + 1, Name: c.name, Msg: fmt.Sprintf("%s is not a YYMMDDHH hour", quote(f))}
			}
			row.Dense[c.idx] = float32(hod) / 23
			row.Dense[c.idx+1] = float32(wd) / 6
			row.Time = avazuUnix(f)
		case colStr:
			if len(f) == 0 {
				row.Cat[c.idx], row.Missing[c.idx] = 0, true
				continue
			}
			if !lay.quoted && bytes.IndexByte(f, '"') >= 0 {
				return &fieldError{Field: n + 1, Name: c.name, Msg: fmt.Sprintf("%s: quoted CSV fields are not supported", quote(f))}
			}
			row.Cat[c.idx], row.Missing[c.idx] = fnv1a(f), false
		case colFloat, colStd:
			x := 0.0
			if len(f) > 0 {
				var ok bool
				x, ok = parseDecimal(f)
				if !ok || math.Abs(x) > math.MaxFloat32 {
					return &fieldError{Field: n + 1, Name: c.name, Msg: fmt.Sprintf("%s is not a finite float32 number", quote(f))}
				}
			}
			row.Dense[c.idx] = float32(x)
			if c.kind == colStd {
				row.Raw[c.raw] = x
			}
		case colTime:
			t, ok := c.time.parse(f)
			if !ok {
				return &fieldError{Field: n + 1, Name: c.name, Msg: fmt.Sprintf("%s is not a time in format %s", quote(f), c.time)}
			}
			row.Dense[c.idx] = float32(t.Hour()) / 23
			row.Dense[c.idx+1] = float32((int(t.Weekday())+6)%7) / 6
			row.Time = t.Unix()
		case colMulti:
			vals := row.Multi[c.idx][:0]
			for rest := f; len(rest) > 0; {
				i := indexByte(rest, c.sep)
				v := rest[:i]
				rest = rest[min(i+1, len(rest)):]
				if len(v) == 0 {
					continue // empty items (a trailing separator) carry no value
				}
				vals = append(vals, fnv1a(v))
			}
			row.Multi[c.idx] = vals
		}
	}
	if n < len(lay.cols) {
		return tooFew(n, lay)
	}
	return nil
}

// quotedField reads the quoted field that starts at line[pos] == '"': its
// value (between the quotes), the offset just past its closing quote, and
// false when the quote is not closed or the closing quote is not followed by
// sep or the line end.
func quotedField(line []byte, pos int, sep byte) (val []byte, end int, ok bool) {
	end = pos + 1
	for {
		i := bytes.IndexByte(line[end:], '"')
		if i < 0 {
			return nil, 0, false
		}
		end += i + 1
		if end < len(line) && line[end] == '"' { // a doubled quote inside
			end++
			continue
		}
		if end < len(line) && line[end] != sep {
			return nil, 0, false
		}
		return line[pos+1 : end-1], end, true
	}
}

// indexByte is the offset of the next sep in b, or len(b) when there is none.
func indexByte(b []byte, sep byte) int {
	if i := bytes.IndexByte(b, sep); i >= 0 {
		return i
	}
	return len(b)
}

func tooFew(n int, lay *layout) error {
	return &fieldError{Field: n + 1, Name: lay.cols[n].name,
		Msg: fmt.Sprintf("missing: line has %d fields, want %d", n, len(lay.cols))}
}

func tooMany(line []byte, lay *layout) error {
	n := bytes.Count(line, []byte{lay.sep}) + 1
	return &fieldError{Field: len(lay.cols) + 1,
		Msg: fmt.Sprintf("line has %d fields, want %d", n, len(lay.cols))}
}

// logTransform is Criteo's dense transform: log(1 + max(x, 0)) as float32.
func logTransform(x float64) float32 {
	if !(x > 0) {
		return 0
	}
	if x < float64(len(logTable)) && x == math.Trunc(x) {
		return logTable[int(x)]
	}
	return float32(math.Log1p(x))
}

// logTable holds logTransform of the small integers, which make up
// most of Criteo's integer features (the same values math.Log1p gives).
var logTable = func() (t [4096]float32) {
	for i := range t {
		t[i] = float32(math.Log1p(float64(i)))
	}
	return t
}()

// parseLabel accepts 0 and 1, also written as decimals (0.0, 1.0).
func parseLabel(b []byte) (float32, bool) {
	if len(b) == 1 {
		switch b[0] {
		case '0':
			return 0, true
		case '1':
			return 1, true
		}
		return 0, false
	}
	v, ok := parseDecimal(b)
	if !ok || (v != 0 && v != 1) {
		return 0, false
	}
	return float32(v), true
}

var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseDecimal parses [+-]digits[.digits][(e|E)[+-]digits] (at least one
// mantissa digit) to a finite float64. Short values are converted exactly
// here; others go through strconv.ParseFloat once their syntax is checked
// (so no "inf", "nan", hex floats or underscores get in).
func parseDecimal(b []byte) (float64, bool) {
	i := 0
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	var mant uint64
	digits, frac := 0, 0
	exact := true
	for ; i < len(b) && isDigit(b[i]); i++ {
		digits++
		if mant < 1e17 {
			mant = mant*10 + uint64(b[i]-'0')
		} else {
			exact = false
		}
	}
	if i < len(b) && b[i] == '.' {
		i++
		for ; i < len(b) && isDigit(b[i]); i++ {
			digits++
			if mant < 1e17 {
				mant = mant*10 + uint64(b[i]-'0')
				frac++
			} else {
				exact = false
			}
		}
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		exact = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		expDigits := 0
		for ; i < len(b) && isDigit(b[i]); i++ {
			expDigits++
		}
		if expDigits == 0 {
			return 0, false
		}
	}
	if i != len(b) {
		return 0, false
	}
	if exact && mant < 1<<53 {
		// Both operands are exact float64s, so the one division rounds correctly.
		v := float64(mant) / pow10[frac]
		if neg {
			v = -v
		}
		return v, true
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, false
	}
	return v, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// hexVal maps a byte to its hex digit value, or 0xff.
var hexVal = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c-'a') + 10
		t[c-'a'+'A'] = byte(c-'a') + 10
	}
	return t
}()

// parseHex reads 1 to 16 hex digits (either case).
func parseHex(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		d := hexVal[c]
		if d == 0xff {
			return 0, false
		}
		v = v<<4 | uint64(d)
	}
	return v, true
}

// ---- Avazu ----

// Avazu's 21 categorical columns, in the order of the competition's files.
var avazuSparse = []string{
	"C1", "banner_pos", "site_id", "site_domain", "site_category", "app_id", "app_domain",
	"app_category", "device_id", "device_ip", "device_model", "device_type", "device_conn_type",
	"C14", "C15", "C16", "C17", "C18", "C19", "C20", "C21",
}

// Avazu's dense columns, both derived from "hour" (YYMMDDHH, UTC dates of
// 20YY): hour_of_day = HH/23 and weekday = (days since Monday)/6, so both lie
// in [0, 1]. They are dense rather than extra tables because DLRM's bottom
// MLP needs at least one dense input and Avazu has no other; the 21
// categoricals (which already include numeric-looking ones such as C1 and
// banner_pos) stay sparse.
var avazuDense = []string{"hour_of_day", "weekday"}

func avazuKnown() map[string]column {
	known := map[string]column{
		"id":    {kind: colSkip, name: "id"},
		"click": {kind: colLabel, name: "click"},
		"hour":  {kind: colHour, name: "hour"},
	}
	for i, n := range avazuSparse {
		known[n] = column{kind: colStr, idx: i, name: n}
	}
	return known
}

// avazuDefaultLayout is the headerless layout of the competition's train file.
func avazuDefaultLayout() *layout {
	known := avazuKnown()
	lay := &layout{sep: ','}
	for _, n := range append([]string{"id", "click", "hour"}, avazuSparse...) {
		lay.cols = append(lay.cols, known[n])
	}
	return lay
}

// detectAvazu reads an Avazu file's first line: a header when one of its
// fields is named id, click or hour (data lines hold numbers there), in which
// case its column order is used; otherwise the competition's order
// (id, click, hour, C1, ..., C21).
func detectAvazu(first []byte) (*layout, error) {
	for _, f := range bytes.Split(first, []byte{','}) {
		switch string(headerName(f)) {
		case "id", "click", "hour":
			return parseAvazuHeader(first)
		}
	}
	return avazuDefaultLayout(), nil
}

// parseAvazuHeader maps a header naming click, hour and the 21 categoricals
// (and optionally id, which is dropped) in any order.
func parseAvazuHeader(line []byte) (*layout, error) {
	return parseHeader(line, ',', avazuKnown(), map[string]bool{"id": true})
}

// parseAvazuHour splits YYMMDDHH (year 20YY) into the hour of the day and
// the weekday (0 = Monday).
func parseAvazuHour(b []byte) (hour, weekday int, ok bool) {
	if len(b) != 8 {
		return 0, 0, false
	}
	var d [8]int
	for i, c := range b {
		if !isDigit(c) {
			return 0, 0, false
		}
		d[i] = int(c - '0')
	}
	year := 2000 + d[0]*10 + d[1]
	month := d[2]*10 + d[3]
	day := d[4]*10 + d[5]
	hour = d[6]*10 + d[7]
	if month < 1 || month > 12 || day < 1 || hour > 23 {
		return 0, 0, false
	}
	t := time.Date(year, time.Month(month), day, 0, 0, 0, 0, time.UTC)
	if t.Day() != day { // day beyond the month's end
		return 0, 0, false
	}
	return hour, (int(t.Weekday()) + 6) % 7, true
}

// avazuUnix is the Unix time of a YYMMDDHH hour that parseAvazuHour accepted.
func avazuUnix(b []byte) int64 {
	d := func(i int) int { return int(b[i]-'0')*10 + int(b[i+1]-'0') }
	return time.Date(2000+d(0), time.Month(d(2)), d(4), d(6), 0, 0, 0, time.UTC).Unix()
}

// fnv1a is the 64-bit FNV-1a hash of b.
func fnv1a(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}
