package computetest

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/compute"
)

// interactShapes are (n, f, d): samples, embedding vectors, dimension.
// Dimensions that are multiples of 8 take the AVX2 kernels on amd64; the
// feature counts cover every remainder of a row's dots modulo 4.
var interactShapes = [][3]int{{0, 2, 3}, {1, 0, 4}, {1, 1, 1}, {3, 2, 5}, {5, 3, 17}, {2, 26, 16}, {129, 8, 4}, {300, 26, 16},
	{1, 0, 8}, {2, 1, 8}, {3, 2, 24}, {7, 5, 8}, {5, 6, 16}, {4, 7, 32}, {65, 13, 16}, {9, 26, 128}}

// TestInteract checks InteractForward and InteractBackward against the
// reference, and the output layout against a hand-written example.
func TestInteract(t *testing.T, b compute.Backend) {
	// x = [1 2], e1 = [3 4], e2 = [5 6]: out = x, x·e1, x·e2, e1·e2.
	out := make([]float32, compute.InteractWidth(2, 2))
	b.InteractForward(out, []float32{1, 2}, []float32{3, 4, 5, 6}, 1, 2, 2)
	if want := []float32{1, 2, 11, 17, 39}; !slices.Equal(out, want) {
		t.Errorf("InteractForward(x=[1 2], e=[[3 4] [5 6]]) = %v; want %v", out, want)
	}

	ref := compute.Reference()
	for i, sh := range interactShapes {
		n, f, d := sh[0], sh[1], sh[2]
		w := compute.InteractWidth(f, d)
		r := newRand(uint64(i))
		x, emb := randSlice(r, n*d), randSlice(r, n*f*d)
		what := fmt.Sprintf("InteractForward(n=%d, f=%d, d=%d)", n, f, d)
		g := newGuarded(n * w)
		want := make([]float32, n*w)
		ref.InteractForward(want, x, emb, n, f, d)
		b.InteractForward(g.data, x, emb, n, f, d)
		g.check(t, what)
		compareSlices(t, what, g.data, want, 1e-6, float64(d))

		dOut := randSlice(r, n*w)
		what = fmt.Sprintf("InteractBackward(n=%d, f=%d, d=%d)", n, f, d)
		gx, ge := newGuarded(n*d), newGuarded(n*f*d)
		fill(r, gx.data) // must be overwritten
		fill(r, ge.data)
		wantX, wantE := make([]float32, n*d), make([]float32, n*f*d)
		ref.InteractBackward(wantX, wantE, dOut, x, emb, n, f, d)
		b.InteractBackward(gx.data, ge.data, dOut, x, emb, n, f, d)
		gx.check(t, what+" dx")
		ge.check(t, what+" demb")
		compareSlices(t, what+" dx", gx.data, wantX, 1e-5, float64(f+1))
		compareSlices(t, what+" demb", ge.data, wantE, 1e-5, float64(f+1))
	}
}

// interact64 is an independent float64 forward pass: the full Gram matrix,
// then its strictly lower triangle row by row.
func interact64(x, emb []float64, n, f, d int) []float64 {
	var out []float64
	for s := range n {
		t := make([][]float64, f+1)
		t[0] = x[s*d : (s+1)*d]
		for i := 1; i <= f; i++ {
			t[i] = emb[(s*f+i-1)*d : (s*f+i)*d]
		}
		out = append(out, t[0]...)
		for i := range f + 1 {
			for j := range f + 1 {
				if j >= i {
					continue
				}
				var z float64
				for k := range d {
					z += t[i][k] * t[j][k]
				}
				out = append(out, z)
			}
		}
	}
	return out
}

// TestInteractGrad checks InteractBackward against central finite
// differences of L = Σ wgt ⊙ interact(x, emb) computed in float64.
func TestInteractGrad(t *testing.T, b compute.Backend) {
	const n, f, d, h = 3, 4, 5, 1e-4
	w := compute.InteractWidth(f, d)
	r := newRand(7)
	x, emb, wgt := randSlice(r, n*d), randSlice(r, n*f*d), randSlice(r, n*w)
	dx, demb := make([]float32, n*d), make([]float32, n*f*d)
	b.InteractBackward(dx, demb, wgt, x, emb, n, f, d)

	x64, e64, w64 := to64(x), to64(emb), to64(wgt)
	loss := func() float64 {
		var l float64
		for i, v := range interact64(x64, e64, n, f, d) {
			l += w64[i] * v
		}
		return l
	}
	for i := range x64 {
		fd := centralDiff(func(v float64) float64 { x64[i] = v; return loss() }, x64[i], h)
		if !closeTo(float64(dx[i]), fd, 1e-4, 1) {
			t.Errorf("dL/dx[%d] = %v; finite difference %v", i, dx[i], fd)
		}
	}
	for i := range e64 {
		fd := centralDiff(func(v float64) float64 { e64[i] = v; return loss() }, e64[i], h)
		if !closeTo(float64(demb[i]), fd, 1e-4, 1) {
			t.Errorf("dL/demb[%d] = %v; finite difference %v", i, demb[i], fd)
		}
	}
}

// TestBCE checks BCEWithLogits against the reference, a hand-computed
// value, extreme logits and central finite differences.
func TestBCE(t *testing.T, b compute.Backend) {
	// logit 0 gives p = 1/2: loss ln 2 whatever the label; grad ∓1/2 / n.
	d := make([]float32, 2)
	if l := b.BCEWithLogits(d, []float32{0, 0}, []float32{1, 0}); !closeTo(l, math.Ln2, 1e-12, 1) || d[0] != -0.25 || d[1] != 0.25 {
		t.Errorf("BCEWithLogits([0 0], [1 0]) = %v, dlogit %v; want %v, [-0.25 0.25]", l, d, math.Ln2)
	}
	// Extreme logits stay finite: loss ≈ |z| for the wrong label, 0 for the right one.
	z := []float32{100, -100, 1e4, -1e4, 88.7, -88.7}
	y := []float32{0, 1, 1, 0, 1, 1}
	d = make([]float32, len(z))
	l := b.BCEWithLogits(d, z, y)
	if want := (100.0 + 100 + 0 + 0 + 0 + 88.7) / 6; !closeTo(l, want, 1e-5, want) {
		t.Errorf("BCEWithLogits(extreme) = %v; want %v", l, want)
	}
	for i, v := range d {
		if math.IsNaN(float64(v)) || math.Abs(float64(v)) > 1.0/6+1e-7 {
			t.Errorf("BCEWithLogits(extreme): dlogit[%d] = %v; want within ±1/6", i, v)
		}
	}

	ref := compute.Reference()
	for _, n := range []int{0, 1, 17, 129, 1024, 5000} {
		r := newRand(uint64(n))
		logit := randSlice(r, n)
		label := make([]float32, n)
		for i := range logit {
			logit[i] *= 8
			if r.IntN(3) == 0 {
				label[i] = 1
			}
		}
		what := fmt.Sprintf("BCEWithLogits(n=%d)", n)
		g := newGuarded(n)
		want := make([]float32, n)
		wantLoss := ref.BCEWithLogits(want, logit, label)
		gotLoss := b.BCEWithLogits(g.data, logit, label)
		g.check(t, what)
		if !closeTo(gotLoss, wantLoss, 1e-6, 1) {
			t.Errorf("%s = %v; want %v", what, gotLoss, wantLoss)
		}
		compareSlices(t, what+" dlogit", g.data, want, 1e-6, 1.0/float64(max(n, 1)))
		if noGrad := b.BCEWithLogits(nil, logit, label); !closeTo(noGrad, wantLoss, 1e-6, 1) {
			t.Errorf("%s without dlogit = %v; want %v", what, noGrad, wantLoss)
		}
	}

	// Finite differences of the mean loss in float64.
	const n, h = 9, 1e-4
	r := newRand(3)
	logit, label := randSlice(r, n), make([]float32, n)
	for i := range logit {
		logit[i] *= 4
		label[i] = float32(i % 2)
	}
	grad := make([]float32, n)
	b.BCEWithLogits(grad, logit, label)
	z64 := to64(logit)
	loss := func() float64 {
		var l float64
		for i, zi := range z64 {
			p := 1 / (1 + math.Exp(-zi))
			yi := float64(label[i])
			l -= yi*math.Log(p) + (1-yi)*math.Log(1-p)
		}
		return l / n
	}
	for i := range z64 {
		fd := centralDiff(func(v float64) float64 { z64[i] = v; return loss() }, z64[i], h)
		if !closeTo(float64(grad[i]), fd, 1e-5, 1) {
			t.Errorf("dL/dlogit[%d] = %v; finite difference %v", i, grad[i], fd)
		}
	}
}
