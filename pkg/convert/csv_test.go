package convert

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// partRows is one output part read back; sparse[r][t] holds row r's IDs of
// table t (one for one-hot tables, any number for multi-hot ones).
type partRows struct {
	label  []float32
	dense  [][]float32
	sparse [][][]int64
}

func readPart(t testing.TB, res *Result, outDir, sub string) partRows {
	t.Helper()
	spec := res.Spec
	ds, err := dataset.Open(&spec, filepath.Join(outDir, sub))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ds.NewReader(dataset.ReaderOptions{BatchRows: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out partRows
	nd := len(spec.Dense)
	for {
		b, err := r.Next(context.Background())
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.N {
			out.label = append(out.label, b.Label[i])
			out.dense = append(out.dense, append([]float32(nil), b.Dense[i*nd:(i+1)*nd]...))
			ids := make([][]int64, len(b.Sparse))
			for s := range b.Sparse {
				ids[s] = append([]int64{}, b.Sparse[s].Row(i)...)
			}
			out.sparse = append(out.sparse, ids)
		}
	}
}

func clicksColumns(t testing.TB) *Columns {
	t.Helper()
	c, err := ReadColumns("testdata/clicks-columns.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCSVRoles converts testdata/clicks.csv, whose columns take every role,
// and checks each value of the output.
func TestCSVRoles(t *testing.T) {
	cols := clicksColumns(t)
	want := &Columns{Label: "clicked", Dense: []string{"price", "views:log1p"}, Sparse: []string{"user", "item"},
		MultiHot: []string{"tags:|"}, Time: "ts", Ignore: []string{"leak"}}
	if !reflect.DeepEqual(cols, want) {
		t.Fatalf("ReadColumns = %+v; want %+v", cols, want)
	}
	out := t.TempDir()
	res, err := Run(context.Background(), Options{Format: "csv", Columns: cols, Inputs: []string{"testdata/clicks.csv"},
		OutDir: out, IDs: Reindex})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Spec.Dense, []string{"price", "views", "ts_hour", "ts_weekday"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Spec.Dense = %v; want %v", got, want)
	}
	var names []string
	for _, f := range res.Spec.Sparse {
		names = append(names, fmt.Sprintf("%s/%v/%d", f.Name, f.MultiHot, f.Rows))
	}
	// Reindex: 0 missing, 1 rare/unseen, then values in order of appearance.
	if want := []string{"user/false/6", "item/false/5", "tags/true/5"}; !reflect.DeepEqual(names, want) {
		t.Errorf("Spec.Sparse = %v; want %v", names, want)
	}
	got := readPart(t, res, out, "train")
	l1 := func(x float64) float32 { return float32(math.Log1p(x)) }
	wantDense := [][]float32{
		{1.5, 0, 9.0 / 23, 0},           // Monday 09:15
		{2.25, l1(3), 10.0 / 23, 0},     // Monday 10:00
		{0, l1(10), 1, 1.0 / 6},         // Tuesday 23:59
		{-1.5, 0, 0, 5.0 / 6},           // Saturday 00:00; empty views -> 0
		{1000, l1(7), 12.0 / 23, 1},     // Sunday 12:30
		{0.5, l1(1), 8.0 / 23, 2.0 / 6}, // Wednesday 08:00
	}
	wantSparse := [][][]int64{
		{{2}, {2}, {2, 3}},
		{{3}, {3}, {3}},
		{{2}, {0}, {2, 4}}, // empty item is missing; "a|c|" has two values
		{{4}, {2}, {}},
		{{3}, {4}, {4}},
		{{5}, {3}, {2}},
	}
	if want := []float32{1, 0, 0, 1, 0, 0}; !reflect.DeepEqual(got.label, want) {
		t.Errorf("labels = %v; want %v", got.label, want)
	}
	if !reflect.DeepEqual(got.dense, wantDense) {
		t.Errorf("dense = %v; want %v", got.dense, wantDense)
	}
	if !reflect.DeepEqual(got.sparse, wantSparse) {
		t.Errorf("sparse = %v; want %v", got.sparse, wantSparse)
	}
	if want := []int64{4, 3, 3}; !reflect.DeepEqual(res.Counts, want) {
		t.Errorf("Counts = %v; want %v", res.Counts, want)
	}

	// Hash mode: the same strings get the same rows, row 1+hash(value).
	out = t.TempDir()
	res, err = Run(context.Background(), Options{Format: "csv", Columns: cols, Inputs: []string{"testdata/clicks.csv"},
		OutDir: out, Rows: []int64{1000}})
	if err != nil {
		t.Fatal(err)
	}
	got = readPart(t, res, out, "train")
	h := func(s string) int64 { id, _ := hashRow(fnv1a([]byte(s)), 1000); return id }
	if g, w := got.sparse[2], [][]int64{{h("u1")}, {0}, {h("a"), h("c")}}; !reflect.DeepEqual(g, w) {
		t.Errorf("hash mode row 3 = %v; want %v", g, w)
	}
}

// TestCSVErrors checks that each kind of bad input names what is wrong and where.
func TestCSVErrors(t *testing.T) {
	fixture := string(mustRead(t, "testdata/clicks.csv"))
	edit := func(line, field int, v string) string {
		lines := strings.Split(fixture, "\n")
		f := strings.Split(lines[line-1], ",")
		f[field-1] = v
		lines[line-1] = strings.Join(f, ",")
		return strings.Join(lines, "\n")
	}
	cases := []struct {
		name   string
		text   string
		cols   func(c *Columns)
		line   int64
		field  int
		column string
		want   string
	}{
		{name: "missing column", text: fixture, cols: func(c *Columns) { c.Sparse = append(c.Sparse, "country") },
			line: 1, want: `lacks column(s) "country"`},
		{name: "misspelled label", text: fixture, cols: func(c *Columns) { c.Label = "click" },
			line: 1, want: `lacks column(s) "click"; it has "clicked", which no flag names`},
		{name: "column without role", text: fixture, cols: func(c *Columns) { c.Ignore = nil },
			line: 1, field: 7, column: "leak", want: "has no role"},
		{name: "duplicate header column", text: edit(1, 2, "ts"), line: 1, field: 2, column: "ts", want: "appears twice"},
		{name: "bad dense", text: edit(3, 5, "1.2.3"), line: 3, field: 5, column: "price", want: "not a finite float32"},
		{name: "bad log1p dense", text: edit(4, 6, "many"), line: 4, field: 6, column: "views", want: "not a finite number"},
		{name: "bad time", text: edit(2, 1, "yesterday"), line: 2, field: 1, column: "ts", want: "not a time in format"},
		{name: "label not 0/1", text: edit(5, 8, "2"), line: 5, field: 8, column: "clicked", want: "not 0 or 1"},
		{name: "empty label", text: edit(6, 8, ""), line: 6, field: 8, column: "clicked", want: "not 0 or 1"},
		{name: "too few fields", text: fixture + "2024-03-04 09:15:00,u1\n", line: 8, field: 3, column: "item", want: "missing: line has 2 fields"},
		{name: "unterminated quote", text: edit(7, 2, `"u9`), line: 7, field: 2, column: "user", want: "must end with a quote"},
		{name: "text after quote", text: edit(7, 3, `"i1"x`), line: 7, field: 3, column: "item", want: "must end with a quote"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := writeTemp(t, "in.csv", []byte(tc.text))
			cols := clicksColumns(t)
			if tc.cols != nil {
				tc.cols(cols)
			}
			out := filepath.Join(t.TempDir(), "out")
			_, err := Run(context.Background(), Options{Format: "csv", Columns: cols, Inputs: []string{in}, OutDir: out})
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("Run = %v; want a LineError", err)
			}
			if le.File != in || le.Line != tc.line || le.Field != tc.field || le.Name != tc.column || !strings.Contains(le.Msg, tc.want) {
				t.Errorf("LineError = %+v; want line %d, field %d (%s), message with %q", le, tc.line, tc.field, tc.column, tc.want)
			}
			if !strings.Contains(err.Error(), in) {
				t.Errorf("error %q does not name the file", err)
			}
			if _, err := os.Stat(filepath.Join(out, "train")); !os.IsNotExist(err) {
				t.Errorf("failed conversion left %s/train (stat: %v)", out, err)
			}
		})
	}
}

// TestColumnsValidate checks the errors of bad roles, before any input is read.
func TestColumnsValidate(t *testing.T) {
	base := func() *Columns { return &Columns{Label: "y", Sparse: []string{"a"}} }
	cases := []struct {
		name string
		edit func(c *Columns)
		want string
	}{
		{"no label", func(c *Columns) { c.Label = "" }, "no label column"},
		{"no features", func(c *Columns) { c.Sparse = nil }, "no feature columns"},
		{"two roles", func(c *Columns) { c.Dense = []string{"a"} }, `column "a" has two roles, dense and sparse`},
		{"label as feature", func(c *Columns) { c.Sparse = append(c.Sparse, "y") }, `column "y" has two roles, label and sparse`},
		{"named twice", func(c *Columns) { c.Sparse = append(c.Sparse, "a") }, `column "a" is named twice as sparse`},
		{"ignored feature", func(c *Columns) { c.Ignore = []string{"a"} }, "two roles, sparse and ignored"},
		{"unknown transform", func(c *Columns) { c.Dense = []string{"b:sqrt"} }, `unknown transform "sqrt"`},
		{"multi-hot without separator", func(c *Columns) { c.MultiHot = []string{"tags"} }, "want COL:SEP"},
		{"long separator", func(c *Columns) { c.MultiHot = []string{"tags:||"} }, "want COL:SEP"},
		{"bad delimiter", func(c *Columns) { c.Delimiter = ",," }, `delimiter ",,"`},
		{"bad time format", func(c *Columns) { c.Time, c.TimeFormat = "t", "hours" }, `time format "hours"`},
		{"time format alone", func(c *Columns) { c.TimeFormat = "unix" }, "without a time column"},
		{"empty name", func(c *Columns) { c.Sparse = []string{""} }, "empty column name"},
	}
	for _, tc := range cases {
		c := base()
		tc.edit(c)
		err := c.Validate()
		if err == nil || !errors.Is(err, ErrColumns) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v; want ErrColumns with %q", tc.name, err, tc.want)
		}
		_, err = Run(context.Background(), Options{Format: "csv", Columns: c, Inputs: []string{"testdata/clicks.csv"}, OutDir: t.TempDir()})
		if !errors.Is(err, ErrColumns) {
			t.Errorf("%s: Run = %v; want ErrColumns", tc.name, err)
		}
	}
	if err := base().Validate(); err != nil {
		t.Errorf("valid roles: Validate() = %v", err)
	}
}

// TestReadColumnsUnknownRole checks that a misspelled role in a columns file
// is an error naming its line.
func TestReadColumnsUnknownRole(t *testing.T) {
	p := writeTemp(t, "cols.yaml", []byte("label: y\ncategorical: [a, b]\n"))
	_, err := ReadColumns(p)
	if err == nil || !errors.Is(err, ErrColumns) || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "categorical") {
		t.Errorf("ReadColumns = %v; want ErrColumns naming line 2 and the key", err)
	}
	if _, err := ReadColumns(filepath.Join(t.TempDir(), "none.yaml")); err == nil {
		t.Error("ReadColumns of a missing file succeeded")
	}
}

func TestCSVDelimiterAndTimeFormats(t *testing.T) {
	cases := []struct {
		name, text, delim, format string
		wantHour                  float32
	}{
		{"tab detected", "y\tt\ta\n1\t1700000000\tx\n", "", "unix", 22.0 / 23},         // 2023-11-14 22:13:20 UTC
		{"semicolon detected", "y;t;a\n0;1700000000000;x\n", "", "unix_ms", 22.0 / 23}, // the same, in ms
		{"pipe given", "y|t|a\n1|24030409|x\n", "|", "yymmddhh", 9.0 / 23},
		{"zone kept", "y,t,a\n1,2024-03-04T09:15:00+05:00,x\n", ",", "2006-01-02T15:04:05Z07:00", 9.0 / 23},
	}
	for _, tc := range cases {
		in := writeTemp(t, "in.txt", []byte(tc.text))
		out := t.TempDir()
		res, err := Run(context.Background(), Options{Format: "csv", Inputs: []string{in}, OutDir: out,
			Columns: &Columns{Label: "y", Time: "t", TimeFormat: tc.format, Sparse: []string{"a"}, Delimiter: tc.delim}})
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		got := readPart(t, res, out, "train")
		if len(got.dense) != 1 || got.dense[0][0] != tc.wantHour {
			t.Errorf("%s: dense = %v; want hour %v", tc.name, got.dense, tc.wantHour)
		}
	}
}

// TestCSVTalkingData converts the TalkingData sample with the shipped
// column roles, split by click time.
func TestCSVTalkingData(t *testing.T) {
	// The sample is not in testdata/ (4 MB); it lives beside the checkout.
	in := "../../../shared/data/talkingdata-100k.csv"
	if _, err := os.Stat(in); err != nil {
		t.Skipf("TalkingData sample not present: %v", err)
	}
	cols, err := ReadColumns("../../configs/talkingdata-columns.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	res, err := Run(context.Background(), Options{Format: "csv", Columns: cols, Inputs: []string{in}, OutDir: out,
		IDs: Reindex, Split: []SplitPart{{PartTrain, 0.8}, {PartTest, 0.2}}, SplitBy: "click_time"})
	if err != nil {
		t.Fatal(err)
	}
	// Rows of the same second at the 80% boundary are shared out by hash,
	// so the parts are 80000/20000 give or take a few ties.
	if res.Rows+res.TestRows != 100000 || res.ValidRows != 0 || res.Rows < 79990 || res.Rows > 80010 {
		t.Errorf("rows = %d/%d/%d; want 80000/0/20000 within 10", res.Rows, res.ValidRows, res.TestRows)
	}
	var names []string
	for _, f := range res.Spec.Sparse {
		names = append(names, f.Name)
	}
	if want := []string{"ip", "app", "device", "os", "channel"}; !slices.Equal(names, want) {
		t.Errorf("sparse = %v; want %v", names, want)
	}
	if slices.Contains(res.Spec.Dense, "attributed_time") {
		t.Error("attributed_time, which leaks the label, is in the output")
	}
	pos := 0
	for _, part := range []string{"train", "test"} {
		for _, l := range readPart(t, res, out, part).label {
			pos += int(l)
		}
	}
	if pos != 227 {
		t.Errorf("positives = %d; want the sample's 227", pos)
	}
}

// FuzzParseCSV covers the csv path of a header line and a data line with
// every role (testdata/clicks-columns.yaml): any input gives a layout or a
// fieldError, and a data line a row or a fieldError, never a panic.
func FuzzParseCSV(f *testing.F) {
	lines := strings.Split(strings.TrimSpace(string(mustRead(f, "testdata/clicks.csv"))), "\n")
	for _, l := range lines[1:] {
		f.Add([]byte(lines[0]), []byte(l))
	}
	f.Add([]byte("ts;user;item;tags;price;views;leak;clicked"), []byte("x;;;;;;;1"))
	f.Add([]byte(lines[0]), []byte(`2024-03-04 09:15:00,u1,i1,"a|b",1e999,-3,,1.0`))
	cols := clicksColumns(f)
	fm := csvFormat(cols)
	f.Fuzz(func(t *testing.T, header, line []byte) {
		lay, err := fm.detect(header)
		if err != nil {
			if _, ok := err.(*fieldError); !ok {
				t.Fatalf("detect(%q) error %T", header, err)
			}
			return
		}
		if !lay.header || len(lay.cols) < 8 {
			t.Fatalf("detect(%q) = %d columns, header %v; want all 8 roles", header, len(lay.cols), lay.header)
		}
		row := newParsedRow(len(fm.dense), len(fm.sparse))
		row.Multi = make([][]uint64, len(fm.multi))
		row.Raw = make([]float64, len(fm.standardize))
		if err := fm.parse(line, lay, row); err != nil {
			var fe *fieldError
			if !errors.As(err, &fe) || fe.Field < 0 || fe.Field > len(lay.cols)+1 {
				t.Fatalf("parse(%q) = %v; want a fieldError with a field in range", line, err)
			}
			return
		}
		if row.Label != 0 && row.Label != 1 {
			t.Fatalf("label %v from %q", row.Label, line)
		}
		for d, v := range row.Dense {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("dense %s = %v from %q", fm.dense[d], v, line)
			}
		}
	})
}

// TestCSVMapping converts with the mapping of an earlier csv conversion
// (read back from its JSON file): the column roles, IDs and standardize
// statistics are the earlier ones, whatever the new text holds.
func TestCSVMapping(t *testing.T) {
	cols := clicksColumns(t)
	cols.Dense[0] = "price:standardize"
	out := t.TempDir()
	res, err := Run(context.Background(), Options{Format: "csv", Columns: cols, Inputs: []string{"testdata/clicks.csv"},
		OutDir: out, IDs: Reindex})
	if err != nil {
		t.Fatal(err)
	}
	mpath := filepath.Join(t.TempDir(), MappingFile)
	if err := WriteMapping(mpath, res.Mapping); err != nil {
		t.Fatal(err)
	}
	m, err := ReadMapping(mpath)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.Columns, cols) || len(m.Standardize) != 1 || m.Standardize[0] != res.Standardized[0] {
		t.Fatalf("mapping columns %+v, standardize %+v; want %+v, %+v", m.Columns, m.Standardize, cols, res.Standardized)
	}
	first := readPart(t, res, out, "train")

	// The same text again: the same rows.
	out2 := t.TempDir()
	res2, err := Run(context.Background(), Options{Format: "csv", Mapping: m, Inputs: []string{"testdata/clicks.csv"}, OutDir: out2})
	if err != nil {
		t.Fatal(err)
	}
	if again := readPart(t, res2, out2, "train"); !reflect.DeepEqual(again, first) {
		t.Errorf("conversion with the mapping = %+v; want %+v", again, first)
	}
	// New text: its one row keeps the old statistics and IDs (u9, i9 and d unseen).
	in := writeTemp(t, "new.csv", []byte("ts,user,item,tags,price,views,leak,clicked\n2024-03-04 09:15:00,u9,i9,d|a,1.5,0,x,1\n"))
	out3 := t.TempDir()
	res3, err := Run(context.Background(), Options{Format: "csv", Mapping: m, Inputs: []string{in}, OutDir: out3})
	if err != nil {
		t.Fatal(err)
	}
	got := readPart(t, res3, out3, "train")
	if g, w := got.sparse[0], [][]int64{{1}, {1}, {1, 2}}; !reflect.DeepEqual(g, w) {
		t.Errorf("new row's IDs = %v; want %v", g, w)
	}
	if g, w := got.dense[0][0], first.dense[0][0]; g != w {
		t.Errorf("new row's standardized price = %v; want %v, as the first conversion's first row", g, w)
	}
}

// TestCSVQuoted checks quoted fields: the value between the quotes, holding
// the delimiter or doubled quotes.
func TestCSVQuoted(t *testing.T) {
	in := writeTemp(t, "q.csv", []byte("\"y\",\"x\",\"s\",m\n"+
		"\"1\",\"1.5\",\"a,b\",\"p|q\"\n"+
		"0,2,\"say \"\"hi\"\"\",\"\"\n"+
		"1,\"\",plain,r\n"))
	out := t.TempDir()
	res, err := Run(context.Background(), Options{Format: "csv", Inputs: []string{in}, OutDir: out, Rows: []int64{1 << 20},
		Columns: &Columns{Label: "y", Dense: []string{"x"}, Sparse: []string{"s"}, MultiHot: []string{"m:|"}}})
	if err != nil {
		t.Fatal(err)
	}
	got := readPart(t, res, out, "train")
	h := func(s string) int64 { id, _ := hashRow(fnv1a([]byte(s)), 1<<20); return id }
	want := partRows{
		label: []float32{1, 0, 1},
		dense: [][]float32{{1.5}, {2}, {0}},
		sparse: [][][]int64{
			{{h("a,b")}, {h("p"), h("q")}},
			{{h(`say ""hi""`)}, {}},
			{{h("plain")}, {h("r")}},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rows = %+v; want %+v", got, want)
	}
}
