package profile

import (
	"math"

	"github.com/picasso-ctr/picasso/pkg/dataset"
	"math/rand/v2"
	"slices"
	"testing"
)

func near(got, want, tol float64) bool {
	return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))
}

// TestEquations checks Eq. 1-4 against values computed by hand.
func TestEquations(t *testing.T) {
	// Eq. 1, the paper's example: T = 60.5M inputs' worth of accesses at a
	// threshold giving 6.05k accesses (t = 1e-4), sampled at x = 5%:
	// H = 1e-4 · 60.5e6 · 5/100 = 6050 · 0.05 = 302.5.
	cutoffs := []struct {
		t, T, x, want float64
		min           uint32
	}{
		{1e-4, 60.5e6, 5, 302.5, 303},
		// 0.01 · 1000 · 5/100 = 0.5: below one access, so any seen row.
		{0.01, 1000, 5, 0.5, 1},
		// 0.1 · 600 · 5/100 = 3 exactly: the rule is k >= 3.
		{0.1, 600, 5, 3, 3},
		// 0.3 · 700 · 10/100 = 21 (0.3·700 rounds to 210.00000000000003).
		{0.3, 700, 10, 21, 21},
	}
	for _, c := range cutoffs {
		h := Cutoff(c.t, c.T, c.x)
		if !near(h, c.want, 1e-12) {
			t.Errorf("Cutoff(%v, %v, %v) = %v; want %v", c.t, c.T, c.x, h, c.want)
		}
		if got := MinCount(h); got != c.min {
			t.Errorf("MinCount(%v) = %d; want %d", h, got, c.min)
		}
	}

	// Eq. 2: entries with k >= H. Chunk {0, 3, 5, 1, 7} at H = 3 holds
	// 3, 5 and 7: C = 3; at H = 2.5 the same; at H = 7, one; at 8, none.
	chunk := []uint32{0, 3, 5, 1, 7}
	for _, c := range []struct {
		h    float64
		want int
	}{{3, 3}, {2.5, 3}, {7, 1}, {8, 0}, {0, 5}} {
		if got := ChunkCount(chunk, c.h); got != c.want {
			t.Errorf("ChunkCount(%v, %v) = %d; want %d", chunk, c.h, got, c.want)
		}
	}

	// Eq. 3: C = {2, 4, 6}: ȳ = 12/3 = 4; s² = ((2-4)² + 0 + (6-4)²)/(3-1)
	// = 8/2 = 4, s = 2.
	mean, sd := ChunkStats([]int{2, 4, 6})
	if mean != 4 || !near(sd, 2, 1e-12) {
		t.Errorf("ChunkStats({2,4,6}) = %v, %v; want 4, 2", mean, sd)
	}

	// Eq. 4 with n = 3 chunks of N = 6, 95%: for 2 degrees of freedom the
	// t CDF is 1/2 + t/(2·sqrt(2+t²)), so t_{0.025,2} solves
	// t/sqrt(2+t²) = 0.95: t² = 0.9025·2/(1-0.9025) = 1.805/0.0975, t =
	// 4.302652729749464. Half-width = t·sqrt((6-3)/6 · 4/3) = t·sqrt(2/3)
	// = 3.513101242759784; interval 4 ± 3.5131 = [0.486899, 7.513101].
	tq := math.Sqrt(1.805 / 0.0975)
	if got := TQuantile(0.95, 3); !near(got, tq, 1e-9) {
		t.Errorf("TQuantile(0.95, 3) = %v; want %v", got, tq)
	}
	iv := TInterval([]int{2, 4, 6}, 6, 0.95)
	want := Interval{0.4868987572402159, 4, 7.5131012427597845}
	if !near(iv.Low, want.Low, 1e-9) || iv.Estimate != want.Estimate || !near(iv.High, want.High, 1e-9) {
		t.Errorf("TInterval({2,4,6}, 6, 0.95) = %+v; want %+v", iv, want)
	}
	// With n = N the finite-population factor (N-n)/N is 0: no width.
	if iv := TInterval([]int{2, 4, 6}, 3, 0.95); iv.Low != 4 || iv.High != 4 {
		t.Errorf("TInterval({2,4,6}, 3, 0.95) = %+v; want [4, 4]", iv)
	}
}

// TestCutoffInAnalysis checks that a table's cutoff, integer rule and hot
// rows follow Eq. 1 on a tiny logger: table a gets ID 0 six times, ID 1
// three times, ID 2 once (A = 10) in 10 sampled inputs of 200 (x = 5%).
// T = 10·100/5 = 200; at t = 0.25, H = 0.25·200·5/100 = 2.5, so rows with
// k >= 3 are hot: IDs 0 and 1, 2 rows of 4·16+4 = 68 bytes (row-wise
// Adagrad, dim 16) = 136 bytes.
func TestCutoffInAnalysis(t *testing.T) {
	spec := oneHotSpec(tab{"a", 100})
	var in [][]int64
	for _, c := range []struct{ id, n int }{{0, 6}, {1, 3}, {2, 1}} {
		for range c.n {
			in = append(in, []int64{int64(c.id)})
		}
	}
	lg := loggerOf(t, spec, in, 1)
	lg.Info.RowsTotal = 200
	opts := DefaultOptions()
	opts.SmallTableBytes = -1
	a := newAnalysis(lg, opts)
	res := a.resultAt(0.25)
	tr := res.Tables[0]
	if tr.AccessesSampled != 10 || !near(tr.AccessesTotalEstimate, 200, 1e-12) {
		t.Errorf("accesses = %d, total estimate %v; want 10, 200", tr.AccessesSampled, tr.AccessesTotalEstimate)
	}
	if !near(tr.Cutoff, 2.5, 1e-12) || tr.MinCount != 3 {
		t.Errorf("cutoff = %v, min count %d; want 2.5, 3", tr.Cutoff, tr.MinCount)
	}
	if tr.HotRows != exactInterval(2) || tr.HotRowsExactSample != 2 || !tr.Exact {
		t.Errorf("hot rows = %+v, exact %d (exact flag %v); want 2, 2, true", tr.HotRows, tr.HotRowsExactSample, tr.Exact)
	}
	if tr.HotBytesExactSample != 136 || res.HotBytes.High != 136 {
		t.Errorf("hot bytes = %d exact, %v high; want 136", tr.HotBytesExactSample, res.HotBytes.High)
	}
}

// TestStepsMatchEquations checks the estimator's precomputed step function
// against a direct evaluation of Eq. 2-4 on its drawn chunks, at every
// cutoff.
func TestStepsMatchEquations(t *testing.T) {
	const rows = 20000
	spec := oneHotSpec(tab{"a", rows})
	in := zipfInputs(3, 30000, []tab{{"a", rows}}, []float64{1.1})
	lg := loggerOf(t, spec, in, 0)
	const n, m, conf = 7, 64, 0.99
	te := &tableEst{info: lg.tables[0].info}
	entries := lg.entries(0)
	te.buildHistogram(entries)
	te.drawChunksFrom(entries, 0, n, m, 42)
	te.buildSteps(conf)
	if te.N != (te.logged+m-1)/m || len(te.chunks) != n {
		t.Fatalf("N = %d, %d chunks; want %d, %d", te.N, len(te.chunks), (te.logged+m-1)/m, n)
	}
	var seen int64
	for _, ch := range te.chunks {
		seen += int64(len(ch))
	}
	for c := uint32(1); c <= te.maxCount()+1; c++ {
		C := make([]int, n)
		var sum int64
		for i, ch := range te.chunks {
			C[i] = ChunkCount(ch, float64(c))
			sum += int64(C[i])
		}
		iv := TInterval(C, te.N, conf).scale(float64(te.N))
		lo, hi := float64(sum), float64(te.logged-(seen-sum))
		clamp := func(x float64) float64 { return math.Min(math.Max(x, lo), hi) }
		want := Interval{clamp(iv.Low), clamp(iv.Estimate), clamp(iv.High)}
		if sum == 0 {
			want = Interval{}
		}
		got := te.rows(c)
		if !near(got.Low, want.Low, 1e-9) || !near(got.Estimate, want.Estimate, 1e-9) || !near(got.High, want.High, 1e-9) {
			t.Fatalf("rows(%d) = %+v; want %+v", c, got, want)
		}
		if u := te.upperRows(c); u < got.High {
			t.Fatalf("upperRows(%d) = %v; below the interval's high %v", c, u, got.High)
		}
		if c > 1 && te.upperRows(c) > te.upperRows(c-1) {
			t.Fatalf("upperRows(%d) = %v > upperRows(%d) = %v; want non-increasing", c, te.upperRows(c), c-1, te.upperRows(c-1))
		}
	}
}

// TestSortUint64s compares the radix sort with slices.Sort on values that
// share none, some or all of their bytes, short and long.
func TestSortUint64s(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 255, 256, 1000, 40_000} {
		for _, mask := range []uint64{0, 0xff, 0xffff_ffff_0000_003f, ^uint64(0)} {
			a := make([]uint64, n)
			for i := range a {
				a[i] = (r.Uint64() & mask) | 0x5500_0000_0000_0000
				if i%7 == 0 {
					a[i] = ^uint64(r.IntN(5))<<32 | uint64(r.IntN(35))
				}
			}
			want := slices.Clone(a)
			slices.Sort(want)
			if got, _ := sortUint64s(a, nil); !slices.Equal(got, want) {
				t.Fatalf("n=%d mask %x: radix sort differs from slices.Sort", n, mask)
			}
		}
	}
}

func TestPermutationIsBijection(t *testing.T) {
	for _, n := range []uint64{1, 2, 3, 4, 5, 7, 16, 17, 1000, 1023, 1024, 1025, 65537} {
		p := newPermutation(n, key(9, n))
		seen := make([]bool, n)
		fixed := 0
		for i := uint64(0); i < n; i++ {
			j := p.at(i)
			if j >= n || seen[j] {
				t.Fatalf("n=%d: at(%d) = %d repeats or is out of range", n, i, j)
			}
			seen[j] = true
			if j == i {
				fixed++
			}
		}
		if n >= 1000 && fixed > 10 {
			t.Errorf("n=%d: %d fixed points; a random permutation has about 1", n, fixed)
		}
	}
}

// TestCoverage measures how often the t-interval covers the exact hot count
// of the logger on a Zipf table of 500k rows (s = 1.05) at 95% confidence,
// for IDs spread at random and IDs in popularity order, over 200 draws
// (samples × estimator seeds) per case; the target is the exact count on
// each sample's logger:
//   - 225k sampled accesses (5% of 4.5M inputs): about 51k rows seen, so
//     N = 51 chunks of which n = 35 are drawn;
//   - 2M sampled accesses (5% of 40M inputs): about 200k rows seen, N ≈ 200.
//
// For contrast it logs the coverage of plain consecutive chunks of the
// logger's entries in ID order (no permutation).
func TestCoverage(t *testing.T) {
	const (
		rows = 500_000
		n, m = 35, 1024
		conf = 0.95
	)
	spec := oneHotSpec(tab{"z", rows})
	cutoffs := []uint32{2, 5}
	cases := []struct {
		accesses, samples, seeds int
	}{
		{225_000, 8, 25},
		{2_000_000, 1, 200},
	}
	for _, tc := range cases {
		for _, order := range []string{"spread", "popularity"} {
			hits := make([]int, len(cutoffs))
			plainHits := make([]int, len(cutoffs))
			relErr := make([][]float64, len(cutoffs))
			trials := 0
			var E, N int64
			exact := make([]int64, len(cutoffs))
			for s := 0; s < tc.samples; s++ {
				r := rand.New(rand.NewPCG(uint64(s), 11))
				var ids []int64
				if order == "spread" {
					ids = make([]int64, rows)
					for i, p := range r.Perm(rows) {
						ids[i] = int64(p)
					}
				}
				draws := zipfIDs(r, tc.accesses, 1.05, rows, ids)
				lg, err := NewLogger(spec, LoggerOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for lo := 0; lo < len(draws); lo += 1 << 16 {
					hi := min(lo+1<<16, len(draws))
					b := batchOf(nil, 0)
					b.N = hi - lo
					b.Sparse = []dataset.SparseColumn{{IDs: draws[lo:hi]}}
					if err := lg.Add(b); err != nil {
						t.Fatal(err)
					}
				}
				base := tableEst{info: lg.tables[0].info}
				entries := lg.entries(0) // logger entries in ID order
				base.buildHistogram(entries)
				var want []uint32
				lg.ForEach(0, func(_ int64, c uint32) { want = append(want, c) })
				if !slices.Equal(entries, want) || base.logged != int64(len(want)) {
					t.Fatalf("entries gave %d counts (logged %d); want the logger's %d in ID order", len(entries), base.logged, len(want))
				}
				for seed := 0; seed < tc.seeds; seed++ {
					te := base
					te.drawChunksFrom(entries, 0, n, m, uint64(1000*s+seed))
					te.buildSteps(conf)
					trials++
					E, N = te.logged, te.N
					pr := rand.New(rand.NewPCG(uint64(seed), uint64(s)))
					picks := pr.Perm(int(te.N))[:n]
					for k, c := range cutoffs {
						exact[k] = te.exactHot(c)
						x := float64(exact[k])
						iv := te.rows(c)
						if iv.Contains(x) {
							hits[k]++
						}
						relErr[k] = append(relErr[k], math.Abs(iv.Estimate-x)/x)
						C := make([]int, n)
						for i, p := range picks {
							lo, hi := chunkBounds(int64(p), te.N, te.logged)
							C[i] = ChunkCount(entries[lo:hi], float64(c))
						}
						if TInterval(C, te.N, conf).scale(float64(te.N)).Contains(x) {
							plainHits[k]++
						}
					}
				}
			}
			for k, c := range cutoffs {
				cov := float64(hits[k]) / float64(trials)
				slices.Sort(relErr[k])
				t.Logf("%d accesses, %s IDs, cutoff %d (E = %d rows seen, N = %d chunks, %d hot): coverage %.3f (nominal %.2f) over %d draws, median relative error %.4f; plain consecutive chunks %.3f",
					tc.accesses, order, c, E, N, exact[k], cov, conf, trials, relErr[k][len(relErr[k])/2], float64(plainHits[k])/float64(trials))
				if cov < conf-0.05 {
					t.Errorf("%d accesses, %s IDs, cutoff %d: coverage %.3f; want >= %.2f", tc.accesses, order, c, cov, conf-0.05)
				}
			}
		}
	}
}

// TestPrefaultChoice: a sample maps the count tables it will give at least
// 16 accesses a page, tables shared by two features counting both, and
// leaves a large table it only grazes unmapped.
func TestPrefaultChoice(t *testing.T) {
	spec := oneHotSpec(tab{"small", 1000}, tab{"mid", 640_000}, tab{"huge", 1 << 26})
	spec.Sparse = append(spec.Sparse, dataset.SparseFeature{Name: "mid2", Rows: 640_000, Table: "mid"})
	lg, err := NewLogger(spec, LoggerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// 6,000 inputs: 12,000 accesses of mid (640,000 rows, 10,000 needed),
	// 6,000 of huge (over a million needed).
	if got := lg.toPrefault(6000); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("tables mapped for 6,000 inputs: %v; want [0 1]", got)
	}
	if got := lg.toPrefault(4000); !slices.Equal(got, []int{0}) {
		t.Errorf("tables mapped for 4,000 inputs: %v; want [0]", got)
	}
	lg.prefaultFor(6000) // maps small and mid; the counts stay zero
	for z := range 3 {
		if n := lg.Accesses(z); n != 0 || lg.Count(z, 5) != 0 {
			t.Fatalf("table %d: %d accesses, count %d after mapping; want zeros", z, n, lg.Count(z, 5))
		}
	}
}
