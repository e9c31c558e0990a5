package train

import (
	"context"
	"time"

	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/layout"
)

// order decides which mini-batch trains next: a phase policy. It keeps
// its position in the run's state, so that a checkpoint resumes it.
type order interface {
	// open starts reading at the state's position.
	open() error
	// next returns the next mini-batch and whether it is hot. A policy
	// that runs the classes in phases calls the trainer's swap between
	// them.
	next(ctx context.Context) (*dataset.Batch, bool, error)
	// phaseName names the phase of a mini-batch in metrics.jsonl.
	phaseName(hot bool) string
	// scheduler returns the Shuffle Scheduler, or nil.
	scheduler() *Scheduler
	close()
}

// swapFunc is the trainer's hot/cold swap: synchronise the hot rows and,
// with a scheduler, evaluate the held-out loss and let it decide.
type swapFunc func(ctx context.Context, from, to layout.Class) error

// rawOrder reads a raw dataset, epoch after epoch, each in an order of row
// groups shuffled with the seed.
type rawOrder struct {
	ds    *dataset.Dataset
	batch int
	seed  uint64
	depth int
	st    *runState
	p     *dataset.Prefetch[rawItem]
}

func (o *rawOrder) open() error {
	src := newRawStream(o.ds, o.batch, o.seed, o.st.Epoch, o.st.Rows)
	o.p = dataset.NewPrefetch(o.depth, src.next, func() error { src.close(); return nil })
	return nil
}

func (o *rawOrder) next(ctx context.Context) (*dataset.Batch, bool, error) {
	defer timeRead(o.st, time.Now())
	it, err := o.p.Next(ctx)
	if err != nil {
		return nil, false, err
	}
	o.st.Epoch, o.st.Rows = it.epoch, it.rows
	return it.b, false, nil
}

func (o *rawOrder) phaseName(bool) string { return "mixed" }
func (o *rawOrder) scheduler() *Scheduler { return nil }
func (o *rawOrder) close() {
	if o.p != nil {
		o.p.Close()
		o.p = nil
	}
}

// mixedOrder reads a layout's two classes in one seeded interleaving per
// epoch, hot mini-batches as table IDs: the modes without a hot table
// train on exactly the mini-batches fae trains on.
type mixedOrder struct {
	lf *layoutFeeder
	st *runState
}

func (o *mixedOrder) open() error { return o.lf.start(o.st.Epoch, o.st.Taken) }

func (o *mixedOrder) next(ctx context.Context) (*dataset.Batch, bool, error) {
	defer timeRead(o.st, time.Now())
	lf := o.lf
	c, ok := lf.nextMixed()
	if !ok {
		if err := lf.start(lf.epoch+1, [2]int{}); err != nil {
			return nil, false, err
		}
		o.st.Epoch, o.st.Taken = lf.epoch, lf.taken
		c, _ = lf.nextMixed()
	}
	b, err := lf.take(ctx, c)
	if err != nil {
		return nil, false, err
	}
	o.st.Epoch, o.st.Taken = lf.epoch, lf.taken
	return b, c == layout.Hot, nil
}

func (o *mixedOrder) phaseName(hot bool) string { return classOf(hot).String() }
func (o *mixedOrder) scheduler() *Scheduler     { return nil }
func (o *mixedOrder) close()                    { o.lf.close() }

// phasedOrder runs a layout's classes in phases, starting each epoch cold:
// the Shuffle Scheduler sets the phases' length (fae), or each phase is a
// whole class (artifact, the FAE artifact's order). A change of class
// calls the trainer's swap.
type phasedOrder struct {
	lf    *layoutFeeder
	st    *runState
	sched *Scheduler // nil: whole classes
	swap  swapFunc
}

func (o *phasedOrder) open() error { return o.lf.start(o.st.Epoch, o.st.Taken) }

func (o *phasedOrder) next(ctx context.Context) (*dataset.Batch, bool, error) {
	st, lf := o.st, o.lf
	if !st.InPhase || st.PhaseLeft <= 0 || lf.left(st.Class) == 0 {
		if err := o.nextPhase(ctx); err != nil {
			return nil, false, err
		}
	}
	r0 := time.Now()
	b, err := lf.take(ctx, st.Class)
	timeRead(st, r0)
	if err != nil {
		return nil, false, err
	}
	st.Epoch, st.Taken = lf.epoch, lf.taken
	st.PhaseLeft--
	return b, st.Class == layout.Hot, nil
}

// nextPhase picks the class of the next phase (the other class when it has
// mini-batches left in the epoch, cold at the start of an epoch), runs the
// swap when the class changes, and sets the phase's length.
func (o *phasedOrder) nextPhase(ctx context.Context) error {
	st, lf := o.st, o.lf
	c := layout.Cold
	if st.InPhase {
		c = 1 - st.Class
	}
	if lf.left(c) == 0 {
		c = 1 - c
	}
	if lf.left(c) == 0 {
		r0 := time.Now()
		err := lf.start(lf.epoch+1, [2]int{})
		timeRead(st, r0)
		if err != nil {
			return err
		}
		st.Epoch, st.Taken = lf.epoch, lf.taken
		c = layout.Cold
		if lf.left(c) == 0 {
			c = layout.Hot
		}
	}
	if st.InPhase && c != st.Class {
		if err := o.swap(ctx, st.Class, c); err != nil {
			return err
		}
	}
	st.InPhase, st.Class = true, c
	if o.sched != nil {
		st.PhaseLeft = min(o.sched.PhaseLen(lf.n[c]), lf.left(c))
	} else {
		st.PhaseLeft = lf.left(c) // artifact: the whole class
	}
	return nil
}

func (o *phasedOrder) phaseName(hot bool) string { return classOf(hot).String() }
func (o *phasedOrder) scheduler() *Scheduler     { return o.sched }
func (o *phasedOrder) close()                    { o.lf.close() }

func classOf(hot bool) layout.Class {
	if hot {
		return layout.Hot
	}
	return layout.Cold
}

// timeRead adds the time since start to the read phase: waiting for the
// next mini-batch or opening the next epoch's streams. Hot/cold swaps, run
// between reads, are timed as sync and eval.
func timeRead(st *runState, start time.Time) {
	st.Phases.Read += time.Since(start).Seconds()
}
