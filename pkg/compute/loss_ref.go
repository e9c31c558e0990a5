package compute

import "math"

// bceTerm returns the binary cross-entropy of sigmoid(z) against y and
// sigmoid(z) - y, both computed without overflow for any finite z.
func bceTerm(z, y float64) (loss, diff float64) {
	e := math.Exp(-math.Abs(z)) // in (0, 1]
	loss = math.Max(z, 0) - z*y + math.Log1p(e)
	var sig float64
	if z >= 0 {
		sig = 1 / (1 + e)
	} else {
		sig = e / (1 + e)
	}
	return loss, sig - y
}

// bceRef returns the sum of the losses and writes the gradients of their
// mean, times scale, into dlogit when it is not nil.
func bceRef(dlogit, logit, label []float32, scale float32) float64 {
	n := len(logit)
	var sum float64
	for i, z := range logit {
		l, diff := bceTerm(float64(z), float64(label[i]))
		sum += l
		if dlogit != nil {
			g := float32(diff / float64(n))
			if scale != 1 {
				g *= scale
			}
			dlogit[i] = g
		}
	}
	return sum
}
