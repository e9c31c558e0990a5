package compute

func checkBCE(loss, dlogit, logit, label []float32) {
	if loss != nil && len(loss) < 1 {
		shapePanic("BCEWithLogits", "loss buffer is empty")
	}
	if len(label) < len(logit) {
		shapePanic("BCEWithLogits", "len(label) = %d; want at least len(logit) = %d", len(label), len(logit))
	}
	if dlogit != nil && len(dlogit) < len(logit) {
		shapePanic("BCEWithLogits", "len(dlogit) = %d; want at least len(logit) = %d", len(dlogit), len(logit))
	}
}

// bceChunk is the fixed chunk size of the loss sum. Partial sums are added
// in chunk order, so the result does not depend on the thread count.
const bceChunk = 512

// BCEWithLogits implements Backend.
func (c *CPU) BCEWithLogits(lossb, db, zb, yb Buffer, scale float32) {
	const k = "BCEWithLogits"
	logit, label := c.f32(k, "logit", zb), c.f32(k, "label", yb)
	dlogit := c.optF32(k, "dlogit", db)
	loss := c.optF32(k, "loss", lossb)
	checkBCE(loss, dlogit, logit, label)
	n := len(logit)
	chunks := (n + bceChunk - 1) / bceChunk
	var one [1]float64
	partial := one[:]
	if chunks > 1 {
		partial = make([]float64, chunks)
	}
	c.pool.run(chunks, func(ch int) {
		partial[ch] = bceChunkSum(dlogit, logit, label, n, scale, ch*bceChunk, min((ch+1)*bceChunk, n))
	})
	if loss != nil {
		var sum float64
		for _, p := range partial {
			sum += p
		}
		loss[0] = float32(sum)
	}
}

// bceChunkSum returns the sum of the losses of samples [lo, hi) of n and
// writes their gradients when dlogit is not nil.
func bceChunkSum(dlogit, logit, label []float32, n int, scale float32, lo, hi int) float64 {
	nf := float64(n)
	var sum float64
	for i := lo; i < hi; i++ {
		l, diff := bceTerm(float64(logit[i]), float64(label[i]))
		sum += l
		if dlogit != nil {
			g := float32(diff / nf)
			if scale != 1 {
				g *= scale
			}
			dlogit[i] = g
		}
	}
	return sum
}

// MeanBCE returns the mean binary cross-entropy of sigmoid(logit) against
// label, computed on the host, with the chunked summation of the CPU
// backend's BCEWithLogits (partial sums of bceChunk samples added in
// order), so that a loss computed either way is the same number.
func MeanBCE(logit, label []float32) float64 {
	n := len(logit)
	if n == 0 {
		return 0
	}
	if len(label) < n {
		shapePanic("MeanBCE", "len(label) = %d; want at least len(logit) = %d", len(label), n)
	}
	var sum float64
	for lo := 0; lo < n; lo += bceChunk {
		sum += bceChunkSum(nil, logit, label, n, 1, lo, min(lo+bceChunk, n))
	}
	return sum / float64(n)
}
