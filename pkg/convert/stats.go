package convert

import "math"

// DenseStats are the statistics a standardized dense column was scaled with.
type DenseStats struct {
	Name string  `json:"name"`
	Mean float64 `json:"mean"`
	Std  float64 `json:"std"`
}

// welford accumulates a mean and variance (Welford's update; blocks merge
// with Chan et al.'s formula, in input order, so the result is the same
// whatever the number of workers).
type welford struct {
	n, mean, m2 float64
}

func (w *welford) add(x float64) {
	w.n++
	d := x - w.mean
	w.mean += d / w.n
	w.m2 += d * (x - w.mean)
}

func (w *welford) merge(o *welford) {
	if o.n == 0 {
		return
	}
	n := w.n + o.n
	d := o.mean - w.mean
	w.mean += d * o.n / n
	w.m2 += o.m2 + d*d*w.n*o.n/n
	w.n = n
}

// std is the population standard deviation, or 1 when it is 0 (a constant
// column then becomes 0).
func (w *welford) std() float64 {
	if w.n == 0 || w.m2 <= 0 {
		return 1
	}
	return math.Sqrt(w.m2 / w.n)
}
