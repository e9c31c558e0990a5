package compute

// The elementwise product of DCN-v2's cross layers and the second-order
// term of DeepFM's factorization machine.

func checkMul(out, a, b []float32) {
	if len(a) != len(out) || len(b) != len(out) {
		shapePanic("Mul", "len(a) = %d, len(b) = %d; want len(out) = %d", len(a), len(b), len(out))
	}
}

func checkFM(kernel string, out, emb []float32, n, f, d, stride int) {
	if n < 0 || f < 0 || d < 0 || stride < d {
		shapePanic(kernel, "bad size n=%d f=%d d=%d stride=%d", n, f, d, stride)
	}
	needLen(kernel, "out", out, n)
	if n > 0 && f > 0 {
		needLen(kernel, "emb", emb, (n*f-1)*stride+d)
	}
}

func mulRef(out, a, b []float32, accumulate bool) {
	a, b = a[:len(out)], b[:len(out)]
	if accumulate {
		for i := range out {
			out[i] += a[i] * b[i]
		}
		return
	}
	for i := range out {
		out[i] = a[i] * b[i]
	}
}

// fmForwardRef adds each sample's FM term to out, for samples [lo, hi).
// The per-factor sums are float32, added in field order.
func fmForwardRef(out, emb []float32, f, d, stride, lo, hi int, sum []float32) {
	for s := lo; s < hi; s++ {
		clear(sum)
		var sq float32
		for i := range f {
			e := emb[(s*f+i)*stride:]
			e = e[:len(sum)]
			for k, v := range e {
				sum[k] += v
				sq += v * v
			}
		}
		var tot float32
		for _, v := range sum {
			tot += v * v
		}
		out[s] += 0.5 * (tot - sq)
	}
}

// fmBackwardRef adds the FM term's gradient to demb for samples [lo, hi).
func fmBackwardRef(demb, dOut, emb []float32, f, d, stride, lo, hi int, sum []float32) {
	for s := lo; s < hi; s++ {
		clear(sum)
		for i := range f {
			e := emb[(s*f+i)*stride:]
			e = e[:len(sum)]
			for k, v := range e {
				sum[k] += v
			}
		}
		g := dOut[s]
		for i := range f {
			e := emb[(s*f+i)*stride:]
			e = e[:len(sum)]
			de := demb[(s*f+i)*stride:]
			de = de[:len(sum)]
			for k, v := range e {
				de[k] += g * (sum[k] - v)
			}
		}
	}
}

// Mul implements Backend.
func (c *CPU) Mul(ob, ab, bb Buffer, accumulate bool) {
	out, a, b := c.f32("Mul", "out", ob), c.f32("Mul", "a", ab), c.f32("Mul", "b", bb)
	checkMul(out, a, b)
	if len(out) <= elemGrain {
		mulRef(out, a, b, accumulate)
		return
	}
	c.pool.rangeChunks(len(out), elemGrain, 1, func(lo, hi int) {
		mulRef(out[lo:hi], a[lo:hi], b[lo:hi], accumulate)
	})
}

// fmGrain returns how many samples make a chunk worth a goroutine.
func fmGrain(f, d int) int { return max(1, elemGrain/max(1, f*d)) }

// FMForward implements Backend, splitting samples over goroutines.
func (c *CPU) FMForward(ob, eb Buffer, n, f, d, stride int) {
	out, emb := c.f32("FMForward", "out", ob), c.f32("FMForward", "emb", eb)
	checkFM("FMForward", out, emb, n, f, d, stride)
	c.pool.rangeChunks(n, fmGrain(f, d), 1, func(lo, hi int) {
		fmForwardRef(out, emb, f, d, stride, lo, hi, make([]float32, d))
	})
}

// FMBackward implements Backend, splitting samples over goroutines.
func (c *CPU) FMBackward(db, gb, eb Buffer, n, f, d, stride int) {
	const k = "FMBackward"
	demb, dOut, emb := c.f32(k, "demb", db), c.f32(k, "dOut", gb), c.f32(k, "emb", eb)
	checkFM(k, dOut, emb, n, f, d, stride)
	checkFM(k, dOut, demb, n, f, d, stride)
	c.pool.rangeChunks(n, fmGrain(f, d), 1, func(lo, hi int) {
		fmBackwardRef(demb, dOut, emb, f, d, stride, lo, hi, make([]float32, d))
	})
}

func (r ref) Mul(ob, ab, bb Buffer, accumulate bool) {
	out, a, b := r.f32("Mul", "out", ob), r.f32("Mul", "a", ab), r.f32("Mul", "b", bb)
	checkMul(out, a, b)
	mulRef(out, a, b, accumulate)
}

func (r ref) FMForward(ob, eb Buffer, n, f, d, stride int) {
	out, emb := r.f32("FMForward", "out", ob), r.f32("FMForward", "emb", eb)
	checkFM("FMForward", out, emb, n, f, d, stride)
	fmForwardRef(out, emb, f, d, stride, 0, n, make([]float32, d))
}

func (r ref) FMBackward(db, gb, eb Buffer, n, f, d, stride int) {
	const k = "FMBackward"
	demb, dOut, emb := r.f32(k, "demb", db), r.f32(k, "dOut", gb), r.f32(k, "emb", eb)
	checkFM(k, dOut, emb, n, f, d, stride)
	checkFM(k, dOut, demb, n, f, d, stride)
	fmBackwardRef(demb, dOut, emb, f, d, stride, 0, n, make([]float32, d))
}
