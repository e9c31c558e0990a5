package compute

import "sync"

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

// BiasAct implements Backend.
func (c *CPU) BiasAct(ob Buffer, n, width int, bb Buffer, relu bool) {
	out, bias := c.f32("BiasAct", "out", ob), c.optF32("BiasAct", "bias", bb)
	checkBiasAct(out, n, width, bias)
	if relu && bias != nil && c.pool.threads() == 1 {
		biasReLU(out, n, width, bias) // no closure to allocate on a one-thread backend
		return
	}
	c.pool.rangeChunks(n, max(1, elemGrain/max(width, 1)), 1, func(lo, hi int) {
		if relu && bias != nil {
			biasReLU(out[lo*width:hi*width], hi-lo, width, bias)
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
func (c *CPU) ReLUBackward(gb, ab Buffer) {
	grad, act := c.f32("ReLUBackward", "grad", gb), c.f32("ReLUBackward", "act", ab)
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
func (c *CPU) ReLUBackwardBiasGrad(dbb, gb, ab Buffer, n, width int) {
	const k = "ReLUBackwardBiasGrad"
	db, grad, act := c.f32(k, "db", dbb), c.f32(k, "grad", gb), c.f32(k, "act", ab)
	checkBiasGrad(db, grad, n, width)
	reluBackwardBiasGrad(grad[:n*width], act, n, width, db)
}

// BiasGrad implements Backend. Columns are split over goroutines and each
// column is summed in row order, so the result matches the reference
// bit for bit and does not depend on the thread count.
func (c *CPU) BiasGrad(dbb, gb Buffer, n, width int) {
	db, grad := c.f32("BiasGrad", "db", dbb), c.f32("BiasGrad", "grad", gb)
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

// DenseUpdate implements Backend. The parameters are split over the
// goroutines; each element's arithmetic is that of the reference, so the
// result does not depend on the split: SGD with two gradients runs the
// summed step of simd.go (g0 += g1, w -= lr*g0).
func (c *CPU) DenseUpdate(wb, accb Buffer, grads []Buffer, step Step) {
	const k = "DenseUpdate"
	w := c.f32(k, "w", wb)
	var acc []float32
	if step.Opt != OptSGD {
		acc = c.f32(k, "acc", accb)
	}
	gp := gradsPool.Get().(*[][]float32)
	g := (*gp)[:0]
	for _, gb := range grads {
		g = append(g, c.f32(k, "grads", gb))
	}
	checkDenseUpdate(w, acc, g, step)
	grain := elemGrain
	if acc != nil {
		grain = elemGrain / 8
	}
	if c.pool.threads() == 1 || len(w) <= grain {
		denseUpdateRange(w, acc, g, step, 0, len(w)) // no closure to allocate
	} else {
		c.pool.rangeChunks(len(w), grain, 1, func(lo, hi int) {
			denseUpdateRange(w, acc, g, step, lo, hi)
		})
	}
	*gp = g[:0]
	gradsPool.Put(gp)
}

var gradsPool = sync.Pool{New: func() any { return new([][]float32) }}

func checkDenseUpdate(w, acc []float32, g [][]float32, step Step) {
	checkDenseStep(step)
	if len(g) == 0 {
		shapePanic("DenseUpdate", "no gradients")
	}
	for i, gi := range g {
		if len(gi) != len(w) {
			shapePanic("DenseUpdate", "len(grads[%d]) = %d; want len(w) = %d", i, len(gi), len(w))
		}
	}
	if step.Opt == OptAdagrad && len(acc) != len(w) {
		shapePanic("DenseUpdate", "len(acc) = %d; want len(w) = %d", len(acc), len(w))
	}
	if step.Opt == OptAdam && len(acc) != 2*len(w) {
		shapePanic("DenseUpdate", "len(acc) = %d; want 2·len(w) = %d for Adam", len(acc), 2*len(w))
	}
}

// denseUpdateRange applies the step to parameters [lo, hi).
func denseUpdateRange(w, acc []float32, g [][]float32, step Step, lo, hi int) {
	ww := w[lo:hi]
	if step.Opt == OptSGD && step.WD == 0 && len(g) == 2 {
		sumSGD(ww, g[0][lo:hi], g[1][lo:hi], step.LR)
		return
	}
	g0 := g[0][lo:hi]
	g0 = g0[:len(ww)]
	for _, gl := range g[1:] {
		gl = gl[lo:hi]
		gl = gl[:len(g0)]
		for i, v := range gl {
			g0[i] += v
		}
	}
	stepRef(ww, g0, acc, step, lo, len(w))
}

// checkDenseStep panics on an optimizer DenseUpdate does not know.
func checkDenseStep(step Step) {
	if step.Opt != OptSGD && step.Opt != OptAdagrad && step.Opt != OptAdam {
		shapePanic("DenseUpdate", "unknown optimizer %d", int(step.Opt))
	}
	if step.Opt == OptAdam && (step.Beta1 < 0 || step.Beta1 >= 1 || step.Beta2 < 0 || step.Beta2 >= 1) {
		shapePanic("DenseUpdate", "Adam's betas %v, %v not in [0, 1)", step.Beta1, step.Beta2)
	}
}

// Axpy implements Backend.
func (c *CPU) Axpy(yb Buffer, alpha float32, xb Buffer) {
	y, x := c.f32("Axpy", "y", yb), c.f32("Axpy", "x", xb)
	checkAxpy(y, x)
	if len(y) <= elemGrain {
		axpy(y, alpha, x)
		return
	}
	c.pool.rangeChunks(len(y), elemGrain, 1, func(lo, hi int) {
		axpy(y[lo:hi], alpha, x[lo:hi])
	})
}

func checkAxpy(y, x []float32) {
	if len(x) != len(y) {
		shapePanic("Axpy", "len(x) = %d; want len(y) = %d", len(x), len(y))
	}
}

// Fill implements Backend.
func (c *CPU) Fill(xb Buffer, v float32) {
	x := c.f32("Fill", "x", xb)
	if len(x) <= elemGrain {
		fillRef(x, v)
		return
	}
	c.pool.rangeChunks(len(x), elemGrain, 1, func(lo, hi int) {
		fillRef(x[lo:hi], v)
	})
}

// Copy2D implements Backend.
func (c *CPU) Copy2D(db Buffer, ldd int, sb Buffer, lds int, rows, cols int) {
	dst, src := c.f32("Copy2D", "dst", db), c.f32("Copy2D", "src", sb)
	checkCopy2D(dst, ldd, src, lds, rows, cols)
	if rows*cols <= elemGrain {
		copy2DRef(dst, ldd, src, lds, rows, cols)
		return
	}
	c.pool.rangeChunks(rows, max(1, elemGrain/max(cols, 1)), 1, func(lo, hi int) {
		copy2DRef(dst[lo*ldd:], ldd, src[lo*lds:], lds, hi-lo, cols)
	})
}

func checkCopy2D(dst []float32, ldd int, src []float32, lds int, rows, cols int) {
	if rows < 0 || cols < 0 {
		shapePanic("Copy2D", "negative size rows=%d cols=%d", rows, cols)
	}
	needMat("Copy2D", "dst", dst, rows, cols, ldd)
	needMat("Copy2D", "src", src, rows, cols, lds)
}
