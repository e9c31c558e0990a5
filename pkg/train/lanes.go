package train

import (
	"math"
	"time"

	"github.com/picasso-ctr/picasso/pkg/compute"
)

// denseLanes is the number of slices each (micro-)batch is cut into for the
// dense part of a step (bottom MLP, interaction, top MLP, loss). Each lane
// runs its slice forward and backward with its own buffers and gradients,
// which are then summed in lane order. With a multi-threaded CPU backend
// the lanes run at once, each on a backend of half the threads: two
// single-threaded GEMMs on half the rows each keep two cores busier than
// one GEMM split in two (measured in BenchmarkTrainStep), and the small
// kernels (bias, ReLU, interaction) run in parallel without a fork per call.
// The count is fixed, not the thread count, so that the numbers a run
// computes do not depend on the number of threads.
const denseLanes = 2

type lane struct {
	be    compute.Backend
	nt    *net
	loss  float64 // Σ loss × rows over the step's micro-batches
	used  bool    // has gradients this step
	fwd   time.Duration
	bwd   time.Duration
	batch laneJob
}

// laneJob is one lane's share of a micro-batch, or of the optimizer step.
type laneJob struct {
	step  *optStep // when set, the job is this lane's share of the update
	part  int      // which share of a fused update (optStep.fused)
	train bool
	dense []float32 // n×Dense
	emb   []float32 // n×Features×Dim
	demb  []float32 // gradient out, n×Features×Dim (train)
	label []float32 // n (train)
	lo    int       // first row, in the arrays split was given
	n     int
	total int // rows of the whole mini-batch, which the loss is a mean over
}

// laneSet runs the dense part of steps on denseLanes lanes.
type laneSet struct {
	ls      [denseLanes]*lane
	host    bool         // the lanes' backends compute on host slices
	par     *compute.CPU // runs the lanes at once; nil: one after the other
	runLane func(i int)  // runs lane i's job (bound once: closures allocate)
	owned   []*compute.CPU
	opt     optStep

	// bufs holds the per-sample buffers of all lanes, each lane's rows
	// after those of the lanes before it, so that a weight gradient over
	// the whole micro-batch is one GEMM over consecutive rows.
	bufs netBufs
	// fuse computes the weight gradients in update, over the whole
	// micro-batch, as GEMMs that subtract lr·dYᵀ·X from the weights in
	// place: no gradient buffers to clear, sum and apply. It needs SGD, a
	// host backend and one micro-batch per step (setFuse).
	fuse  bool
	dense []float32 // the last training micro-batch's dense inputs
	rows  int       // and its rows
}

// newLaneSet builds the lanes over model m with room for capacity rows per
// lane. A CPU backend with two or more threads gets one backend of half the
// threads per lane, and the lanes run at once on its workers; any other
// backend is shared by the lanes, which then run one after the other.
func newLaneSet(be compute.Backend, m *model, capacity int) (*laneSet, error) {
	s := &laneSet{}
	bes := [denseLanes]compute.Backend{be, be}
	if cpu, ok := be.(*compute.CPU); ok && cpu.Threads() >= denseLanes {
		lib, _ := cpu.Library()
		for i := range denseLanes {
			lb, err := compute.New(compute.Options{BLAS: cpu.BLAS(), Library: lib, Threads: cpu.Threads() / denseLanes})
			if err != nil {
				s.close()
				return nil, err
			}
			s.owned = append(s.owned, lb)
			bes[i] = lb
		}
		s.par = cpu
	}
	_, s.host = bes[0].(*compute.CPU)
	s.bufs = newNetBufs(m, denseLanes*capacity)
	for i := range denseLanes {
		nt := newNet(bes[i], m, capacity)
		if i > 0 {
			nt.grads = make([]float32, len(m.grads))
		}
		nt.bind(&s.bufs, i*capacity)
		s.ls[i] = &lane{be: bes[i], nt: nt}
	}
	s.runLane = func(i int) { s.ls[i].run(&s.ls[i].batch) }
	return s, nil
}

// fuseMaxRows is the largest micro-batch (rows over all lanes) that the
// fused SGD update runs on. At batch 128 of the RMC2 shapes it takes about
// 7% off the CPU time of a step (BenchmarkTrainStep); at batch 1024 with
// the lanes running at once it was about 10% slower than summing the
// lanes' gradients, its GEMMs reading the activations of the whole batch
// back from memory after the backward pass.
const fuseMaxRows = 256

// setFuse turns the fused SGD update on when the step allows it: SGD (no
// Adagrad state), a host backend, one micro-batch per step and at most
// fuseMaxRows rows in it. The choice depends on the configuration only,
// not on the thread count.
func (s *laneSet) setFuse(sgd bool, micro int) {
	s.fuse = sgd && s.host && micro == 1 && denseLanes*s.ls[0].nt.cap <= fuseMaxRows
	for _, l := range s.ls {
		l.nt.skipW = s.fuse
	}
}

// startStep clears the per-step lane state.
func (s *laneSet) startStep() {
	for _, l := range s.ls {
		l.loss, l.used, l.fwd, l.bwd = 0, false, 0, 0
	}
}

// run runs the lanes' jobs (lane 0's on the caller's goroutine) and waits.
func (s *laneSet) run() {
	if s.par != nil && s.ls[1].batch.n > 0 {
		s.par.Parallel(denseLanes, s.runLane)
		return
	}
	for _, l := range s.ls {
		l.run(&l.batch)
	}
}

// split sets the lanes' jobs to consecutive slices of rows [lo, hi) of the
// given per-row arrays (nd dense values and fd embedding values per row).
func (s *laneSet) split(train bool, dense, emb, demb, label []float32, lo, hi, total, nd, fd int) {
	per := (hi - lo + denseLanes - 1) / denseLanes
	if train {
		s.dense, s.rows = dense[lo*nd:hi*nd], hi-lo
	}
	for i, l := range s.ls {
		a := min(lo+i*per, hi)
		b := min(a+per, hi)
		l.nt.bind(&s.bufs, a-lo)
		j := &l.batch
		*j = laneJob{train: train, lo: a, n: b - a, total: total, dense: dense[a*nd : b*nd], emb: emb[a*fd : b*fd]}
		if train {
			j.demb, j.label = demb[a*fd:b*fd], label[a:b]
		}
	}
}

func (l *lane) run(j *laneJob) {
	if j.step != nil {
		if j.step.fused {
			j.step.applyFused(l.be, j.part)
			return
		}
		j.step.apply(j.lo, j.lo+j.n)
		return
	}
	if j.n == 0 {
		return
	}
	t0 := time.Now()
	logits := l.nt.forward(j.dense, j.emb, j.n)
	if !j.train {
		l.fwd += time.Since(t0)
		return
	}
	dl := l.nt.dlog[:j.n]
	loss := l.be.BCEWithLogits(dl, logits, j.label)
	if j.n != j.total {
		scale := float32(j.n) / float32(j.total)
		for i := range dl {
			dl[i] *= scale
		}
	}
	l.loss += loss * float64(j.n)
	t1 := time.Now()
	l.fwd += t1.Sub(t0)
	l.nt.backward(j.dense, j.emb, dl, j.demb, j.n, !l.used)
	l.used = true
	l.bwd += time.Since(t1)
}

// loss returns the step's mean loss over total rows (summed in lane order).
func (s *laneSet) loss(total int) float64 {
	var loss float64
	for _, l := range s.ls {
		loss += l.loss
	}
	return loss / float64(total)
}

// optStep is the dense optimizer step over the summed lane gradients.
type optStep struct {
	w, acc []float32   // parameters and Adagrad state (nil for SGD)
	g      [][]float32 // the gradients of the lanes that have any
	lr     float32

	// A fused step (laneSet.fuse) computes the weight gradients itself,
	// from the layer inputs and output gradients of the micro-batch.
	fused bool
	m     *model
	bufs  *netBufs
	dense []float32
	rows  int
}

// applyFused is share part (of denseLanes) of a fused SGD step: for each
// layer, W -= lr·dYᵀ·X on its part of the rows or the columns of W, as one
// GEMM over the micro-batch that adds into W, and b -= lr·Σ lane bias
// gradients on its part of b.
func (o *optStep) applyFused(be compute.Backend, part int) {
	m, n := o.m, o.rows
	last := len(m.layers) - 1
	for i, l := range m.layers {
		var x, dy []float32
		switch {
		case i == 0:
			x = o.dense
		case i == m.nBottom:
			x = o.bufs.z
		default:
			x = o.bufs.act[i-1]
		}
		if i == last {
			dy = o.bufs.dlog
		} else {
			dy = o.bufs.dys[i]
		}
		w := m.params[l.w : l.w+l.in*l.out]
		// Split W by rows (dY's columns) when X is the narrower, so that
		// the operand every share reads whole is the smaller one (and,
		// with OpenBLAS, the one each share packs whole).
		if l.in <= l.out && l.out >= denseLanes {
			r0, r1 := part*l.out/denseLanes, (part+1)*l.out/denseLanes
			if r1 > r0 {
				be.Gemm(true, false, r1-r0, l.in, n, -o.lr, dy[r0:], l.out, x, l.in, 1, w[r0*l.in:], l.in)
			}
		} else {
			c0, c1 := part*l.in/denseLanes, (part+1)*l.in/denseLanes
			if c1 > c0 {
				be.Gemm(true, false, l.out, c1-c0, n, -o.lr, dy, l.out, x[c0:], l.in, 1, w[c0:], l.in)
			}
		}
		b0, b1 := l.b+part*l.out/denseLanes, l.b+(part+1)*l.out/denseLanes
		o.applyBias(b0, b1)
	}
}

// applyBias is the SGD step of parameters [lo, hi) from the sum of the
// lanes' gradients, summed in lane order.
func (o *optStep) applyBias(lo, hi int) {
	w := o.w[lo:hi]
	for k := range w {
		g := o.g[0][lo+k]
		for _, gl := range o.g[1:] {
			g += gl[lo+k]
		}
		w[k] -= o.lr * g
	}
}

// apply updates parameters [lo, hi): g = Σ lane gradients (in lane order),
// then w -= lr·g (SGD) or acc += g², w -= lr·g/(sqrt(acc)+eps) (Adagrad),
// the arithmetic of the backend's SGD and Adagrad kernels.
func (o *optStep) apply(lo, hi int) {
	w := o.w[lo:hi]
	if len(o.g) == 2 && o.acc == nil {
		compute.SumSGD(w, o.g[0][lo:hi], o.g[1][lo:hi], o.lr)
		return
	}
	g0 := o.g[0][lo:hi]
	g0 = g0[:len(w)]
	for _, gl := range o.g[1:] {
		gl = gl[lo:hi]
		gl = gl[:len(g0)]
		for i, v := range gl {
			g0[i] += v
		}
	}
	if o.acc == nil {
		for i, gi := range g0 {
			w[i] -= o.lr * gi
		}
		return
	}
	acc := o.acc[lo:hi]
	acc = acc[:len(w)]
	for i, gi := range g0 {
		a := acc[i] + gi*gi
		acc[i] = a
		w[i] -= o.lr * gi / (float32(math.Sqrt(float64(a))) + adagradEps)
	}
}

// update sums the lanes' gradients into the model's and applies the
// optimizer step. On host backends the lanes do it together, each over a
// part of the parameters, in one pass; otherwise the gradients are summed
// and the backend's SGD or Adagrad kernel runs.
func (s *laneSet) update(m *model, lr float32) {
	o := &s.opt
	o.w, o.acc, o.lr, o.g = m.params, m.acc, lr, o.g[:0]
	for _, l := range s.ls {
		if l.used {
			o.g = append(o.g, l.nt.grads)
		}
	}
	if len(o.g) == 0 {
		return
	}
	o.fused = s.fuse
	if s.fuse {
		o.m, o.bufs, o.dense, o.rows = m, &s.bufs, s.dense, s.rows
		for i, l := range s.ls {
			l.batch = laneJob{step: o, part: i}
		}
		s.runUpdate()
		return
	}
	if !s.host {
		s.sumInto(o.g)
		be := s.ls[0].be
		if m.acc != nil {
			be.Adagrad(m.params, o.g[0], m.acc, lr, adagradEps)
		} else {
			be.SGD(m.params, o.g[0], lr)
		}
		return
	}
	n := len(m.params)
	per := (n + denseLanes - 1) / denseLanes
	for i, l := range s.ls {
		a := min(i*per, n)
		l.batch = laneJob{step: o, lo: a, n: min(a+per, n) - a}
	}
	s.runUpdate()
}

// runUpdate runs the lanes' shares of the optimizer step and waits.
func (s *laneSet) runUpdate() {
	if s.par != nil {
		s.par.Parallel(denseLanes, s.runLane)
		return
	}
	for _, l := range s.ls {
		l.run(&l.batch)
	}
}

// sumInto adds g[1:] into g[0], in order.
func (s *laneSet) sumInto(g [][]float32) {
	for _, gl := range g[1:] {
		for i, v := range gl {
			g[0][i] += v
		}
	}
}

// close releases the lanes' backends.
func (s *laneSet) close() {
	for _, b := range s.owned {
		b.Close()
	}
	s.owned = nil
}
