package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/picasso-ctr/picasso/pkg/compute"
	"github.com/picasso-ctr/picasso/pkg/config"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/layout"
)

// Trainer trains one model in one placement mode. Create it with New and
// call Run once.
type Trainer struct {
	opts  Options
	tc    config.Train
	mode  string
	be    compute.Backend
	spec  *dataset.Spec
	shape Shape
	m     *model
	lanes *laneSet
	bb    *bagBuilder
	lr    LRSchedule
	opt   compute.Optimizer

	batchCap int
	micro    int
	nd, fd   int // dense values and pooled embedding values per sample

	// Buffers of batchCap samples. In modes without a device the device
	// and host views are the same slices.
	pooledHost, pooledDev []float32
	dembHost, dembDev     []float32
	denseDev, labelDev    []float32

	hot    *hotTable
	hotOff []int64
	link   link

	sched *Scheduler
	test  *evalSet
	held  *evalSet
	evalP []float32
	evalY []float32

	st     runState
	total  int64
	epochN int64 // mini-batches per epoch

	split *tableSplit // one embedding call per table (packing off); nil when packed

	raw *dataset.Prefetch[rawItem]
	lf  *layoutFeeder

	stepMs  ring
	log     *runLog
	started time.Time
	oracle  float64

	metricsKeep int64 // bytes of metrics.jsonl the checkpoint covers (-1: all)

	// onStep, when set (tests), is called after every step.
	onStep func(step int64, b *dataset.Batch, hot bool)
}

// runState is everything about a run's progress a checkpoint saves.
type runState struct {
	Step       int64 `json:"step"`
	Samples    int64 `json:"samples"`
	HotSamples int64 `json:"hot_samples"`
	// Position in the data: the epoch, rows of it consumed (raw data) or
	// mini-batches of each class consumed (layouts).
	Epoch int    `json:"epoch"`
	Rows  int64  `json:"rows"`
	Taken [2]int `json:"taken"`
	// The current phase of the fae and artifact schedules.
	InPhase   bool         `json:"in_phase"`
	Class     layout.Class `json:"class"`
	PhaseLeft int          `json:"phase_left"`

	BytesH2D int64        `json:"bytes_h2d"`
	BytesD2H int64        `json:"bytes_d2h"`
	Phases   PhaseSeconds `json:"phase_seconds"`
	Seconds  float64      `json:"seconds"` // wall time of earlier sessions
	Syncs    int64        `json:"syncs"`
	RowsH2D  int64        `json:"rows_h2d"`
	RowsD2H  int64        `json:"rows_d2h"`

	Evals       []EvalResult `json:"evals"`
	PendingEval bool         `json:"pending_eval"` // the eval after Step has not finished
	Decisions   []Decision   `json:"decisions,omitempty"`

	Interval interval `json:"interval"`
	LastLoss Number   `json:"last_loss"` // of the last logging interval
}

// interval accumulates the training steps since the last metrics line.
type interval struct {
	Steps   int64   `json:"steps"`
	Samples int64   `json:"samples"`
	LossSum float64 `json:"loss_sum"` // Σ batch loss × batch samples
	Seconds float64 `json:"seconds"`
	Hot     bool    `json:"hot"`
	LastLR  float64 `json:"last_lr"`
}

// PhaseSeconds is the time spent in each part of training, in seconds.
type PhaseSeconds struct {
	Read        float64 `json:"read"`        // waiting for the next mini-batch
	EmbForward  float64 `json:"emb_forward"` // embedding lookups (and bag building)
	MLPForward  float64 `json:"mlp_forward"` // bottom MLP, interaction, top MLP, loss
	MLPBackward float64 `json:"mlp_backward"`
	EmbUpdate   float64 `json:"emb_update"` // sparse optimizer step
	Sync        float64 `json:"sync"`       // hot-row synchronisation at swaps
	Transfer    float64 `json:"transfer"`   // per-batch copies over the emulated link
	Eval        float64 `json:"eval"`       // test and scheduler evaluations
}

// New prepares a run: it builds (or, with Resume, restores) the model,
// opens the evaluation sets and allocates every buffer a step uses.
func New(ctx context.Context, opts Options) (*Trainer, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.LogEvery == 0 {
		opts.LogEvery = DefaultLogEvery
	}
	if opts.EvalCacheBytes == 0 {
		opts.EvalCacheBytes = DefaultEvalCacheBytes
	}
	tc := opts.Config.Train
	t := &Trainer{opts: opts, tc: tc, mode: tc.Mode, be: opts.Backend, spec: opts.spec(), oracle: math.NaN(), metricsKeep: -1}
	t.st.LastLoss = Number(math.NaN())
	t.shape = ShapeOf(opts.Config.Model, t.spec)
	t.lr = LRSchedule{Base: tc.LearningRate, WarmupSteps: tc.WarmupSteps, DecayStart: tc.DecayStart, DecaySteps: tc.DecaySteps}
	adagrad := tc.Optimizer == "adagrad"
	if adagrad {
		t.opt = compute.OptRowWiseAdagrad
	}
	var err error
	if t.m, err = newModel(t.shape, tc.Seed, adagrad); err != nil {
		return nil, err
	}
	t.batchCap = tc.BatchSize
	t.micro = tc.MicroBatches
	microCap := (t.batchCap + t.micro - 1) / t.micro
	if t.lanes, err = newLaneSet(t.be, t.m, (microCap+denseLanes-1)/denseLanes); err != nil {
		return nil, err
	}
	t.lanes.setFuse(!adagrad, t.micro)
	ok := false
	defer func() {
		if !ok {
			t.Close()
		}
	}()
	t.bb = newBagBuilder(t.shape)
	if !tc.Packing {
		t.split = newTableSplit()
	}
	t.nd, t.fd = t.shape.Dense, t.shape.Features*t.shape.Dim
	t.allocBuffers()
	t.stepMs = newRing(1 << 16)

	if l := opts.Data.Layout; l != nil {
		hm := hotmapOf(l.HotSet())
		t.hotOff = hotOffsets(hm)
		t.bb.hotOff = t.hotOff
		if t.mode == ModeFAE || t.mode == ModeArtifact {
			if t.hot, err = newHotTable(t.m.emb, hm); err != nil {
				return nil, err
			}
		}
	}
	if t.mode == ModeFAE {
		sc := opts.Config.Scheduler
		t.sched, err = NewScheduler(SchedulerOptions{InitialRate: sc.InitialRate, MinRate: sc.MinRate, MaxRate: sc.MaxRate, Patience: sc.Patience})
		if err != nil {
			return nil, err
		}
	}
	switch {
	case t.usesLayout():
		lay := opts.Data.Layout
		t.epochN = int64(lay.NumBatches(layout.Cold) + lay.NumBatches(layout.Hot))
	default:
		t.epochN = (opts.Data.Train.Rows() + int64(tc.BatchSize) - 1) / int64(tc.BatchSize)
	}
	if t.epochN == 0 {
		return nil, fmt.Errorf("train: the training data has no mini-batches: %w", dataset.ErrNoData)
	}
	t.total = tc.Steps
	if t.total <= 0 {
		t.total = int64(math.Ceil(tc.Epochs * float64(t.epochN)))
	}

	if opts.Data.Test != nil {
		if t.test, err = newEvalSet(ctx, opts.Data.Test, t.batchCap, 0, opts.EvalCacheBytes); err != nil {
			return nil, err
		}
		if t.mode == ModeFAE {
			if t.held, err = newEvalSet(ctx, opts.Data.Test, t.batchCap, int64(opts.Config.Scheduler.EvalRows), math.MaxInt64); err != nil {
				return nil, err
			}
		}
	}
	if opts.Resume {
		if err := t.restore(); err != nil {
			return nil, err
		}
	}
	ok = true
	return t, nil
}

// Close releases the trainer's worker goroutine and backends (not the
// backend passed in Options). It is idempotent.
func (t *Trainer) Close() error {
	if t.lanes != nil {
		t.lanes.close()
	}
	return nil
}

// usesLayout reports whether training reads the layout (not raw data).
func (t *Trainer) usesLayout() bool {
	return t.opts.Data.Layout != nil && (t.opts.Data.Train == nil || t.scheduled())
}

// scheduled reports whether hot and cold mini-batches run in phases.
func (t *Trainer) scheduled() bool { return t.mode == ModeFAE || t.mode == ModeArtifact }

func (t *Trainer) allocBuffers() {
	n := t.batchCap
	t.pooledDev = make([]float32, n*t.fd)
	t.dembDev = make([]float32, n*t.fd)
	t.pooledHost, t.dembHost = t.pooledDev, t.dembDev
	switch t.mode {
	case ModeHybrid, ModeFAE, ModeArtifact:
		t.pooledHost = make([]float32, n*t.fd)
		t.dembHost = make([]float32, n*t.fd)
	}
	if t.mode != ModeCPU {
		t.denseDev = make([]float32, n*t.nd)
		t.labelDev = make([]float32, n)
	}
}

// Total returns the number of steps the run trains for.
func (t *Trainer) Total() int64 { return t.total }

// Step returns the number of steps trained so far (from the checkpoint
// when resuming).
func (t *Trainer) Step() int64 { return t.st.Step }

// StepsPerEpoch returns the number of mini-batches in one epoch.
func (t *Trainer) StepsPerEpoch() int64 { return t.epochN }

func (t *Trainer) logf(format string, args ...any) {
	if t.opts.Logf != nil {
		t.opts.Logf(format, args...)
	}
}

// Run trains until the configured number of steps, evaluates, writes the
// summary and the final checkpoint, and returns the summary. When ctx ends
// first, Run writes a checkpoint at the last finished step and returns the
// summary so far with an error wrapping ErrInterrupted and ctx's error.
func (t *Trainer) Run(ctx context.Context) (*Summary, error) {
	t.started = time.Now()
	if t.opts.OutDir != "" {
		var err error
		if t.log, err = openRunLog(t.opts.OutDir, t.opts.Resume, t.metricsKeep); err != nil {
			return nil, err
		}
		defer t.log.close()
	}
	if t.test != nil && math.IsNaN(t.oracle) {
		o, err := t.test.oracleAUC(ctx)
		if err != nil {
			return t.stop(ctx, err)
		}
		t.oracle = o
	}
	if err := t.openData(); err != nil {
		return nil, err
	}
	defer t.closeData()
	if t.st.PendingEval {
		if err := t.evalTest(ctx); err != nil {
			return t.stop(ctx, err)
		}
	}
	for t.st.Step < t.total {
		if err := ctx.Err(); err != nil {
			return t.stop(ctx, err)
		}
		b, hot, err := t.next(ctx)
		if err != nil {
			return t.stop(ctx, err)
		}
		loss, err := t.trainStep(b, hot)
		if err != nil {
			return nil, err
		}
		if err := t.afterStep(b.N, hot, loss); err != nil {
			return nil, err
		}
		if t.onStep != nil {
			t.onStep(t.st.Step, b, hot)
		}
		if ev := t.tc.EvalEvery; ev > 0 && t.st.Step%ev == 0 && t.st.Step < t.total {
			t.st.PendingEval = true
			if err := t.evalTest(ctx); err != nil {
				return t.stop(ctx, err)
			}
		}
		if ce := t.tc.CheckpointEvery; ce > 0 && t.st.Step%ce == 0 && t.st.Step < t.total {
			if err := t.checkpoint(); err != nil {
				return nil, err
			}
		}
	}
	if err := t.flushInterval(); err != nil {
		return nil, err
	}
	t.syncForEval() // the master copy holds the final model
	if len(t.st.Evals) == 0 || t.st.Evals[len(t.st.Evals)-1].Step != t.st.Step {
		t.st.PendingEval = true
	}
	if t.st.PendingEval {
		if err := t.evalTest(ctx); err != nil {
			return t.stop(ctx, err)
		}
	}
	sum := t.summary(false)
	if err := t.checkpoint(); err != nil {
		return sum, err
	}
	if t.opts.OutDir != "" {
		if err := writeJSONAtomic(joinPath(t.opts.OutDir, SummaryFile), sum); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// stop ends a run early: on an interrupt it checkpoints and returns the
// summary so far; other errors are returned as they are.
func (t *Trainer) stop(ctx context.Context, err error) (*Summary, error) {
	if ctx.Err() == nil {
		return nil, err
	}
	// The steps since the last metrics line stay in the checkpoint's
	// interval, so a resumed run writes the lines an uninterrupted one would.
	sum := t.summary(true)
	if t.opts.OutDir != "" {
		if cerr := t.checkpoint(); cerr != nil {
			return sum, cerr
		}
		sum.Checkpoint = joinPath(t.opts.OutDir, CheckpointFile)
	}
	return sum, fmt.Errorf("train: stopped after step %d of %d: %w: %w", t.st.Step, t.total, ErrInterrupted, ctx.Err())
}

// openData starts reading at the state's position.
func (t *Trainer) openData() error {
	depth := t.tc.Prefetch
	if !t.usesLayout() {
		src := newRawStream(t.opts.Data.Train, t.batchCap, t.tc.Seed, t.st.Epoch, t.st.Rows)
		t.raw = dataset.NewPrefetch(depth, src.next, func() error { src.close(); return nil })
		return nil
	}
	t.lf = newLayoutFeeder(t.opts.Data.Layout, t.tc.Seed, depth, !t.scheduled(), t.total)
	return t.lf.start(t.st.Epoch, t.st.Taken)
}

func (t *Trainer) closeData() {
	if t.raw != nil {
		t.raw.Close()
		t.raw = nil
	}
	if t.lf != nil {
		t.lf.close()
		t.lf = nil
	}
}

// next returns the next mini-batch to train and whether it is hot, running
// the swap (synchronisation, evaluation, scheduler) when the class changes.
func (t *Trainer) next(ctx context.Context) (*dataset.Batch, bool, error) {
	if t.raw != nil {
		defer t.timeRead(time.Now())
		it, err := t.raw.Next(ctx)
		if err != nil {
			return nil, false, err
		}
		t.st.Epoch, t.st.Rows = it.epoch, it.rows
		return it.b, false, nil
	}
	lf := t.lf
	if !t.scheduled() {
		defer t.timeRead(time.Now())
		c, ok := lf.nextMixed()
		if !ok {
			if err := lf.start(lf.epoch+1, [2]int{}); err != nil {
				return nil, false, err
			}
			t.st.Epoch, t.st.Taken = lf.epoch, lf.taken
			c, _ = lf.nextMixed()
		}
		b, err := lf.take(ctx, c)
		if err != nil {
			return nil, false, err
		}
		t.st.Epoch, t.st.Taken = lf.epoch, lf.taken
		return b, c == layout.Hot, nil
	}
	if !t.st.InPhase || t.st.PhaseLeft <= 0 || lf.left(t.st.Class) == 0 {
		if err := t.nextPhase(); err != nil {
			return nil, false, err
		}
	}
	r0 := time.Now()
	b, err := lf.take(ctx, t.st.Class)
	t.timeRead(r0)
	if err != nil {
		return nil, false, err
	}
	t.st.Epoch, t.st.Taken = lf.epoch, lf.taken
	t.st.PhaseLeft--
	return b, t.st.Class == layout.Hot, nil
}

// timeRead adds the time since start to the read phase: waiting for the
// next mini-batch or opening the next epoch's streams. Hot/cold swaps, run
// between reads, are timed as sync and eval.
func (t *Trainer) timeRead(start time.Time) {
	t.st.Phases.Read += time.Since(start).Seconds()
}

// nextPhase picks the class of the next phase (the other class when it has
// mini-batches left in the epoch, cold at the start of an epoch), runs the
// swap when the class changes, and sets the phase's length.
func (t *Trainer) nextPhase() error {
	lf := t.lf
	c := layout.Cold
	if t.st.InPhase {
		c = 1 - t.st.Class
	}
	if lf.left(c) == 0 {
		c = 1 - c
	}
	if lf.left(c) == 0 {
		r0 := time.Now()
		err := lf.start(lf.epoch+1, [2]int{})
		t.timeRead(r0)
		if err != nil {
			return err
		}
		t.st.Epoch, t.st.Taken = lf.epoch, lf.taken
		c = layout.Cold
		if lf.left(c) == 0 {
			c = layout.Hot
		}
	}
	if t.st.InPhase && c != t.st.Class {
		if err := t.swap(t.st.Class, c); err != nil {
			return err
		}
	}
	t.st.InPhase, t.st.Class = true, c
	if t.sched != nil {
		t.st.PhaseLeft = min(t.sched.PhaseLen(lf.n[c]), lf.left(c))
	} else {
		t.st.PhaseLeft = lf.left(c) // artifact: the whole class
	}
	return nil
}

// swap synchronises the hot rows for a change of class and, in fae mode,
// evaluates the held-out loss and lets the scheduler adapt its rate.
func (t *Trainer) swap(from, to layout.Class) error {
	if err := t.flushInterval(); err != nil {
		return err
	}
	s0 := time.Now()
	var rows int64
	if from == layout.Hot {
		rows = t.hot.toHost(t.m.emb, &t.link)
		t.st.RowsD2H += rows
	} else {
		rows = t.hot.toDevice(t.m.emb, &t.link)
		t.st.RowsH2D += rows
	}
	t.st.Syncs++
	t.st.Phases.Sync += time.Since(s0).Seconds()
	rec := swapRecord{Kind: "swap", Step: t.st.Step, Epoch: t.st.Epoch, From: from.String(), To: to.String(), SyncRows: rows,
		BytesH2D: t.link.h2d, BytesD2H: t.link.d2h}
	if t.sched != nil {
		e0 := time.Now()
		loss, err := t.heldLoss()
		if err != nil {
			return err
		}
		t.st.Phases.Eval += time.Since(e0).Seconds()
		d := t.sched.Observe(loss)
		t.st.Decisions = append(t.st.Decisions, d)
		rec.Decision = &d
		t.logf("swap %d at step %d (%s→%s, %d rows synced): eval loss %.5f, rate %g%% → %g%% (%s)",
			d.Swap, t.st.Step, from, to, rows, loss, d.RateBefore, d.RateAfter, d.Action)
	}
	return t.writeLog(rec)
}

type swapRecord struct {
	Kind     string    `json:"kind"`
	Step     int64     `json:"step"`
	Epoch    int       `json:"epoch"`
	From     string    `json:"from"`
	To       string    `json:"to"`
	SyncRows int64     `json:"sync_rows"`
	BytesH2D int64     `json:"bytes_h2d"`
	BytesD2H int64     `json:"bytes_d2h"`
	Decision *Decision `json:"decision,omitempty"`
}

// trainStep runs forward, backward and the updates of one mini-batch and
// returns its mean loss.
func (t *Trainer) trainStep(b *dataset.Batch, hot bool) (float64, error) {
	n := b.N
	if n < 1 || n > t.batchCap {
		return 0, fmt.Errorf("train: mini-batch at %s row group %d row %d has %d rows; want 1 to %d: %w",
			b.Pos.File, b.Pos.RowGroup, b.Pos.Row, n, t.batchCap, ErrInvalidOptions)
	}
	if len(b.Label) != n || len(b.Dense) != n*t.nd {
		return 0, fmt.Errorf("train: mini-batch at %s row group %d row %d: %d labels and %d dense values for %d rows: %w",
			b.Pos.File, b.Pos.RowGroup, b.Pos.Row, len(b.Label), len(b.Dense), n, dataset.ErrBadData)
	}
	ph := &t.st.Phases
	t0 := time.Now()
	table, touched := t.m.emb, (*compute.RowSet)(nil)
	if hot {
		if t.hot != nil {
			table, touched = t.hot.t, t.hot.devDirty
		}
	} else if t.hot != nil {
		touched = t.hot.hostDirty
	}
	// Where the lookup runs: on the device for hot mini-batches and in
	// device mode; otherwise in host memory, and the pooled embeddings
	// cross the link unless everything is on the host.
	onDevice := t.mode == ModeDevice || hot && t.hot != nil
	crosses := !onDevice && t.mode != ModeCPU
	pooled := t.pooledDev[:n*t.fd]
	if crosses {
		pooled = t.pooledHost[:n*t.fd]
	}
	bags, err := t.bb.build(b, hot && t.hot != nil)
	if err != nil {
		return 0, err
	}
	if err := t.lookup(table, bags, pooled, n); err != nil {
		return 0, t.locate(b, err)
	}
	t1 := time.Now()
	ph.EmbForward += t1.Sub(t0).Seconds()

	dense, label := b.Dense, b.Label
	if t.mode != ModeCPU {
		dense, label = t.denseDev[:n*t.nd], t.labelDev[:n]
		t.link.toDevice(dense, b.Dense)
		t.link.toDevice(label, b.Label)
		if crosses {
			t.link.toDevice(t.pooledDev[:n*t.fd], pooled)
		} else {
			t.link.h2d += idBytes(b, hot && t.hot != nil)
		}
	}
	t2 := time.Now()
	ph.Transfer += t2.Sub(t1).Seconds()

	emb, demb := t.pooledDev[:n*t.fd], t.dembDev[:n*t.fd]
	t.lanes.startStep()
	for k := range t.micro {
		lo, hi := k*n/t.micro, (k+1)*n/t.micro
		if hi == lo {
			continue
		}
		t.lanes.split(true, dense, emb, demb, label, lo, hi, n, t.nd, t.fd)
		t.lanes.run()
	}
	loss := t.lanes.loss(n)
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return loss, fmt.Errorf("train: step %d: loss %v: %w", t.st.Step+1, loss, ErrDiverged)
	}
	lr := t.lr.Rate(t.st.Step + 1)
	t.st.Interval.LastLR = lr
	t.lanes.update(t.m, float32(lr))
	t3 := time.Now()
	// Lane 0's forward time stands for the forward; the rest of the dense
	// part (its backward, waiting for the other lanes, the gradient sum and
	// the optimizer step) counts as backward.
	fwd := t.lanes.ls[0].fwd
	ph.MLPForward += fwd.Seconds()
	ph.MLPBackward += (t3.Sub(t2) - fwd).Seconds()

	if crosses {
		t.link.toHost(t.dembHost[:n*t.fd], demb)
		demb = t.dembHost[:n*t.fd]
	}
	if t.mode != ModeCPU {
		t.link.d2h += 4 // the loss, for logging
	}
	t4 := time.Now()
	ph.Transfer += t4.Sub(t3).Seconds()

	if t.bb.shared {
		demb = t.bb.scatter(demb, n)
	}
	step := compute.SparseStep{Opt: t.opt, LR: float32(lr), Eps: adagradEps}
	if err := t.embUpdate(table, bags, demb, step, touched); err != nil {
		return 0, t.locate(b, err)
	}
	t5 := time.Now()
	ph.EmbUpdate += t5.Sub(t4).Seconds()
	t.stepMs.add(float32(t5.Sub(t0).Seconds() * 1e3))
	return loss, nil
}

// lookup pools the bags of n samples into out (n×Features×Dim).
func (t *Trainer) lookup(table *compute.PackedTable, bags *compute.Bags, out []float32, n int) error {
	if !t.bb.shared {
		return t.embForward(table, bags, out)
	}
	if err := t.embForward(table, bags, t.bb.laneBuf(n)); err != nil {
		return err
	}
	t.bb.gather(out, n)
	return nil
}

// embForward runs the embedding lookup: one packed kernel call, or one call
// per table when packing is off.
func (t *Trainer) embForward(table *compute.PackedTable, bags *compute.Bags, out []float32) error {
	if t.split != nil {
		return t.split.forward(t.be, table, bags, out)
	}
	return t.be.EmbeddingBagForward(table, bags, out)
}

// embUpdate runs the sparse update: one packed kernel call, or one call per
// table when packing is off.
func (t *Trainer) embUpdate(table *compute.PackedTable, bags *compute.Bags, dOut []float32, step compute.SparseStep, touched *compute.RowSet) error {
	if t.split != nil {
		return t.split.update(t.be, table, bags, dOut, step, touched)
	}
	return t.be.EmbeddingBagUpdate(table, bags, dOut, step, touched)
}

// locate adds the batch's position to a lookup error.
func (t *Trainer) locate(b *dataset.Batch, err error) error {
	if errors.Is(err, compute.ErrIDOutOfRange) || errors.Is(err, compute.ErrBadOffsets) {
		return fmt.Errorf("train: mini-batch from %s row group %d row %d: %w: %w", b.Pos.File, b.Pos.RowGroup, b.Pos.Row, err, dataset.ErrBadData)
	}
	return err
}

// idBytes is what a mini-batch's sparse input occupies on the link: int64
// table IDs, or int32 hot slots, plus int32 bag offsets for multi-hot
// features.
func idBytes(b *dataset.Batch, slots bool) int64 {
	var n int64
	per := int64(8)
	if slots {
		per = 4
	}
	for _, c := range b.Sparse {
		n += per * int64(len(c.IDs))
		if c.Offsets != nil {
			n += 4 * int64(len(c.Offsets))
		}
	}
	return n
}

// afterStep updates the counters and writes a metrics line every LogEvery
// steps.
func (t *Trainer) afterStep(n int, hot bool, loss float64) error {
	st := &t.st
	st.Step++
	st.Samples += int64(n)
	if hot {
		st.HotSamples += int64(n)
	}
	st.BytesH2D, st.BytesD2H = t.link.h2d, t.link.d2h
	iv := &st.Interval
	iv.Steps++
	iv.Samples += int64(n)
	iv.LossSum += loss * float64(n)
	iv.Hot = hot
	if t.opts.Progress != nil {
		t.opts.Progress(st.Step, t.total)
	}
	if st.Step%t.opts.LogEvery == 0 {
		return t.flushInterval()
	}
	return nil
}

type trainRecord struct {
	Kind        string  `json:"kind"`
	Step        int64   `json:"step"`
	Epoch       int     `json:"epoch"`
	Phase       string  `json:"phase"`
	Steps       int64   `json:"steps"`
	Loss        Number  `json:"loss"`
	LR          float64 `json:"lr"`
	SamplesPerS float64 `json:"samples_per_s"`
	BytesH2D    int64   `json:"bytes_h2d"`
	BytesD2H    int64   `json:"bytes_d2h"`
	Rate        *Number `json:"rate,omitempty"`
}

// flushInterval writes the metrics line of the steps since the last one.
func (t *Trainer) flushInterval() error {
	iv := &t.st.Interval
	now := time.Since(t.started).Seconds() + t.st.Seconds
	if iv.Steps == 0 {
		iv.Seconds = now
		return nil
	}
	rec := trainRecord{Kind: "train", Step: t.st.Step, Epoch: t.st.Epoch, Phase: t.phaseName(iv.Hot), Steps: iv.Steps,
		Loss: Number(iv.LossSum / float64(iv.Samples)), LR: iv.LastLR,
		BytesH2D: t.link.h2d, BytesD2H: t.link.d2h}
	if dt := now - iv.Seconds; dt > 0 {
		rec.SamplesPerS = float64(iv.Samples) / dt
	}
	if t.sched != nil {
		r := Number(t.sched.Rate())
		rec.Rate = &r
	}
	t.st.LastLoss = rec.Loss
	*iv = interval{Seconds: now}
	return t.writeLog(rec)
}

func (t *Trainer) phaseName(hot bool) string {
	switch {
	case !t.usesLayout():
		return "mixed"
	case hot:
		return "hot"
	}
	return "cold"
}

func (t *Trainer) writeLog(v any) error {
	if t.log == nil {
		return nil
	}
	return t.log.write(v)
}

// evalTest evaluates on the test set (after bringing the master copy of the
// hot rows up to date) and logs the result.
func (t *Trainer) evalTest(ctx context.Context) error {
	if t.test == nil {
		t.st.PendingEval = false
		return nil
	}
	t.syncForEval()
	e0 := time.Now()
	sum, err := t.test.evaluate(ctx, t.predict, &t.evalP, &t.evalY)
	if err != nil {
		return err
	}
	sec := time.Since(e0).Seconds()
	t.st.Phases.Eval += sec
	r := EvalResult{Step: t.st.Step, Rows: int64(sum.N), LogLoss: Number(sum.LogLoss), Accuracy: Number(sum.Accuracy), AUC: Number(sum.AUC), Seconds: sec}
	t.st.Evals = append(t.st.Evals, r)
	t.st.PendingEval = false
	t.logf("step %d: test AUC %.5f, log loss %.5f, accuracy %.5f (%d rows, %.1fs)", r.Step, sum.AUC, sum.LogLoss, sum.Accuracy, sum.N, sec)
	return t.writeLog(struct {
		Kind string `json:"kind"`
		EvalResult
	}{"eval", r})
}

// syncForEval copies the hot rows the device changed to the master copy,
// which evaluations read.
func (t *Trainer) syncForEval() {
	if t.hot == nil {
		return
	}
	s0 := time.Now()
	t.st.RowsD2H += t.hot.toHost(t.m.emb, &t.link)
	t.st.BytesH2D, t.st.BytesD2H = t.link.h2d, t.link.d2h
	t.st.Phases.Sync += time.Since(s0).Seconds()
}

// forwardBatch runs the model on a batch, reading the master tables, and
// calls fn with the logits of each chunk of samples.
func (t *Trainer) forwardBatch(b *dataset.Batch, fn func(lo int, logits []float32)) error {
	n := b.N
	if n > t.batchCap {
		return fmt.Errorf("train: evaluation batch of %d rows exceeds %d: %w", n, t.batchCap, ErrInvalidOptions)
	}
	bags, err := t.bb.build(b, false)
	if err != nil {
		return err
	}
	pooled := t.pooledDev[:n*t.fd]
	if err := t.lookup(t.m.emb, bags, pooled, n); err != nil {
		return t.locate(b, err)
	}
	chunk := denseLanes * t.lanes.ls[0].nt.cap
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		t.lanes.split(false, b.Dense, pooled, nil, nil, lo, hi, hi-lo, t.nd, t.fd)
		t.lanes.run()
		for _, l := range t.lanes.ls {
			if j := &l.batch; j.n > 0 {
				fn(j.lo, l.nt.act[len(l.nt.act)-1][:j.n])
			}
		}
	}
	return nil
}

// predict writes the click probabilities of a batch's rows into probs.
func (t *Trainer) predict(b *dataset.Batch, probs []float32) error {
	return t.forwardBatch(b, func(lo int, logits []float32) {
		for i, z := range logits {
			probs[lo+i] = float32(1 / (1 + math.Exp(-float64(z))))
		}
	})
}

// heldLoss returns the mean log loss on the scheduler's held-out rows.
func (t *Trainer) heldLoss() (float64, error) {
	var sum float64
	var n int64
	err := t.held.each(context.Background(), func(b *dataset.Batch) error {
		return t.forwardBatch(b, func(lo int, logits []float32) {
			l := t.be.BCEWithLogits(nil, logits, b.Label[lo:lo+len(logits)])
			sum += l * float64(len(logits))
			n += int64(len(logits))
		})
	})
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return math.NaN(), nil
	}
	return sum / float64(n), nil
}
