package compute

import "math"

// elemGrain is the number of elementwise operations below which splitting
// a loop over goroutines costs more than it saves.
const elemGrain = 1 << 14

func checkBiasAct(out []float32, n, width int, bias []float32) {
	checkRows("BiasAct", n, width)
	needLen("BiasAct", "out", out, n*width)
	if bias != nil && len(bias) != width {
		shapePanic("BiasAct", "len(bias) = %d; want %d", len(bias), width)
	}
}

func checkReLUBackward(grad, act []float32) {
	needLen("ReLUBackward", "act", act, len(grad))
}

func checkBiasGrad(db, grad []float32, n, width int) {
	checkRows("BiasGrad", n, width)
	if len(db) != width {
		shapePanic("BiasGrad", "len(db) = %d; want %d", len(db), width)
	}
	needLen("BiasGrad", "grad", grad, n*width)
}

func checkSGD(w, g []float32) {
	if len(g) != len(w) {
		shapePanic("SGD", "len(g) = %d; want len(w) = %d", len(g), len(w))
	}
}

func checkAdagrad(w, g, acc []float32) {
	if len(g) != len(w) || len(acc) != len(w) {
		shapePanic("Adagrad", "len(g) = %d, len(acc) = %d; want len(w) = %d", len(g), len(acc), len(w))
	}
}

// BiasAct implements Backend.
func (c *CPU) BiasAct(out []float32, n, width int, bias []float32, relu bool) {
	checkBiasAct(out, n, width, bias)
	if relu && bias != nil && c.pool.threads() == 1 {
		BiasReLU(out, n, width, bias) // no closure to allocate on a one-thread backend
		return
	}
	c.pool.rangeChunks(n, max(1, elemGrain/max(width, 1)), 1, func(lo, hi int) {
		if relu && bias != nil {
			BiasReLU(out[lo*width:hi*width], hi-lo, width, bias)
			return
		}
		biasAct(out[lo*width:hi*width], hi-lo, width, bias, relu)
	})
}

func biasAct(out []float32, n, width int, bias []float32, relu bool) {
	switch {
	case bias == nil && relu:
		for i, v := range out[:n*width] {
			if !(v > 0) {
				out[i] = 0
			}
		}
	case bias == nil:
	default:
		bias = bias[:width]
		for i := range n {
			row := out[i*width : i*width+width]
			row = row[:len(bias)]
			if relu {
				for j, b := range bias {
					if v := row[j] + b; v > 0 {
						row[j] = v
					} else {
						row[j] = 0
					}
				}
			} else {
				for j, b := range bias {
					row[j] += b
				}
			}
		}
	}
}

// ReLUBackward implements Backend.
func (c *CPU) ReLUBackward(grad, act []float32) {
	checkReLUBackward(grad, act)
	c.pool.rangeChunks(len(grad), elemGrain, 1, func(lo, hi int) {
		g, a := grad[lo:hi], act[lo:hi]
		a = a[:len(g)]
		for i := range g {
			if !(a[i] > 0) {
				g[i] = 0
			}
		}
	})
}

// ReLUBackwardBiasGrad implements Backend, on the calling goroutine: it is
// one pass over grad, and the trainer's lanes already run in parallel.
func (c *CPU) ReLUBackwardBiasGrad(db, grad, act []float32, n, width int) {
	ReLUBackwardBiasGrad(grad[:n*width], act, n, width, db)
}

// BiasGrad implements Backend. Columns are split over goroutines and each
// column is summed in row order, so the result matches the reference
// bit for bit and does not depend on the thread count.
func (c *CPU) BiasGrad(db, grad []float32, n, width int) {
	checkBiasGrad(db, grad, n, width)
	const colAlign = 16
	blocks := (width + colAlign - 1) / colAlign
	grain := max(1, elemGrain/max(n*colAlign, 1))
	c.pool.rangeChunks(blocks, grain, 1, func(lo, hi int) {
		j0, j1 := lo*colAlign, min(hi*colAlign, width)
		d := db[j0:j1]
		clear(d)
		for i := range n {
			row := grad[i*width+j0 : i*width+j1]
			row = row[:len(d)]
			for j, g := range row {
				d[j] += g
			}
		}
	})
}

// SGD implements Backend.
func (c *CPU) SGD(w, g []float32, lr float32) {
	checkSGD(w, g)
	c.pool.rangeChunks(len(w), elemGrain, 1, func(lo, hi int) {
		sgdRef(w[lo:hi], g[lo:hi], lr)
	})
}

// Adagrad implements Backend.
func (c *CPU) Adagrad(w, g, acc []float32, lr, eps float32) {
	checkAdagrad(w, g, acc)
	c.pool.rangeChunks(len(w), elemGrain/8, 1, func(lo, hi int) {
		ww, gg, aa := w[lo:hi], g[lo:hi], acc[lo:hi]
		gg, aa = gg[:len(ww)], aa[:len(ww)]
		for i, gi := range gg {
			a := aa[i] + gi*gi
			aa[i] = a
			ww[i] -= lr * gi / (float32(math.Sqrt(float64(a))) + eps)
		}
	})
}
