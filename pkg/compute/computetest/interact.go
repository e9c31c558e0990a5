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
	m := newMem(t, b)
	// x = [1 2], e1 = [3 4], e2 = [5 6]: out = x, x·e1, x·e2, e1·e2.
	dout := m.alloc(compute.Float32, compute.InteractWidth(2, 2))
	b.InteractForward(dout, m.f32([]float32{1, 2}), m.f32([]float32{3, 4, 5, 6}), 1, 2, 2)
	if out, want := m.get(dout), []float32{1, 2, 11, 17, 39}; !slices.Equal(out, want) {
		t.Errorf("InteractForward(x=[1 2], e=[[3 4] [5 6]]) = %v; want %v", out, want)
	}

	ref := compute.Reference()
	for i, sh := range interactShapes {
		n, f, d := sh[0], sh[1], sh[2]
		w := compute.InteractWidth(f, d)
		r := newRand(uint64(i))
		x, emb := randSlice(r, n*d), randSlice(r, n*f*d)
		what := fmt.Sprintf("InteractForward(n=%d, f=%d, d=%d)", n, f, d)
		want := make([]float32, n*w)
		ref.InteractForward(host(want), host(x), host(emb), n, f, d)
		g := m.guardedOut(n*w, nil)
		dx, de := m.f32(x), m.f32(emb)
		b.InteractForward(g.ddata, dx, de, n, f, d)
		m.fetch(g)
		g.check(t, what)
		compareSlices(t, what, g.data, want, 1e-6, float64(d))

		dOut := randSlice(r, n*w)
		what = fmt.Sprintf("InteractBackward(n=%d, f=%d, d=%d)", n, f, d)
		noise := func(s []float32) { fill(r, s) } // must be overwritten
		gx, ge := m.guardedOut(n*d, noise), m.guardedOut(n*f*d, noise)
		wantX, wantE := make([]float32, n*d), make([]float32, n*f*d)
		ref.InteractBackward(host(wantX), host(wantE), host(dOut), host(x), host(emb), n, f, d)
		b.InteractBackward(gx.ddata, ge.ddata, m.f32(dOut), dx, de, n, f, d)
		m.fetch(gx)
		m.fetch(ge)
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
	m := newMem(t, b)
	ddx, dde := m.alloc(compute.Float32, n*d), m.alloc(compute.Float32, n*f*d)
	b.InteractBackward(ddx, dde, m.f32(wgt), m.f32(x), m.f32(emb), n, f, d)
	dx, demb := m.get(ddx), m.get(dde)

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

// bce runs BCEWithLogits on b and returns the mean loss and the
// gradient (nil when grad is false).
func bce(m *mem, logit, label []float32, grad bool, scale float32) (float64, []float32) {
	m.t.Helper()
	loss := m.alloc(compute.Float32, 1)
	var d compute.Buffer
	if grad {
		d = m.alloc(compute.Float32, len(logit))
	}
	m.be.BCEWithLogits(loss, d, m.f32(logit), m.f32(label), scale)
	l := float64(m.get(loss)[0]) / float64(max(len(logit), 1))
	if !grad {
		return l, nil
	}
	return l, m.get(d)
}

// TestBCE checks BCEWithLogits against the reference, a hand-computed
// value, extreme logits, the gradient scale and central finite
// differences; and compute.MeanBCE against the reference.
func TestBCE(t *testing.T, b compute.Backend) {
	m := newMem(t, b)
	// logit 0 gives p = 1/2: loss ln 2 whatever the label; grad ∓1/2 / n.
	if l, d := bce(m, []float32{0, 0}, []float32{1, 0}, true, 1); !closeTo(l, math.Ln2, 1e-7, 1) || d[0] != -0.25 || d[1] != 0.25 {
		t.Errorf("BCEWithLogits([0 0], [1 0]) = %v, dlogit %v; want %v, [-0.25 0.25]", l, d, math.Ln2)
	}
	// scale multiplies the gradient of the mean, not the loss.
	if l, d := bce(m, []float32{0, 0}, []float32{1, 0}, true, 0.5); !closeTo(l, math.Ln2, 1e-7, 1) || d[0] != -0.125 || d[1] != 0.125 {
		t.Errorf("BCEWithLogits([0 0], [1 0], scale 0.5) = %v, dlogit %v; want %v, [-0.125 0.125]", l, d, math.Ln2)
	}
	// Extreme logits stay finite: loss ≈ |z| for the wrong label, 0 for the right one.
	z := []float32{100, -100, 1e4, -1e4, 88.7, -88.7}
	y := []float32{0, 1, 1, 0, 1, 1}
	l, d := bce(m, z, y, true, 1)
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
		want := make([]float32, n)
		wantSum := make([]float32, 1)
		ref.BCEWithLogits(host(wantSum), host(want), host(logit), host(label), 1)
		wantLoss := float64(wantSum[0]) / float64(max(n, 1))
		g := m.guardedOut(n, nil)
		loss := m.alloc(compute.Float32, 1)
		b.BCEWithLogits(loss, g.ddata, m.f32(logit), m.f32(label), 1)
		m.fetch(g)
		g.check(t, what)
		if got := float64(m.get(loss)[0]) / float64(max(n, 1)); !closeTo(got, wantLoss, 1e-6, 1) {
			t.Errorf("%s = %v; want %v", what, got, wantLoss)
		}
		compareSlices(t, what+" dlogit", g.data, want, 1e-6, 1.0/float64(max(n, 1)))
		if noGrad, _ := bce(m, logit, label, false, 1); !closeTo(noGrad, wantLoss, 1e-6, 1) {
			t.Errorf("%s without dlogit = %v; want %v", what, noGrad, wantLoss)
		}
		if mean := compute.MeanBCE(logit, label); !closeTo(mean, wantLoss, 1e-6, 1) {
			t.Errorf("MeanBCE(n=%d) = %v; want %v", n, mean, wantLoss)
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
	_, grad := bce(m, logit, label, true, 1)
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
