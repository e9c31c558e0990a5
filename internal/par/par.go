// Package par runs the iterations of a loop on several goroutines.
package par

import (
	"sync"
	"sync/atomic"
)

// Each calls fn(i) for every i in [0, n) on min(n, workers) goroutines (at
// least one when n > 0), which take the indices in increasing order, and
// returns when every call has returned. fn must be safe to call at once for
// different indices.
func Each(n, workers int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, max(workers, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		}()
	}
	wg.Wait()
}
