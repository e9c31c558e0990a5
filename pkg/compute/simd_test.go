package compute

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// guardedSlice returns n values inside a buffer whose margins hold a
// sentinel, and a function reporting whether the margins are intact.
func guardedSlice(n int, fill func(i int) float32) ([]float32, func() bool) {
	const margin, sentinel = 9, 1234.5
	buf := make([]float32, n+2*margin)
	for i := range buf {
		buf[i] = sentinel
	}
	s := buf[margin : margin+n : margin+n]
	for i := range s {
		s[i] = fill(i)
	}
	return s, func() bool {
		for i := range margin {
			if buf[i] != sentinel || buf[len(buf)-1-i] != sentinel {
				return false
			}
		}
		return true
	}
}

func sameBitsSlices(got, want []float32) error {
	if len(got) != len(want) {
		return fmt.Errorf("length %d; want %d", len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			return fmt.Errorf("[%d] = %v; want %v", i, got[i], want[i])
		}
	}
	return nil
}

// signedValues draws normal values with exact zeros of both signs mixed in.
func signedValues(r *rand.Rand) func(int) float32 {
	return func(int) float32 {
		switch r.IntN(10) {
		case 0:
			return 0
		case 1:
			return float32(math.Copysign(0, -1))
		}
		return float32(r.NormFloat64())
	}
}

// The host epilogue kernels against the reference backend, bit for bit, on
// widths that take the AVX2 path (multiples of 8) and widths that do not.
func TestHostEpiloguesMatchReference(t *testing.T) {
	t.Logf("AVX2 kernels: %v", hasAVX2)
	ref := Reference()
	r := rand.New(rand.NewPCG(7, 7))
	val := signedValues(r)
	for _, sh := range [][2]int{{1, 1}, {3, 5}, {7, 8}, {5, 16}, {13, 33}, {64, 9}, {9, 40}, {33, 512}, {0, 8}, {2, 0}} {
		n, w := sh[0], sh[1]
		t.Run(fmt.Sprintf("%dx%d", n, w), func(t *testing.T) {
			x, _ := guardedSlice(n*w, val)
			bias, _ := guardedSlice(w, val)
			want := append([]float32(nil), x...)
			ref.BiasAct(Wrap(want), n, w, Wrap(bias), true)
			got, ok := guardedSlice(n*w, func(i int) float32 { return x[i] })
			biasReLU(got, n, w, bias)
			if err := sameBitsSlices(got, want); err != nil || !ok() {
				t.Fatalf("biasReLU differs from BiasAct: %v (guards intact: %v)", err, ok())
			}
			goGot := append([]float32(nil), x...)
			if w > 0 {
				biasReLUGo(goGot, n, w, bias)
			}
			if err := sameBitsSlices(goGot, want); err != nil {
				t.Fatalf("biasReLUGo differs from BiasAct: %v", err)
			}

			act := want
			g0, _ := guardedSlice(n*w, val)
			wantG := append([]float32(nil), g0...)
			ref.ReLUBackward(Wrap(wantG), Wrap(act))
			wantDB := make([]float32, w)
			ref.BiasGrad(Wrap(wantDB), Wrap(wantG), n, w)
			g, gOK := guardedSlice(n*w, func(i int) float32 { return g0[i] })
			db, dbOK := guardedSlice(w, func(int) float32 { return float32(math.NaN()) }) // overwritten
			reluBackwardBiasGrad(g, act, n, w, db)
			if err := sameBitsSlices(g, wantG); err != nil || !gOK() {
				t.Fatalf("reluBackwardBiasGrad gradient differs from ReLUBackward: %v (guards intact: %v)", err, gOK())
			}
			if err := sameBitsSlices(db, wantDB); err != nil || !dbOK() {
				t.Fatalf("reluBackwardBiasGrad sums differ from BiasGrad: %v (guards intact: %v)", err, dbOK())
			}
			goG, goDB := append([]float32(nil), g0...), make([]float32, w)
			reluBackwardSumGo(goG, act, n, w, goDB)
			if err := sameBitsSlices(goG, wantG); err != nil {
				t.Fatalf("reluBackwardSumGo gradient: %v", err)
			}
			if err := sameBitsSlices(goDB, wantDB); err != nil {
				t.Fatalf("reluBackwardSumGo sums: %v", err)
			}
		})
	}
}

func TestSumSGDMatchesReference(t *testing.T) {
	ref := Reference()
	r := rand.New(rand.NewPCG(8, 8))
	val := signedValues(r)
	for _, n := range []int{0, 1, 7, 8, 9, 31, 64, 1001} {
		w0, _ := guardedSlice(n, val)
		g0, _ := guardedSlice(n, val)
		g1, _ := guardedSlice(n, val)
		wantG := append([]float32(nil), g0...)
		for i, v := range g1 {
			wantG[i] += v
		}
		wantW := append([]float32(nil), w0...)
		ref.DenseUpdate(Wrap(wantW), Buffer{}, []Buffer{Wrap(append([]float32(nil), wantG...))}, Step{Opt: OptSGD, LR: 0.37})
		w, wOK := guardedSlice(n, func(i int) float32 { return w0[i] })
		g, gOK := guardedSlice(n, func(i int) float32 { return g0[i] })
		sumSGD(w, g, g1, 0.37)
		if err := sameBitsSlices(w, wantW); err != nil || !wOK() {
			t.Errorf("sumSGD(n=%d) weights: %v (guards intact: %v)", n, err, wOK())
		}
		if err := sameBitsSlices(g, wantG); err != nil || !gOK() {
			t.Errorf("sumSGD(n=%d) summed gradient: %v (guards intact: %v)", n, err, gOK())
		}
	}
}

// The AVX2 interaction kernels against the Go kernels of the other paths
// (within rounding: they sum in another order), with guards around every
// output, on every remainder of f+1 modulo 4.
func TestInteractAVX2MatchesGo(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2 on this machine")
	}
	r := rand.New(rand.NewPCG(9, 9))
	val := func(int) float32 { return 2*r.Float32() - 1 }
	for _, sh := range [][3]int{{3, 0, 8}, {2, 1, 8}, {3, 2, 16}, {2, 3, 8}, {5, 4, 24}, {4, 7, 16}, {17, 26, 16}, {3, 9, 64}} {
		n, f, d := sh[0], sh[1], sh[2]
		w := InteractWidth(f, d)
		x, _ := guardedSlice(n*d, val)
		emb, _ := guardedSlice(n*f*d, val)
		out, outOK := guardedSlice(n*w, func(int) float32 { return float32(math.NaN()) })
		interactForwardAVX2(out, x, emb, 0, n, f, d)
		want := make([]float32, n*w)
		for s := range n {
			interactSample(want[s*w:s*w+w], x[s*d:s*d+d], emb[s*f*d:(s+1)*f*d], f, d)
		}
		if !outOK() {
			t.Errorf("interactForwardAVX2(n=%d, f=%d, d=%d) wrote outside out", n, f, d)
		}
		for i := range want {
			if math.Abs(float64(out[i]-want[i])) > 1e-5*float64(d) {
				t.Fatalf("interactForwardAVX2(n=%d, f=%d, d=%d)[%d] = %v; want %v", n, f, d, i, out[i], want[i])
			}
		}

		dOut, _ := guardedSlice(n*w, val)
		dx, dxOK := guardedSlice(n*d, func(int) float32 { return float32(math.NaN()) })
		demb, dembOK := guardedSlice(n*f*d, func(int) float32 { return float32(math.NaN()) })
		interactBackwardAVX2(dx, demb, dOut, x, emb, 0, n, f, d)
		if !dxOK() || !dembOK() {
			t.Errorf("interactBackwardAVX2(n=%d, f=%d, d=%d) wrote outside dx or demb", n, f, d)
		}
		wantX, wantE := make([]float32, n*d), make([]float32, n*f*d)
		sym, tt := make([]float32, (f+1)*(f+1)), make([]float32, (f+1)*d)
		for s := range n {
			interactBackwardSample(sym, tt, wantX[s*d:s*d+d], wantE[s*f*d:(s+1)*f*d], dOut[s*w:s*w+w],
				x[s*d:s*d+d], emb[s*f*d:(s+1)*f*d], f, d)
		}
		for i := range wantX {
			if math.Abs(float64(dx[i]-wantX[i])) > 1e-5*float64(f+1) {
				t.Fatalf("interactBackwardAVX2(n=%d, f=%d, d=%d) dx[%d] = %v; want %v", n, f, d, i, dx[i], wantX[i])
			}
		}
		for i := range wantE {
			if math.Abs(float64(demb[i]-wantE[i])) > 1e-5*float64(f+1) {
				t.Fatalf("interactBackwardAVX2(n=%d, f=%d, d=%d) demb[%d] = %v; want %v", n, f, d, i, demb[i], wantE[i])
			}
		}
	}
}

func TestPositive(t *testing.T) {
	for _, v := range []float32{0, float32(math.Copysign(0, -1)), 1e-45, -1e-45, 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32, -math.MaxFloat32} {
		got := positive(math.Float32bits(v)) != 0
		if got != (v > 0) {
			t.Errorf("positive(%v) = %v; want %v", v, got, v > 0)
		}
	}
}
