package bench

import (
	"math"
	"slices"

	"github.com/picasso-ctr/picasso/pkg/train"
)

// Spread summarises repeated measurements of one quantity: the median and
// the smallest and largest value. NaN values are left out; a Spread of no
// values is all NaN (null in JSON).
type Spread struct {
	Median train.Number `json:"median"`
	Min    train.Number `json:"min"`
	Max    train.Number `json:"max"`
	// Values are the measurements in repeat order.
	Values []train.Number `json:"values"`
}

// SpreadOf returns the median, minimum and maximum of xs.
func SpreadOf(xs []float64) Spread {
	nan := train.Number(math.NaN())
	s := Spread{Median: nan, Min: nan, Max: nan, Values: make([]train.Number, len(xs))}
	var v []float64
	for i, x := range xs {
		s.Values[i] = train.Number(x)
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return s
	}
	slices.Sort(v)
	s.Min, s.Max = train.Number(v[0]), train.Number(v[len(v)-1])
	s.Median = train.Number(Median(v))
	return s
}

// Median returns the median of xs (the mean of the two middle values when
// their number is even), NaN when xs is empty. xs is not modified.
func Median(xs []float64) float64 {
	n := len(xs)
	if n == 0 {
		return math.NaN()
	}
	v := slices.Clone(xs)
	slices.Sort(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// Ratios returns num[i]/den[i] for every i: the per-repeat ratios between
// two interleaved series. A ratio with a zero, NaN or missing denominator is
// NaN.
func Ratios(num, den []float64) []float64 {
	out := make([]float64, len(num))
	for i := range num {
		if i >= len(den) || den[i] == 0 || math.IsNaN(den[i]) || math.IsNaN(num[i]) {
			out[i] = math.NaN()
			continue
		}
		out[i] = num[i] / den[i]
	}
	return out
}

// medianIndex returns the index of the median of xs: the middle one in
// sorted order, the lower of the two middle ones when their number is even.
// It returns -1 when xs is empty.
func medianIndex(xs []float64) int {
	if len(xs) == 0 {
		return -1
	}
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case xs[a] < xs[b]:
			return -1
		case xs[a] > xs[b]:
			return 1
		}
		return 0
	})
	return idx[(len(xs)-1)/2]
}
