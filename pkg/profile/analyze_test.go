package profile

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// multiTables is a small model: three Zipf tables large enough to be
// chunk-estimated, one small table that is hot whole.
var multiTables = []tab{{"big", 400_000}, {"mid", 120_000}, {"wide", 60_000}, {"small", 500}}

func multiLogger(t testing.TB, keep float64) (*Logger, Options) {
	t.Helper()
	in := zipfInputs(5, 300_000, multiTables, []float64{1.05, 1.2, 1.1, 1.3})
	lg := loggerOf(t, oneHotSpec(multiTables...), in, keep)
	lg.Info.RowsTotal = 20 * lg.Info.RowsSampled // a 5% sample
	opts := DefaultOptions()
	opts.Dims = map[string]int{"wide": 64}
	opts.ChunkSize = 256 // so that the three large tables are chunk-estimated
	opts.Seed = 3
	return lg, opts
}

// TestOptimizerFitsBudget: over random budgets, the chosen threshold's
// upper bound of hot bytes never exceeds the budget, it is the smallest
// such threshold, a larger budget never gives a larger threshold, and
// the exact hot bytes on the sample usually lie inside the interval.
func TestOptimizerFitsBudget(t *testing.T) {
	lg, opts := multiLogger(t, 0)
	ctx := context.Background()
	for _, method := range []Method{MethodTInterval, MethodExact} {
		opts.Method = method
		// The end-to-end path once, then the optimizer alone per budget.
		if _, err := Analyze(ctx, lg, opts); err != nil {
			t.Fatalf("%s: Analyze error %v; want none", method, err)
		}
		a := newAnalysis(lg, opts.withDefaults())
		chunked := 0
		for _, te := range a.tabs {
			if te.chunked {
				chunked++
			}
		}
		if want := map[Method]int{MethodTInterval: 3, MethodExact: 0}[method]; chunked != want {
			t.Fatalf("%s: %d tables chunk-estimated; want %d", method, chunked, want)
		}
		whole := a.upperBytes(math.Inf(1))
		all := a.upperBytes(0)
		r := rand.New(rand.NewPCG(1, 2))
		type run struct {
			budget int64
			t      float64
		}
		var runs []run
		inside := 0
		for i := 0; i < 200; i++ {
			// log-uniform between the whole tables' bytes and everything seen
			budget := int64(whole * math.Pow(all/whole, r.Float64()))
			a.opts.Budget = budget
			res, err := a.threshold()
			if err != nil {
				t.Fatalf("%s: threshold(budget %d) error %v; want none", method, budget, err)
			}
			if res.HotBytes.High > float64(budget) {
				t.Errorf("%s: budget %d: hot bytes high = %.0f; want <= budget", method, budget, res.HotBytes.High)
			}
			if u := a.upperBytes(res.Threshold); u > float64(budget) {
				t.Errorf("%s: budget %d: optimizer bound at t = %v is %.0f; want <= budget", method, budget, res.Threshold, u)
			}
			if tl := res.Threshold * (1 - 1e-9); tl > 1/float64(lg.Accesses(0)) && a.upperBytes(tl) <= float64(budget) {
				t.Errorf("%s: budget %d: t = %v fits, and so does the smaller t = %v; want the smallest", method, budget, res.Threshold, tl)
			}
			if res.HotBytes.Contains(float64(res.HotBytesExactSample)) {
				inside++
			}
			runs = append(runs, run{budget, res.Threshold})
		}
		sort.Slice(runs, func(i, j int) bool { return runs[i].budget < runs[j].budget })
		for i := 1; i < len(runs); i++ {
			if runs[i].t > runs[i-1].t {
				t.Errorf("%s: budget %d gives t = %v, above t = %v of the smaller budget %d", method, runs[i].budget, runs[i].t, runs[i-1].t, runs[i-1].budget)
			}
		}
		t.Logf("%s: exact sample bytes inside the interval for %d of %d budgets", method, inside, len(runs))
		if inside < len(runs)*9/10 {
			t.Errorf("%s: exact sample bytes inside the interval for %d of %d budgets; want >= 90%%", method, inside, len(runs))
		}
	}
}

func TestOptimizerBudgetTooSmall(t *testing.T) {
	lg, opts := multiLogger(t, 0)
	// The small table alone: 500 rows · (4·16+4) bytes = 34000 bytes.
	opts.Budget = 30000
	_, err := Analyze(context.Background(), lg, opts)
	if !errors.Is(err, ErrBudget) {
		t.Fatalf("Analyze(budget 30000) error = %v; want ErrBudget", err)
	}
	opts.Budget = 34000
	for _, m := range []Method{MethodTInterval, MethodExact} {
		opts.Method = m
		res, err := Analyze(context.Background(), lg, opts)
		if err != nil {
			t.Fatalf("%s: Analyze(budget 34000) error = %v; want none", m, err)
		}
		if res.HotBytes.High != 34000 || !res.Tables[3].Whole {
			t.Errorf("%s: Analyze(budget 34000) = %v bytes high, small table whole %v; want 34000, true", m, res.HotBytes.High, res.Tables[3].Whole)
		}
		// Exactly, no row of a large table fits. (The chunk estimate can
		// also say none while a few top rows, missed by every chunk, are
		// above the cutoff: then its exact figure exceeds the budget by
		// those rows.)
		if m == MethodExact && res.HotRowsExactSample != 500 {
			t.Errorf("%s: Analyze(budget 34000) = %d rows exact; want 500 (the small table only)", m, res.HotRowsExactSample)
		}
	}
}

// TestTopK checks the artifact's rule on two tables of dim 2 (K = L/8):
//
//	table a: ID 0 ×5, IDs 1 and 2 ×3, ID 3 ×1
//	table b: ID 0 ×4, ID 1 ×3, ID 2 ×2
//
// Rank by count, ties by table then ID: a0(5) b0(4) a1(3) a2(3) b1(3)
// b2(2) a3(1) ...
func TestTopK(t *testing.T) {
	spec := oneHotSpec(tab{"a", 10}, tab{"b", 10})
	ca := []int{5, 3, 3, 1}
	cb := []int{4, 3, 2}
	var colA, colB []int64
	for id, n := range ca {
		for range n {
			colA = append(colA, int64(id))
		}
	}
	for id, n := range cb {
		for range n {
			colB = append(colB, int64(id))
		}
	}
	// Inputs pair the accesses up; b has 9 to a's 12, so pad b with IDs
	// 5, 6, 7 once each (rank after everything above).
	colB = append(colB, 5, 6, 7)
	var in [][]int64
	for i := range colA {
		in = append(in, []int64{colA[i], colB[i]})
	}
	lg := loggerOf(t, spec, in, 1)
	cases := []struct {
		budget   int64
		k        int64
		kept     [2]int64
		minCount [2]uint32
		exact    [2]int64 // rows with count >= min count
	}{
		// K = 4: a0 b0 a1 a2. a keeps 3 (min 3), b keeps 1 (min 4).
		{32, 4, [2]int64{3, 1}, [2]uint32{3, 4}, [2]int64{3, 1}},
		// K = 3: a0 b0 a1; the tie a2 is cut, but the cutoff rule k >= 3
		// tags it too.
		{31, 3, [2]int64{2, 1}, [2]uint32{3, 4}, [2]int64{3, 1}},
		// K = 5: adds b1 (3): b's min count becomes 3.
		{40, 5, [2]int64{3, 2}, [2]uint32{3, 3}, [2]int64{3, 2}},
		// K = 1: a0 only; b keeps nothing, its cutoff is its max + 1 = 5.
		{8, 1, [2]int64{1, 0}, [2]uint32{5, 5}, [2]int64{1, 0}},
	}
	for _, c := range cases {
		opts := DefaultOptions()
		opts.Method = MethodTopK
		opts.Dim = 2
		opts.Budget = c.budget
		res, err := Analyze(context.Background(), lg, opts)
		if err != nil {
			t.Fatal(err)
		}
		if res.TopKRows != c.k {
			t.Errorf("budget %d: K = %d; want %d", c.budget, res.TopKRows, c.k)
		}
		for z := 0; z < 2; z++ {
			tr := res.Tables[z]
			if tr.HotRows.Estimate != float64(c.kept[z]) || tr.MinCount != c.minCount[z] || tr.HotRowsExactSample != c.exact[z] {
				t.Errorf("budget %d, table %s: kept %v, min count %d, rows >= it %d; want %d, %d, %d",
					c.budget, tr.Name, tr.HotRows.Estimate, tr.MinCount, tr.HotRowsExactSample, c.kept[z], c.minCount[z], c.exact[z])
			}
			// Bytes include row-wise Adagrad's state: 4·2+4 = 12 per row.
			if tr.HotBytes.Estimate != 12*float64(c.kept[z]) {
				t.Errorf("budget %d, table %s: hot bytes %v; want %d", c.budget, tr.Name, tr.HotBytes.Estimate, 12*c.kept[z])
			}
		}
	}
}

// TestTopKMatchesNaiveRanking compares MethodTopK with a direct sort of
// every seen row on random tables.
func TestTopKMatchesNaiveRanking(t *testing.T) {
	tabs := []tab{{"a", 3000}, {"b", 2000}, {"c", 500}}
	in := zipfInputs(8, 5000, tabs, []float64{1.1, 1.3, 1.5})
	lg := loggerOf(t, oneHotSpec(tabs...), in, 0)
	type row struct {
		z  int
		id int64
		c  uint32
	}
	var all []row
	for z := range tabs {
		lg.ForEach(z, func(id int64, c uint32) { all = append(all, row{z, id, c}) })
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].c > all[j].c }) // stable keeps (table, ID) order
	for _, budget := range []int64{64, 640, 6400, 64000, 1 << 20} {
		opts := DefaultOptions()
		opts.Method = MethodTopK
		opts.Budget = budget
		res, err := Analyze(context.Background(), lg, opts)
		if err != nil {
			t.Fatal(err)
		}
		k := min(int(budget/64), len(all))
		want := make([]int64, len(tabs))
		for _, r := range all[:k] {
			want[r.z]++
		}
		for z := range tabs {
			if got := int64(res.Tables[z].HotRows.Estimate); got != want[z] {
				t.Errorf("budget %d, table %s: kept %d rows; want %d", budget, tabs[z].name, got, want[z])
			}
		}
	}
}

// TestLeaveOneOutShare checks the hot-input share on hand examples.
func TestLeaveOneOutShare(t *testing.T) {
	ctx := context.Background()
	// Two tables A, B. Inputs (A, B): (0,0) (0,1) (0,0) (1,0).
	// Counts: A0 = 3, A1 = 1, B0 = 3, B1 = 1.
	spec := oneHotSpec(tab{"A", 10}, tab{"B", 10})
	lg := loggerOf(t, spec, [][]int64{{0, 0}, {0, 1}, {0, 0}, {1, 0}}, 1)
	cases := []struct {
		min          []uint32
		loo, inSampl float64
	}{
		// k >= 2: inputs 1 and 3 see counts (3,3): in sample hot; leaving
		// themselves out, (2,2): still hot. Inputs 2, 4 hit a count of 1.
		{[]uint32{2, 2}, 0.5, 0.5},
		// k >= 3: in sample inputs 1 and 3 are hot (3 >= 3), but without
		// their own access A0 and B0 have 2 < 3: none is hot.
		{[]uint32{3, 3}, 0, 0.5},
		// A hot whole (0), B needs 2: B0 without the input is 2 (hot) for
		// inputs 1, 3, 4; input 2's B1 is 1 - 1 = 0.
		{[]uint32{0, 2}, 0.75, 0.75},
		// k >= 1: every input is hot in sample; out of sample, input 2's B1
		// and input 4's A1 drop to 0.
		{[]uint32{1, 1}, 0.5, 1},
	}
	for _, c := range cases {
		loo, in, n, err := hotInputShare(ctx, lg, c.min)
		if err != nil {
			t.Fatal(err)
		}
		if loo != c.loo || in != c.inSampl || n != 4 {
			t.Errorf("share(min %v) = %v leave-one-out, %v in sample, %d inputs; want %v, %v, 4", c.min, loo, in, n, c.loo, c.inSampl)
		}
	}

	// A shared table T looked up by features f and g, plus a multi-hot
	// feature h on table H. Inputs (f, g, h):
	//   1: (1, 1, [5])   2: (1, 2, [5, 5])   3: (2, 2, [6])
	// Counts: T1 = 3, T2 = 3, H5 = 3, H6 = 1.
	spec = &dataset.Spec{Train: "x", Label: "label", Sparse: []dataset.SparseFeature{
		{Name: "f", Rows: 10, Table: "T"}, {Name: "g", Rows: 10, Table: "T"}, {Name: "h", Rows: 10, MultiHot: true},
	}}
	b := &dataset.Batch{N: 3, Pos: dataset.Position{File: "mem"}, Sparse: []dataset.SparseColumn{
		{IDs: []int64{1, 1, 2}}, {IDs: []int64{1, 2, 2}}, {IDs: []int64{5, 5, 5, 6}, Offsets: []int32{0, 1, 3, 4}},
	}}
	lg, err := NewLogger(spec, LoggerOptions{KeepInputs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := lg.Add(b); err != nil {
		t.Fatal(err)
	}
	cases = []struct {
		min          []uint32
		loo, inSampl float64
	}{
		// T needs 2, H whole. Input 1 uses T1 twice: 3 - 2 = 1 < 2, cold.
		// Input 2: T1 3-1 = 2, T2 3-1 = 2: hot. Input 3: T2 twice: cold.
		{[]uint32{2, 0}, 1.0 / 3, 1},
		// T needs 2, H needs 2: input 2 uses H5 twice: 3 - 2 = 1 < 2, cold.
		// In sample, input 3's H6 = 1 < 2 is the only miss.
		{[]uint32{2, 2}, 0, 2.0 / 3},
	}
	for _, c := range cases {
		loo, in, _, err := hotInputShare(ctx, lg, c.min)
		if err != nil {
			t.Fatal(err)
		}
		if !near(loo, c.loo, 1e-12) || !near(in, c.inSampl, 1e-12) {
			t.Errorf("shared/multi-hot share(min %v) = %v leave-one-out, %v in sample; want %v, %v", c.min, loo, in, c.loo, c.inSampl)
		}
	}
	// A cancelled share is one cancellation, whatever the number of
	// workers that saw it (the CLI prints the error as it is).
	for range 4 { // more blocks than workers (the block is only read)
		lg.blocks = append(lg.blocks, lg.blocks[0])
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, _, err := hotInputShare(cctx, lg, cases[0].min); err == nil || err.Error() != context.Canceled.Error() {
		t.Errorf("cancelled share: error %q; want %q", err, context.Canceled)
	}
}

// TestMergeEqualsWhole: loggers of the two halves of the inputs, merged,
// equal the logger of all inputs, and so do their results.
func TestMergeEqualsWhole(t *testing.T) {
	spec := oneHotSpec(multiTables...)
	in := zipfInputs(12, 100_000, multiTables, []float64{1.05, 1.2, 1.1, 1.3})
	whole := loggerOf(t, spec, in, 1)
	a := loggerOf(t, spec, in[:37_000], 1)
	b := loggerOf(t, spec, in[37_000:], 1)
	for _, l := range []*Logger{whole, a, b} {
		l.Info.RowsTotal = 20 * l.Info.RowsSampled
		l.Info.Sampling = SamplingRows
		l.Info.SampleRate = 5
	}
	if err := a.Merge(b); err != nil {
		t.Fatal(err)
	}
	if a.Info != whole.Info {
		t.Errorf("merged info = %+v; want %+v", a.Info, whole.Info)
	}
	for z := range multiTables {
		if a.Accesses(z) != whole.Accesses(z) {
			t.Errorf("table %d: merged accesses %d; want %d", z, a.Accesses(z), whole.Accesses(z))
		}
		for id := int64(0); id < multiTables[z].rows; id++ {
			if a.Count(z, id) != whole.Count(z, id) {
				t.Fatalf("table %d, id %d: merged count %d; want %d", z, id, a.Count(z, id), whole.Count(z, id))
			}
		}
	}
	if a.KeptInputs() != whole.KeptInputs() {
		t.Errorf("merged kept inputs = %d; want %d", a.KeptInputs(), whole.KeptInputs())
	}
	opts := DefaultOptions()
	opts.Budget = 1 << 20
	opts.ChunkSize = 256 // so that the large tables are chunk-estimated
	ra, err := Analyze(context.Background(), a, opts)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := Analyze(context.Background(), whole, opts)
	if err != nil {
		t.Fatal(err)
	}
	if ra.Tables[0].Exact || ra.HotBytes.Low == ra.HotBytes.High {
		t.Errorf("merged result: table %s exact, hot bytes %+v; want a chunk estimate with an interval", ra.Tables[0].Name, ra.HotBytes)
	}
	ja, _ := json.Marshal(ra)
	jw, _ := json.Marshal(rw)
	if string(ja) != string(jw) {
		t.Errorf("merged result =\n%s\nwant\n%s", ja, jw)
	}

	// Loggers of other tables do not merge.
	other := loggerOf(t, oneHotSpec(tab{"big", 10}), [][]int64{{1}}, 0)
	if err := a.Merge(other); !errors.Is(err, ErrMismatch) {
		t.Errorf("Merge(other tables) error = %v; want ErrMismatch", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	o := Options{SampleRate: 150, Sampling: "bogus", Budget: -1, Confidence: 1, Chunks: 1, ChunkSize: 0,
		Method: "guess", Dim: -2, Dims: map[string]int{"x": 0}, Optimizer: "adam", Workers: 0, BatchRows: 0}
	err := o.Validate()
	if !errors.Is(err, ErrOptions) {
		t.Fatalf("Validate() = %v; want ErrOptions", err)
	}
	var n int
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		n = len(j.Unwrap())
	}
	if n != 12 {
		t.Errorf("Validate() reported %d problems; want 12:\n%v", n, err)
	}
	d := DefaultOptions()
	if err := d.Validate(); err != nil {
		t.Errorf("DefaultOptions().Validate() = %v; want nil", err)
	}
	for _, c := range []struct {
		opt  string
		want int64
	}{{OptimizerSGD, 64}, {OptimizerAdagrad, 68}, {OptimizerAdagradFull, 128}} {
		if got := BytesPerRow(16, c.opt); got != c.want {
			t.Errorf("BytesPerRow(16, %q) = %d; want %d", c.opt, got, c.want)
		}
	}
}

// TestDeterministic: the same seed gives the same result; another seed
// draws other chunks.
func TestDeterministic(t *testing.T) {
	lg, opts := multiLogger(t, 0.5)
	opts.Budget = 8 << 20
	r1, err := Analyze(context.Background(), lg, opts)
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := Analyze(context.Background(), lg, opts)
	j1, _ := json.Marshal(r1)
	j2, _ := json.Marshal(r2)
	if string(j1) != string(j2) {
		t.Errorf("two runs with seed %d differ:\n%s\n%s", opts.Seed, j1, j2)
	}
	opts.Seed++
	r3, _ := Analyze(context.Background(), lg, opts)
	if slices.Equal([]float64{r3.HotRows.Estimate}, []float64{r1.HotRows.Estimate}) {
		t.Errorf("seeds %d and %d gave the same estimate %v; want different chunks", opts.Seed-1, opts.Seed, r1.HotRows.Estimate)
	}
}

// TestPromoteSpareBudget: once every sampled row fits, the spare budget
// takes whole tables; the bound still fits, the share of hot inputs only
// grows, and a budget for every row of every table makes every input hot.
// NoPromote keeps the paper's threshold alone.
func TestPromoteSpareBudget(t *testing.T) {
	lg, opts := multiLogger(t, 0.2)
	ctx := context.Background()
	a := newAnalysis(lg, opts.withDefaults())
	seen := a.upperBytes(0) // every sampled row hot
	var all float64
	for _, te := range a.tabs {
		all += float64(te.info.Rows) * float64(te.bpr)
	}
	promoted := func(r *Result) (n int) {
		for _, tr := range r.Tables {
			if tr.Promoted {
				n++
				if !tr.Whole || tr.MinCount != 0 || tr.HotRowsExactSample != tr.Rows {
					t.Errorf("promoted table %s: whole %v, min count %d, hot rows %d of %d; want whole, 0, all", tr.Name, tr.Whole, tr.MinCount, tr.HotRowsExactSample, tr.Rows)
				}
			}
		}
		return n
	}
	for _, budget := range []float64{seen * 1.5, seen * 3, all} {
		opts.Budget = int64(math.Ceil(budget))
		opts.NoPromote = true
		strict, err := Analyze(ctx, lg, opts)
		if err != nil {
			t.Fatal(err)
		}
		opts.NoPromote = false
		res, err := Analyze(ctx, lg, opts)
		if err != nil {
			t.Fatal(err)
		}
		if n := promoted(strict); n != 0 {
			t.Errorf("budget %.0f, NoPromote: %d tables promoted; want 0", budget, n)
		}
		if res.Threshold != strict.Threshold {
			t.Errorf("budget %.0f: threshold %v with promotion, %v without; want equal", budget, res.Threshold, strict.Threshold)
		}
		if res.HotBytes.High > float64(opts.Budget) {
			t.Errorf("budget %.0f: hot bytes high %.0f; want <= budget", budget, res.HotBytes.High)
		}
		if res.HotInputShare < strict.HotInputShare {
			t.Errorf("budget %.0f: hot input share %v with promotion < %v without", budget, res.HotInputShare, strict.HotInputShare)
		}
		n := promoted(res)
		t.Logf("budget %.0f (%.2f of the sampled rows): %d tables promoted, hot inputs %.3f (strict %.3f)", budget, budget/seen, n, res.HotInputShare, strict.HotInputShare)
		if budget == all && (n != 3 || res.HotInputShare != 1) {
			t.Errorf("budget for every row: %d tables promoted, hot input share %v; want 3, 1", n, res.HotInputShare)
		}
		if budget == seen*3 && n == 0 {
			t.Errorf("budget 3x the sampled rows: nothing promoted")
		}
	}
}

func TestDatasetShare(t *testing.T) {
	for _, c := range []struct{ rate, in, out, want float64 }{
		{5, 1, 0.5, 0.525}, {100, 0.9, 0.2, 0.9}, {10, 0.5, 0.5, 0.5}, {5, 1, -1, -1},
	} {
		if got := datasetShare(c.rate, c.in, c.out); !near(got, c.want, 1e-12) {
			t.Errorf("datasetShare(%v, %v, %v) = %v; want %v", c.rate, c.in, c.out, got, c.want)
		}
	}
}

func TestShareWarning(t *testing.T) {
	for _, tc := range []struct {
		share float64
		want  string
	}{{1, "100.0% of inputs are hot"}, {0.9995, "are hot: the budget holds"}, {0.5, ""}, {0.002, ""}, {0, "0.0% of inputs are hot: no mini-batch"}, {-1, ""}} {
		got := ShareWarning(tc.share)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("ShareWarning(%v) = %q; want one containing %q", tc.share, got, tc.want)
		}
	}
}

// TestShareAgainstDirectCount checks blockHot's counts, block by block,
// against a direct count of each kept input: its IDs with their own
// accesses in the input, against the logger's counts. The features cover
// every case of blockHot's general path: one-hot on a densely counted
// table, one-hot on a sparsely counted one, two features sharing a table,
// and a multi-hot feature (TestOneHotShareMatches compares its fast path
// with this one); the cutoffs leave inputs cold, hot
// only with their own accesses, and hot.
func TestShareAgainstDirectCount(t *testing.T) {
	spec := &dataset.Spec{Train: "x", Label: "label", Sparse: []dataset.SparseFeature{
		{Name: "a", Rows: 5000}, {Name: "b", Rows: 1 << 30}, // b: counted in a map
		{Name: "f", Rows: 60, Table: "T"}, {Name: "g", Rows: 60, Table: "T"},
		{Name: "h", Rows: 40, MultiHot: true},
	}}
	const n = 3000
	r := rand.New(rand.NewPCG(5, 9))
	zipfA, zipfB := zipfIDs(r, n, 1.1, 5000, nil), zipfIDs(r, n, 1.3, 300, nil)
	b := &dataset.Batch{N: n, Pos: dataset.Position{File: "mem"}, Sparse: make([]dataset.SparseColumn, 5)}
	b.Sparse[4].Offsets = []int32{0}
	for i := range n {
		b.Sparse[0].IDs = append(b.Sparse[0].IDs, zipfA[i])
		b.Sparse[1].IDs = append(b.Sparse[1].IDs, zipfB[i])
		// Few IDs on T and h, so that inputs often look one up twice.
		b.Sparse[2].IDs = append(b.Sparse[2].IDs, int64(r.IntN(4)))
		b.Sparse[3].IDs = append(b.Sparse[3].IDs, int64(r.IntN(4)))
		for range r.IntN(4) {
			b.Sparse[4].IDs = append(b.Sparse[4].IDs, int64(r.IntN(3)))
		}
		b.Sparse[4].Offsets = append(b.Sparse[4].Offsets, int32(len(b.Sparse[4].IDs)))
	}
	lg, err := NewLogger(spec, LoggerOptions{KeepInputs: 1})
	if err != nil {
		t.Fatal(err)
	}
	for lo := 0; lo < n; lo += 700 { // several blocks
		hi := min(n, lo+700)
		part := &dataset.Batch{N: hi - lo, Pos: dataset.Position{File: "mem", Row: int64(lo)}, Sparse: make([]dataset.SparseColumn, 5)}
		for f := range 4 {
			part.Sparse[f].IDs = b.Sparse[f].IDs[lo:hi]
		}
		off := b.Sparse[4].Offsets
		part.Sparse[4].IDs = b.Sparse[4].IDs[off[lo]:off[hi]]
		for _, o := range off[lo : hi+1] {
			part.Sparse[4].Offsets = append(part.Sparse[4].Offsets, o-off[lo])
		}
		if err := lg.Add(part); err != nil {
			t.Fatal(err)
		}
	}
	if lg.tables[1].dense != nil || lg.tables[0].dense == nil {
		t.Fatal("want table a counted densely and b in a map")
	}
	// Tables: a, b, T, h's. The last cutoffs sit one below the counts of
	// T's and h's ID 0: an input that looks one of them up twice is hot in
	// the sample but not without its own two accesses.
	t0, h0 := lg.Count(2, 0), lg.Count(3, 0)
	for _, mins := range [][]uint32{{1, 1, 1, 1}, {2, 3, 0, 0}, {3, 1, 40, 2}, {0, 0, 600, 300}, {0, 0, 0, 0}, {1, 1, t0 - 1, h0 - 1}} {
		simple := simpleFeatures(lg)
		row := 0
		for _, blk := range lg.blocks {
			hot, hotIn, err := blockHot(context.Background(), lg, blk, mins, simple, nil)
			if err != nil {
				t.Fatal(err)
			}
			var wantHot, wantIn int64
			for i := range int(blk.n) {
				own := map[[2]int64]int64{}
				for f, col := range b.Sparse {
					for _, id := range col.Row(row + i) {
						own[[2]int64{int64(lg.features[f].Table), id}]++
					}
				}
				h, hi := true, true
				for k, m := range own {
					c, mc := int64(lg.Count(int(k[0]), k[1])), int64(mins[k[0]])
					hi = hi && c >= mc
					h = h && c-m >= mc
				}
				if h {
					wantHot++
				}
				if hi {
					wantIn++
				}
			}
			if hot != wantHot || hotIn != wantIn {
				t.Fatalf("cutoffs %v, block at input %d: %d hot, %d hot in sample; the direct count says %d, %d", mins, row, hot, hotIn, wantHot, wantIn)
			}
			row += int(blk.n)
		}
		if row != n {
			t.Fatalf("%d kept inputs; want %d", row, n)
		}
	}
}

// TestOneHotShareMatches: the one-hot fast path of the hot-input share
// counts the same inputs as the general path, block by block, at cutoffs
// that leave inputs cold, hot only with their own access, and hot.
func TestOneHotShareMatches(t *testing.T) {
	tabs := []tab{{"a", 5000}, {"b", 300}, {"c", 40}}
	lg := loggerOf(t, oneHotSpec(tabs...), zipfInputs(11, 20000, tabs, []float64{1.05, 1.2, 1.5}), 1)
	simple := simpleFeatures(lg)
	for _, mins := range [][]uint32{{1, 1, 1}, {2, 5, 0}, {3, 1, 40}, {0, 0, 0}} {
		fast := newOneHotShare(lg, mins, simple)
		if fast == nil {
			t.Fatal("no fast path for one-hot features on tables of their own")
		}
		var total, hotAll int64
		for _, blk := range lg.blocks {
			h, hi, err := blockHot(context.Background(), lg, blk, mins, simple, nil)
			if err != nil {
				t.Fatal(err)
			}
			fh, fhi, err := fast.block(context.Background(), &lg.lay, blk)
			if err != nil {
				t.Fatal(err)
			}
			if fh != h || fhi != hi {
				t.Fatalf("cutoffs %v: fast path %d hot, %d hot in sample; general path %d, %d", mins, fh, fhi, h, hi)
			}
			total += blk.n
			hotAll += h
		}
		if total != 20000 {
			t.Fatalf("%d kept inputs; want 20000", total)
		}
		t.Logf("cutoffs %v: %d of %d hot", mins, hotAll, total)
	}
	if newOneHotShare(lg, []uint32{1, 1, 1}, []bool{true, false, true}) != nil {
		t.Error("fast path with a feature that is multi-hot or shares its table")
	}
}

// TestAppendEntries: a dense table's non-zero counts in ID order, over
// several blocks of rows, large counts included, after what out held.
func TestAppendEntries(t *testing.T) {
	lg := newLogger([]TableInfo{{Name: "t", Rows: 3<<16 + 5}}, []FeatureInfo{{Name: "t"}})
	d := lg.tables[0].dense
	r := rand.New(rand.NewPCG(9, 9))
	want := []uint32{42}
	for i := range d {
		d[i] = []uint32{0, 0, 1, 0x80000000, math.MaxUint32}[r.IntN(5)]
		if d[i] != 0 {
			want = append(want, d[i])
		}
	}
	if got := lg.appendEntries([]uint32{42}, 0); !slices.Equal(got, want) {
		t.Errorf("appendEntries gave %d entries; want %d", len(got), len(want))
	}
}
