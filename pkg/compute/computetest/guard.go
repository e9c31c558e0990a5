package computetest

import (
	"math"
	"math/rand/v2"
	"testing"
)

// guardBits is the sentinel written around (and between the rows of) output
// buffers: a quiet NaN with a recognizable payload.
const guardBits = 0x7fc0dead

var guard = math.Float32frombits(guardBits)

const guardLen = 19

// guarded is an output buffer with guard values before and after it.
type guarded struct {
	buf  []float32
	data []float32 // buf[guardLen : guardLen+n]
}

func newGuarded(n int) *guarded {
	buf := make([]float32, n+2*guardLen)
	for i := range buf {
		buf[i] = guard
	}
	return &guarded{buf: buf, data: buf[guardLen : guardLen+n : guardLen+n]}
}

// check fails t if a value outside data changed.
func (g *guarded) check(t testing.TB, what string) {
	t.Helper()
	n := len(g.data)
	for i, v := range g.buf {
		if i >= guardLen && i < guardLen+n {
			continue
		}
		if math.Float32bits(v) != guardBits {
			t.Errorf("%s: guard at offset %d (data length %d) overwritten with %v", what, i-guardLen, n, v)
			return
		}
	}
}

// randSlice returns n values uniform in [-1, 1).
func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	fill(r, s)
	return s
}

func fill(r *rand.Rand, s []float32) {
	for i := range s {
		s[i] = 2*r.Float32() - 1
	}
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

// closeTo reports whether got is within tol of want, relative to scale.
func closeTo(got, want, tol, scale float64) bool {
	if math.IsNaN(got) || math.IsNaN(want) {
		return math.IsNaN(got) && math.IsNaN(want)
	}
	return math.Abs(got-want) <= tol*math.Max(scale, 1)
}

// compareSlices fails t at the first element where got and want differ by
// more than tol·max(scale, 1).
func compareSlices(t testing.TB, what string, got, want []float32, tol, scale float64) bool {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: len = %d; want %d", what, len(got), len(want))
		return false
	}
	for i := range got {
		if !closeTo(float64(got[i]), float64(want[i]), tol, scale) {
			t.Errorf("%s: [%d] = %v; want %v (tol %g)", what, i, got[i], want[i], tol*math.Max(scale, 1))
			return false
		}
	}
	return true
}

// reluActivations draws n activations with exact zeros of both signs mixed
// in, which must block a ReLU's gradient like negative values do.
func reluActivations(r *rand.Rand, n int) []float32 {
	act := randSlice(r, n)
	for i := range act {
		switch {
		case act[i] < 0 && i%3 == 0:
			act[i] = 0
		case i%7 == 0:
			act[i] = float32(math.Copysign(0, -1))
		}
	}
	return act
}
