package compute

import (
	"sync"
	"sync/atomic"
)

// pool is a fixed set of worker goroutines that help the calling goroutine
// run the chunks of a parallel loop. The caller always takes part, so a loop
// finishes even when every worker is busy with another caller's loop, and
// concurrent use from several goroutines is safe.
type pool struct {
	workers int // helper goroutines; 0 means every loop runs in the caller
	jobs    chan *job
	done    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
	closed  atomic.Bool
}

// job is one parallel loop: chunks [0, chunks) handed out by an atomic counter.
type job struct {
	fn     func(chunk int)
	chunks int64
	next   atomic.Int64
	wg     sync.WaitGroup
}

func newPool(threads int) *pool {
	p := &pool{workers: max(threads-1, 0), done: make(chan struct{})}
	if p.workers == 0 {
		return p
	}
	p.jobs = make(chan *job, p.workers)
	p.wg.Add(p.workers)
	for range p.workers {
		go p.work()
	}
	return p
}

func (p *pool) work() {
	defer p.wg.Done()
	for {
		select {
		case j := <-p.jobs:
			j.run()
			j.wg.Done()
		case <-p.done:
			return
		}
	}
}

func (j *job) run() {
	for {
		c := j.next.Add(1) - 1
		if c >= j.chunks {
			return
		}
		j.fn(int(c))
	}
}

// threads is the number of goroutines a loop may use, the caller included.
func (p *pool) threads() int {
	if p.closed.Load() {
		return 1
	}
	return p.workers + 1
}

// run calls fn(c) once for every chunk c in [0, chunks), spread over the
// caller and idle workers, and returns when all calls have returned. Which
// goroutine runs a chunk is left to scheduling, so fn must make its result
// depend only on the chunk index.
func (p *pool) run(chunks int, fn func(chunk int)) {
	if chunks <= 0 {
		return
	}
	if chunks == 1 || p.workers == 0 || p.closed.Load() {
		for c := range chunks {
			fn(c)
		}
		return
	}
	j := &job{fn: fn, chunks: int64(chunks)}
	helpers := min(chunks-1, p.workers)
	for range helpers {
		j.wg.Add(1)
		select {
		case p.jobs <- j:
		default:
			j.wg.Done() // all workers are busy; the caller does their share
		}
	}
	j.run()
	j.wg.Wait()
}

// rangeChunks splits [0, n) into chunks of at least grain items, at most one
// chunk per thread (times over, to balance uneven work), and calls fn(lo, hi)
// for each. The chunk bounds depend only on n, grain and the thread count.
func (p *pool) rangeChunks(n, grain, over int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	chunks := min(p.threads()*max(over, 1), (n+grain-1)/max(grain, 1))
	if chunks <= 1 {
		fn(0, n)
		return
	}
	p.run(chunks, func(c int) {
		fn(c*n/chunks, (c+1)*n/chunks)
	})
}

// close stops the workers; loops run afterwards use the caller alone.
func (p *pool) close() {
	p.once.Do(func() {
		p.closed.Store(true)
		close(p.done)
		p.wg.Wait()
	})
}
