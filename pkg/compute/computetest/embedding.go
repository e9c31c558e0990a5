package computetest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/compute"
)

// randomBags returns a batch of n samples for t: even tables have one ID per
// sample (nil offsets), odd ones bags of 0..4 IDs. IDs come from a small
// range so that duplicates, within and across bags, are common.
func randomBags(r *rand.Rand, t *compute.PackedTable, n int) *compute.Bags {
	b := &compute.Bags{N: n, IDs: make([][]int64, t.Tables()), Offsets: make([][]int32, t.Tables())}
	for i := range t.Tables() {
		rows := t.TableRows(i)
		pick := func() int64 {
			if r.IntN(2) == 0 {
				return r.Int64N(min(rows, 4)) // hot IDs
			}
			return r.Int64N(rows)
		}
		if i%2 == 0 {
			for range n {
				b.IDs[i] = append(b.IDs[i], pick())
			}
			continue
		}
		off := []int32{0}
		for range n {
			for range r.IntN(5) {
				b.IDs[i] = append(b.IDs[i], pick())
			}
			off = append(off, int32(len(b.IDs[i])))
		}
		b.Offsets[i] = off
	}
	return b
}

func randomTable(t *testing.T, r *rand.Rand, dim int, rows []int64) *compute.PackedTable {
	t.Helper()
	pt, err := compute.NewPackedTable(dim, rows)
	if err != nil {
		t.Fatalf("NewPackedTable(%d, %v): %v", dim, rows, err)
	}
	fill(r, pt.W)
	return pt
}

func cloneTable(t *testing.T, src *compute.PackedTable) *compute.PackedTable {
	t.Helper()
	rows := make([]int64, src.Tables())
	for i := range rows {
		rows[i] = src.TableRows(i)
	}
	dst, err := compute.NewPackedTable(src.Dim, rows)
	if err != nil {
		t.Fatal(err)
	}
	copy(dst.W, src.W)
	if src.Acc != nil {
		dst.Acc = slices.Clone(src.Acc)
	}
	if err := dst.SetPlan(src.Plan()); err != nil {
		t.Fatal(err)
	}
	return dst
}

// embeddingPlans returns the plans the suite runs for a table: one shard per
// table, a planner's split of a heavy table, and a hand-made 3-way split.
func embeddingPlans(pt *compute.PackedTable) map[string][]compute.Shard {
	stats := make([]compute.TableStat, pt.Tables())
	for i := range stats {
		stats[i] = compute.TableStat{Dim: pt.Dim, Lookups: 1}
	}
	stats[1].Lookups = 20
	manual := []compute.Shard{}
	for i := range pt.Tables() {
		parts := 1
		if i == 1 || i == 2 {
			parts = 3
		}
		for p := range parts {
			manual = append(manual, compute.Shard{Table: i, Part: p, Parts: parts})
		}
	}
	slices.Reverse(manual)
	return map[string][]compute.Shard{
		"default": pt.Plan(),
		"planner": compute.PlanShards(stats, 0, 0),
		"manual":  manual,
	}
}

// TestEmbeddingBag checks EmbeddingBagForward and EmbeddingBagUpdate (SGD
// and row-wise Adagrad) against the reference, under several shard plans,
// including the rows reported as touched.
func TestEmbeddingBag(t *testing.T, b compute.Backend) {
	ref := compute.Reference()
	for _, dim := range []int{1, 3, 16} {
		for _, n := range []int{0, 1, 17, 300} {
			r := newRand(uint64(dim*1000 + n))
			base := randomTable(t, r, dim, []int64{5, 40, 1, 17, 3, 1000})
			bags := randomBags(r, base, n)
			for name, plan := range embeddingPlans(base) {
				what := fmt.Sprintf("dim=%d n=%d plan=%s", dim, n, name)
				pt := cloneTable(t, base)
				if err := pt.SetPlan(plan); err != nil {
					t.Fatalf("%s: SetPlan: %v", what, err)
				}
				nt := pt.Tables()
				g := newGuarded(n * nt * dim)
				fill(r, g.data) // must be overwritten, empty bags included
				want := make([]float32, n*nt*dim)
				if err := ref.EmbeddingBagForward(pt, bags, want); err != nil {
					t.Fatalf("%s: reference forward: %v", what, err)
				}
				if err := b.EmbeddingBagForward(pt, bags, g.data); err != nil {
					t.Fatalf("%s: EmbeddingBagForward: %v", what, err)
				}
				g.check(t, "EmbeddingBagForward "+what)
				compareSlices(t, "EmbeddingBagForward "+what, g.data, want, 1e-6, 4)

				dOut := randSlice(r, n*nt*dim)
				for _, step := range []compute.SparseStep{
					{Opt: compute.OptSGD, LR: 0.1},
					{Opt: compute.OptRowWiseAdagrad, LR: 0.1, Eps: 0.5},
				} {
					got, exp := cloneTable(t, pt), cloneTable(t, pt)
					gotSet, expSet := compute.NewRowSet(pt.Rows()), compute.NewRowSet(pt.Rows())
					for iter := range 2 { // twice, so Adagrad's accumulators matter
						if err := ref.EmbeddingBagUpdate(exp, bags, dOut, step, expSet); err != nil {
							t.Fatalf("%s: reference update: %v", what, err)
						}
						if err := b.EmbeddingBagUpdate(got, bags, dOut, step, gotSet); err != nil {
							t.Fatalf("%s: EmbeddingBagUpdate: %v", what, err)
						}
						w := fmt.Sprintf("EmbeddingBagUpdate(%v) %s iter %d", step.Opt, what, iter)
						compareSlices(t, w+" W", got.W, exp.W, 1e-5, 1)
						if step.Opt == compute.OptRowWiseAdagrad {
							compareSlices(t, w+" Acc", got.Acc, exp.Acc, 1e-5, 1)
						}
						if g, e := gotSet.AppendRows(nil), expSet.AppendRows(nil); !slices.Equal(g, e) {
							t.Fatalf("%s: touched rows %v; want %v", w, g, e)
						}
					}
					checkTouched(t, pt, bags, gotSet)
				}
			}
		}
	}
}

// checkTouched fails t unless set holds exactly the packed rows bags use.
func checkTouched(t *testing.T, pt *compute.PackedTable, bags *compute.Bags, set *compute.RowSet) {
	t.Helper()
	want := compute.NewRowSet(pt.Rows())
	for i, ids := range bags.IDs {
		for _, id := range ids {
			want.Add(pt.Start[i] + id)
		}
	}
	if g, w := set.AppendRows(nil), want.AppendRows(nil); !slices.Equal(g, w) {
		t.Errorf("touched rows %v; want the rows looked up %v", g, w)
	}
}

// TestEmbeddingBagHand checks a small batch with duplicate IDs against
// values worked out by hand.
func TestEmbeddingBagHand(t *testing.T, b compute.Backend) {
	// Table A: rows [1 2] [3 4] [5 6]; table B: rows [7 8] [9 10].
	// Sample 0 looks up A{1, 1} and B 0; sample 1 looks up A{2} and B 0.
	newTable := func() *compute.PackedTable {
		pt, err := compute.NewPackedTable(2, []int64{3, 2})
		if err != nil {
			t.Fatal(err)
		}
		copy(pt.W, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
		return pt
	}
	bags := &compute.Bags{N: 2,
		IDs:     [][]int64{{1, 1, 2}, {0, 0}},
		Offsets: [][]int32{{0, 2, 3}, nil},
	}
	out := make([]float32, 8)
	if err := b.EmbeddingBagForward(newTable(), bags, out); err != nil {
		t.Fatal(err)
	}
	if want := []float32{6, 8, 7, 8, 5, 6, 7, 8}; !slices.Equal(out, want) {
		t.Errorf("EmbeddingBagForward = %v; want %v", out, want)
	}

	// Gradients: A1 2·[1 2] = [2 4]; A2 [3 4]; B0 [0.5 -1] + [1.5 1] = [2 0].
	dOut := []float32{1, 2, 0.5, -1, 3, 4, 1.5, 1}
	pt := newTable()
	touched := compute.NewRowSet(pt.Rows())
	if err := b.EmbeddingBagUpdate(pt, bags, dOut, compute.SparseStep{Opt: compute.OptSGD, LR: 0.5}, touched); err != nil {
		t.Fatal(err)
	}
	if want := []float32{1, 2, 2, 2, 3.5, 4, 6, 8, 9, 10}; !slices.Equal(pt.W, want) {
		t.Errorf("SGD update: W = %v; want %v", pt.W, want)
	}
	if got, want := touched.AppendRows(nil), []int64{1, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("SGD update touched %v; want %v", got, want)
	}

	// Row-wise Adagrad, lr 0.5, eps 0, two steps: acc gains mean(g²) each
	// step (A1 10, A2 12.5, B0 2), w -= 0.5·g/sqrt(acc).
	pt = newTable()
	step := compute.SparseStep{Opt: compute.OptRowWiseAdagrad, LR: 0.5}
	for range 2 {
		if err := b.EmbeddingBagUpdate(pt, bags, dOut, step, nil); err != nil {
			t.Fatal(err)
		}
	}
	s10, s20 := 1/math.Sqrt(10), 1/math.Sqrt(20)
	s125, s25 := 1/math.Sqrt(12.5), 1/math.Sqrt(25)
	s2, s4 := 1/math.Sqrt(2), 1/math.Sqrt(4)
	wantW := []float64{
		1, 2,
		3 - (s10 + s20), 4 - 2*(s10+s20),
		5 - 1.5*(s125+s25), 6 - 2*(s125+s25),
		7 - (s2 + s4), 8,
		9, 10,
	}
	wantAcc := []float64{0, 20, 25, 4, 0}
	for i, w := range wantW {
		if !closeTo(float64(pt.W[i]), w, 1e-6, 1) {
			t.Errorf("Adagrad update: W[%d] = %v; want %v", i, pt.W[i], w)
		}
	}
	for i, a := range wantAcc {
		if !closeTo(float64(pt.Acc[i]), a, 1e-6, 1) {
			t.Errorf("Adagrad update: Acc[%d] = %v; want %v", i, pt.Acc[i], a)
		}
	}

	// One step with eps 1: w -= 0.5·g/(sqrt(acc)+1).
	pt = newTable()
	step.Eps = 1
	if err := b.EmbeddingBagUpdate(pt, bags, dOut, step, nil); err != nil {
		t.Fatal(err)
	}
	e10, e125, e2 := 0.5/(math.Sqrt(10)+1), 0.5/(math.Sqrt(12.5)+1), 0.5/(math.Sqrt(2)+1)
	wantW = []float64{1, 2, 3 - 2*e10, 4 - 4*e10, 5 - 3*e125, 6 - 4*e125, 7 - 2*e2, 8, 9, 10}
	for i, w := range wantW {
		if !closeTo(float64(pt.W[i]), w, 1e-6, 1) {
			t.Errorf("Adagrad update with eps 1: W[%d] = %v; want %v", i, pt.W[i], w)
		}
	}
}

// TestEmbeddingBagGrad checks that the gradient the update applies is the
// derivative of L = Σ wgt ⊙ pooled(W): an SGD step with lr 1 moves each row
// by minus its gradient, compared with central finite differences of a
// float64 forward pass.
func TestEmbeddingBagGrad(t *testing.T, b compute.Backend) {
	const dim, n, h = 3, 6, 1e-3
	r := newRand(5)
	pt := randomTable(t, r, dim, []int64{4, 3, 6})
	bags := randomBags(r, pt, n)
	nt := pt.Tables()
	wgt := randSlice(r, n*nt*dim)
	w64 := to64(pt.W)
	loss := func() float64 {
		var l float64
		for i := range nt {
			for s := range n {
				lo, hi := s, s+1
				if off := bags.Offsets[i]; off != nil {
					lo, hi = int(off[s]), int(off[s+1])
				}
				for _, id := range bags.IDs[i][lo:hi] {
					for k := range dim {
						l += float64(wgt[(s*nt+i)*dim+k]) * w64[(pt.Start[i]+id)*dim+int64(k)]
					}
				}
			}
		}
		return l
	}
	before := slices.Clone(pt.W)
	if err := b.EmbeddingBagUpdate(pt, bags, wgt, compute.SparseStep{Opt: compute.OptSGD, LR: 1}, nil); err != nil {
		t.Fatal(err)
	}
	for p := range w64 {
		fd := centralDiff(func(v float64) float64 { w64[p] = v; return loss() }, w64[p], h)
		if g := float64(before[p]) - float64(pt.W[p]); !closeTo(g, fd, 1e-5, math.Abs(fd)) {
			t.Errorf("dL/dW[%d] = %v; finite difference %v", p, g, fd)
		}
	}
}

// TestEmbeddingBagErrors checks that bad IDs and offsets are reported as
// errors naming the table, and that a failed update changes nothing.
func TestEmbeddingBagErrors(t *testing.T, b compute.Backend) {
	r := newRand(9)
	pt := randomTable(t, r, 4, []int64{5, 3, 8})
	for _, bad := range []int64{-1, 3, 1 << 40} {
		bags := randomBags(r, pt, 10)
		if len(bags.IDs[1]) == 0 {
			t.Fatal("random batch has no IDs for table 1")
		}
		bags.IDs[1][len(bags.IDs[1])-1] = bad
		out := make([]float32, 10*3*4)
		err := b.EmbeddingBagForward(pt, bags, out)
		if !errors.Is(err, compute.ErrIDOutOfRange) || !strings.Contains(err.Error(), "table 1") {
			t.Errorf("EmbeddingBagForward(id %d) error = %v; want ErrIDOutOfRange naming table 1", bad, err)
		}
		w0 := slices.Clone(pt.W)
		set := compute.NewRowSet(pt.Rows())
		err = b.EmbeddingBagUpdate(pt, bags, out, compute.SparseStep{Opt: compute.OptRowWiseAdagrad, LR: 1}, set)
		if !errors.Is(err, compute.ErrIDOutOfRange) {
			t.Errorf("EmbeddingBagUpdate(id %d) error = %v; want ErrIDOutOfRange", bad, err)
		}
		if !slices.Equal(pt.W, w0) || set.Count() != 0 {
			t.Errorf("EmbeddingBagUpdate(id %d) failed but changed %d rows", bad, set.Count())
		}
	}
	for name, off := range map[string][]int32{
		"short":      {0, 1},
		"decreasing": {0, 2, 1, 3},
		"span":       {0, 1, 2, 4},
		"start":      {1, 1, 2, 3},
	} {
		bags := &compute.Bags{N: 3, IDs: [][]int64{{0, 1, 2}, {0, 1, 2}, {0, 1, 2}}, Offsets: [][]int32{nil, off, nil}}
		out := make([]float32, 3*3*4)
		if err := b.EmbeddingBagForward(pt, bags, out); !errors.Is(err, compute.ErrBadOffsets) {
			t.Errorf("EmbeddingBagForward(offsets %s %v) error = %v; want ErrBadOffsets", name, off, err)
		}
		if err := b.EmbeddingBagUpdate(pt, bags, out, compute.SparseStep{LR: 1}, nil); !errors.Is(err, compute.ErrBadOffsets) {
			t.Errorf("EmbeddingBagUpdate(offsets %s %v) error = %v; want ErrBadOffsets", name, off, err)
		}
	}
}

// TableBags returns the bags of table i of b as a batch for a one-table
// view (compute.PackedTable.Table); it shares b's slices.
func TableBags(b *compute.Bags, i int) *compute.Bags {
	tb := &compute.Bags{N: b.N, IDs: [][]int64{b.IDs[i]}}
	if b.Offsets != nil && b.Offsets[i] != nil {
		tb.Offsets = [][]int32{b.Offsets[i]}
	}
	return tb
}

// TestEmbeddingBagPerTable checks that running the embedding kernels once
// per table, on the views of compute.PackedTable.Table, gives the results
// of one packed call bit for bit: pooled outputs, weights, Adagrad state
// (allocated by the first update, through the view) and touched rows.
func TestEmbeddingBagPerTable(t *testing.T, b compute.Backend) {
	const dim, n = 5, 41
	r := newRand(77)
	base := randomTable(t, r, dim, []int64{5, 40, 1, 17, 3, 1000})
	bags := randomBags(r, base, n)
	nt := base.Tables()
	for name, plan := range embeddingPlans(base) {
		packed := cloneTable(t, base)
		if err := packed.SetPlan(plan); err != nil {
			t.Fatalf("plan %s: SetPlan: %v", name, err)
		}
		split := cloneTable(t, packed)
		want := make([]float32, n*nt*dim)
		if err := b.EmbeddingBagForward(packed, bags, want); err != nil {
			t.Fatalf("plan %s: packed forward: %v", name, err)
		}
		got := make([]float32, n*nt*dim)
		for i := range nt {
			g := newGuarded(n * dim)
			if err := b.EmbeddingBagForward(split.Table(i), TableBags(bags, i), g.data); err != nil {
				t.Fatalf("plan %s: forward of table %d: %v", name, i, err)
			}
			g.check(t, fmt.Sprintf("EmbeddingBagForward table %d", i))
			for s := range n {
				copy(got[(s*nt+i)*dim:(s*nt+i+1)*dim], g.data[s*dim:(s+1)*dim])
			}
		}
		if i := firstDiff(got, want); i >= 0 {
			t.Fatalf("plan %s: per-table forward [%d] = %v; packed %v", name, i, got[i], want[i])
		}

		dOut := randSlice(r, n*nt*dim)
		col := make([]float32, n*dim)
		for _, step := range []compute.SparseStep{
			{Opt: compute.OptSGD, LR: 0.1},
			{Opt: compute.OptRowWiseAdagrad, LR: 0.1, Eps: 0.5},
		} {
			p, q := cloneTable(t, packed), cloneTable(t, packed)
			pSet, qSet := compute.NewRowSet(p.Rows()), compute.NewRowSet(q.Rows())
			for iter := range 2 {
				if err := b.EmbeddingBagUpdate(p, bags, dOut, step, pSet); err != nil {
					t.Fatalf("plan %s: packed update: %v", name, err)
				}
				for i := range nt {
					for s := range n {
						copy(col[s*dim:(s+1)*dim], dOut[(s*nt+i)*dim:(s*nt+i+1)*dim])
					}
					if err := b.EmbeddingBagUpdate(q.Table(i), TableBags(bags, i), col, step, qSet); err != nil {
						t.Fatalf("plan %s: update of table %d: %v", name, i, err)
					}
				}
				what := fmt.Sprintf("plan %s: EmbeddingBagUpdate(%v) iter %d", name, step.Opt, iter)
				if i := firstDiff(q.W, p.W); i >= 0 {
					t.Fatalf("%s: per-table W[%d] = %v; packed %v", what, i, q.W[i], p.W[i])
				}
				if step.Opt == compute.OptRowWiseAdagrad {
					if len(q.Acc) != len(p.Acc) {
						t.Fatalf("%s: per-table Acc has %d values; packed %d", what, len(q.Acc), len(p.Acc))
					}
					if i := firstDiff(q.Acc, p.Acc); i >= 0 {
						t.Fatalf("%s: per-table Acc[%d] = %v; packed %v", what, i, q.Acc[i], p.Acc[i])
					}
				}
				if g, e := qSet.AppendRows(nil), pSet.AppendRows(nil); !slices.Equal(g, e) {
					t.Fatalf("%s: per-table touched rows %v; packed %v", what, g, e)
				}
			}
		}
	}
}

// firstDiff returns the first index where a and b differ in bits, or -1.
func firstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}
