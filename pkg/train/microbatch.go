package train

// ActivationBytes returns the memory one sample's dense part of a step
// needs while it trains: the outputs of every layer and of the interaction,
// the gradient buffers, and the pooled embeddings with their gradient, in
// bytes (float32). It is RInstance, the per-instance cost of the dominant
// resource (device memory), in PICASSO's micro-batch estimate (seeds/000
// Eq. 2).
func ActivationBytes(s Shape) int64 {
	var v int64
	maxw := 0
	in := s.Dense
	for _, w := range s.Bottom {
		v += int64(w)
		maxw = max(maxw, in, w)
		in = w
	}
	iw := s.InteractWidth()
	v += int64(iw)
	in = iw
	if s.Cross > 0 {
		// Cross outputs and their inner products per layer, and two
		// gradients of the width of x0.
		v += (2*int64(s.Cross) + 2) * int64(iw)
		maxw = max(maxw, iw)
	}
	for _, w := range s.Top {
		v += int64(w)
		maxw = max(maxw, in, w)
		in = w
	}
	v += 2*int64(maxw) + int64(s.Dim) + 1          // gradient ping-pong, bottom-output gradient, logit gradient
	v += 2 * int64(s.Features) * int64(s.RowDim()) // pooled embeddings and their gradient
	v += int64(s.Dense) + 1                        // inputs and label
	return 4 * v
}

// MicroBatches returns the number of micro-batches a mini-batch of batch
// samples must be cut into so that one micro-batch's activations fit in
// bound bytes: PICASSO's Eq. 2, BS_micro = RBound / RInstance, with the
// micro-batches of equal size. It returns at least 1, and batch when even
// one sample does not fit.
func MicroBatches(s Shape, batch int, bound int64) int {
	per := ActivationBytes(s)
	micro := bound / per // BS_micro
	if micro < 1 {
		return batch
	}
	if micro >= int64(batch) {
		return 1
	}
	return int((int64(batch) + micro - 1) / micro)
}
