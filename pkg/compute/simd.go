package compute

import (
	"math"
	"sync"
)

// Host-memory kernels with an AVX2 fast path (simd_amd64.s) and a pure-Go
// twin, which the CPU backend's kernels call; the tests compare the two
// paths bit for bit (simd_test.go) and both with the reference backend.

// biasReLU adds bias (length w) to every row of the n×w row-major matrix
// out and applies max(0, x): BiasAct with relu set, bit for bit for
// finite values (a NaN may come out as NaN or 0).
func biasReLU(out []float32, n, w int, bias []float32) {
	checkBiasAct(out, n, w, bias)
	if bias == nil {
		shapePanic("BiasAct", "bias is nil")
	}
	if n == 0 || w == 0 {
		return
	}
	if hasAVX2 && w%8 == 0 {
		biasReLUAVX2(&out[0], n, w, &bias[0])
		return
	}
	biasReLUGo(out, n, w, bias)
}

// biasReLUGo is BiasReLU without branches on the data: with activations of
// random sign, a compare-and-branch per value mispredicts half the time.
func biasReLUGo(out []float32, n, w int, bias []float32) {
	bias = bias[:w]
	for i := range n {
		row := out[i*w : i*w+w]
		row = row[:len(bias)]
		for j, b := range bias {
			u := math.Float32bits(row[j] + b)
			row[j] = math.Float32frombits(u &^ uint32(int32(u)>>31))
		}
	}
}

// reluBackwardBiasGrad zeroes g (n×w) wherever act <= 0, as the gradient of
// a ReLU whose output is act, and writes the column sums of the result,
// summed in row order, into sum (length w): ReLUBackward followed by
// BiasGrad in one pass, bit for bit for finite values.
func reluBackwardBiasGrad(g, act []float32, n, w int, sum []float32) {
	checkBiasGrad(sum, g, n, w)
	needLen("ReLUBackwardBiasGrad", "act", act, n*w)
	clear(sum)
	if n == 0 || w == 0 {
		return
	}
	if hasAVX2 && w%8 == 0 {
		reluBackwardSumAVX2(&g[0], &act[0], n, w, &sum[0])
		return
	}
	reluBackwardSumGo(g, act, n, w, sum)
}

func reluBackwardSumGo(g, act []float32, n, w int, sum []float32) {
	sum = sum[:w]
	for i := range n {
		row := g[i*w : i*w+w]
		a := act[i*w : i*w+w]
		a, s := a[:len(row)], sum[:len(row)]
		for j, v := range row {
			v = math.Float32frombits(math.Float32bits(v) & positive(math.Float32bits(a[j])))
			row[j] = v
			s[j] += v
		}
	}
}

// positive returns all ones when the float32 with bits u is greater than
// zero and 0 otherwise (for -0, +0 and negatives): with x = int32(u), x > 0
// exactly when -x and ^x are both negative.
func positive(u uint32) uint32 {
	x := int32(u)
	return uint32(((-x) & ^x) >> 31)
}

// sumSGD adds g1 into g0 and applies an SGD step with the sum:
// g0 += g1, then w -= lr*g0, elementwise (a rounded product, then a
// rounded difference: the arithmetic of an SGD step of DenseUpdate).
func sumSGD(w, g0, g1 []float32, lr float32) {
	if len(g0) != len(w) || len(g1) != len(w) {
		shapePanic("DenseUpdate", "len(g0) = %d, len(g1) = %d; want len(w) = %d", len(g0), len(g1), len(w))
	}
	k := 0
	if hasAVX2 {
		k = len(w) &^ 7
		if k > 0 {
			sgdSum2AVX2(&w[0], &g0[0], &g1[0], k, lr)
		}
	}
	sumSGDGo(w[k:], g0[k:], g1[k:], lr)
}

func sumSGDGo(w, g0, g1 []float32, lr float32) {
	g0, g1 = g0[:len(w)], g1[:len(w)]
	for i, v := range g1 {
		gi := g0[i] + v
		g0[i] = gi
		w[i] -= lr * gi
	}
}

// scratch is a reusable float32 buffer for the kernels' per-goroutine
// temporaries, so that a steady-state call allocates nothing.
var scratchPool = sync.Pool{New: func() any { return new([]float32) }}

func getScratch(n int) *[]float32 {
	p := scratchPool.Get().(*[]float32)
	if cap(*p) < n {
		*p = make([]float32, n)
	}
	*p = (*p)[:n]
	return p
}

// interactAVX2 reports whether the AVX2 interaction kernels handle
// dimension d.
func interactAVX2(d int) bool { return hasAVX2 && d > 0 && d%8 == 0 }

// interactForwardAVX2 computes the output rows of samples [lo, hi). The
// Gram triangle of each sample runs in interactTriAVX2 on a copy of
// T = [x; e1..ef] with two rows of padding.
func interactForwardAVX2(out, x, emb []float32, lo, hi, f, d int) {
	m, w := f+1, InteractWidth(f, d)
	p := getScratch((m + 2) * d)
	tt := *p
	for s := lo; s < hi; s++ {
		xs := x[s*d : s*d+d]
		o := out[s*w : s*w+w]
		copy(o[:d], xs)
		if f == 0 {
			continue
		}
		copy(tt, xs)
		copy(tt[d:m*d], emb[s*f*d:(s+1)*f*d])
		interactTriAVX2(&o[d], &tt[0], m, d)
	}
	scratchPool.Put(p)
}

// interactBackwardAVX2 computes the gradients of samples [lo, hi):
// dT = S·T in interactGradAVX2, S being the symmetric matrix of the pair
// gradients, then dx += the pass-through part of dOut.
func interactBackwardAVX2(dx, demb, dOut, x, emb []float32, lo, hi, f, d int) {
	m, w := f+1, InteractWidth(f, d)
	p := getScratch(m * d)
	tt := *p
	for s := lo; s < hi; s++ {
		g := dOut[s*w : s*w+w]
		dxs := dx[s*d : s*d+d]
		if f == 0 {
			copy(dxs, g[:d])
			continue
		}
		copy(tt, x[s*d:s*d+d])
		copy(tt[d:], emb[s*f*d:(s+1)*f*d])
		de := demb[s*f*d : (s+1)*f*d]
		interactGradAVX2(&dxs[0], &de[0], &tt[0], &g[d], m, d)
		axpy(dxs, 1, g[:d])
	}
	scratchPool.Put(p)
}
