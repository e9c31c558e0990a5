package compute

func checkBCE(dlogit, logit, label []float32) {
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
func (c *CPU) BCEWithLogits(dlogit, logit, label []float32) float64 {
	checkBCE(dlogit, logit, label)
	n := len(logit)
	if n == 0 {
		return 0
	}
	chunks := (n + bceChunk - 1) / bceChunk
	var one [1]float64
	partial := one[:]
	if chunks > 1 {
		partial = make([]float64, chunks)
	}
	nf := float64(n)
	c.pool.run(chunks, func(ch int) {
		lo, hi := ch*bceChunk, min((ch+1)*bceChunk, n)
		var sum float64
		for i := lo; i < hi; i++ {
			l, diff := bceTerm(float64(logit[i]), float64(label[i]))
			sum += l
			if dlogit != nil {
				dlogit[i] = float32(diff / nf)
			}
		}
		partial[ch] = sum
	})
	var sum float64
	for _, p := range partial {
		sum += p
	}
	return sum / nf
}
