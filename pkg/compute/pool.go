package compute

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// pool is a fixed set of worker goroutines that help the calling goroutine
// run the chunks of a parallel loop. The caller always takes part, so a loop
// finishes even when every worker is busy with another caller's loop, and
// concurrent use from several goroutines is safe.
//
// Hand-offs spin before they sleep. A training step runs a dozen parallel
// loops a few hundred microseconds apart; a worker that slept between them
// would be woken through the Go scheduler, which readies it on the caller's
// own processor and leaves the idle one to steal it, and that took 100 to
// 300 µs per loop on a 2-core machine (go tool trace of BenchmarkTrainStep),
// against a step of 5 ms. A worker polls for the next loop for poolSpin
// before it parks, and a caller waits for its helpers by polling.
type pool struct {
	workers int // helper goroutines; 0 means every loop runs in the caller
	jobs    chan *job
	done    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
	closed  atomic.Bool
}

// job is one parallel loop: chunks [0, chunks) handed out by an atomic
// counter, and counted when they finish.
type job struct {
	fn     func(chunk int)
	chunks int64
	next   atomic.Int64
	done   atomic.Int64
}

// poolSpin is how long an idle worker polls for the next loop before it
// parks: longer than the serial stretches inside a training step, short
// enough that a worker of an idle backend soon stops taking a core.
const poolSpin = 300 * time.Microsecond

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
		j := p.poll()
		if j == nil {
			select {
			case j = <-p.jobs:
			case <-p.done:
				return
			}
		}
		j.run()
	}
}

// poll returns the next loop if one is handed over within poolSpin, or nil.
// It yields now and then, so that a goroutine waiting for a processor (on a
// machine with more workers than cores) is not held up by the spinning.
func (p *pool) poll() *job {
	start := time.Now()
	for i := 0; ; i++ {
		select {
		case j := <-p.jobs:
			return j
		default:
		}
		if i%64 == 63 {
			if time.Since(start) > poolSpin {
				return nil
			}
			runtime.Gosched()
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
		j.done.Add(1)
	}
}

// wait returns when every chunk has finished. The caller has run out of
// chunks to take, so the others are running on helpers; it polls, and
// yields now and then in case a helper is waiting for a processor.
func (j *job) wait() {
	for i := 0; j.done.Load() < j.chunks; i++ {
		if i%256 == 255 {
			runtime.Gosched()
		}
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
sends:
	for range helpers {
		select {
		case p.jobs <- j:
		default:
			break sends // all workers are busy; the caller does their share
		}
	}
	j.run()
	j.wait()
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
