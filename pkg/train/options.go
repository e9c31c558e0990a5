package train

import (
	"errors"
	"fmt"
	"slices"

	"github.com/picasso-ctr/picasso/pkg/compute"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/layout"
)

// ModelOptions is a model's architecture before the data fixes its inputs.
type ModelOptions struct {
	// Arch is the model: ArchDLRM, ArchWDL, ArchDCN or ArchDeepFM (empty
	// means DLRM).
	Arch string
	// Dim is the embedding dimension (the factors of each ID).
	Dim int
	// Bottom lists DLRM's bottom MLP widths after the dense input; the last
	// is Dim for the dot interaction. The other models have none.
	Bottom []int
	// Top lists the widths of the MLP that ends in the logit (the last is
	// 1): DLRM's top MLP after the interaction, the deep MLP of the others.
	Top []int
	// Interaction is DLRM's "dot" or "cat" (see Shape).
	Interaction string
	// Cross is the number of DCN-v2 cross layers, stacked before the deep
	// MLP.
	Cross int
	// DenseNorm is how the dense inputs enter the model: DenseNormStandardize
	// (each feature's training mean and standard deviation, computed by the
	// trainer in one pass over the training rows) or DenseNormNone (empty:
	// none).
	DenseNorm string
	// DenseWide puts the dense features in the wide part of Wide&Deep and
	// DeepFM too (Shape.DenseWide); the other models ignore it.
	DenseWide bool
}

// Options configures a Trainer. The zero values of the run settings are
// not defaults: config.Default holds those, and Validate reports what is
// missing.
type Options struct {
	// Mode is the placement mode.
	Mode  Mode
	Model ModelOptions
	// Optimizer is SGD or Adagrad (row-wise) for the embedding rows; LR its
	// learning-rate schedule.
	Optimizer Optimizer
	LR        LRSchedule
	// AdagradEps is the eps of row-wise Adagrad's embedding step,
	// lr·g/(sqrt(acc)+eps). 0 means 1e-8, the eps of this package's
	// earlier versions; picasso's configuration default is 1e-3
	// (config.Default, train.adagrad_eps).
	AdagradEps float64
	// DenseOptimizer is SGD, Adagrad or Adam for the MLP weights, and
	// DenseLR its schedule; empty and zero take Optimizer and LR.
	DenseOptimizer Optimizer
	DenseLR        LRSchedule
	// WeightDecay and DenseWeightDecay are L2 weight decays: the decay
	// times a weight is added to its gradient. For the embeddings it
	// reaches only the rows a mini-batch looks up, as sparse trainers do.
	WeightDecay, DenseWeightDecay float64
	// DecayFraction, when positive, sets the decay of LR and DenseLR that
	// have no DecaySteps of their own: their polynomial decay to 0 takes
	// the last DecayFraction of the run's steps (at most 1).
	DecayFraction float64
	// BatchSize is the number of inputs per mini-batch.
	BatchSize int
	// Epochs, or Steps when positive, bound the run.
	Epochs float64
	Steps  int64
	// EvalEvery evaluates the test set every that many steps (0: only at
	// the end); CheckpointEvery writes a checkpoint every that many steps
	// (0: only at the end and on an interrupt).
	EvalEvery, CheckpointEvery int64
	// Seed seeds the initialisation and the order of the data.
	Seed uint64
	// MicroBatches cuts each mini-batch into that many micro-batches whose
	// gradients add up to one update (at least 1).
	MicroBatches int
	// Prefetch is the number of mini-batches decoded ahead on a background
	// goroutine (0: read in line with compute).
	Prefetch int
	// Unpacked runs the embedding kernels once per table instead of once
	// per packed table (the packing ablation); the results are identical.
	Unpacked bool
	// Scheduler configures the Shuffle Scheduler of mode fae; it evaluates
	// on the first SchedulerEvalRows rows of the test set.
	Scheduler         SchedulerOptions
	SchedulerEvalRows int
	// EarlyStop ends the run after that many validation evaluations in a
	// row without a better log loss (0: never). It needs Data.Valid.
	EarlyStop int
	// HybridHash configures mode hybridhash.
	HybridHash HybridHashOptions

	// Data is what to train and evaluate on.
	Data Data
	// Host computes in host memory: the embedding tables of every mode but
	// device (all of them in cpu mode). Device holds what the mode puts on
	// the device (nil in cpu mode): a GPU, or a CPU backend emulating one
	// (compute.CPU.Emulate). The caller owns both and closes them.
	Host, Device compute.Backend

	// OutDir is the run directory for metrics.jsonl, summary.json and the
	// checkpoint; empty writes nothing (and cannot checkpoint).
	OutDir string
	// Resume continues the run whose checkpoint is in OutDir.
	Resume bool
	// LogEvery is the number of steps per training line of metrics.jsonl
	// (default 100); a line is also written at every hot/cold swap.
	LogEvery int64
	// EvalCacheBytes bounds the memory used to keep the test set decoded
	// between evaluations (default 256 MiB); a larger test set is read
	// again at each evaluation.
	EvalCacheBytes int64
	// Progress, when set, is called after every step with the step count
	// and the total.
	Progress func(step, total int64)
	// Logf, when set, receives one line per notable event (evaluations,
	// scheduler decisions, checkpoints).
	Logf func(format string, args ...any)
}

// Data is the input of a run.
type Data struct {
	// Train is a raw dataset, read by the cpu, hybrid and device modes.
	Train *dataset.Dataset
	// Layout is a FAE layout (hot and cold mini-batches). fae and artifact
	// need it; the other modes read it (both classes in one seeded
	// interleaved order, hot mini-batches as table IDs) when Train is nil,
	// so that every mode can train on the same mini-batches.
	Layout *layout.Layout
	// Valid is the validation set, evaluated with the test set (every
	// EvalEvery steps and at the end): the run keeps the model of the best
	// validation log loss (BestFile) and, with EarlyStop, stops when it
	// does not improve. Optional.
	Valid *dataset.Dataset
	// Test is the test set: the trainer reports log loss, accuracy and AUC
	// on it, and the Shuffle Scheduler evaluates on its first
	// SchedulerEvalRows rows. Optional for the modes other than fae.
	Test *dataset.Dataset
}

// Defaults for zero Options fields.
const (
	DefaultLogEvery       = 100
	DefaultEvalCacheBytes = 256 << 20
	adagradEps            = 1e-8
	adamEps               = 1e-8
	adamBeta1, adamBeta2  = 0.9, 0.999
)

// denseOpt returns the MLPs' optimizer and schedule.
func (o *Options) denseOpt() (Optimizer, LRSchedule) {
	opt, lr := o.DenseOptimizer, o.DenseLR
	if opt == "" {
		opt = o.Optimizer
	}
	if lr.Base == 0 {
		lr = o.LR
	}
	return opt, lr
}

func (o *Options) spec() *dataset.Spec {
	switch {
	case o.Data.Train != nil:
		return o.Data.Train.Spec()
	case o.Data.Layout != nil:
		s := o.Data.Layout.Manifest.Spec
		return &s
	}
	return nil
}

// readsLayout reports whether training reads the layout (not raw data).
func (o *Options) readsLayout() bool {
	return o.Data.Layout != nil && (o.Data.Train == nil || o.Mode.NeedsLayout())
}

// Validate reports every problem with o at once.
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("train: "+format+": %w", append(a, ErrInvalidOptions)...))
	}
	var m Mode
	if err := m.UnmarshalText([]byte(o.Mode)); err != nil {
		errs = append(errs, err)
	}
	var opt Optimizer
	if err := opt.UnmarshalText([]byte(o.Optimizer)); err != nil {
		errs = append(errs, err)
	} else if opt == OptAdam {
		bad("optimizer adam updates the MLPs only; embedding rows take one of %v (set the dense optimizer to adam instead)", EmbeddingOptimizers)
	}
	if o.DenseOptimizer != "" {
		if err := opt.UnmarshalText([]byte(o.DenseOptimizer)); err != nil {
			errs = append(errs, err)
		}
	}
	if o.DenseLR.Base < 0 {
		bad("dense learning rate %v", o.DenseLR.Base)
	}
	if o.Model.DenseNorm != "" && !slices.Contains(DenseNorms, o.Model.DenseNorm) {
		bad("dense normalization %q (want one of %v)", o.Model.DenseNorm, DenseNorms)
	}
	if o.AdagradEps < 0 || o.AdagradEps > 1 {
		bad("Adagrad eps %v (want 0 for the default, or in (0, 1])", o.AdagradEps)
	}
	if o.WeightDecay < 0 || o.DenseWeightDecay < 0 {
		bad("negative weight decay %v or dense weight decay %v", o.WeightDecay, o.DenseWeightDecay)
	}
	switch {
	case o.Host == nil:
		bad("no host backend")
	case !o.Host.Space().IsHost():
		bad("the host backend %s computes in %s memory, not host memory", o.Host.Name(), o.Host.Space().Name())
	}
	if o.Mode.NeedsDevice() && o.Device == nil {
		bad("mode %s puts embeddings or MLPs on a device, but there is none (train with mode cpu, or give a device backend)", o.Mode)
	}
	if o.BatchSize <= 0 {
		bad("batch size %d", o.BatchSize)
	}
	if o.Steps < 0 || o.Epochs < 0 || o.Steps == 0 && o.Epochs == 0 {
		bad("set epochs > 0 or steps > 0 (got epochs %v, steps %d)", o.Epochs, o.Steps)
	}
	if o.LR.Base <= 0 {
		bad("learning rate %v", o.LR.Base)
	}
	if o.MicroBatches < 1 || o.MicroBatches > o.BatchSize {
		bad("micro-batches %d not in [1, batch size %d]", o.MicroBatches, o.BatchSize)
	}
	if o.Prefetch < 0 || o.EvalEvery < 0 || o.CheckpointEvery < 0 {
		bad("negative prefetch %d, eval-every %d or checkpoint-every %d", o.Prefetch, o.EvalEvery, o.CheckpointEvery)
	}
	if o.Mode == ModeFAE {
		if err := o.Scheduler.Validate(); err != nil {
			errs = append(errs, err)
		}
		if o.SchedulerEvalRows < 1 {
			bad("the Shuffle Scheduler's held-out rows: %d", o.SchedulerEvalRows)
		}
	}
	if o.Mode == ModeHybridHash {
		if err := o.HybridHash.Validate(); err != nil {
			errs = append(errs, err)
		}
		if o.HybridHash.DiskDir == "" && o.OutDir == "" {
			bad("mode hybridhash needs a disk directory or a run directory")
		}
	}
	switch {
	case o.Mode.NeedsLayout():
		if o.Data.Layout == nil {
			bad("mode %s needs a FAE layout (run picasso classify first)", o.Mode)
		}
		if o.Mode == ModeFAE && o.Data.Test == nil {
			bad("mode fae needs test data: the Shuffle Scheduler evaluates on its first %d rows", o.SchedulerEvalRows)
		}
	default:
		if o.Data.Train == nil && o.Data.Layout == nil {
			bad("mode %s: no training data", o.Mode)
		}
	}
	if o.readsLayout() {
		if bs := o.Data.Layout.Manifest.BatchSize; bs != o.BatchSize {
			bad("the layout was cut into mini-batches of %d, but the batch size is %d (classify again or set --batch-size %d)", bs, o.BatchSize, bs)
		}
	}
	if o.EarlyStop < 0 {
		bad("early stop %d < 0", o.EarlyStop)
	}
	if o.DecayFraction < 0 || o.DecayFraction > 1 {
		bad("decay fraction %v outside [0, 1]", o.DecayFraction)
	}
	if o.EarlyStop > 0 && o.Data.Valid == nil {
		bad("early stopping after %d evaluations needs validation data", o.EarlyStop)
	}
	if o.Resume && o.OutDir == "" {
		bad("resume needs the run directory")
	}
	if o.LogEvery < 0 || o.EvalCacheBytes < 0 {
		bad("negative LogEvery %d or EvalCacheBytes %d", o.LogEvery, o.EvalCacheBytes)
	}
	if spec := o.spec(); spec != nil {
		if err := ShapeOf(o.Model, spec).Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
