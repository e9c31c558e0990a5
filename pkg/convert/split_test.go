package convert

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseSplit(t *testing.T) {
	good := []struct {
		in   string
		want []SplitPart
	}{
		{"train=0.8,valid=0.1,test=0.1", []SplitPart{{"train", 0.8}, {"valid", 0.1}, {"test", 0.1}}},
		{" test = 0.25 , train=0.75", []SplitPart{{"test", 0.25}, {"train", 0.75}}},
		{"train=1", []SplitPart{{"train", 1}}},
	}
	for _, tc := range good {
		got, err := ParseSplit(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseSplit(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	bad := []struct{ in, want string }{
		{"", "not NAME=FRACTION"},
		{"train", "not NAME=FRACTION"},
		{"train=x", "not a number"},
		{"train=0.5,dev=0.5", `unknown part "dev"`},
		{"train=0.5,train=0.5", "given twice"},
		{"valid=0.5,test=0.5", "no train part"},
		{"train=0.8,test=0.1", "sum to 0.9"},
		{"train=1.2,test=-0.2", "not in (0, 1]"},
		{"train=0,test=1", "not in (0, 1]"},
		{"train=NaN,test=1", "not in (0, 1]"},
	}
	for _, tc := range bad {
		_, err := ParseSplit(tc.in)
		if err == nil || !errors.Is(err, ErrSplit) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSplit(%q) = %v; want ErrSplit with %q", tc.in, err, tc.want)
		}
	}
}

func FuzzParseSplit(f *testing.F) {
	for _, s := range []string{"train=0.8,valid=0.1,test=0.1", "train=1", "test=0.5,train=0.5", "train=1e-3,test=0.999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		parts, err := ParseSplit(s)
		if err != nil {
			return
		}
		sum := 0.0
		for _, p := range parts {
			sum += p.Fraction
		}
		if sum < 1-1e-6 || sum > 1+1e-6 {
			t.Errorf("ParseSplit(%q) = %v, summing to %v", s, parts, sum)
		}
		sp := newSplitter(parts, 7, false)
		if got := sp.part([]byte(s), 0); got < 0 || got > 2 || !sp.has(got) {
			t.Errorf("part of a row = %d, not a part of %v", got, parts)
		}
	})
}

// splitInput writes n rows "label,id,t,key": id numbers the rows, t is the
// time (Unix seconds) that times gives row i.
func splitInput(t testing.TB, n int, times func(i int) int64) string {
	var b strings.Builder
	b.WriteString("label,id,t,key\n")
	for i := range n {
		fmt.Fprintf(&b, "%d,%d,%d,k%d\n", i%2, i, times(i), i%97)
	}
	return writeTemp(t, "split.csv", []byte(b.String()))
}

var splitColumns = Columns{Label: "label", Dense: []string{"id"}, Time: "t", TimeFormat: "unix", Sparse: []string{"key"}}

// splitRows converts in with the split and returns, for each part, the ids
// of its rows in output order.
func splitRows(t testing.TB, in string, split string, by string, seed uint64, workers int) (*Result, map[string][]int) {
	t.Helper()
	parts, err := ParseSplit(split)
	if err != nil {
		t.Fatal(err)
	}
	cols := splitColumns
	out := t.TempDir()
	res, err := Run(context.Background(), Options{Format: "csv", Columns: &cols, Inputs: []string{in}, OutDir: out,
		Split: parts, SplitBy: by, SplitSeed: seed, Workers: workers, blockBytes: 4096, IDs: Reindex})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string][]int{}
	for _, p := range parts {
		for _, d := range readPart(t, res, out, p.Name).dense {
			ids[p.Name] = append(ids[p.Name], int(d[0]))
		}
	}
	return res, ids
}

// checkPartition checks that the parts hold every one of n rows once, each
// part in input order.
func checkPartition(t *testing.T, ids map[string][]int, n int) {
	t.Helper()
	seen := make([]bool, n)
	for name, rows := range ids {
		for k, id := range rows {
			if id < 0 || id >= n || seen[id] {
				t.Fatalf("part %s: row id %d out of range or seen twice", name, id)
			}
			seen[id] = true
			if k > 0 && rows[k-1] > id {
				t.Fatalf("part %s: row %d after row %d, not in input order", name, id, rows[k-1])
			}
		}
	}
	for id, ok := range seen {
		if !ok {
			t.Fatalf("row %d is in no part", id)
		}
	}
}

// TestSplitByHash checks proportions, that the parts partition the rows,
// and that the assignment depends on the seed only (not on workers).
func TestSplitByHash(t *testing.T) {
	const n = 20000
	in := splitInput(t, n, func(i int) int64 { return 1_700_000_000 + int64(i) })
	res, ids := splitRows(t, in, "train=0.8,valid=0.1,test=0.1", "", 3, 1)
	checkPartition(t, ids, n)
	// Binomial standard deviation: sqrt(0.1*0.9*n) = 42 rows; allow 5 of them.
	for name, want := range map[string]float64{"train": 0.8, "valid": 0.1, "test": 0.1} {
		if got := len(ids[name]); abs(float64(got)-want*n) > 5*42*2 {
			t.Errorf("part %s has %d rows; want about %.0f", name, got, want*n)
		}
	}
	if res.Rows != int64(len(ids["train"])) || res.ValidRows != int64(len(ids["valid"])) || res.TestRows != int64(len(ids["test"])) {
		t.Errorf("Result rows %d/%d/%d do not match the parts read back", res.Rows, res.ValidRows, res.TestRows)
	}
	if res.Spec.Valid != "valid" || res.Spec.Test != "test" {
		t.Errorf("Spec valid, test = %q, %q; want valid, test", res.Spec.Valid, res.Spec.Test)
	}
	_, again := splitRows(t, in, "train=0.8,valid=0.1,test=0.1", "", 3, 3)
	if !reflect.DeepEqual(ids, again) {
		t.Error("the same seed with other workers gave other parts")
	}
	_, other := splitRows(t, in, "train=0.8,valid=0.1,test=0.1", "", 4, 1)
	if reflect.DeepEqual(ids["test"], other["test"]) {
		t.Error("another seed gave the same test part")
	}
}

// TestSplitByTime checks that the earliest rows go to train and the latest
// to test, in exact proportions when times are distinct, and in expected
// proportions with ties.
func TestSplitByTime(t *testing.T) {
	const n = 5000
	perm := rand.New(rand.NewPCG(1, 2)).Perm(n) // times in no order
	cases := []struct {
		name  string
		time  func(i int) int64
		exact bool
	}{
		{"distinct", func(i int) int64 { return 1_600_000_000 + 7*int64(perm[i]) }, true},
		{"ties", func(i int) int64 { return 1_600_000_000 + 3600*int64(perm[i]%4) }, false}, // 4 hours, 1250 rows each
		{"one time", func(i int) int64 { return 1_600_000_000 }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := splitInput(t, n, tc.time)
			res, ids := splitRows(t, in, "test=0.2,valid=0.1,train=0.7", "t", 5, 2)
			checkPartition(t, ids, n)
			maxOf := func(p string) int64 {
				m := int64(-1 << 62)
				for _, id := range ids[p] {
					m = max(m, tc.time(id))
				}
				return m
			}
			minOf := func(p string) int64 {
				m := int64(1 << 62)
				for _, id := range ids[p] {
					m = min(m, tc.time(id))
				}
				return m
			}
			if maxOf("train") > minOf("valid") || maxOf("valid") > minOf("test") {
				t.Errorf("times overlap: train up to %d, valid %d..%d, test from %d",
					maxOf("train"), minOf("valid"), maxOf("valid"), minOf("test"))
			}
			for name, want := range map[string]int{"train": 3500, "valid": 500, "test": 1000} {
				got := len(ids[name])
				if tc.exact && got != want || !tc.exact && abs(float64(got-want)) > 150 {
					t.Errorf("part %s has %d rows; want %d (exactly: %v)", name, got, want, tc.exact)
				}
			}
			if res.Rows != int64(len(ids["train"])) {
				t.Errorf("Result.Rows = %d; want %d", res.Rows, len(ids["train"]))
			}
		})
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestSplitOptions checks the combinations Validate refuses.
func TestSplitOptions(t *testing.T) {
	in := filepath.Join("testdata", "clicks.csv")
	split := []SplitPart{{PartTrain, 0.9}, {PartTest, 0.1}}
	cols := clicksColumns(t)
	cases := []struct {
		name string
		opts Options
		want string
	}{
		{"split-by without split", Options{Format: "csv", Columns: cols, SplitBy: "ts"}, "needs a split"},
		{"split-by not the time column", Options{Format: "csv", Columns: cols, Split: split, SplitBy: "user"}, "not the time column"},
		{"criteo has no time", Options{Format: "criteo", Split: split, SplitBy: "hour"}, "no time column"},
		{"test part and test inputs", Options{Format: "csv", Columns: cols, Split: split, TestInputs: []string{in}}, "drop one"},
		{"bad fractions", Options{Format: "csv", Columns: cols, Split: []SplitPart{{PartTrain, 0.5}}}, "sum to"},
		{"columns for criteo", Options{Format: "criteo", Columns: cols}, "csv only"},
		{"csv without columns", Options{Format: "csv"}, "needs column roles"},
	}
	for _, tc := range cases {
		tc.opts.Inputs, tc.opts.OutDir = []string{in}, t.TempDir()
		err := tc.opts.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v; want an error with %q", tc.name, err, tc.want)
		}
	}
}

// TestSplitAvazuByHour splits the Avazu sample by its hour column.
func TestSplitAvazuByHour(t *testing.T) {
	in := sharedFile(t, "avazu-sample100.csv")
	out := t.TempDir()
	res, err := Run(context.Background(), Options{Format: "avazu", Inputs: []string{in}, OutDir: out,
		Split: []SplitPart{{PartTrain, 0.5}, {PartTest, 0.5}}, SplitBy: "hour"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows+res.TestRows != 100 || res.Rows < 30 || res.Rows > 70 {
		t.Errorf("rows = %d train, %d test; want 100 shared about evenly", res.Rows, res.TestRows)
	}
}

// TestStandardize checks that a standardized column is scaled by the mean and
// standard deviation of the training rows only, in every part.
func TestStandardize(t *testing.T) {
	const n = 1000
	in := splitInput(t, n, func(i int) int64 { return 1_700_000_000 + int64(i) }) // time order = id order
	cols := Columns{Label: "label", Dense: []string{"id", "t:standardize"}, Sparse: []string{"key"}}
	out := t.TempDir()
	res, err := Run(context.Background(), Options{Format: "csv", Columns: &cols, Inputs: []string{in}, OutDir: out,
		Split: []SplitPart{{PartTrain, 0.8}, {PartTest, 0.2}}, SplitBy: "", SplitSeed: 2, blockBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var sum, sq float64
	train := readPart(t, res, out, "train")
	for _, d := range train.dense {
		x := float64(d[0]) // the id; t is 1.7e9 + id
		sum += x
		sq += x * x
	}
	m := float64(len(train.dense))
	mean, std := 1_700_000_000+sum/m, math.Sqrt(sq/m-(sum/m)*(sum/m))
	if len(res.Standardized) != 1 || res.Standardized[0].Name != "t" ||
		math.Abs(res.Standardized[0].Mean-mean) > 1e-3 || math.Abs(res.Standardized[0].Std-std)/std > 1e-9 {
		t.Fatalf("Standardized = %+v; want t with mean %v, std %v", res.Standardized, mean, std)
	}
	for _, part := range []string{"train", "test"} {
		for _, d := range readPart(t, res, out, part).dense {
			want := float32((1_700_000_000 + float64(d[0]) - mean) / std)
			if math.Abs(float64(d[1]-want)) > 1e-5 {
				t.Fatalf("%s: id %v standardized to %v; want %v", part, d[0], d[1], want)
			}
		}
	}
}

// TestSplitVocabularyFromTrain checks that in reindex mode only training
// rows number values: a value first seen in the test part gets the shared
// unseen ID, as with TestInputs.
func TestSplitVocabularyFromTrain(t *testing.T) {
	in := writeTemp(t, "log.csv", []byte("t,v,y\n1,a,0\n2,b,1\n3,a,0\n4,late,1\n"))
	out := t.TempDir()
	res, err := Run(context.Background(), Options{Format: "csv", Inputs: []string{in}, OutDir: out, IDs: Reindex,
		Columns: &Columns{Label: "y", Sparse: []string{"v"}, Time: "t", TimeFormat: "unix"},
		Split:   []SplitPart{{PartTrain, 0.75}, {PartTest, 0.25}}, SplitBy: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts[0] != 2 || res.Spec.Sparse[0].Rows != 4 {
		t.Errorf("Counts, Rows = %v, %d; want 2 values (a, b) in a table of 4 rows", res.Counts, res.Spec.Sparse[0].Rows)
	}
	train, test := readPart(t, res, out, "train"), readPart(t, res, out, "test")
	if got, want := train.sparse, [][][]int64{{{2}}, {{3}}, {{2}}}; !reflect.DeepEqual(got, want) {
		t.Errorf("train IDs = %v; want %v", got, want)
	}
	if got, want := test.sparse, [][][]int64{{{1}}}; !reflect.DeepEqual(got, want) {
		t.Errorf("test IDs = %v; want %v (the unseen ID)", got, want)
	}
}

// TestSplitCriteo checks that a hash split works for the Criteo format: the
// parts share out every line, each in input order.
func TestSplitCriteo(t *testing.T) {
	const n = 3000
	in := writeTemp(t, "day.tsv", synthCriteo(n, 5))
	out := t.TempDir()
	res, err := Run(context.Background(), Options{Format: "criteo", Inputs: []string{in}, OutDir: out,
		Split: []SplitPart{{PartTrain, 0.6}, {PartValid, 0.4}}, SplitSeed: 8})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows+res.ValidRows != n || res.TestRows != 0 || abs(float64(res.Rows)-0.6*n) > 5*27 {
		t.Errorf("rows %d/%d/%d; want %d shared about 60/40, no test", res.Rows, res.ValidRows, res.TestRows, n)
	}
	// Every row of the unsplit conversion is in exactly one part.
	_, whole := convertT(t, Options{Format: "criteo", Inputs: []string{in}})
	count := map[string]int{}
	key := func(r convertedRows, i int) string { return fmt.Sprint(r.label[i], r.dense[i], r.sparse[i]) }
	for i := range whole.label {
		count[key(whole, i)]++
	}
	for _, part := range []string{"train", "valid"} {
		r := readConverted(t, res, out, part)
		for i := range r.label {
			count[key(r, i)]--
		}
	}
	for k, c := range count {
		if c != 0 {
			t.Fatalf("row %s: %d more in the whole than in the parts", k, c)
		}
	}
}
