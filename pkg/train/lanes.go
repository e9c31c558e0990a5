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
	ls         [denseLanes]*lane
	concurrent bool
	host       bool          // the lanes' backends compute on host slices
	jobs       chan *laneJob // to the goroutine of lane 1
	done       chan struct{}
	owned      []*compute.CPU
	opt        optStep
}

// newLaneSet builds the lanes over model m with room for capacity rows per
// lane. A CPU backend with two or more threads gets one backend of half the
// threads per lane and a goroutine for lane 1; any other backend is shared
// by the lanes, which then run one after the other.
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
		s.concurrent = true
	}
	s.host = hostEpilogues(bes[0])
	for i := range denseLanes {
		nt := newNet(bes[i], m, capacity)
		if i > 0 {
			nt.grads = make([]float32, len(m.grads))
		}
		s.ls[i] = &lane{be: bes[i], nt: nt}
	}
	if s.concurrent {
		s.jobs = make(chan *laneJob)
		s.done = make(chan struct{})
		go func() {
			for j := range s.jobs {
				s.ls[1].run(j)
				s.done <- struct{}{}
			}
			close(s.done)
		}()
	}
	return s, nil
}

// startStep clears the per-step lane state.
func (s *laneSet) startStep() {
	for _, l := range s.ls {
		l.loss, l.used, l.fwd, l.bwd = 0, false, 0, 0
	}
}

// run runs the lanes' jobs (lane 0's on the caller's goroutine) and waits.
func (s *laneSet) run() {
	j1 := &s.ls[1].batch
	if s.concurrent && j1.n > 0 {
		s.jobs <- j1
		s.ls[0].run(&s.ls[0].batch)
		<-s.done
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
	for i, l := range s.ls {
		a := min(lo+i*per, hi)
		b := min(a+per, hi)
		j := &l.batch
		*j = laneJob{train: train, lo: a, n: b - a, total: total, dense: dense[a*nd : b*nd], emb: emb[a*fd : b*fd]}
		if train {
			j.demb, j.label = demb[a*fd:b*fd], label[a:b]
		}
	}
}

func (l *lane) run(j *laneJob) {
	if j.step != nil {
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
	if s.concurrent {
		s.jobs <- &s.ls[1].batch
		s.ls[0].run(&s.ls[0].batch)
		<-s.done
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

// close stops lane 1's goroutine and releases the lanes' backends.
func (s *laneSet) close() {
	if s.jobs != nil {
		close(s.jobs)
		<-s.done
		s.jobs = nil
	}
	for _, b := range s.owned {
		b.Close()
	}
	s.owned = nil
}
