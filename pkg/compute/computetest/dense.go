package computetest

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/compute"
)

var rowShapes = [][2]int{{0, 3}, {1, 1}, {1, 17}, {3, 17}, {17, 3}, {129, 1}, {129, 33}, {1024, 64}, {5, 1000}}

// TestBiasAct checks BiasAct against the reference, with and without bias
// and ReLU.
func TestBiasAct(t *testing.T, b compute.Backend) {
	m := newMem(t, b)
	ref := compute.Reference()
	for i, sh := range rowShapes {
		n, w := sh[0], sh[1]
		for _, withBias := range []bool{false, true} {
			for _, relu := range []bool{false, true} {
				r := newRand(uint64(i))
				var bias []float32
				var hb, db compute.Buffer
				if withBias {
					bias = randSlice(r, w)
					hb, db = host(bias), m.f32(bias)
				}
				g := newGuarded(n * w)
				fill(r, g.data)
				want := slices.Clone(g.data)
				ref.BiasAct(host(want), n, w, hb, relu)
				dg := m.guard(g)
				b.BiasAct(dg.ddata, n, w, db, relu)
				m.fetch(dg)
				what := fmt.Sprintf("BiasAct(n=%d, width=%d, bias=%v, relu=%v)", n, w, withBias, relu)
				g.check(t, what)
				compareSlices(t, what, g.data, want, 1e-6, 1)
			}
		}
	}
}

// TestReLUBackward checks ReLUBackward against the reference, including
// zero and negative zero activations, which must block the gradient.
func TestReLUBackward(t *testing.T, b compute.Backend) {
	m := newMem(t, b)
	ref := compute.Reference()
	for _, n := range []int{0, 1, 3, 17, 129, 70000} {
		r := newRand(uint64(n))
		act := reluActivations(r, n)
		g := newGuarded(n)
		fill(r, g.data)
		want := slices.Clone(g.data)
		ref.ReLUBackward(host(want), host(act))
		dg := m.guard(g)
		b.ReLUBackward(dg.ddata, m.f32(act))
		m.fetch(dg)
		what := fmt.Sprintf("ReLUBackward(n=%d)", n)
		g.check(t, what)
		compareSlices(t, what, g.data, want, 0, 1)
		for i, a := range act {
			if a <= 0 && g.data[i] != 0 {
				t.Fatalf("%s: grad[%d] = %v with act %v; want 0", what, i, g.data[i], a)
			}
		}
	}
}

// TestBiasGrad checks BiasGrad (column sums) against the reference.
func TestBiasGrad(t *testing.T, b compute.Backend) {
	m := newMem(t, b)
	ref := compute.Reference()
	for i, sh := range rowShapes {
		n, w := sh[0], sh[1]
		r := newRand(uint64(i))
		grad := randSlice(r, n*w)
		want := make([]float32, w)
		ref.BiasGrad(host(want), host(grad), n, w)
		g := m.guardedOut(w, func(s []float32) { fill(r, s) }) // must be overwritten, not accumulated into
		b.BiasGrad(g.ddata, m.f32(grad), n, w)
		m.fetch(g)
		what := fmt.Sprintf("BiasGrad(n=%d, width=%d)", n, w)
		g.check(t, what)
		compareSlices(t, what, g.data, want, 1e-6, float64(n))
	}
}

// TestBiasReLUGrad checks the linear-layer backward kernels against central
// finite differences of L = Σ wgt ⊙ relu(X + bias), in float64.
func TestBiasReLUGrad(t *testing.T, b compute.Backend) {
	const n, w, h = 7, 5, 1e-3
	m := newMem(t, b)
	r := newRand(11)
	x := randSlice(r, n*w)
	bias := randSlice(r, w)
	wgt := randSlice(r, n*w)
	// Keep pre-activations away from the kink so differences are smooth.
	for i := range x {
		if v := x[i] + bias[i%w]; math.Abs(float64(v)) < 0.05 {
			x[i] += 0.1
		}
	}
	loss := func(x, bias []float64) float64 {
		var l float64
		for i := range n {
			for j := range w {
				if v := x[i*w+j] + bias[j]; v > 0 {
					l += float64(wgt[i*w+j]) * v
				}
			}
		}
		return l
	}
	act := m.f32(x)
	b.BiasAct(act, n, w, m.f32(bias), true)
	ddx := m.f32(wgt)
	b.ReLUBackward(ddx, act)
	ddb := m.alloc(compute.Float32, w)
	b.BiasGrad(ddb, ddx, n, w)
	dx, db := m.get(ddx), m.get(ddb)

	x64, b64 := to64(x), to64(bias)
	for i := range x64 {
		fd := centralDiff(func(v float64) float64 { x64[i] = v; return loss(x64, b64) }, x64[i], h)
		if !closeTo(float64(dx[i]), fd, 1e-4, 1) {
			t.Errorf("dL/dx[%d] = %v; finite difference %v", i, dx[i], fd)
		}
	}
	for j := range b64 {
		fd := centralDiff(func(v float64) float64 { b64[j] = v; return loss(x64, b64) }, b64[j], h)
		if !closeTo(float64(db[j]), fd, 1e-4, 1) {
			t.Errorf("dL/dbias[%d] = %v; finite difference %v", j, db[j], fd)
		}
	}
}

// TestReLUBackwardBiasGrad checks the fused ReLUBackwardBiasGrad against
// the reference's ReLUBackward followed by BiasGrad, bit for bit, on odd
// and SIMD-friendly widths with zero and negative-zero activations.
func TestReLUBackwardBiasGrad(t *testing.T, b compute.Backend) {
	m := newMem(t, b)
	ref := compute.Reference()
	for _, sh := range [][2]int{{0, 8}, {1, 1}, {3, 5}, {17, 8}, {33, 24}, {129, 13}, {64, 512}} {
		n, w := sh[0], sh[1]
		r := newRand(uint64(n*1000 + w))
		act := reluActivations(r, n*w)
		g := newGuarded(n * w)
		fill(r, g.data)
		want := slices.Clone(g.data)
		wantDB := make([]float32, w)
		ref.ReLUBackward(host(want), host(act))
		ref.BiasGrad(host(wantDB), host(want), n, w)
		dg, ddb := m.guard(g), m.guardedOut(w, nil)
		b.ReLUBackwardBiasGrad(ddb.ddata, dg.ddata, m.f32(act), n, w)
		m.fetch(dg)
		m.fetch(ddb)
		what := fmt.Sprintf("ReLUBackwardBiasGrad(n=%d, w=%d)", n, w)
		g.check(t, what+" grad")
		ddb.check(t, what+" db")
		compareSlices(t, what+" grad", g.data, want, 0, 1)
		compareSlices(t, what+" db", ddb.data, wantDB, 0, 1)
	}
}

// TestDenseUpdate checks DenseUpdate (SGD and Adagrad, with one, two and
// three gradients) against the reference and hand-computed steps.
func TestDenseUpdate(t *testing.T, b compute.Backend) {
	m := newMem(t, b)
	// Hand example: w = 1, g = 2, acc = 0, lr = 0.1, eps = 0:
	// SGD: 1 - 0.2 = 0.8. Adagrad: acc = 4, w = 1 - 0.1*2/2 = 0.9.
	w := m.f32([]float32{1, -1})
	b.DenseUpdate(w, compute.Buffer{}, []compute.Buffer{m.f32([]float32{2, -3})}, compute.Step{Opt: compute.OptSGD, LR: 0.1})
	if got := m.get(w); !closeTo(float64(got[0]), 0.8, 1e-6, 1) || !closeTo(float64(got[1]), -0.7, 1e-6, 1) {
		t.Errorf("SGD step = %v; want [0.8 -0.7]", got)
	}
	w, acc := m.f32([]float32{1, 1}), m.f32([]float32{0, 5})
	// Two gradients that sum to [2 2].
	g2 := []compute.Buffer{m.f32([]float32{0.5, 3}), m.f32([]float32{1.5, -1})}
	b.DenseUpdate(w, acc, g2, compute.Step{Opt: compute.OptAdagrad, LR: 0.1})
	if gw, ga := m.get(w), m.get(acc); ga[0] != 4 || ga[1] != 9 || !closeTo(float64(gw[0]), 0.9, 1e-6, 1) || !closeTo(float64(gw[1]), 1-0.2/3, 1e-6, 1) {
		t.Errorf("Adagrad step: w = %v, acc = %v; want [0.9 %v], [4 9]", gw, ga, 1-0.2/3)
	}

	ref := compute.Reference()
	for _, n := range []int{0, 1, 17, 129, 100003} {
		for _, lanes := range []int{1, 2, 3} {
			r := newRand(uint64(n*10 + lanes))
			w0 := randSlice(r, n)
			grads := make([][]float32, lanes)
			for i := range grads {
				grads[i] = randSlice(r, n)
			}
			acc0 := randSlice(r, n)
			for i := range acc0 {
				acc0[i] = float32(math.Abs(float64(acc0[i])))
			}
			for _, step := range []compute.Step{{Opt: compute.OptSGD, LR: 0.05}, {Opt: compute.OptAdagrad, LR: 0.05, Eps: 0.1}} {
				want, wantAcc := slices.Clone(w0), slices.Clone(acc0)
				var hg, dgs []compute.Buffer
				for _, g := range grads {
					hg = append(hg, host(slices.Clone(g)))
					dgs = append(dgs, m.f32(g))
				}
				ref.DenseUpdate(host(want), host(wantAcc), hg, step)
				gw, ga := newGuarded(n), newGuarded(n)
				copy(gw.data, w0)
				copy(ga.data, acc0)
				dw, da := m.guard(gw), m.guard(ga)
				b.DenseUpdate(dw.ddata, da.ddata, dgs, step)
				m.fetch(dw)
				m.fetch(da)
				what := fmt.Sprintf("DenseUpdate(%v, n=%d, %d gradients)", step.Opt, n, lanes)
				gw.check(t, what)
				ga.check(t, what+" acc")
				compareSlices(t, what, gw.data, want, 1e-5, 1)
				compareSlices(t, what+" acc", ga.data, wantAcc, 1e-6, 1)
			}
		}
	}
}

// TestMemory checks Alloc (zeroed), CopyIn and CopyOut of every kind, and
// the copies of views.
func TestMemory(t *testing.T, b compute.Backend) {
	m := newMem(t, b)
	for _, n := range []int{0, 1, 5, 4099} {
		z := m.alloc(compute.Float32, n)
		if z.Len() != n || z.Kind() != compute.Float32 || z.Space() != b.Space() {
			t.Fatalf("Alloc(float32, %d) = %v; want %d float32 in %s", n, z, n, b.Space().Name())
		}
		for i, v := range m.get(z) {
			if v != 0 {
				t.Fatalf("Alloc(float32, %d)[%d] = %v; want 0", n, i, v)
			}
		}
		r := newRand(uint64(n))
		f := randSlice(r, n)
		if got := m.get(m.f32(f)); !slices.Equal(got, f) {
			t.Errorf("float32 round trip of %d values differs", n)
		}
		i64 := make([]int64, n)
		i32 := make([]int32, n)
		for i := range i64 {
			i64[i] = r.Int64() - 1<<62
			i32[i] = int32(r.Uint32())
		}
		bi, bj := m.i64(i64), m.i32(i32)
		gi, gj := make([]int64, n), make([]int32, n)
		b.CopyOut(compute.Wrap(gi), bi)
		b.CopyOut(compute.Wrap(gj), bj)
		if err := b.Sync(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(gi, i64) || !slices.Equal(gj, i32) {
			t.Errorf("int round trip of %d values differs", n)
		}
	}
	// Copies into and out of views leave the rest alone.
	d := m.f32([]float32{1, 2, 3, 4, 5, 6})
	b.CopyIn(d.Slice(2, 4), compute.Wrap([]float32{30, 40}))
	part := make([]float32, 3)
	b.CopyOut(compute.Wrap(part), d.Slice(3, 6))
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if got, want := m.get(d), []float32{1, 2, 30, 40, 5, 6}; !slices.Equal(got, want) {
		t.Errorf("CopyIn to a view: buffer %v; want %v", got, want)
	}
	if want := []float32{40, 5, 6}; !slices.Equal(part, want) {
		t.Errorf("CopyOut of a view = %v; want %v", part, want)
	}
}

// TestForeignBuffers checks that a backend whose memory the program cannot
// address refuses a host buffer: a kernel given one panics rather than
// read memory a device cannot see.
func TestForeignBuffers(t *testing.T, b compute.Backend) {
	if b.Space().IsHost() {
		return // host backends take any host buffer
	}
	defer func() {
		if recover() == nil {
			t.Errorf("%s: Fill on a host buffer did not panic", b.Name())
		}
	}()
	b.Fill(compute.Wrap(make([]float32, 4)), 1)
}

// TestAxpyFill checks Axpy and Fill against the reference.
func TestAxpyFill(t *testing.T, b compute.Backend) {
	m := newMem(t, b)
	ref := compute.Reference()
	for _, n := range []int{0, 1, 17, 70001} {
		r := newRand(uint64(n))
		y, x := randSlice(r, n), randSlice(r, n)
		want := slices.Clone(y)
		ref.Axpy(host(want), -0.75, host(x))
		g := newGuarded(n)
		copy(g.data, y)
		dg := m.guard(g)
		b.Axpy(dg.ddata, -0.75, m.f32(x))
		m.fetch(dg)
		what := fmt.Sprintf("Axpy(n=%d)", n)
		g.check(t, what)
		compareSlices(t, what, g.data, want, 0, 1)

		dg = m.guardedOut(n, func(s []float32) { fill(r, s) })
		b.Fill(dg.ddata, 2.5)
		m.fetch(dg)
		dg.check(t, fmt.Sprintf("Fill(n=%d)", n))
		for i, v := range dg.data {
			if v != 2.5 {
				t.Fatalf("Fill(n=%d)[%d] = %v; want 2.5", n, i, v)
			}
		}
	}
}

// TestCopy2D checks strided copies against the reference; the padding of
// the destination's rows must survive.
func TestCopy2D(t *testing.T, b compute.Backend) {
	m := newMem(t, b)
	ref := compute.Reference()
	for _, sh := range [][4]int{{0, 3, 3, 5}, {1, 1, 1, 1}, {3, 4, 9, 4}, {17, 5, 5, 12}, {300, 16, 40, 16}, {5000, 8, 8, 8}} {
		rows, cols, ldd, lds := sh[0], sh[1], sh[2], sh[3]
		r := newRand(uint64(rows + cols))
		src := randSlice(r, max(0, (rows-1)*lds+cols))
		if rows == 0 {
			src = nil
		}
		n := 0
		if rows > 0 {
			n = (rows-1)*ldd + cols
		}
		g := newGuarded(n)
		for i := range g.data {
			g.data[i] = guard
		}
		want := slices.Clone(g.data)
		ref.Copy2D(host(want), ldd, host(src), lds, rows, cols)
		dg := m.guard(g)
		b.Copy2D(dg.ddata, ldd, m.f32(src), lds, rows, cols)
		m.fetch(dg)
		what := fmt.Sprintf("Copy2D(rows=%d, cols=%d, ldd=%d, lds=%d)", rows, cols, ldd, lds)
		g.check(t, what)
		if i := firstDiff(g.data, want); i >= 0 {
			t.Errorf("%s: [%d] = %v; want %v", what, i, g.data[i], want[i])
		}
	}
}

// TestRows checks GatherRows and ScatterRows, with int32 and int64
// indices, against the reference.
func TestRows(t *testing.T, b compute.Backend) {
	m := newMem(t, b)
	ref := compute.Reference()
	for _, sh := range [][3]int{{1, 1, 1}, {10, 3, 4}, {1000, 17, 300}, {50000, 16, 20000}} {
		rows, width, k := sh[0], sh[1], sh[2]
		r := newRand(uint64(rows*width + k))
		table := randSlice(r, rows*width)
		perm := r.Perm(rows)[:k] // distinct rows, for the scatter
		i64 := make([]int64, k)
		i32 := make([]int32, k)
		for i, p := range perm {
			i64[i], i32[i] = int64(p), int32(p)
		}
		for _, wide := range []bool{false, true} {
			hidx, didx := host32or64(i32, i64, wide), m.i32(i32)
			if wide {
				didx = m.i64(i64)
			}
			what := fmt.Sprintf("GatherRows(rows=%d, width=%d, k=%d, int64=%v)", rows, width, k, wide)
			want := make([]float32, k*width)
			ref.GatherRows(host(want), host(table), hidx, width)
			g := m.guardedOut(k*width, func(s []float32) { fill(r, s) })
			b.GatherRows(g.ddata, m.f32(table), didx, width)
			m.fetch(g)
			g.check(t, what)
			if i := firstDiff(g.data, want); i >= 0 {
				t.Fatalf("%s: [%d] = %v; want %v", what, i, g.data[i], want[i])
			}

			what = fmt.Sprintf("ScatterRows(rows=%d, width=%d, k=%d, int64=%v)", rows, width, k, wide)
			packed := randSlice(r, k*width)
			dst := newGuarded(rows * width)
			copy(dst.data, table)
			wantT := slices.Clone(table)
			ref.ScatterRows(host(wantT), host(packed), hidx, width)
			dd := m.guard(dst)
			b.ScatterRows(dd.ddata, m.f32(packed), didx, width)
			m.fetch(dd)
			dd.check(t, what)
			if i := firstDiff(dd.data, wantT); i >= 0 {
				t.Fatalf("%s: [%d] = %v; want %v", what, i, dd.data[i], wantT[i])
			}
		}
	}
}

func host32or64(i32 []int32, i64 []int64, wide bool) compute.Buffer {
	if wide {
		return compute.Wrap(i64)
	}
	return compute.Wrap(i32)
}

func to64(s []float32) []float64 {
	d := make([]float64, len(s))
	for i, v := range s {
		d[i] = float64(v)
	}
	return d
}

// centralDiff returns (f(x+h) - f(x-h)) / 2h and leaves f evaluated at x.
func centralDiff(f func(float64) float64, x, h float64) float64 {
	up := f(x + h)
	down := f(x - h)
	f(x)
	return (up - down) / (2 * h)
}
