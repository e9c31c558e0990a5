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
	ref := compute.Reference()
	for i, sh := range rowShapes {
		n, w := sh[0], sh[1]
		for _, withBias := range []bool{false, true} {
			for _, relu := range []bool{false, true} {
				r := newRand(uint64(i))
				var bias []float32
				if withBias {
					bias = randSlice(r, w)
				}
				g := newGuarded(n * w)
				fill(r, g.data)
				want := slices.Clone(g.data)
				ref.BiasAct(want, n, w, bias, relu)
				b.BiasAct(g.data, n, w, bias, relu)
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
	ref := compute.Reference()
	for _, n := range []int{0, 1, 3, 17, 129, 70000} {
		r := newRand(uint64(n))
		act := reluActivations(r, n)
		g := newGuarded(n)
		fill(r, g.data)
		want := slices.Clone(g.data)
		ref.ReLUBackward(want, act)
		b.ReLUBackward(g.data, act)
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
	ref := compute.Reference()
	for i, sh := range rowShapes {
		n, w := sh[0], sh[1]
		r := newRand(uint64(i))
		grad := randSlice(r, n*w)
		want := make([]float32, w)
		ref.BiasGrad(want, grad, n, w)
		g := newGuarded(w)
		fill(r, g.data) // must be overwritten, not accumulated into
		b.BiasGrad(g.data, grad, n, w)
		what := fmt.Sprintf("BiasGrad(n=%d, width=%d)", n, w)
		g.check(t, what)
		compareSlices(t, what, g.data, want, 1e-6, float64(n))
	}
}

// TestBiasReLUGrad checks the linear-layer backward kernels against central
// finite differences of L = Σ wgt ⊙ relu(X + bias), in float64.
func TestBiasReLUGrad(t *testing.T, b compute.Backend) {
	const n, w, h = 7, 5, 1e-3
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
	act := slices.Clone(x)
	b.BiasAct(act, n, w, bias, true)
	dx := slices.Clone(wgt)
	b.ReLUBackward(dx, act)
	db := make([]float32, w)
	b.BiasGrad(db, dx, n, w)

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
	ref := compute.Reference()
	for _, sh := range [][2]int{{0, 8}, {1, 1}, {3, 5}, {17, 8}, {33, 24}, {129, 13}, {64, 512}} {
		n, w := sh[0], sh[1]
		r := newRand(uint64(n*1000 + w))
		act := reluActivations(r, n*w)
		g := newGuarded(n * w)
		fill(r, g.data)
		db := newGuarded(w)
		want := slices.Clone(g.data)
		wantDB := make([]float32, w)
		ref.ReLUBackward(want, act)
		ref.BiasGrad(wantDB, want, n, w)
		b.ReLUBackwardBiasGrad(db.data, g.data, act, n, w)
		what := fmt.Sprintf("ReLUBackwardBiasGrad(n=%d, w=%d)", n, w)
		g.check(t, what+" grad")
		db.check(t, what+" db")
		compareSlices(t, what+" grad", g.data, want, 0, 1)
		compareSlices(t, what+" db", db.data, wantDB, 0, 1)
	}
}

// TestDenseOptimizers checks SGD and Adagrad against the reference and a
// hand-computed step.
func TestDenseOptimizers(t *testing.T, b compute.Backend) {
	// Hand example: w = 1, g = 2, acc = 0, lr = 0.1, eps = 0:
	// SGD: 1 - 0.2 = 0.8. Adagrad: acc = 4, w = 1 - 0.1*2/2 = 0.9.
	w := []float32{1, -1}
	b.SGD(w, []float32{2, -3}, 0.1)
	if !closeTo(float64(w[0]), 0.8, 1e-6, 1) || !closeTo(float64(w[1]), -0.7, 1e-6, 1) {
		t.Errorf("SGD step = %v; want [0.8 -0.7]", w)
	}
	w, acc := []float32{1, 1}, []float32{0, 5}
	b.Adagrad(w, []float32{2, 2}, acc, 0.1, 0)
	if acc[0] != 4 || acc[1] != 9 || !closeTo(float64(w[0]), 0.9, 1e-6, 1) || !closeTo(float64(w[1]), 1-0.2/3, 1e-6, 1) {
		t.Errorf("Adagrad step: w = %v, acc = %v; want [0.9 %v], [4 9]", w, acc, 1-0.2/3)
	}

	ref := compute.Reference()
	for _, n := range []int{0, 1, 17, 129, 100003} {
		r := newRand(uint64(n))
		w0, g := randSlice(r, n), randSlice(r, n)
		acc0 := randSlice(r, n)
		for i := range acc0 {
			acc0[i] = float32(math.Abs(float64(acc0[i])))
		}
		gw := newGuarded(n)
		copy(gw.data, w0)
		want := slices.Clone(w0)
		ref.SGD(want, g, 0.05)
		b.SGD(gw.data, g, 0.05)
		gw.check(t, fmt.Sprintf("SGD(n=%d)", n))
		compareSlices(t, fmt.Sprintf("SGD(n=%d)", n), gw.data, want, 1e-6, 1)

		ga := newGuarded(n)
		copy(gw.data, w0)
		copy(ga.data, acc0)
		want, wantAcc := slices.Clone(w0), slices.Clone(acc0)
		ref.Adagrad(want, g, wantAcc, 0.05, 0.1)
		b.Adagrad(gw.data, g, ga.data, 0.05, 0.1)
		what := fmt.Sprintf("Adagrad(n=%d)", n)
		gw.check(t, what)
		ga.check(t, what+" acc")
		compareSlices(t, what, gw.data, want, 1e-5, 1)
		compareSlices(t, what+" acc", ga.data, wantAcc, 1e-6, 1)
	}
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
