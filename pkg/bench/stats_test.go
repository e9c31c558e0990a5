package bench

import (
	"fmt"
	"math"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{5, 5, 1, 9, 7}, 5},
	} {
		in := append([]float64(nil), tc.in...)
		if got := Median(tc.in); got != tc.want {
			t.Errorf("Median(%v) = %v; want %v", in, got, tc.want)
		}
		for i := range in {
			if in[i] != tc.in[i] {
				t.Errorf("Median(%v) reordered its input to %v", in, tc.in)
				break
			}
		}
	}
	if got := Median(nil); !math.IsNaN(got) {
		t.Errorf("Median(nil) = %v; want NaN", got)
	}
}

func TestSpreadOf(t *testing.T) {
	s := SpreadOf([]float64{1.2, math.NaN(), 0.9, 1.5})
	if s.Median != 1.2 || s.Min != 0.9 || s.Max != 1.5 {
		t.Errorf("SpreadOf(1.2, NaN, 0.9, 1.5) = median %v, min %v, max %v; want 1.2, 0.9, 1.5", s.Median, s.Min, s.Max)
	}
	if len(s.Values) != 4 || !math.IsNaN(float64(s.Values[1])) {
		t.Errorf("SpreadOf kept values %v; want the 4 inputs in order", s.Values)
	}
	if e := SpreadOf(nil); !math.IsNaN(float64(e.Median)) || !math.IsNaN(float64(e.Min)) {
		t.Errorf("SpreadOf(nil) = %+v; want NaN", e)
	}
}

func TestRatios(t *testing.T) {
	got := Ratios([]float64{10, 9, 8, 1}, []float64{5, 3, 0})
	want := []float64{2, 3, math.NaN(), math.NaN()}
	for i := range want {
		if got[i] != want[i] && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
			t.Errorf("Ratios: [%d] = %v; want %v", i, got[i], want[i])
		}
	}
}

func TestMedianIndex(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want int
	}{
		{nil, -1}, {[]float64{7}, 0}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 3}, {[]float64{2, 2, 2}, 1},
	} {
		if got := medianIndex(tc.in); got != tc.want {
			t.Errorf("medianIndex(%v) = %d; want %d", tc.in, got, tc.want)
		}
	}
}

// Speedups are taken per repeat, between runs made back to back, and then
// summarised: hybrid's time over the mode's.
func ExampleRatios() {
	hybrid := []float64{10.0, 12.5, 11.0} // training seconds in repeats 1..3
	fae := []float64{5.0, 5.0, 5.5}
	s := SpreadOf(Ratios(hybrid, fae))
	fmt.Printf("speedup %.2f× (%.2f–%.2f)\n", s.Median, s.Min, s.Max)
	// Output: speedup 2.00× (2.00–2.50)
}
