package convert

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Columns gives the roles of the columns of a delimited log with a header
// line, for Format "csv". Its fields may be quoted ("a,b"), within one line. Every column of the header must have a role (or be
// in Ignore) unless IgnoreUnlisted is set; every column named here must be
// in every input's header.
//
// The same fields are read from a YAML file by ReadColumns (keys in
// snake_case, see configs/talkingdata-columns.yaml).
type Columns struct {
	// Delimiter is the field separator, one byte ("\t" or "tab" for a tab);
	// empty detects it from the header line: the most frequent of ',', tab,
	// ';' and '|'.
	Delimiter string `yaml:"delimiter" json:"delimiter,omitempty"`
	// Label is the 0/1 label column (0.0 and 1.0 are accepted too).
	Label string `yaml:"label" json:"label,omitempty"`
	// Dense are numeric feature columns, each "COL" or "COL:TRANSFORM" with
	// TRANSFORM "none" (the default: the value as float32), "log1p"
	// (log(1+max(x,0)), Criteo's) or "standardize" ((x-mean)/std with the
	// mean and standard deviation of the training rows, from one more pass
	// over the input unless reindex makes one anyway). An empty field is 0
	// (before the transform).
	Dense []string `yaml:"dense" json:"dense,omitempty"`
	// Sparse are categorical columns: any string, hashed to a 64-bit value
	// and then to a table row by the IDs mode; an empty field is missing.
	Sparse []string `yaml:"sparse" json:"sparse,omitempty"`
	// MultiHot are "COL:SEP" columns holding several categorical values
	// joined by the one-byte SEP (sum-pooled by the model).
	MultiHot []string `yaml:"multi_hot" json:"multi_hot,omitempty"`
	// Time is an optional time column. It becomes two dense features,
	// COL_hour (hour of day / 23) and COL_weekday (days since Monday / 6),
	// and it is the column Options.SplitBy may name.
	Time string `yaml:"time" json:"time,omitempty"`
	// TimeFormat says how Time is written: "unix" (seconds), "unix_ms",
	// "yymmddhh" (Avazu's hour) or a Go time layout such as
	// "2006-01-02 15:04:05" (the default; times without a zone are UTC).
	TimeFormat string `yaml:"time_format" json:"time_format,omitempty"`
	// Ignore are columns to drop (for instance one that leaks the label).
	Ignore []string `yaml:"ignore" json:"ignore,omitempty"`
	// IgnoreUnlisted drops every header column without a role, instead of
	// failing on it.
	IgnoreUnlisted bool `yaml:"ignore_unlisted" json:"ignore_unlisted,omitempty"`
}

// DefaultTimeFormat is the time layout used when Columns.TimeFormat is empty.
const DefaultTimeFormat = "2006-01-02 15:04:05"

// ReadColumns reads Columns from a YAML file; an unknown key (an unknown
// role) is an error naming its line.
func ReadColumns(path string) (*Columns, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("convert: columns: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var c Columns
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("convert: columns file %s: %v: %w", path, strings.TrimPrefix(err.Error(), "yaml: "), ErrColumns)
	}
	return &c, nil
}

// Validate reports every problem of the roles at once: a missing label, an
// unknown transform or time format, a bad separator, and a column given two
// roles.
func (c *Columns) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("convert: columns: "+format+": %w", append(a, ErrColumns)...))
	}
	if c.Label == "" {
		bad("no label column")
	}
	if _, err := c.delimiter(); err != nil {
		bad("%v", err)
	}
	roles := map[string]string{}
	claim := func(name, role string) {
		if name == "" {
			bad("empty column name in %s", role)
			return
		}
		if prev, ok := roles[name]; ok {
			if prev == role {
				bad("column %q is named twice as %s", name, role)
			} else {
				bad("column %q has two roles, %s and %s", name, prev, role)
			}
			return
		}
		roles[name] = role
	}
	if c.Label != "" {
		claim(c.Label, "label")
	}
	for _, d := range c.Dense {
		name, tr, _ := strings.Cut(d, ":")
		switch tr {
		case "", "none", "log1p", "standardize":
		default:
			bad("dense %q: unknown transform %q (want none, log1p or standardize)", d, tr)
		}
		claim(name, "dense")
	}
	for _, s := range c.Sparse {
		claim(s, "sparse")
	}
	for _, m := range c.MultiHot {
		name, sep, ok := strings.Cut(m, ":")
		if !ok || len(sep) != 1 {
			bad("multi-hot %q: want COL:SEP with a one-byte separator", m)
		}
		claim(name, "multi-hot")
	}
	if c.Time != "" {
		claim(c.Time, "time")
		if _, err := newTimeFormat(c.TimeFormat); err != nil {
			bad("time %q: %v", c.Time, err)
		}
	} else if c.TimeFormat != "" {
		bad("time format %q given without a time column", c.TimeFormat)
	}
	for _, n := range c.Ignore {
		claim(n, "ignored")
	}
	if len(c.Dense)+len(c.Sparse)+len(c.MultiHot) == 0 && c.Time == "" {
		bad("no feature columns (dense, sparse, multi-hot or time)")
	}
	return errors.Join(errs...)
}

// delimiter is the configured delimiter byte, or 0 to detect it.
func (c *Columns) delimiter() (byte, error) {
	switch c.Delimiter {
	case "":
		return 0, nil
	case "tab", `\t`:
		return '\t', nil
	}
	if len(c.Delimiter) != 1 || c.Delimiter == "\n" || c.Delimiter == "\r" || c.Delimiter == `"` {
		return 0, fmt.Errorf("delimiter %q: want one byte other than a line end or a quote", c.Delimiter)
	}
	return c.Delimiter[0], nil
}

// csvFormat builds the format of a validated Columns. Output columns: dense
// in Dense order then the time's two features; sparse tables in Sparse then
// MultiHot order.
func csvFormat(c *Columns) *format {
	f := &format{name: "csv", parse: parseLine}
	known := map[string]column{c.Label: {kind: colLabel, name: c.Label}}
	for _, d := range c.Dense {
		name, tr, _ := strings.Cut(d, ":")
		kind := colFloat
		switch tr {
		case "log1p":
			kind = colInt
		case "standardize":
			kind = colStd
			f.standardize = append(f.standardize, len(f.dense))
		}
		known[name] = column{kind: kind, idx: len(f.dense), name: name, raw: len(f.standardize) - 1}
		f.dense = append(f.dense, name)
	}
	if c.Time != "" {
		tf, _ := newTimeFormat(c.TimeFormat)
		known[c.Time] = column{kind: colTime, idx: len(f.dense), name: c.Time, time: tf}
		f.dense = append(f.dense, c.Time+"_hour", c.Time+"_weekday")
		f.timeCol = c.Time
	}
	for i, s := range c.Sparse {
		known[s] = column{kind: colStr, idx: i, name: s}
		f.sparse = append(f.sparse, s)
	}
	for i, m := range c.MultiHot {
		name, sep, _ := strings.Cut(m, ":")
		known[name] = column{kind: colMulti, idx: i, name: name, sep: sep[0]}
		f.multi = append(f.multi, name)
	}
	for _, n := range c.Ignore {
		known[n] = column{kind: colSkip, name: n}
	}
	sep, _ := c.delimiter()
	unlisted := c.IgnoreUnlisted
	f.detect = func(first []byte) (*layout, error) {
		return csvHeader(first, sep, known, unlisted)
	}
	return f
}

// csvHeader maps a header line onto the known columns. Every known column
// must appear once; a header column that is not known is an error unless
// unlisted columns are ignored. Missing columns are reported first, with
// the header's columns that no flag names: a misspelled --label click
// beside a header's "clicked" said only that "clicked" had no role.
func csvHeader(line []byte, sep byte, known map[string]column, ignoreUnlisted bool) (*layout, error) {
	if sep == 0 {
		sep = detectDelimiter(line)
	}
	fields := bytes.Split(line, []byte{sep})
	names := make([]string, len(fields))
	seen := map[string]bool{}
	for i, f := range fields {
		name := string(headerName(f))
		if seen[name] {
			return nil, &fieldError{Field: i + 1, Name: name, Msg: fmt.Sprintf("column %q appears twice in header", name)}
		}
		seen[name] = true
		names[i] = name
	}
	var missing []string
	for name := range known {
		if !seen[name] {
			missing = append(missing, strconv.Quote(name))
		}
	}
	if len(missing) > 0 {
		sortNames(missing)
		msg := fmt.Sprintf("header (delimiter %q) lacks column(s) %s", sep, strings.Join(missing, ", "))
		var unnamed []string
		for _, name := range names {
			if _, ok := known[name]; !ok {
				unnamed = append(unnamed, strconv.Quote(name))
			}
		}
		if n := len(unnamed); n > 0 {
			if n > 5 {
				unnamed = append(unnamed[:5], fmt.Sprintf("and %d more", n-5))
			}
			msg += fmt.Sprintf("; it has %s, which no flag names (misspelled?)", strings.Join(unnamed, ", "))
		}
		return nil, &fieldError{Msg: msg}
	}
	lay := &layout{sep: sep, header: true, quoted: true}
	for i, name := range names {
		c, ok := known[name]
		if !ok {
			if !ignoreUnlisted {
				return nil, &fieldError{Field: i + 1, Name: name, Msg: fmt.Sprintf(
					"column %q has no role; give it one, list it in ignore (--ignore), or set ignore_unlisted (--ignore-unlisted)", name)}
			}
			c = column{kind: colSkip, name: name}
		}
		lay.cols = append(lay.cols, c)
	}
	return lay, nil
}

// detectDelimiter picks the most frequent of ',', tab, ';' and '|' in a
// header line (',' when none occurs).
func detectDelimiter(line []byte) byte {
	best, n := byte(','), 0
	for _, c := range []byte{',', '\t', ';', '|'} {
		if k := bytes.Count(line, []byte{c}); k > n {
			best, n = c, k
		}
	}
	return best
}

// timeFormat parses one time field.
type timeFormat struct {
	name   string // as given
	layout string // Go layout, or "" for the named formats
}

func newTimeFormat(s string) (*timeFormat, error) {
	switch s {
	case "":
		return &timeFormat{name: DefaultTimeFormat, layout: DefaultTimeFormat}, nil
	case "unix", "unix_ms", "yymmddhh":
		return &timeFormat{name: s}, nil
	}
	// A layout must hold at least a year, month or day and an hour to be
	// a time at all; check it formats and parses its own reference time.
	ref := time.Date(2006, 1, 2, 15, 4, 5, 0, time.UTC)
	if _, err := time.Parse(s, ref.Format(s)); err != nil || !strings.ContainsAny(s, "0123456789") {
		return nil, fmt.Errorf("time format %q is not unix, unix_ms, yymmddhh or a Go time layout", s)
	}
	return &timeFormat{name: s, layout: s}, nil
}

func (t *timeFormat) String() string { return strconv.Quote(t.name) }

func (t *timeFormat) parse(b []byte) (time.Time, bool) {
	switch {
	case t.layout != "":
		v, err := time.Parse(t.layout, string(b)) // the hour of day is the one written
		return v, err == nil
	case t.name == "yymmddhh":
		if _, _, ok := parseAvazuHour(b); !ok {
			return time.Time{}, false
		}
		return time.Unix(avazuUnix(b), 0).UTC(), true
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	if t.name == "unix_ms" {
		return time.UnixMilli(v).UTC(), true
	}
	return time.Unix(v, 0).UTC(), true
}
