package train

import (
	"errors"
	"fmt"

	"github.com/picasso-ctr/picasso/pkg/compute"
	"github.com/picasso-ctr/picasso/pkg/config"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/layout"
)

// Options configures a Trainer.
type Options struct {
	// Config supplies the model, train and scheduler sections. Its data
	// section is not read: the columns come from Data.
	Config config.Config
	// Data is what to train and evaluate on.
	Data Data
	// Backend runs the kernels; the caller owns it (and closes it).
	Backend compute.Backend
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
	// interleaved order, hot slots mapped back to table IDs) when Train is
	// nil, so that every mode can train on the same mini-batches.
	Layout *layout.Layout
	// Test is the test set: the trainer reports log loss, accuracy and AUC
	// on it, and the Shuffle Scheduler evaluates on its first
	// Scheduler.EvalRows rows. Optional for the modes other than fae.
	Test *dataset.Dataset
}

// Defaults for zero Options fields.
const (
	DefaultLogEvery       = 100
	DefaultEvalCacheBytes = 256 << 20
	adagradEps            = 1e-8
)

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

// Validate reports every problem with o at once.
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("train: "+format+": %w", append(a, ErrInvalidOptions)...))
	}
	c := o.Config
	if err := c.ValidateModel(); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", err, ErrInvalidOptions))
	}
	mode := c.Train.Mode
	if o.Backend == nil {
		bad("no compute backend")
	}
	switch mode {
	case ModeFAE, ModeArtifact:
		if o.Data.Layout == nil {
			bad("mode %s needs a FAE layout (run picasso classify first)", mode)
		}
		if mode == ModeFAE && o.Data.Test == nil {
			bad("mode fae needs test data: the Shuffle Scheduler evaluates on its first %d rows", c.Scheduler.EvalRows)
		}
	default:
		if o.Data.Train == nil && o.Data.Layout == nil {
			bad("mode %s: no training data", mode)
		}
	}
	if l := o.Data.Layout; l != nil && (o.Data.Train == nil || mode == ModeFAE || mode == ModeArtifact) {
		if b := l.Manifest.BatchSize; b != c.Train.BatchSize {
			bad("the layout was cut into mini-batches of %d, but train.batch_size is %d (classify again or set --batch-size %d)", b, c.Train.BatchSize, b)
		}
	}
	if o.Resume && o.OutDir == "" {
		bad("resume needs the run directory")
	}
	if o.LogEvery < 0 || o.EvalCacheBytes < 0 {
		bad("negative LogEvery %d or EvalCacheBytes %d", o.LogEvery, o.EvalCacheBytes)
	}
	if spec := o.spec(); spec != nil {
		if err := ShapeOf(c.Model, spec).Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
