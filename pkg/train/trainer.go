package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/picasso-ctr/picasso/pkg/compute"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/hybridhash"
	"github.com/picasso-ctr/picasso/pkg/layout"
)

// Trainer trains one model in one placement mode. Create it with New and
// call Run once.
//
// Its loop has no branch on the mode: New picks the placement (where the
// tables live, what crosses the link) and the order of the mini-batches
// (raw data, the mixed order of a layout, or hot and cold phases), and a
// step goes through the placement's lookup, the dense model's forward and
// backward, and the updates once each.
type Trainer struct {
	opts  Options
	spec  *dataset.Spec
	shape Shape
	m     *model
	lanes *laneSet
	place placement
	ord   order
	l     *link
	lr    LRSchedule
	opt   compute.Optimizer // the embeddings'
	// denseOpt and denseLR are the MLPs' optimizer and schedule.
	denseOpt compute.Optimizer
	denseLR  LRSchedule

	batchCap int
	micro    int
	nd, fd   int // dense values and pooled embedding values per sample

	test  *evalSet
	valid *evalSet
	held  *evalSet
	evalP []float32
	evalY []float32
	lossH []float32 // the step's loss, fetched from the dense backend

	evalLogits []float32

	st     runState
	total  int64
	epochN int64 // mini-batches per epoch

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
	// The current phase of the fae and artifact orders.
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
	// Validation: every result, the best log loss and its step, the
	// evaluations since it, and whether early stopping ended the run.
	Valids    []EvalResult `json:"valids,omitempty"`
	BestValid Number       `json:"best_valid"`
	BestStep  int64        `json:"best_step"`
	SinceBest int          `json:"since_best"`
	Stopped   bool         `json:"stopped_early,omitempty"`
	Decisions []Decision   `json:"decisions,omitempty"`

	Interval interval `json:"interval"`
	// CacheAtLine is HybridHash's statistics at the last metrics line.
	CacheAtLine *hybridhash.Stats `json:"cache_at_line,omitempty"`
	LastLoss    Number            `json:"last_loss"` // of the last logging interval
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
	Transfer    float64 `json:"transfer"`   // per-batch copies between host and device
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
	if opts.AdagradEps == 0 {
		opts.AdagradEps = adagradEps
	}
	t := &Trainer{opts: opts, spec: opts.spec(), oracle: math.NaN(), metricsKeep: -1, lr: opts.LR, lossH: make([]float32, 1)}
	t.st.LastLoss = Number(math.NaN())
	t.st.BestValid = Number(math.Inf(1))
	t.shape = ShapeOf(opts.Model, t.spec)
	if err := t.denseNorm(ctx); err != nil {
		return nil, err
	}
	adagrad := opts.Optimizer == OptAdagrad
	t.opt = opts.Optimizer.compute()
	denseOpt, denseLR := opts.denseOpt()
	t.denseOpt, t.denseLR = denseOpt.compute(), denseLR
	dense := opts.Device
	if !opts.Mode.NeedsDevice() {
		dense = opts.Host // cpu mode: nothing is on a device, nothing crosses
	}
	t.l = &link{dev: opts.Device}
	ok := false
	defer func() {
		if !ok {
			t.Close()
		}
	}()
	var err error
	if t.m, err = newModel(t.shape, opts.Seed, denseOpt, dense); err != nil {
		return nil, err
	}
	t.batchCap = opts.BatchSize
	t.micro = opts.MicroBatches
	microCap := (t.batchCap + t.micro - 1) / t.micro
	if t.lanes, err = newLaneSet(t.m, (microCap+denseLanes-1)/denseLanes, t.micro); err != nil {
		return nil, err
	}
	t.lanes.setFuse(t.shape.dlrm() && denseOpt == OptSGD && opts.DenseWeightDecay == 0, t.micro)
	t.nd, t.fd = t.shape.Dense, t.shape.Features*t.shape.RowDim()
	t.stepMs = newRing(1 << 16)

	po := placementOptions{mode: opts.Mode, shape: t.shape, seed: opts.Seed, adagrad: adagrad, batch: t.batchCap,
		unpacked: opts.Unpacked, host: opts.Host, dev: opts.Device, dense: dense, l: t.l, ph: &t.st.Phases,
		hh: opts.HybridHash, diskDir: hhDiskDir(opts.HybridHash, opts.OutDir)}
	if opts.Mode.NeedsLayout() {
		po.hotSet = opts.Data.Layout.HotSet()
	}
	if t.place, err = newPlacement(po); err != nil {
		return nil, err
	}
	if err := t.newOrder(); err != nil {
		return nil, err
	}
	if t.epochN == 0 {
		return nil, fmt.Errorf("train: the training data has no mini-batches: %w", dataset.ErrNoData)
	}
	t.total = opts.Steps
	if t.total <= 0 {
		t.total = int64(math.Ceil(opts.Epochs * float64(t.epochN)))
	}
	t.lr, t.denseLR = t.lr.decayed(opts.DecayFraction, t.total), t.denseLR.decayed(opts.DecayFraction, t.total)

	if opts.Data.Valid != nil {
		if t.valid, err = newEvalSet(ctx, opts.Data.Valid, t.batchCap, 0, opts.EvalCacheBytes); err != nil {
			return nil, err
		}
	}
	if opts.Data.Test != nil {
		if t.test, err = newEvalSet(ctx, opts.Data.Test, t.batchCap, 0, opts.EvalCacheBytes); err != nil {
			return nil, err
		}
		if t.ord.scheduler() != nil {
			if t.held, err = newEvalSet(ctx, opts.Data.Test, t.batchCap, int64(opts.SchedulerEvalRows), math.MaxInt64); err != nil {
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

// newOrder picks the order of the mini-batches: phases of hot and cold
// mini-batches for fae (with the Shuffle Scheduler) and artifact (whole
// classes), a layout's mixed order for the other modes when they read a
// layout, and the raw dataset's otherwise.
func (t *Trainer) newOrder() error {
	o := &t.opts
	if !o.readsLayout() {
		t.ord = &rawOrder{ds: o.Data.Train, batch: t.batchCap, seed: o.Seed, depth: o.Prefetch, st: &t.st}
		t.epochN = (o.Data.Train.Rows() + int64(t.batchCap) - 1) / int64(t.batchCap)
		return nil
	}
	lay := o.Data.Layout
	t.epochN = int64(lay.NumBatches(layout.Cold) + lay.NumBatches(layout.Hot))
	steps := o.Steps
	if steps <= 0 {
		steps = int64(math.Ceil(o.Epochs * float64(t.epochN)))
	}
	if !o.Mode.NeedsLayout() {
		t.ord = &mixedOrder{lf: newLayoutFeeder(lay, o.Seed, o.Prefetch, true, steps), st: &t.st}
		return nil
	}
	po := &phasedOrder{lf: newLayoutFeeder(lay, o.Seed, o.Prefetch, false, steps), st: &t.st, swap: t.swap}
	if o.Mode == ModeFAE {
		var err error
		if po.sched, err = NewScheduler(o.Scheduler); err != nil {
			return err
		}
	}
	t.ord = po
	return nil
}

// Close releases the trainer's buffers and the backends it made (not the
// backends passed in Options). It is idempotent.
func (t *Trainer) Close() error {
	if t.place != nil {
		t.place.close()
		t.place = nil
	}
	if t.lanes != nil {
		t.lanes.close()
		t.lanes = nil
	}
	if t.m != nil {
		t.m.free()
		t.m = nil
	}
	return nil
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
func (t *Trainer) Run(ctx context.Context) (_ *Summary, err error) {
	t.started = time.Now()
	if t.opts.OutDir != "" {
		if t.log, err = openRunLog(t.opts.OutDir, t.opts.Resume, t.metricsKeep); err != nil {
			return nil, err
		}
		defer func() {
			// A lost write can first show at close: the run is not
			// reported done with lines of its log missing.
			if cerr := t.log.close(); cerr != nil && err == nil {
				err = fmt.Errorf("train: close %s: %w", joinPath(t.opts.OutDir, MetricsFile), cerr)
			}
		}()
		if t.opts.Resume && t.metricsKeep > t.log.off {
			t.logf("warning: %s holds %d bytes, the checkpoint recorded %d: the lines between were lost (a crash before the log reached the disk); the resumed run appends after what is there",
				joinPath(t.opts.OutDir, MetricsFile), t.log.off, t.metricsKeep)
		}
	}
	if t.test != nil && math.IsNaN(t.oracle) {
		o, err := t.test.oracleAUC(ctx)
		if err != nil {
			return t.stop(ctx, err)
		}
		t.oracle = o
	}
	if err := t.ord.open(); err != nil {
		return nil, err
	}
	defer t.ord.close()
	if t.st.PendingEval {
		if err := t.evalTest(ctx); err != nil {
			return t.stop(ctx, err)
		}
	}
	for t.st.Step < t.total && !t.st.Stopped {
		if err := ctx.Err(); err != nil {
			return t.stop(ctx, err)
		}
		b, hot, err := t.ord.next(ctx)
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
		if ev := t.opts.EvalEvery; ev > 0 && t.st.Step%ev == 0 && t.st.Step < t.total {
			t.st.PendingEval = true
			if err := t.evalTest(ctx); err != nil {
				return t.stop(ctx, err)
			}
		}
		if ce := t.opts.CheckpointEvery; ce > 0 && t.st.Step%ce == 0 && t.st.Step < t.total {
			if err := t.checkpoint(); err != nil {
				return nil, err
			}
		}
	}
	if err := t.flushInterval(); err != nil {
		return nil, err
	}
	if err := t.syncMaster(); err != nil { // the master copy holds the final model
		return nil, err
	}
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

// swap synchronises the hot rows for a change of class and, with the
// Shuffle Scheduler, evaluates the held-out loss and lets it adapt its
// rate.
func (t *Trainer) swap(ctx context.Context, from, to layout.Class) error {
	if err := t.flushInterval(); err != nil {
		return err
	}
	s0 := time.Now()
	rows, err := t.place.swap(from, to)
	if err != nil {
		return err
	}
	if from == layout.Hot {
		t.st.RowsD2H += rows
	} else {
		t.st.RowsH2D += rows
	}
	t.st.Syncs++
	t.st.Phases.Sync += time.Since(s0).Seconds()
	rec := swapRecord{Kind: "swap", Step: t.st.Step, Epoch: t.st.Epoch, From: from.String(), To: to.String(), SyncRows: rows,
		BytesH2D: t.l.h2d, BytesD2H: t.l.d2h}
	if sched := t.ord.scheduler(); sched != nil {
		e0 := time.Now()
		loss, err := t.heldLoss(ctx)
		if err != nil {
			return err
		}
		t.st.Phases.Eval += time.Since(e0).Seconds()
		d := sched.Observe(loss)
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
// returns its mean loss: the placement looks the embeddings up (and moves
// what crosses), the dense model runs forward and backward and steps the
// MLPs, the placement moves the embedding gradients back and updates the
// rows.
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
	in, err := t.place.lookup(b, hot)
	if err != nil {
		return 0, err
	}

	t1 := time.Now()
	lr := t.lr.Rate(t.st.Step + 1)
	t.st.Interval.LastLR = lr
	step := compute.Step{Opt: t.opt, LR: float32(lr), Eps: float32(t.opts.AdagradEps), WD: float32(t.opts.WeightDecay)}
	dstep := compute.Step{Opt: t.denseOpt, LR: float32(t.denseLR.Rate(t.st.Step + 1)), Eps: adagradEps, WD: float32(t.opts.DenseWeightDecay)}
	if t.denseOpt == compute.OptAdam {
		dstep.Eps, dstep.Beta1, dstep.Beta2, dstep.T = adamEps, adamBeta1, adamBeta2, t.st.Step+1
	}
	demb := t.dense(in, dstep)
	t2 := time.Now()
	// Lane 0's forward time stands for the forward; the rest of the dense
	// part (its backward, waiting for the other lanes, the gradient sum and
	// the optimizer step) counts as backward.
	fwd := t.lanes.ls[0].fwd
	ph.MLPForward += fwd.Seconds()
	ph.MLPBackward += (t2.Sub(t1) - fwd).Seconds()

	t.place.backward(demb)
	t.l.get(compute.Wrap(t.lossH), t.lanes.lossSum())
	if err := t.l.sync(); err != nil {
		return 0, err
	}
	t3 := time.Now()
	ph.Transfer += t3.Sub(t2).Seconds()
	loss := float64(t.lossH[0]) / float64(n)
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return loss, fmt.Errorf("train: step %d: loss %v: %w", t.st.Step+1, loss, ErrDiverged)
	}

	if err := t.place.update(step); err != nil {
		return 0, locate(b, err)
	}
	t4 := time.Now()
	ph.EmbUpdate += t4.Sub(t3).Seconds()
	t.stepMs.add(float32(t4.Sub(t0).Seconds() * 1e3))
	return loss, nil
}

// dense runs the MLPs forward and backward on a step's input, micro-batch
// by micro-batch, and steps their parameters; it returns the gradient of
// the pooled embeddings (on the dense backend).
func (t *Trainer) dense(in stepInput, step compute.Step) compute.Buffer {
	n, demb := in.n, in.demb
	t.lanes.startStep()
	for k := range t.micro {
		lo, hi := k*n/t.micro, (k+1)*n/t.micro
		if hi == lo {
			continue
		}
		t.lanes.split(true, k, in.dense, in.emb, demb, in.label, lo, hi, n, t.nd, t.fd)
		t.lanes.run()
	}
	t.lanes.update(t.m, step)
	return demb
}

// locate adds the batch's position to a lookup error.
func locate(b *dataset.Batch, err error) error {
	if errors.Is(err, compute.ErrIDOutOfRange) || errors.Is(err, compute.ErrBadOffsets) {
		return fmt.Errorf("train: mini-batch from %s row group %d row %d: %w: %w", b.Pos.File, b.Pos.RowGroup, b.Pos.Row, err, dataset.ErrBadData)
	}
	return err
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
	st.BytesH2D, st.BytesD2H = t.l.h2d, t.l.d2h
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
	// Cache: HybridHash's figures over the interval (mode hybridhash).
	Cache *CacheFigures `json:"cache,omitempty"`
}

// flushInterval writes the metrics line of the steps since the last one.
func (t *Trainer) flushInterval() error {
	iv := &t.st.Interval
	now := time.Since(t.started).Seconds() + t.st.Seconds
	if iv.Steps == 0 {
		iv.Seconds = now
		return nil
	}
	rec := trainRecord{Kind: "train", Step: t.st.Step, Epoch: t.st.Epoch, Phase: t.ord.phaseName(iv.Hot), Steps: iv.Steps,
		Loss: Number(iv.LossSum / float64(iv.Samples)), LR: iv.LastLR,
		BytesH2D: t.l.h2d, BytesD2H: t.l.d2h}
	if dt := now - iv.Seconds; dt > 0 {
		rec.SamplesPerS = float64(iv.Samples) / dt
	}
	if sched := t.ord.scheduler(); sched != nil {
		r := Number(sched.Rate())
		rec.Rate = &r
	}
	if cs := t.place.cacheStats(); cs != nil {
		rec.Cache = cacheInterval(*cs, t.st.CacheAtLine)
		t.st.CacheAtLine = cs
	}
	t.st.LastLoss = rec.Loss
	*iv = interval{Seconds: now}
	return t.writeLog(rec)
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
	if err := t.evalValid(ctx); err != nil {
		return err
	}
	if t.test == nil {
		t.st.PendingEval = false
		return nil
	}
	r, err := t.evalSet(ctx, t.test)
	if err != nil {
		return err
	}
	t.st.Evals = append(t.st.Evals, r)
	t.st.PendingEval = false
	t.logf("step %d: test AUC %.5f, log loss %.5f, accuracy %.5f (%d rows, %.1fs)", r.Step, float64(r.AUC), float64(r.LogLoss), float64(r.Accuracy), r.Rows, r.Seconds)
	return t.writeLog(struct {
		Kind string `json:"kind"`
		EvalResult
	}{"eval", r})
}

// evalSet evaluates set with the model as it is now (after bringing the
// master copy of the hot rows up to date), counting the time as Eval.
func (t *Trainer) evalSet(ctx context.Context, set *evalSet) (EvalResult, error) {
	if err := t.syncMaster(); err != nil {
		return EvalResult{}, err
	}
	e0 := time.Now()
	sum, err := set.evaluate(ctx, t.predict, &t.evalP, &t.evalY)
	if err != nil {
		return EvalResult{}, err
	}
	sec := time.Since(e0).Seconds()
	t.st.Phases.Eval += sec
	return EvalResult{Step: t.st.Step, Rows: int64(sum.N), LogLoss: Number(sum.LogLoss), Accuracy: Number(sum.Accuracy), AUC: Number(sum.AUC), Seconds: sec}, nil
}

// evalValid evaluates the validation set, when there is one and it was not
// yet evaluated at this step: a better log loss than before saves the
// model as OutDir/best.bin; with EarlyStop, that many evaluations in a row
// without one end the run.
func (t *Trainer) evalValid(ctx context.Context) error {
	if t.valid == nil || len(t.st.Valids) > 0 && t.st.Valids[len(t.st.Valids)-1].Step == t.st.Step {
		return nil
	}
	r, err := t.evalSet(ctx, t.valid)
	if err != nil {
		return err
	}
	t.st.Valids = append(t.st.Valids, r)
	better := r.LogLoss < t.st.BestValid
	if better {
		t.st.BestValid, t.st.BestStep, t.st.SinceBest = r.LogLoss, r.Step, 0
		if err := t.checkpointTo(BestFile); err != nil {
			return err
		}
	} else {
		t.st.SinceBest++
		if es := t.opts.EarlyStop; es > 0 && t.st.SinceBest >= es {
			t.st.Stopped = true
		}
	}
	t.logf("step %d: validation AUC %.5f, log loss %.5f (best %.5f at step %d)%s", r.Step, float64(r.AUC), float64(r.LogLoss), float64(t.st.BestValid), t.st.BestStep,
		map[bool]string{true: "; early stop", false: ""}[t.st.Stopped])
	return t.writeLog(struct {
		Kind string `json:"kind"`
		EvalResult
		Best bool `json:"best"`
	}{"valid", r, better})
}

// syncMaster copies the hot rows the device changed to the master copy,
// which evaluations and checkpoints read.
func (t *Trainer) syncMaster() error {
	s0 := time.Now()
	rows, err := t.place.syncMaster()
	if err != nil {
		return err
	}
	t.st.RowsD2H += rows
	t.st.BytesH2D, t.st.BytesD2H = t.l.h2d, t.l.d2h
	t.st.Phases.Sync += time.Since(s0).Seconds()
	return nil
}

// forwardBatch runs the model on a batch, reading the master tables, and
// calls fn with the logits of each chunk of samples (fetched to the host).
func (t *Trainer) forwardBatch(b *dataset.Batch, fn func(lo int, logits []float32)) error {
	n := b.N
	if n > t.batchCap {
		return fmt.Errorf("train: evaluation batch of %d rows exceeds %d: %w", n, t.batchCap, ErrInvalidOptions)
	}
	in, err := t.place.evalLookup(b)
	if err != nil {
		return err
	}
	t.evalLogits = grow(t.evalLogits, n)
	chunk := denseLanes * t.lanes.ls[0].nt.cap
	be := t.m.be
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		t.lanes.split(false, 0, in.dense, in.emb, compute.Buffer{}, compute.Buffer{}, lo, hi, hi-lo, t.nd, t.fd)
		t.lanes.run()
		for _, l := range t.lanes.ls {
			if j := &l.batch; j.n > 0 {
				dst := t.evalLogits[j.lo : j.lo+j.n]
				if err := fetch(be, compute.Wrap(dst), l.nt.act[len(l.nt.act)-1].Head(j.n)); err != nil {
					return err
				}
				fn(j.lo, dst)
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
// The swap that calls it has brought the master up to date.
func (t *Trainer) heldLoss(ctx context.Context) (float64, error) {
	var sum float64
	var n int64
	err := t.held.each(ctx, func(b *dataset.Batch) error {
		return t.forwardBatch(b, func(lo int, logits []float32) {
			l := compute.MeanBCE(logits, b.Label[lo:lo+len(logits)])
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
