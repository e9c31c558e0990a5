package computetest

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/compute"
)

// TestMul checks Mul, overwriting and accumulating, against a hand example
// and the reference.
func TestMul(t *testing.T, b compute.Backend) {
	m := newMem(t, b)
	out := m.f32([]float32{10, 20, 30})
	x, y := m.f32([]float32{1, 2, 3}), m.f32([]float32{4, -5, 0.5})
	b.Mul(out, x, y, true)
	if got, want := m.get(out), []float32{14, 10, 31.5}; !slices.Equal(got, want) {
		t.Errorf("Mul accumulate = %v; want %v", got, want)
	}
	b.Mul(out, x, y, false)
	if got, want := m.get(out), []float32{4, -10, 1.5}; !slices.Equal(got, want) {
		t.Errorf("Mul = %v; want %v", got, want)
	}
	ref := compute.Reference()
	for _, n := range []int{0, 1, 33, 70001} {
		r := newRand(uint64(n))
		a, c, o := randSlice(r, n), randSlice(r, n), randSlice(r, n)
		for _, acc := range []bool{false, true} {
			want := slices.Clone(o)
			ref.Mul(host(want), host(a), host(c), acc)
			g := m.guardedOut(n, func(s []float32) { copy(s, o) })
			b.Mul(g.ddata, m.f32(a), m.f32(c), acc)
			m.fetch(g)
			what := fmt.Sprintf("Mul(n=%d, accumulate=%v)", n, acc)
			g.check(t, what)
			compareSlices(t, what, g.data, want, 0, 1)
		}
	}
}

// fmShapes are (n, f, d, stride).
var fmShapes = [][4]int{{0, 3, 2, 2}, {1, 1, 1, 1}, {2, 3, 2, 3}, {5, 26, 16, 17}, {300, 26, 16, 16}, {7, 4, 9, 12}}

// fm64 is an independent float64 FM term: the sum over pairs of fields of
// their dot products.
func fm64(emb []float32, s, f, d, stride int) float64 {
	var sum float64
	for i := range f {
		for j := range i {
			for k := range d {
				sum += float64(emb[(s*f+i)*stride+k]) * float64(emb[(s*f+j)*stride+k])
			}
		}
	}
	return sum
}

// TestFM checks FMForward against pairwise dot products and the reference,
// and FMBackward against the reference and central differences of fm64.
func TestFM(t *testing.T, b compute.Backend) {
	m := newMem(t, b)
	// Fields [1 2], [3 4], [5 6] with a third, ignored value each:
	// 1·3+2·4 + 1·5+2·6 + 3·5+4·6 = 11 + 17 + 39 = 67, added to 1.
	out := m.f32([]float32{1})
	emb := m.f32([]float32{1, 2, 100, 3, 4, 100, 5, 6, 100})
	b.FMForward(out, emb, 1, 3, 2, 3)
	if got := m.get(out); got[0] != 68 {
		t.Errorf("FMForward = %v; want [68]", got)
	}
	ref := compute.Reference()
	for i, sh := range fmShapes {
		n, f, d, stride := sh[0], sh[1], sh[2], sh[3]
		r := newRand(uint64(100 + i))
		e := randSlice(r, n*f*stride)
		o := randSlice(r, n)
		want := slices.Clone(o)
		ref.FMForward(host(want), host(e), n, f, d, stride)
		g := m.guardedOut(n, func(s []float32) { copy(s, o) })
		de := m.f32(e)
		b.FMForward(g.ddata, de, n, f, d, stride)
		m.fetch(g)
		what := fmt.Sprintf("FMForward(n=%d, f=%d, d=%d, stride=%d)", n, f, d, stride)
		g.check(t, what)
		compareSlices(t, what, g.data, want, 1e-5, float64(f*d))
		for s := range n {
			if v := float64(g.data[s] - o[s]); !closeTo(v, fm64(e, s, f, d, stride), 1e-4, float64(f*d)) {
				t.Errorf("%s: sample %d term %v; pairwise dots give %v", what, s, v, fm64(e, s, f, d, stride))
				break
			}
		}

		dOut := randSlice(r, n)
		base := randSlice(r, n*f*stride)
		wantE := slices.Clone(base)
		ref.FMBackward(host(wantE), host(dOut), host(e), n, f, d, stride)
		ge := m.guardedOut(n*f*stride, func(s []float32) { copy(s, base) })
		b.FMBackward(ge.ddata, m.f32(dOut), de, n, f, d, stride)
		m.fetch(ge)
		what = fmt.Sprintf("FMBackward(n=%d, f=%d, d=%d, stride=%d)", n, f, d, stride)
		ge.check(t, what)
		compareSlices(t, what, ge.data, wantE, 1e-5, float64(f))
		// Central differences of the float64 term, on a few entries.
		for s := range min(n, 2) {
			for p := range f * stride {
				idx := s*f*stride + p
				if p%stride >= d {
					if ge.data[idx] != base[idx] {
						t.Errorf("%s: value %d beyond the factors changed", what, idx)
					}
					continue
				}
				x0 := e[idx]
				num := centralDiff(func(x float64) float64 {
					e[idx] = float32(x)
					v := fm64(e, s, f, d, stride)
					e[idx] = x0
					return v
				}, float64(x0), 1e-2)
				if got := float64(ge.data[idx] - base[idx]); !closeTo(got, float64(dOut[s])*num, 1e-3, float64(f)) {
					t.Errorf("%s: d/de[%d] = %v; central difference %v", what, idx, got, float64(dOut[s])*num)
				}
			}
		}
	}
}

// TestAdam checks DenseUpdate's Adam, with and without weight decay,
// against a hand-computed step and the reference, and SGD's and Adagrad's
// weight decay against the reference.
func TestAdam(t *testing.T, b compute.Backend) {
	m := newMem(t, b)
	// w = 1, g = 2, m = v = 0, β1 = 0.9, β2 = 0.999, t = 1: m = 0.2,
	// v = 0.004, corrected 2 and 4: w = 1 − 0.1·2/(2+0) = 0.9.
	w, acc := m.f32([]float32{1}), m.f32([]float32{0, 0})
	step := compute.Step{Opt: compute.OptAdam, LR: 0.1, Beta1: 0.9, Beta2: 0.999, T: 1}
	b.DenseUpdate(w, acc, []compute.Buffer{m.f32([]float32{2})}, step)
	if gw, ga := m.get(w), m.get(acc); !closeTo(float64(gw[0]), 0.9, 1e-6, 1) || !closeTo(float64(ga[0]), 0.2, 1e-6, 1) || !closeTo(float64(ga[1]), 0.004, 1e-6, 1) {
		t.Errorf("Adam step: w = %v, acc = %v; want [0.9], [0.2 0.004]", gw, ga)
	}
	// SGD with weight decay 0.5: g = 2 + 0.5·1, w = 1 − 0.1·2.5 = 0.75.
	w = m.f32([]float32{1})
	b.DenseUpdate(w, compute.Buffer{}, []compute.Buffer{m.f32([]float32{2})}, compute.Step{Opt: compute.OptSGD, LR: 0.1, WD: 0.5})
	if gw := m.get(w); !closeTo(float64(gw[0]), 0.75, 1e-6, 1) {
		t.Errorf("SGD with weight decay: w = %v; want [0.75]", gw)
	}

	ref := compute.Reference()
	for _, n := range []int{1, 17, 100003} {
		for _, lanes := range []int{1, 3} {
			r := newRand(uint64(n*7 + lanes))
			w0 := randSlice(r, n)
			grads := make([][]float32, lanes)
			for i := range grads {
				grads[i] = randSlice(r, n)
			}
			acc0 := randSlice(r, 2*n)
			for i := n; i < 2*n; i++ {
				acc0[i] = float32(math.Abs(float64(acc0[i])))
			}
			steps := []compute.Step{
				{Opt: compute.OptAdam, LR: 0.01, Eps: 1e-8, Beta1: 0.9, Beta2: 0.999, T: 3},
				{Opt: compute.OptAdam, LR: 0.01, Eps: 1e-8, Beta1: 0.8, Beta2: 0.99, T: 1000, WD: 0.01},
				{Opt: compute.OptSGD, LR: 0.05, WD: 0.1},
				{Opt: compute.OptAdagrad, LR: 0.05, Eps: 0.1, WD: 0.1},
			}
			for _, step := range steps {
				na := n
				if step.Opt == compute.OptAdam {
					na = 2 * n
				}
				want, wantAcc := slices.Clone(w0), slices.Clone(acc0[:na])
				for i := range wantAcc[:n] {
					wantAcc[i] = float32(math.Abs(float64(wantAcc[i])))
				}
				acc1 := slices.Clone(wantAcc)
				var hg, dgs []compute.Buffer
				for _, g := range grads {
					hg = append(hg, host(slices.Clone(g)))
					dgs = append(dgs, m.f32(g))
				}
				ref.DenseUpdate(host(want), host(wantAcc), hg, step)
				gw, ga := newGuarded(n), newGuarded(na)
				copy(gw.data, w0)
				copy(ga.data, acc1)
				dw, da := m.guard(gw), m.guard(ga)
				b.DenseUpdate(dw.ddata, da.ddata, dgs, step)
				m.fetch(dw)
				m.fetch(da)
				what := fmt.Sprintf("DenseUpdate(%v, wd %v, n=%d, %d gradients)", step.Opt, step.WD, n, lanes)
				gw.check(t, what)
				ga.check(t, what+" acc")
				compareSlices(t, what, gw.data, want, 1e-5, 1)
				compareSlices(t, what+" acc", ga.data, wantAcc, 1e-5, 1)
			}
		}
	}
}

// TestEmbeddingWeightDecay checks that weight decay reaches exactly the
// rows a batch looks up, once per row however often it occurs.
func TestEmbeddingWeightDecay(t *testing.T, b compute.Backend) {
	m := newMem(t, b)
	// Table rows [1 2] [3 4] [5 6]; samples look up {1, 1} and {2}.
	pt := m.table(2, []int64{3}, []float32{1, 2, 3, 4, 5, 6}, nil, nil)
	bags := &compute.Bags{N: 2, IDs: []compute.Buffer{m.i64([]int64{1, 1, 2})}, Offsets: []compute.Buffer{m.i32([]int32{0, 2, 3})}}
	dOut := m.f32([]float32{1, 0, 0, 1})
	// Row 1: g = 2·[1 0] + 0.5·[3 4] = [3.5 2]; row 2: g = [0 1] + 0.5·[5 6] = [2.5 4].
	if err := b.EmbeddingBagUpdate(pt, bags, dOut, compute.Step{Opt: compute.OptSGD, LR: 0.5, WD: 0.5}); err != nil {
		t.Fatal(err)
	}
	if got, want := m.get(pt.W), []float32{1, 2, 1.25, 3, 3.75, 4}; !slices.Equal(got, want) {
		t.Errorf("SGD with weight decay: W = %v; want %v", got, want)
	}
}

// TestEmbeddingSplitLast checks row-wise Adagrad with SplitLast by hand
// (the last value of a row has its own accumulator), per table views
// included, and against the reference on random lookups.
func TestEmbeddingSplitLast(t *testing.T, b compute.Backend) {
	m := newMem(t, b)
	// Rows [1 2 3] [4 5 6]; one sample looks up row 1 with dOut [3 4 2]:
	// acc = [0 0 (9+16)/2 4], row 1 -= 1·[3 4]/sqrt(12.5), 1·2/sqrt(4).
	pt := m.table(3, []int64{2}, []float32{1, 2, 3, 4, 5, 6}, nil, nil)
	pt.SplitLast = true
	bags := &compute.Bags{N: 1, IDs: []compute.Buffer{m.i64([]int64{1})}}
	if err := b.EmbeddingBagUpdate(pt, bags, m.f32([]float32{3, 4, 2}), compute.Step{Opt: compute.OptAdagrad, LR: 1}); err != nil {
		t.Fatal(err)
	}
	s := 1 / math.Sqrt(12.5)
	wantW := []float64{1, 2, 3, 4 - 3*s, 5 - 4*s, 6 - 1}
	gotW, gotA := m.get(pt.W), m.get(pt.Acc)
	for i, w := range wantW {
		if !closeTo(float64(gotW[i]), w, 1e-6, 1) {
			t.Fatalf("SplitLast Adagrad: W = %v; want %v", gotW, wantW)
		}
	}
	if want := []float32{0, 0, 12.5, 4}; !slices.Equal(gotA, want) {
		t.Errorf("SplitLast Adagrad: Acc = %v; want %v", gotA, want)
	}

	ref := compute.Reference()
	r := newRand(77)
	rows := []int64{50, 7, 300}
	const n, d = 64, 5
	var total int64
	for _, x := range rows {
		total += x
	}
	w0 := randSlice(r, int(total)*d)
	var ids []compute.Buffer
	var hids [][]int64
	for _, x := range rows {
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(r.IntN(int(x)))
		}
		hids = append(hids, v)
		ids = append(ids, m.i64(v))
	}
	dOut := randSlice(r, n*len(rows)*d)
	refT, err := compute.NewPackedTable(ref, d, rows)
	if err != nil {
		t.Fatal(err)
	}
	defer refT.Free()
	copy(refT.W.Float32s(), w0)
	refT.SplitLast = true
	var hb []compute.Buffer
	for _, v := range hids {
		hb = append(hb, compute.Wrap(v))
	}
	step := compute.Step{Opt: compute.OptAdagrad, LR: 0.1, Eps: 1e-8, WD: 0.01}
	for range 2 {
		if err := ref.EmbeddingBagUpdate(refT, &compute.Bags{N: n, IDs: hb}, host(dOut), step); err != nil {
			t.Fatal(err)
		}
	}
	for _, perTable := range []bool{false, true} {
		pt := m.table(d, rows, w0, nil, nil)
		pt.SplitLast = true
		dd := m.f32(dOut)
		for range 2 {
			if !perTable {
				if err := b.EmbeddingBagUpdate(pt, &compute.Bags{N: n, IDs: ids}, dd, step); err != nil {
					t.Fatal(err)
				}
				continue
			}
			// One table at a time, through views, with its slice of dOut.
			for i := range rows {
				g := make([]float32, n*d)
				for s := range n {
					copy(g[s*d:s*d+d], dOut[(s*len(rows)+i)*d:(s*len(rows)+i)*d+d])
				}
				if err := b.EmbeddingBagUpdate(pt.Table(i), &compute.Bags{N: n, IDs: ids[i : i+1]}, m.f32(g), step); err != nil {
					t.Fatal(err)
				}
			}
		}
		what := fmt.Sprintf("SplitLast Adagrad (per table %v)", perTable)
		compareSlices(t, what+" W", m.get(pt.W), refT.W.Float32s(), 1e-5, 1)
		compareSlices(t, what+" Acc", m.get(pt.Acc), refT.Acc.Float32s(), 1e-5, 1)
	}
}
