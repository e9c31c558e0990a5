package train

import (
	"time"

	"github.com/picasso-ctr/picasso/pkg/compute"
)

// denseLanes is the number of slices each (micro-)batch is cut into for the
// dense part of a step (bottom MLP, interaction, top MLP, loss). Each lane
// runs its slice forward and backward with its own buffers and gradients,
// which are then summed in lane order. When the dense backend offers lanes
// (compute.Splitter; a CPU backend with two or more threads does) they run
// at once, each on its share of the threads: two single-threaded GEMMs on
// half the rows each keep two cores busier than one GEMM split in two
// (measured in BenchmarkTrainStep), and the small kernels (bias, ReLU,
// interaction) run in parallel without a fork per call. The count is
// fixed, not the thread count, so that the numbers a run computes do not
// depend on the number of threads.
const denseLanes = 2

type lane struct {
	be    compute.Backend
	nt    *net
	used  bool // has gradients this step
	fwd   time.Duration
	bwd   time.Duration
	batch laneJob
	gs    []compute.Buffer // scratch: the bias gradients of a fused update
}

// laneJob is one lane's share of a micro-batch, or of the optimizer step.
type laneJob struct {
	step  *optStep // when set, the job is this lane's share of a fused update
	part  int      // which share
	train bool
	dense compute.Buffer // n×Dense
	emb   compute.Buffer // n×Features×Dim
	demb  compute.Buffer // gradient out, n×Features×Dim (train)
	label compute.Buffer // n (train)
	loss  compute.Buffer // one value: the sum of the job's losses (train)
	lo    int            // first row, in the arrays split was given
	n     int
	total int // rows of the whole mini-batch, which the loss is a mean over
}

// laneSet runs the dense part of steps on denseLanes lanes, on the dense
// backend (the device, or the host in cpu mode), and owns the model's
// gradient buffers and the per-sample buffers of every lane.
type laneSet struct {
	ls      [denseLanes]*lane
	be      compute.Backend  // the dense backend
	par     compute.Splitter // runs the lanes at once; nil: one after the other
	runLane func(i int)      // runs lane i's job (bound once: closures allocate)
	owned   []compute.Backend
	a       *allocator
	opt     optStep

	// bufs holds the per-sample buffers of all lanes, each lane's rows
	// after those of the lanes before it, so that a weight gradient over
	// the whole micro-batch is one GEMM over consecutive rows.
	bufs netBufs
	// fuse computes the weight gradients in update, over the whole
	// micro-batch, as GEMMs that subtract lr·dYᵀ·X from the weights in
	// place: no gradient buffers to clear, sum and apply. It needs SGD and
	// one micro-batch per step (setFuse).
	fuse  bool
	dense compute.Buffer // the last training micro-batch's dense inputs
	rows  int            // and its rows

	// loss has one slot per (micro-batch, lane) of a step; used lists the
	// slots written this step, summed into the first at the end.
	loss compute.Buffer
	used []int
}

// newLaneSet builds the lanes over model m on its backend with room for
// capacity rows per lane and micro micro-batches per step.
func newLaneSet(m *model, capacity, micro int) (*laneSet, error) {
	be := m.be
	s := &laneSet{be: be, a: newAllocator(be)}
	bes := [denseLanes]compute.Backend{be, be}
	if sp, ok := be.(compute.Splitter); ok {
		lanes, err := sp.Lanes(denseLanes)
		if err != nil {
			return nil, err
		}
		if lanes != nil {
			s.owned = lanes
			copy(bes[:], lanes)
			s.par = sp
		}
	}
	s.bufs = newNetBufs(s.a, m, denseLanes*capacity)
	for i := range denseLanes {
		nt := newNet(bes[i], s.a, m, capacity, s.a.f32(m.n))
		nt.bind(&s.bufs, i*capacity)
		s.ls[i] = &lane{be: bes[i], nt: nt}
	}
	s.loss = s.a.f32(micro * denseLanes)
	if s.a.err != nil {
		s.close()
		return nil, s.a.err
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
// Adagrad state), one micro-batch per step and at most fuseMaxRows rows in
// it. The choice depends on the configuration only, not on the backend or
// the thread count.
func (s *laneSet) setFuse(sgd bool, micro int) {
	s.fuse = sgd && micro == 1 && denseLanes*s.ls[0].nt.cap <= fuseMaxRows
	for _, l := range s.ls {
		l.nt.skipW = s.fuse
	}
}

// startStep clears the per-step lane state.
func (s *laneSet) startStep() {
	for _, l := range s.ls {
		l.used, l.fwd, l.bwd = false, 0, 0
	}
	s.used = s.used[:0]
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
// given per-row buffers (nd dense values and fd embedding values per row).
// micro numbers the micro-batch of a training step, whose losses go to
// their own slots.
func (s *laneSet) split(train bool, micro int, dense, emb, demb, label compute.Buffer, lo, hi, total, nd, fd int) {
	per := (hi - lo + denseLanes - 1) / denseLanes
	if train {
		s.dense, s.rows = dense.Slice(lo*nd, hi*nd), hi-lo
	}
	for i, l := range s.ls {
		a := min(lo+i*per, hi)
		b := min(a+per, hi)
		l.nt.bind(&s.bufs, a-lo)
		j := &l.batch
		*j = laneJob{train: train, lo: a, n: b - a, total: total, dense: dense.Slice(a*nd, b*nd), emb: emb.Slice(a*fd, b*fd)}
		if train {
			j.demb, j.label = demb.Slice(a*fd, b*fd), label.Slice(a, b)
			if b > a {
				slot := micro*denseLanes + i
				j.loss = s.loss.Slice(slot, slot+1)
				s.used = append(s.used, slot)
			}
		}
	}
}

func (l *lane) run(j *laneJob) {
	if j.step != nil {
		j.step.applyFused(l, j.part)
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
	dl := l.nt.dlog.Head(j.n)
	var scale float32 = 1
	if j.n != j.total {
		scale = float32(j.n) / float32(j.total)
	}
	l.be.BCEWithLogits(j.loss, dl, logits, j.label, scale)
	t1 := time.Now()
	l.fwd += t1.Sub(t0)
	l.nt.backward(j.dense, j.emb, dl, j.demb, j.n, !l.used)
	l.used = true
	l.bwd += time.Since(t1)
}

// lossSum adds the step's per-lane loss sums into one value, on the dense
// backend, and returns the buffer that holds it: one float32, the sum of
// the step's per-sample losses.
func (s *laneSet) lossSum() compute.Buffer {
	first := s.loss.Slice(s.used[0], s.used[0]+1)
	for _, k := range s.used[1:] {
		s.be.Axpy(first, 1, s.loss.Slice(k, k+1))
	}
	return first
}

// optStep is the dense optimizer step over the summed lane gradients.
type optStep struct {
	m     *model
	grads []compute.Buffer // the gradients of the lanes that have any
	step  compute.Step

	// A fused step (laneSet.fuse) computes the weight gradients itself,
	// from the layer inputs and output gradients of the micro-batch.
	bufs  *netBufs
	dense compute.Buffer
	rows  int
}

// applyFused is share part (of denseLanes) of a fused SGD step on lane l:
// for each layer, W -= lr·dYᵀ·X on its part of the rows or the columns of
// W, as one GEMM over the micro-batch that adds into W, and b -= lr·Σ lane
// bias gradients on its part of b.
func (o *optStep) applyFused(l *lane, part int) {
	m, n, be := o.m, o.rows, l.be
	last := len(m.layers) - 1
	for i, ly := range m.layers {
		var x, dy compute.Buffer
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
		w := m.w(ly)
		// Split W by rows (dY's columns) when X is the narrower, so that
		// the operand every share reads whole is the smaller one (and,
		// with OpenBLAS, the one each share packs whole).
		if ly.in <= ly.out && ly.out >= denseLanes {
			r0, r1 := part*ly.out/denseLanes, (part+1)*ly.out/denseLanes
			if r1 > r0 {
				be.Gemm(true, false, r1-r0, ly.in, n, -o.step.LR, dy.From(r0), ly.out, x, ly.in, 1, w.From(r0*ly.in), ly.in)
			}
		} else {
			c0, c1 := part*ly.in/denseLanes, (part+1)*ly.in/denseLanes
			if c1 > c0 {
				be.Gemm(true, false, ly.out, c1-c0, n, -o.step.LR, dy, ly.out, x.From(c0), ly.in, 1, w.From(c0), ly.in)
			}
		}
		b0, b1 := ly.b+part*ly.out/denseLanes, ly.b+(part+1)*ly.out/denseLanes
		if b1 > b0 {
			l.gs = l.gs[:0]
			for _, g := range o.grads {
				l.gs = append(l.gs, g.Slice(b0, b1))
			}
			be.DenseUpdate(m.params.Slice(b0, b1), compute.Buffer{}, l.gs, o.step)
		}
	}
}

// update applies the optimizer step with the sum of the lanes' gradients:
// fused, the lanes do it together, each over a part of every layer;
// otherwise one DenseUpdate on the dense backend sums and steps.
func (s *laneSet) update(m *model, step compute.Step) {
	o := &s.opt
	o.m, o.step, o.grads = m, step, o.grads[:0]
	for _, l := range s.ls {
		if l.used {
			o.grads = append(o.grads, l.nt.grads)
		}
	}
	if len(o.grads) == 0 {
		return
	}
	if !s.fuse {
		s.be.DenseUpdate(m.params, m.acc, o.grads, step)
		return
	}
	o.bufs, o.dense, o.rows = &s.bufs, s.dense, s.rows
	for i, l := range s.ls {
		l.batch = laneJob{step: o, part: i}
	}
	if s.par != nil {
		s.par.Parallel(denseLanes, s.runLane)
		return
	}
	for _, l := range s.ls {
		l.run(&l.batch)
	}
}

// close releases the lanes' buffers and backends.
func (s *laneSet) close() {
	s.a.free()
	for _, b := range s.owned {
		b.Close()
	}
	s.owned = nil
}
