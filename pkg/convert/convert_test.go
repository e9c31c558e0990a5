package convert

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"hash/fnv"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// sharedData is where the real-data samples live: the repository's
// testdata/ (see its README for their sources and licences).
const sharedData = "../../testdata"

// sharedFile returns the path of a sample in testdata/; a missing one
// fails the test (every clone has them).
func sharedFile(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(sharedData, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("sample %s: %v", p, err)
	}
	return p
}

// convertedRows is a converted dataset read back row by row.
type convertedRows struct {
	label  []float32
	dense  [][]float32
	sparse [][]int64 // [row][table]
}

// readConverted reads OutDir/<sub> with the returned spec.
func readConverted(t testing.TB, res *Result, outDir, sub string) convertedRows {
	t.Helper()
	spec := res.Spec
	ds, err := dataset.Open(&spec, filepath.Join(outDir, sub))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ds.NewReader(dataset.ReaderOptions{BatchRows: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out convertedRows
	nd := len(spec.Dense)
	for {
		b, err := r.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < b.N; i++ {
			out.label = append(out.label, b.Label[i])
			out.dense = append(out.dense, append([]float32(nil), b.Dense[i*nd:(i+1)*nd]...))
			ids := make([]int64, len(b.Sparse))
			for s := range b.Sparse {
				ids[s] = b.Sparse[s].IDs[i]
			}
			out.sparse = append(out.sparse, ids)
		}
	}
	return out
}

func convertT(t testing.TB, opts Options) (*Result, convertedRows) {
	t.Helper()
	if opts.OutDir == "" {
		opts.OutDir = t.TempDir()
	}
	res, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res, readConverted(t, res, opts.OutDir, "train")
}

func log1p32(x float64) float32 { return float32(math.Log1p(x)) }

func TestConvertCriteoHand(t *testing.T) {
	in := "testdata/criteo-hand.tsv"
	res, got := convertT(t, Options{Format: "criteo", Inputs: []string{in}, IDs: Reindex})
	if res.Rows != 4 || len(got.label) != 4 {
		t.Fatalf("Rows = %d (read %d); want 4", res.Rows, len(got.label))
	}
	wantLabel := []float32{1, 0, 0, 1}
	sevens := []float32{log1p32(7), log1p32(7), log1p32(7), log1p32(7), log1p32(7), log1p32(7), log1p32(7), log1p32(7), log1p32(7), log1p32(7)}
	wantDense := [][]float32{
		// I1=0, I2=1, I3=-5 (clamped), I4 missing, I5=260.0, I6=3, I7..I12 missing, I13=99
		{0, log1p32(1), 0, 0, log1p32(260), log1p32(3), 0, 0, 0, 0, 0, 0, log1p32(99)},
		make([]float32, 13), // all missing
		{log1p32(1), log1p32(2), log1p32(3), log1p32(4), log1p32(5), log1p32(6), log1p32(7), log1p32(8), log1p32(9), log1p32(10), log1p32(11), log1p32(12), log1p32(13)},
		append([]float32{log1p32(1000), 0, log1p32(2.5)}, sevens...), // 1e3, -0, 2.5
	}
	// Reindex: 0 missing, 1 rare, 2.. in order of first appearance per table.
	row := func(c1, c2, c3, rest int64) []int64 {
		ids := []int64{c1, c2, c3}
		for range 23 {
			ids = append(ids, rest)
		}
		return ids
	}
	wantIDs := [][]int64{
		row(2, 0, 2, 2),   // C2 missing; every other table's first value
		make([]int64, 26), // all missing
		row(2, 2, 3, 3),   // C1 repeats 68fd1e64; C3.. see 00000002 first here
		{3, 3, 2, 4, 4, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, // C3 "00000000" == "0"
	}
	for i := range 4 {
		if got.label[i] != wantLabel[i] {
			t.Errorf("row %d label = %v; want %v", i+1, got.label[i], wantLabel[i])
		}
		for d := range 13 {
			if got.dense[i][d] != wantDense[i][d] {
				t.Errorf("row %d I%d = %v; want %v", i+1, d+1, got.dense[i][d], wantDense[i][d])
			}
		}
		if !reflect.DeepEqual(got.sparse[i], wantIDs[i]) {
			t.Errorf("row %d ids = %v; want %v", i+1, got.sparse[i], wantIDs[i])
		}
	}
	wantCounts := []int64{2, 2, 2, 3, 3}
	for t2 := 5; t2 < 26; t2++ {
		wantCounts = append(wantCounts, 2)
	}
	if !reflect.DeepEqual(res.Counts, wantCounts) {
		t.Errorf("Counts = %v; want %v", res.Counts, wantCounts)
	}
	for i, f := range res.Spec.Sparse {
		if f.Rows != wantCounts[i]+2 || f.IDs != dataset.IDIndex {
			t.Errorf("Spec.Sparse[%d] = %+v; want rows %d, ids index", i, f, wantCounts[i]+2)
		}
	}

	// Hash mode: missing -> 0, value v -> 1 + HashID(v, rows-1).
	res, got = convertT(t, Options{Format: "criteo", Inputs: []string{in}, Rows: []int64{1000}})
	vals := []uint64{0x68fd1e64, 0, 0, 0xffffffffffffffff, 0xabcdef01, 1}
	for s, v := range vals {
		want := 1 + dataset.HashID(int64(v), 999)
		if s == 1 {
			want = 0 // C2 missing
		}
		if got.sparse[0][s] != want {
			t.Errorf("hash row 1 C%d = %d; want %d", s+1, got.sparse[0][s], want)
		}
	}
	if got.sparse[3][2] != got.sparse[0][2] {
		t.Errorf("hash: C3 00000000 -> %d, C3 0 -> %d; want equal", got.sparse[3][2], got.sparse[0][2])
	}
	if !reflect.DeepEqual(res.Counts, wantCounts) || !res.CountsExact[0] {
		t.Errorf("hash Counts = %v (exact %v); want %v", res.Counts, res.CountsExact, wantCounts)
	}
}

// criteoRef parses Criteo TSV text independently of the converter.
type criteoRef struct {
	label float32
	dense []float32
	cat   []string // "" for missing
}

func parseCriteoRef(t testing.TB, text string, sep string, header bool) []criteoRef {
	t.Helper()
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	order := criteoDefaultLayout(sep[0]).cols
	if header {
		names := strings.Split(lines[0], sep)
		lines = lines[1:]
		order = nil
		for _, n := range names {
			for _, c := range criteoDefaultLayout(sep[0]).cols {
				if c.name == n {
					order = append(order, c)
				}
			}
		}
	}
	var out []criteoRef
	for ln, line := range lines {
		f := strings.Split(line, sep)
		if len(f) != 40 {
			t.Fatalf("reference: line %d has %d fields", ln+1, len(f))
		}
		r := criteoRef{dense: make([]float32, 13), cat: make([]string, 26)}
		for i, c := range order {
			switch c.kind {
			case colLabel:
				v, _ := strconv.ParseFloat(f[i], 64)
				r.label = float32(v)
			case colInt:
				if f[i] != "" {
					x, err := strconv.ParseFloat(f[i], 64)
					if err != nil {
						t.Fatal(err)
					}
					r.dense[c.idx] = float32(math.Log(1 + math.Max(x, 0)))
				}
			case colHex:
				r.cat[c.idx] = f[i]
			}
		}
		out = append(out, r)
	}
	return out
}

// checkAgainstRef compares converted rows with the reference: labels,
// dense values, and IDs: reindex IDs in order of first appearance, or
// hashed IDs equal to 1 + HashID(v, rows-1).
func checkAgainstRef(t *testing.T, res *Result, got convertedRows, ref []criteoRef, reindex bool) {
	t.Helper()
	if len(got.label) != len(ref) {
		t.Fatalf("read %d rows; want %d", len(got.label), len(ref))
	}
	seen := make([]map[uint64]int64, 26)
	for i := range seen {
		seen[i] = map[uint64]int64{}
	}
	bad := 0
	for i, r := range ref {
		if got.label[i] != r.label {
			t.Errorf("row %d label = %v; want %v", i+1, got.label[i], r.label)
			bad++
		}
		for d := range 13 {
			if math.Abs(float64(got.dense[i][d]-r.dense[d])) > 1e-6 {
				t.Errorf("row %d I%d = %v; want %v", i+1, d+1, got.dense[i][d], r.dense[d])
				bad++
			}
		}
		for s := range 26 {
			var want int64
			if r.cat[s] != "" {
				v, err := strconv.ParseUint(r.cat[s], 16, 64)
				if err != nil {
					t.Fatal(err)
				}
				if reindex {
					id, ok := seen[s][v]
					if !ok {
						id = int64(len(seen[s])) + 2
						seen[s][v] = id
					}
					want = id
				} else {
					want = 1 + dataset.HashID(int64(v), res.Spec.Sparse[s].Rows-1)
				}
			}
			if got.sparse[i][s] != want {
				t.Errorf("row %d C%d (%q) = %d; want %d", i+1, s+1, r.cat[s], got.sparse[i][s], want)
				bad++
			}
		}
		if bad > 10 {
			t.Fatal("too many differences")
		}
	}
	for s := range 26 {
		if res.Counts[s] != int64(len(seen[s])) && reindex {
			t.Errorf("Counts[%d] = %d; want %d distinct values", s, res.Counts[s], len(seen[s]))
		}
	}
}

func TestConvertCriteoTerabyteSample(t *testing.T) {
	in := sharedFile(t, "criteo-1tb-head1000.tsv")
	text, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	ref := parseCriteoRef(t, string(text), "\t", false)
	for _, reindex := range []bool{false, true} {
		opts := Options{Format: "criteo", Inputs: []string{in}, Rows: []int64{5000}, RowGroupRows: 300}
		if reindex {
			opts.IDs, opts.Rows = Reindex, nil
		}
		res, got := convertT(t, opts)
		if res.Rows != 1000 || res.Skipped != 0 {
			t.Fatalf("Rows, Skipped = %d, %d; want 1000, 0", res.Rows, res.Skipped)
		}
		checkAgainstRef(t, res, got, ref, reindex)

		// Hand-checked fields.
		// Line 1: 1 5 110 _ 16 _ 1 0 14 7 1 _ 306 _ (label, I1..I13; _ = empty).
		want1 := []float32{log1p32(5), log1p32(110), 0, log1p32(16), 0, log1p32(1), 0, log1p32(14), log1p32(7), log1p32(1), 0, log1p32(306), 0}
		if got.label[0] != 1 || !reflect.DeepEqual(got.dense[0], want1) {
			t.Errorf("line 1 = %v %v; want 1 %v", got.label[0], got.dense[0], want1)
		}
		// Line 4: 0 _ 24 _ 11 24 _ 0 56 3 _ 2 20456 _, then C1 empty, C2 710103fd,
		// ..., C10 and C11 empty, C12 12716184.
		want4 := []float32{0, log1p32(24), 0, log1p32(11), log1p32(24), 0, 0, log1p32(56), log1p32(3), 0, log1p32(2), log1p32(20456), 0}
		if got.label[3] != 0 || !reflect.DeepEqual(got.dense[3], want4) {
			t.Errorf("line 4 = %v %v; want 0 %v", got.label[3], got.dense[3], want4)
		}
		if s := got.sparse[3]; s[0] != 0 || s[1] == 0 || s[9] != 0 || s[10] != 0 || s[11] == 0 {
			t.Errorf("line 4 ids = %v; want C1, C10, C11 missing (0), C2, C12 present", s)
		}
		// Line 22: I8 = -1, clamped to 0.
		if !strings.Contains(strings.Split(string(text), "\n")[21], "\t-1\t") || got.dense[21][7] != 0 {
			t.Errorf("line 22 I8 = %v; want 0 (clamped from -1)", got.dense[21][7])
		}
		if reindex {
			// First line: every present value is its table's first: ID 2.
			for s, id := range got.sparse[0] {
				if id != 2 {
					t.Errorf("reindex line 1 C%d = %d; want 2", s+1, id)
				}
			}
		}
	}
}

func TestConvertCriteoKaggleCSV(t *testing.T) {
	in := sharedFile(t, "criteo-kaggle-sample200.csv")
	text, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	res, got := convertT(t, Options{Format: "criteo", Inputs: []string{in}, IDs: Reindex})
	if res.Rows != 200 {
		t.Fatalf("Rows = %d; want 200", res.Rows)
	}
	checkAgainstRef(t, res, got, parseCriteoRef(t, string(text), ",", true), true)
	// Row 1: 0,,3,260.0,,17668.0,,,33.0,,,,0.0,, then C1..C18 present,
	// C19, C20 missing, C21 present, C22 missing, C23, C24 present, C25, C26 missing.
	wantDense := []float32{0, log1p32(3), log1p32(260), 0, log1p32(17668), 0, 0, log1p32(33), 0, 0, 0, 0, 0}
	if got.label[0] != 0 || !reflect.DeepEqual(got.dense[0], wantDense) {
		t.Errorf("row 1 = %v %v; want 0 %v", got.label[0], got.dense[0], wantDense)
	}
	for s, id := range got.sparse[0] {
		want := int64(2)
		switch s + 1 {
		case 19, 20, 22, 25, 26:
			want = 0
		}
		if id != want {
			t.Errorf("row 1 C%d = %d; want %d", s+1, id, want)
		}
	}
	// Row 2 shares C5 (25c83c98), C9 (a73ee510) and C14 (b28479f6) with row 1.
	for _, s := range []int{5, 9, 14} {
		if got.sparse[1][s-1] != 2 {
			t.Errorf("row 2 C%d = %d; want 2 (row 1's value)", s, got.sparse[1][s-1])
		}
	}
	if got.sparse[1][0] != 3 || got.dense[1][1] != 0 { // new C1; I2 = -1 clamped
		t.Errorf("row 2 C1 = %d, I2 = %v; want 3, 0", got.sparse[1][0], got.dense[1][1])
	}

	// The header's column order is honoured: swap columns and convert again.
	lines := strings.Split(strings.TrimRight(string(text), "\n"), "\n")
	var b strings.Builder
	for _, l := range lines {
		f := strings.Split(l, ",")
		f[0], f[5], f[20] = f[20], f[0], f[5] // C7 first, label 6th, I5 21st
		b.WriteString(strings.Join(f, ",") + "\n")
	}
	perm := filepath.Join(t.TempDir(), "perm.csv")
	if err := os.WriteFile(perm, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, got2 := convertT(t, Options{Format: "criteo", Inputs: []string{perm}, IDs: Reindex})
	if !reflect.DeepEqual(got, got2) {
		t.Errorf("permuted header: rows differ")
	}

	// A byte order mark and CRLF line ends change nothing.
	crlf := "\xef\xbb\xbf" + strings.ReplaceAll(string(text), "\n", "\r\n")
	_, got3 := convertT(t, Options{Format: "criteo", Inputs: []string{writeTemp(t, "bom.csv", []byte(crlf))}, IDs: Reindex})
	if !reflect.DeepEqual(got, got3) {
		t.Errorf("BOM and CRLF: rows differ")
	}
}

func TestConvertAvazuSample(t *testing.T) {
	in := sharedFile(t, "avazu-sample100.csv")
	res, got := convertT(t, Options{Format: "avazu", Inputs: []string{in}, Rows: []int64{1 << 16}})
	if res.Rows != 100 {
		t.Fatalf("Rows = %d; want 100", res.Rows)
	}
	if !reflect.DeepEqual(res.Spec.Dense, []string{"hour_of_day", "weekday"}) || len(res.Spec.Sparse) != 21 ||
		res.Spec.Label != "label" || res.Spec.Sparse[0].Name != "C1" || res.Spec.Sparse[20].Name != "C21" {
		t.Errorf("Spec = %+v", res.Spec)
	}
	// Row 1: 1000009418151094273,0,14102100,1005,0,1fbe01fe,f3845767,28905ebd,ecad2386,7801e8d9,
	// 07d7df22,a99f214a,ddd2926e,44956a24,1,2,15706,320,50,1722,0,35,-1,79
	// 2014-10-21 is a Tuesday (weekday 1 of 0..6); hour 00.
	fields := strings.Split("1005,0,1fbe01fe,f3845767,28905ebd,ecad2386,7801e8d9,07d7df22,a99f214a,ddd2926e,44956a24,1,2,15706,320,50,1722,0,35,-1,79", ",")
	if got.label[0] != 0 || got.dense[0][0] != 0 || got.dense[0][1] != float32(1)/6 {
		t.Errorf("row 1 = %v %v; want 0 [0 %v]", got.label[0], got.dense[0], float32(1)/6)
	}
	for s, f := range fields {
		h := fnv.New64a()
		h.Write([]byte(f))
		want := 1 + dataset.HashID(int64(h.Sum64()), 1<<16-1)
		if got.sparse[0][s] != want {
			t.Errorf("row 1 %s (%q) = %d; want %d", avazuSparse[s], f, got.sparse[0][s], want)
		}
	}
	// Rows 1 and 2 differ only in id, device_ip (ddd2926e / 96809ac8),
	// device_model, device_conn_type and C14, C20.
	res, got = convertT(t, Options{Format: "avazu", Inputs: []string{in}, IDs: Reindex})
	want2 := make([]int64, 21)
	for s := range want2 {
		want2[s] = 2
		switch avazuSparse[s] {
		case "device_ip", "device_model", "device_conn_type", "C14", "C20":
			want2[s] = 3
		}
	}
	if !reflect.DeepEqual(got.sparse[1], want2) {
		t.Errorf("reindex row 2 = %v; want %v", got.sparse[1], want2)
	}
	if res.Counts[1] < 1 || res.Counts[1] > 7 { // banner_pos takes few values
		t.Errorf("banner_pos count = %d", res.Counts[1])
	}
}

func TestConvertBadLines(t *testing.T) {
	good := "0\t1\t2\t3\t4\t5\t6\t7\t8\t9\t10\t11\t12\t13" + strings.Repeat("\t68fd1e64", 26)
	replace := func(field int, v string) string {
		f := strings.Split(good, "\t")
		f[field-1] = v
		return strings.Join(f, "\t")
	}
	cases := []struct {
		name, line string
		field      int
		col        string
	}{
		{"truncated", good[:len(good)-20], 39, "C25"},
		{"too many", good + "\t1", 41, ""},
		{"bad hex", replace(20, "zz"), 20, "C6"},
		{"long hex", replace(15, "00112233445566778"), 15, "C1"},
		{"bad int", replace(3, "12a"), 3, "I2"},
		{"nan", replace(3, "NaN"), 3, "I2"},
		{"bad label", replace(1, "2"), 1, "label"},
		{"empty label", replace(1, ""), 1, "label"},
		{"empty line", "", 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "in.tsv")
			text := good + "\n" + good + "\n" + tc.line + "\n" + good + "\n"
			if err := os.WriteFile(in, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "out")
			_, err := Run(context.Background(), Options{Format: "criteo", Inputs: []string{in}, OutDir: out})
			var le *LineError
			if !errors.As(err, &le) || !errors.Is(err, dataset.ErrBadData) {
				t.Fatalf("Run = %v; want a LineError", err)
			}
			if le.File != in || le.Line != 3 || le.Field != tc.field || le.Name != tc.col {
				t.Errorf("LineError = %+v; want line 3, field %d (%s)", le, tc.field, tc.col)
			}
			if !strings.Contains(err.Error(), in) || !strings.Contains(err.Error(), "line 3") {
				t.Errorf("error %q does not name the file and line", err)
			}
			if _, err := os.Stat(filepath.Join(out, "train")); !os.IsNotExist(err) {
				t.Errorf("failed conversion left %s/train (stat: %v)", out, err)
			}
			// With a second bad line, and blocks of about one line each.
			text += replace(2, "x") + "\n" + good + "\n"
			if err := os.WriteFile(in, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, ids := range []string{Hash, Reindex} {
				res, err := Run(context.Background(), Options{Format: "criteo", Inputs: []string{in},
					OutDir: filepath.Join(dir, "skip-"+ids), SkipBad: true, IDs: ids, blockBytes: 200})
				if err != nil {
					t.Fatal(err)
				}
				if res.Rows != 4 || res.Skipped != 2 {
					t.Errorf("%s SkipBad: Rows, Skipped = %d, %d; want 4, 2", ids, res.Rows, res.Skipped)
				}
				if fs := res.FirstSkipped; fs == nil || fs.Line != 3 || fs.Field != tc.field {
					t.Errorf("%s SkipBad: FirstSkipped = %v; want line 3, field %d", ids, fs, tc.field)
				}
			}
		})
	}
}

func TestConvertBadHeaders(t *testing.T) {
	cases := []struct{ format, header, want string }{
		{"criteo", "label,I1,I2", "lacks column(s) C1, C2, C3,"},
		{"criteo", "label,I1,I1", "appears twice"},
		{"criteo", "label,foo", `unknown column "foo"`},
		{"avazu", "id,hour,C1", "lacks column(s)"},
	}
	for _, tc := range cases {
		in := filepath.Join(t.TempDir(), "in.csv")
		if err := os.WriteFile(in, []byte(tc.header+"\n0,1,2\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Run(context.Background(), Options{Format: tc.format, Inputs: []string{in}, OutDir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%s header %q: Run = %v; want an error on line 1 containing %q", tc.format, tc.header, err, tc.want)
		}
	}
}

func gzipBytes(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestConvertGzip(t *testing.T) {
	text, err := os.ReadFile("testdata/criteo-hand.tsv")
	if err != nil {
		t.Fatal(err)
	}
	// Repeat the lines so that several blocks are cut.
	text = bytes.Repeat(append(text, '\n'), 50)
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.txt")
	gz := filepath.Join(dir, "compressed.txt") // no .gz: the magic bytes decide
	zipped := gzipBytes(t, text)
	if err := os.WriteFile(plain, text, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gz, zipped, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ids := range []string{Hash, Reindex} {
		r1, got1 := convertT(t, Options{Format: "criteo", Inputs: []string{plain}, IDs: ids, blockBytes: 2048})
		r2, got2 := convertT(t, Options{Format: "criteo", Inputs: []string{gz}, IDs: ids, blockBytes: 2048})
		if r1.Rows != 200 || r2.Rows != 200 || !reflect.DeepEqual(got1, got2) || !reflect.DeepEqual(r1.Counts, r2.Counts) {
			t.Errorf("%s: gzip input gives %d rows, plain %d, or other values", ids, r2.Rows, r1.Rows)
		}
	}

	// A gzip stream cut short is an error naming the file.
	cut := filepath.Join(dir, "cut.gz")
	if err := os.WriteFile(cut, zipped[:len(zipped)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), Options{Format: "criteo", Inputs: []string{plain, cut}, OutDir: filepath.Join(dir, "out")})
	if err == nil || !strings.Contains(err.Error(), cut) || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("truncated gzip: Run = %v; want an error naming %s", err, cut)
	}
	// It says how many whole lines could be read: all those of what the
	// cut stream still decompresses to.
	zr, zerr := gzip.NewReader(bytes.NewReader(zipped[:len(zipped)*2/3]))
	if zerr != nil {
		t.Fatal(zerr)
	}
	good, _ := io.ReadAll(zr)
	if want := "after line " + strconv.Itoa(bytes.Count(good, []byte{'\n'})) + ")"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("truncated gzip: Run = %v; want it to say %q", err, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "train")); !os.IsNotExist(err) {
		t.Errorf("failed conversion left out/train")
	}

	// Truncated or corrupt gzip is bad data (exit 3), naming the file.
	flip := func(at int) []byte {
		b := append([]byte(nil), zipped...)
		b[at] ^= 0xff
		return b
	}
	for name, b := range map[string][]byte{
		"truncated":  zipped[:len(zipped)*2/3],
		"header":     flip(3),               // flags byte: reserved bits set
		"deflate":    flip(len(zipped) / 2), // inside the compressed stream
		"checksum":   flip(len(zipped) - 6), // CRC-32 of the trailer
		"magic only": zipped[:2],
	} {
		fn := filepath.Join(dir, name+".gz")
		if err := os.WriteFile(fn, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Run(context.Background(), Options{Format: "criteo", Inputs: []string{fn}, OutDir: filepath.Join(dir, "out")})
		if !errors.Is(err, dataset.ErrBadData) || !strings.Contains(err.Error(), fn) {
			t.Errorf("%s gzip: Run = %v; want %v naming %s", name, err, dataset.ErrBadData, fn)
		}
	}
}

// synthCriteo writes n Criteo TSV lines with values drawn from small
// vocabularies (some missing, some negative).
func synthCriteo(n int, seed uint64) []byte {
	var b bytes.Buffer
	b.Grow(n * 200)
	s := seed
	next := func() uint64 { s = mix64(s); return s }
	for i := 0; i < n; i++ {
		b.WriteByte('0' + byte(next()%2))
		for d := 0; d < 13; d++ {
			b.WriteByte('\t')
			switch r := next(); r % 8 {
			case 0: // missing
			case 1:
				b.WriteString("-1")
			default:
				b.WriteString(strconv.FormatUint(r%1000, 10))
			}
		}
		for c := 0; c < 26; c++ {
			b.WriteByte('\t')
			r := next()
			if r%16 == 0 {
				continue
			}
			// Table c draws from 10*(c+1)^2 values, skewed to small ones.
			card := uint64(10 * (c + 1) * (c + 1))
			v := (r >> 8) % card
			v = v * v / card
			b.WriteString(strconv.FormatUint(mix64(v+uint64(c)<<32)&0xffffffff, 16))
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func writeTemp(t testing.TB, name string, b []byte) string {
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConvertReindexContiguous(t *testing.T) {
	in := writeTemp(t, "s.tsv", synthCriteo(3000, 1))
	ref := parseCriteoRef(t, string(mustRead(t, in)), "\t", false)
	for _, minCount := range []int{1, 3} {
		res, got := convertT(t, Options{Format: "criteo", Inputs: []string{in}, IDs: Reindex, MinCount: minCount})
		if minCount == 1 {
			checkAgainstRef(t, res, got, ref, true)
		}
		for s := range 26 {
			occ := map[string]int{}
			for _, r := range ref {
				if r.cat[s] != "" {
					occ[r.cat[s]]++
				}
			}
			kept := 0
			for _, n := range occ {
				if n >= minCount {
					kept++
				}
			}
			if res.Counts[s] != int64(len(occ)) || !res.CountsExact[s] {
				t.Errorf("min %d: Counts[%d] = %d; want %d distinct", minCount, s, res.Counts[s], len(occ))
			}
			if rows := res.Spec.Sparse[s].Rows; rows != int64(kept)+2 {
				t.Errorf("min %d: table %d rows = %d; want %d kept + 2", minCount, s, rows, kept)
			}
			// IDs are contiguous: every ID in [2, rows) is used, none beyond.
			used := map[int64]bool{}
			for i, r := range ref {
				id := got.sparse[i][s]
				used[id] = true
				switch {
				case r.cat[s] == "" && id != 0:
					t.Fatalf("missing value got ID %d", id)
				case r.cat[s] != "" && occ[r.cat[s]] < minCount && id != 1:
					t.Fatalf("min %d: rare value (%d occurrences) got ID %d; want 1", minCount, occ[r.cat[s]], id)
				}
			}
			for id := int64(2); id < res.Spec.Sparse[s].Rows; id++ {
				if !used[id] {
					t.Fatalf("min %d: table %d: ID %d unused below rows %d", minCount, s, id, res.Spec.Sparse[s].Rows)
				}
			}
			if len(used) > int(res.Spec.Sparse[s].Rows) {
				t.Fatalf("table %d: %d IDs used; rows %d", s, len(used), res.Spec.Sparse[s].Rows)
			}
		}
	}
}

func mustRead(t testing.TB, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestConvertHashRange(t *testing.T) {
	in := writeTemp(t, "s.tsv", synthCriteo(3000, 2))
	ref := parseCriteoRef(t, string(mustRead(t, in)), "\t", false)
	rows := make([]int64, 26)
	for i := range rows {
		rows[i] = int64(2 + 7*i) // tiny tables: many collisions
	}
	res, got := convertT(t, Options{Format: "criteo", Inputs: []string{in}, Rows: rows})
	checkAgainstRef(t, res, got, ref, false)
	for i, r := range got.sparse {
		for s, id := range r {
			if id < 0 || id >= rows[s] || (id == 0) != (ref[i].cat[s] == "") {
				t.Fatalf("row %d table %d: id %d out of [0, %d) or 0 not for missing", i, s, id, rows[s])
			}
		}
	}
	for s := range 26 {
		occ := map[string]bool{}
		for _, r := range ref {
			if r.cat[s] != "" {
				occ[r.cat[s]] = true
			}
		}
		if res.Counts[s] != int64(len(occ)) || !res.CountsExact[s] || res.Spec.Sparse[s].Rows != rows[s] {
			t.Errorf("table %d: Counts = %d (exact %v), rows %d; want %d, rows %d",
				s, res.Counts[s], res.CountsExact[s], res.Spec.Sparse[s].Rows, len(occ), rows[s])
		}
	}
}

func TestConvertTestInputs(t *testing.T) {
	train := writeTemp(t, "train.tsv", synthCriteo(500, 3))
	test := writeTemp(t, "test.tsv", synthCriteo(300, 4))
	out := t.TempDir()
	res, err := Run(context.Background(), Options{Format: "criteo", Inputs: []string{train},
		TestInputs: []string{test}, OutDir: out, IDs: Reindex})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 500 || res.TestRows != 300 || res.Spec.Test != "test" || res.Spec.Train != "train" {
		t.Fatalf("result = %+v", res)
	}
	// Test IDs follow the training vocabulary; unseen values share ID 1.
	trainRef := parseCriteoRef(t, string(mustRead(t, train)), "\t", false)
	testRef := parseCriteoRef(t, string(mustRead(t, test)), "\t", false)
	got := readConverted(t, res, out, "test")
	vocab := make([]map[string]int64, 26)
	for s := range vocab {
		vocab[s] = map[string]int64{}
		for _, r := range trainRef {
			if v := r.cat[s]; v != "" {
				if _, ok := vocab[s][v]; !ok {
					vocab[s][v] = int64(len(vocab[s])) + 2
				}
			}
		}
	}
	unseen := 0
	for i, r := range testRef {
		for s, v := range r.cat {
			want := int64(0)
			if v != "" {
				id, ok := vocab[s][v]
				if !ok {
					id = 1
					unseen++
				}
				want = id
			}
			if got.sparse[i][s] != want {
				t.Fatalf("test row %d C%d (%q) = %d; want %d", i+1, s+1, v, got.sparse[i][s], want)
			}
		}
	}
	if unseen == 0 {
		t.Fatal("test data has no unseen values; the test checks nothing")
	}
}

func TestConvertDeterministic(t *testing.T) {
	a := writeTemp(t, "a.tsv", synthCriteo(2000, 5))
	b := writeTemp(t, "b.tsv.gz", gzipBytes(t, synthCriteo(1500, 6)))
	var prev convertedRows
	for i, workers := range []int{1, 3} {
		out := t.TempDir()
		res, got := convertT(t, Options{Format: "criteo", Inputs: []string{a, b}, OutDir: out,
			Workers: workers, blockBytes: 4096, FileRows: 1000, RowGroupRows: 256, Rows: []int64{1 << 12}})
		if res.Rows != 3500 {
			t.Fatalf("Rows = %d; want 3500", res.Rows)
		}
		files, err := dataset.ListParquet(filepath.Join(out, "train"))
		if err != nil || len(files) != 4 || filepath.Base(files[3]) != "part-00003.parquet" {
			t.Errorf("files = %v (%v); want part-00000..part-00003", files, err)
		}
		if i > 0 && !reflect.DeepEqual(prev, got) {
			t.Errorf("workers %d: rows differ from workers 1", workers)
		}
		prev = got
	}
}

func TestConvertCancel(t *testing.T) {
	in := writeTemp(t, "a.tsv", synthCriteo(3000, 7))
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	_, err := Run(ctx, Options{Format: "criteo", Inputs: []string{in}, OutDir: out, blockBytes: 4096,
		FileRows: 100, Progress: func(done, total int64) {
			calls++
			if calls == 5 {
				cancel()
			}
		}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v; want context.Canceled", err)
	}
	ents, _ := os.ReadDir(out)
	if len(ents) != 0 {
		t.Errorf("cancelled conversion left %v in %s", ents, out)
	}
}

// TestConvertCancelAfterLastBlock cancels as the last block is consumed:
// the reader, which stops without a word when cancelled, has then sent
// nothing more, and the conversion must still end cancelled, leaving
// nothing, rather than keep what it read as the whole input.
func TestConvertCancelAfterLastBlock(t *testing.T) {
	in := writeTemp(t, "a.tsv", synthCriteo(300, 9))
	opts := func(out string, progress func(int64, int64)) Options {
		return Options{Format: "criteo", Inputs: []string{in}, OutDir: out, blockBytes: 4096, Progress: progress}
	}
	blocks := 0 // Progress is called once a block
	if _, err := Run(context.Background(), opts(t.TempDir(), func(int64, int64) { blocks++ })); err != nil {
		t.Fatal(err)
	}
	if blocks < 2 {
		t.Fatalf("%d blocks; the test wants several", blocks)
	}
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	_, err := Run(ctx, opts(out, func(int64, int64) {
		if calls++; calls == blocks {
			cancel()
		}
	}))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v; want context.Canceled", err)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("cancelled conversion left %v in %s", ents, out)
	}
}

func TestConvertProgressAndExisting(t *testing.T) {
	in := writeTemp(t, "a.tsv", synthCriteo(1000, 8))
	size := int64(len(mustRead(t, in)))
	out := t.TempDir()
	var last, total int64
	_, err := Run(context.Background(), Options{Format: "criteo", Inputs: []string{in}, OutDir: out,
		IDs: Reindex, blockBytes: 4096, Progress: func(d, tot int64) {
			if d < last {
				t.Errorf("progress went back from %d to %d", last, d)
			}
			last, total = d, tot
		}})
	if err != nil {
		t.Fatal(err)
	}
	if last != 2*size || total != 2*size { // reindex reads the input twice
		t.Errorf("progress ended at %d of %d; want %d of %d", last, total, 2*size, 2*size)
	}
	_, err = Run(context.Background(), Options{Format: "criteo", Inputs: []string{in}, OutDir: out})
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second Run into %s = %v; want an already-exists error", out, err)
	}
}

func TestOptionsValidate(t *testing.T) {
	o := Options{Format: "csv", IDs: "hash", Rows: []int64{1, 5}, MinCount: 3, RowGroupRows: -1}
	err := o.Validate()
	if err == nil {
		t.Fatal("Validate() = nil")
	}
	for _, want := range []string{"format", "no input", "no output", "min count", "rows[0] = 1", "row group"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %q; want it to mention %q", err, want)
		}
	}
	o = Options{Format: "avazu", Inputs: []string{"x"}, OutDir: "y", IDs: Reindex, Rows: []int64{10}}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "hash mode only") {
		t.Errorf("reindex with rows: Validate() = %v", err)
	}
	o = Options{Format: "criteo", Inputs: []string{"x"}, OutDir: "y", Rows: []int64{10, 10, 10}}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "want 1 or 26") {
		t.Errorf("3 table sizes: Validate() = %v", err)
	}
}

func TestParseDecimal(t *testing.T) {
	cases := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"0", 0, true}, {"260", 260, true}, {"260.0", 260, true}, {"-1", -1, true}, {"+7", 7, true},
		{"2.5", 2.5, true}, {".5", 0.5, true}, {"5.", 5, true}, {"1e3", 1000, true}, {"1.5E-2", 0.015, true},
		{"0.1", 0.1, true}, {"123456789012345678901234", 1.2345678901234568e23, true},
		{"", 0, false}, {"-", 0, false}, {".", 0, false}, {"1e", 0, false}, {"1e+", 0, false},
		{"NaN", 0, false}, {"inf", 0, false}, {"0x10", 0, false}, {"1_000", 0, false}, {"1e400", 0, false},
		{" 1", 0, false}, {"1 ", 0, false}, {"1.2.3", 0, false},
		// More zero fraction digits than the exact-division table holds
		// (these once indexed past it and panicked).
		{"0.00000000000000000000000", 0, true}, {".00000000000000000000000", 0, true},
		{"1.00000000000000000000000000000", 1, true}, {"-0." + strings.Repeat("0", 400) + "5", 0, true},
	}
	for _, c := range cases {
		got, ok := parseDecimal([]byte(c.in))
		if ok != c.ok || got != c.want {
			t.Errorf("parseDecimal(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// TestParseLongZeroDecimal: a label or dense value written with 23 or more
// zero fraction digits is parsed, not a panic, in both Criteo and Avazu lines.
func TestParseLongZeroDecimal(t *testing.T) {
	zero := "0.00000000000000000000000"
	dense := strings.Repeat("\t1", 12)
	cats := strings.Repeat("\t68fd1e64", 26)
	cases := []struct {
		name  string
		lay   *layout
		row   *parsedRow
		line  string
		label float32
	}{
		{"criteo label", criteoDefaultLayout('\t'), newParsedRow(13, 26), zero + "\t1" + dense + cats, 0},
		{"criteo dense", criteoDefaultLayout('\t'), newParsedRow(13, 26), "1\t" + zero + dense + cats, 1},
		{"avazu label", avazuDefaultLayout(), newParsedRow(2, 21),
			"7," + zero + ",14102723,1005,0,1fbe01fe,f3845767,28905ebd,ecad2386,7801e8d9,07d7df22,a99f214a,ddd2926e,44956a24,1,2,15706,320,50,1722,0,35,-1,79", 0},
		{"avazu fuzz input", avazuDefaultLayout(), newParsedRow(2, 21), ",.00000000000000000000000", -1},
	}
	for _, c := range cases {
		err := parseLine([]byte(c.line), c.lay, c.row)
		if c.label < 0 {
			var fe *fieldError
			if !errors.As(err, &fe) {
				t.Errorf("%s: parseLine = %v; want a fieldError", c.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: parseLine = %v; want no error", c.name, err)
			continue
		}
		if c.row.Label != c.label {
			t.Errorf("%s: label = %v; want %v", c.name, c.row.Label, c.label)
		}
	}
}

func TestParseAvazuHour(t *testing.T) {
	cases := []struct {
		in       string
		hour, wd int
		ok       bool
	}{
		{"14102100", 0, 1, true},  // Tue 2014-10-21
		{"14102723", 23, 0, true}, // Mon 2014-10-27
		{"14102612", 12, 6, true}, // Sun
		{"16022905", 5, 0, true},  // Mon 2016-02-29 (leap day)
		{"15022905", 0, 0, false}, // no 2015-02-29
		{"14133100", 0, 0, false}, {"14100024", 0, 0, false}, {"14103124", 0, 0, false},
		{"1410210", 0, 0, false}, {"14-02100", 0, 0, false},
	}
	for _, c := range cases {
		h, wd, ok := parseAvazuHour([]byte(c.in))
		if ok != c.ok || (ok && (h != c.hour || wd != c.wd)) {
			t.Errorf("parseAvazuHour(%q) = %d, %d, %v; want %d, %d, %v", c.in, h, wd, ok, c.hour, c.wd, c.ok)
		}
	}
}

func TestParseAvazuLine(t *testing.T) {
	lay := avazuDefaultLayout()
	row := newParsedRow(2, 21)
	cats := ",1005,0,1fbe01fe,f3845767,28905ebd,ecad2386,7801e8d9,07d7df22,a99f214a,ddd2926e,44956a24,1,2,15706,320,50,1722,0,35,-1,"
	cases := []struct {
		hour       string
		hod, wday  float32
		lastMissng bool
	}{
		{"14102723", 1, 0, true},                // Monday 23:00
		{"14102612", float32(12) / 23, 1, true}, // Sunday 12:00
	}
	for _, c := range cases {
		if err := parseLine([]byte("7,1,"+c.hour+cats), lay, row); err != nil {
			t.Fatal(err)
		}
		if row.Label != 1 || row.Dense[0] != c.hod || row.Dense[1] != c.wday || row.Missing[20] != c.lastMissng || row.Missing[0] {
			t.Errorf("hour %s: label %v dense %v missing C1 %v C21 %v; want 1 [%v %v] false true",
				c.hour, row.Label, row.Dense, row.Missing[0], row.Missing[20], c.hod, c.wday)
		}
	}
	err := parseLine([]byte("7,1,14102723,\"a\""+cats[5:]), lay, row)
	var fe *fieldError
	if !errors.As(err, &fe) || fe.Field != 4 || fe.Name != "C1" {
		t.Errorf("quoted field: err = %v; want field 4 (C1)", err)
	}
}

func TestDistinctCount(t *testing.T) {
	d := newDistinct()
	for _, z := range []uint64{0, 5, 0, 1 << 63, 5} {
		d.add(z)
	}
	if got, exact := d.count(); got != 3 || !exact {
		t.Errorf("count of {0, 5, 1<<63} = %d, %v; want 3, true", got, exact)
	}
	for _, n := range []int{0, 1, 1000, exactCap, exactCap + 1, 200_000, 2_000_000} {
		parts := []*distinct{newDistinct(), newDistinct(), newDistinct()}
		for i := 0; i < n; i++ {
			z := mix64(uint64(i))
			parts[i%3].add(z)
			parts[(i+1)%3].add(z) // every value seen twice, by two counters
		}
		d := parts[0]
		d.merge(parts[1])
		d.merge(parts[2])
		got, exact := d.count()
		if exact != (n <= exactCap) {
			t.Errorf("n=%d: exact = %v", n, exact)
		}
		if exact && got != int64(n) {
			t.Errorf("n=%d: count = %d (exact)", n, got)
		}
		if rel := math.Abs(float64(got)-float64(n)) / float64(n); !exact && rel > 0.02 {
			t.Errorf("n=%d: estimate %d is off by %.1f%%; want under 2%%", n, got, 100*rel)
		}
	}
}
