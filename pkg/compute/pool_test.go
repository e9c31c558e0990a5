package compute

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPoolRunsInParallel checks that a loop's chunks really run on several
// goroutines at once: each chunk waits until all are running.
func TestPoolRunsInParallel(t *testing.T) {
	p := newPool(3)
	defer p.close()
	var running atomic.Int32
	var timedOut atomic.Bool
	p.run(3, func(int) {
		running.Add(1)
		deadline := time.Now().Add(5 * time.Second)
		for running.Load() < 3 {
			if time.Now().After(deadline) {
				timedOut.Store(true)
				return
			}
			time.Sleep(time.Millisecond)
		}
	})
	if timedOut.Load() {
		t.Fatalf("pool of 3 threads never ran 3 chunks at once (saw %d)", running.Load())
	}
}

// TestPoolCoversEveryChunk checks that every chunk runs exactly once, also
// when several goroutines share the pool and when chunks outnumber workers.
func TestPoolCoversEveryChunk(t *testing.T) {
	p := newPool(2)
	defer p.close()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 50 + g
			seen := make([]atomic.Int32, n)
			p.run(n, func(c int) { seen[c].Add(1) })
			for c := range seen {
				if v := seen[c].Load(); v != 1 {
					t.Errorf("chunk %d of %d ran %d times", c, n, v)
				}
			}
		}()
	}
	wg.Wait()

	var lo, hi []int
	var mu sync.Mutex
	p.rangeChunks(1000, 100, 4, func(a, b int) {
		mu.Lock()
		lo, hi = append(lo, a), append(hi, b)
		mu.Unlock()
	})
	total := 0
	for i := range lo {
		total += hi[i] - lo[i]
	}
	if total != 1000 || len(lo) != 8 {
		t.Errorf("rangeChunks(1000, grain 100, over 4) with 2 threads: %d chunks covering %d; want 8 covering 1000", len(lo), total)
	}
}
