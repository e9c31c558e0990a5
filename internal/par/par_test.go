package par

import (
	"sync/atomic"
	"testing"
)

// TestEach: every index is visited once, whatever the number of workers,
// none for n = 0.
func TestEach(t *testing.T) {
	for _, n := range []int{0, 1, 7, 1000} {
		for _, workers := range []int{-1, 0, 1, 3, 64} {
			seen := make([]atomic.Int32, n)
			Each(n, workers, func(i int) { seen[i].Add(1) })
			for i := range seen {
				if c := seen[i].Load(); c != 1 {
					t.Fatalf("n=%d workers=%d: index %d visited %d times", n, workers, i, c)
				}
			}
		}
	}
}
