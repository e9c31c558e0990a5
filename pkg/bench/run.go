package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"

	"go.yaml.in/yaml/v3"

	"github.com/picasso-ctr/picasso/pkg/atomicfile"
	"github.com/picasso-ctr/picasso/pkg/compute"
	"github.com/picasso-ctr/picasso/pkg/train"
)

// Baseline is the mode speedups and byte ratios are measured against: the
// DLRM CPU-GPU hybrid.
const Baseline = "hybrid"

// RunsDir is the directory under the output that holds one run directory
// per variant and repeat: RunsDir/<variant>/r<repeat>.
const RunsDir = "runs"

// Options configures Run.
type Options struct {
	// Variants are trained in this order within every repeat. They must
	// share the seed, the batch size and the length of training.
	Variants []Variant
	// Data is what every variant trains and evaluates on; give it a FAE
	// layout (and no raw dataset) so that every mode trains on the same
	// mini-batches.
	Data train.Data
	// Host and Device are the backends of every run (Device nil when the
	// variants are all cpu); the caller closes them.
	Host, Device compute.Backend
	// OutDir receives RunsDir/<variant>/r<k>/ with each run's config.yaml,
	// metrics.jsonl and summary.json. An earlier RunsDir is removed.
	OutDir string
	// Repeat is the number of times every variant runs (default 1); repeat
	// r runs every variant once before repeat r+1 starts.
	Repeat int
	// LogEvery is the steps per training line of metrics.jsonl (0: train's
	// default).
	LogEvery int64
	// KeepCheckpoints keeps each run's checkpoint.bin (removed by default:
	// the bench does not resume runs and checkpoints hold the whole model).
	KeepCheckpoints bool
	// Bench, when set, receives a header and one Go benchmark line per run
	// as runs finish.
	Bench io.Writer
	// Procs is the -N suffix of benchmark names (default GOMAXPROCS).
	Procs int
	// Setup and Environment are copied into the report.
	Setup       Setup
	Environment Environment
	// OnStart and OnDone, when set, are called before and after each run;
	// Progress after every step; TrainLogf with the trainer's event lines.
	OnStart   func(RunInfo)
	OnDone    func(RunInfo, RunRecord)
	Progress  func(ri RunInfo, step, total int64)
	TrainLogf func(ri RunInfo, format string, args ...any)
}

// RunInfo identifies one run of the bench.
type RunInfo struct {
	// Index is the run's number (1-based) of Runs.
	Index, Runs int
	// Repeat is the repeat (1-based) of Repeats.
	Repeat, Repeats int
	Variant         Variant
	Dir             string
	// Steps is the number of steps the run trains.
	Steps int64
}

// RunRecord is the outcome of one run.
type RunRecord struct {
	Variant string `json:"variant"`
	Repeat  int    `json:"repeat"`
	Dir     string `json:"dir"`
	// Summary is the trainer's summary (summary.json).
	Summary *train.Summary `json:"-"`
	// TestEvalSeconds is the time of the test-set evaluations at the
	// checkpoints; TrainSeconds is the run's time without them (Summary.Seconds
	// minus TestEvalSeconds), the time speedups compare. The Shuffle
	// Scheduler's evaluations at swaps are part of training.
	TestEvalSeconds float64 `json:"test_eval_seconds"`
	TrainSeconds    float64 `json:"train_seconds"`
	// Rate is the Shuffle Scheduler's rate over the run (fae only).
	Rate []RatePoint `json:"-"`
}

// TrainSamplesPerS is the run's throughput without test evaluations.
func (r *RunRecord) TrainSamplesPerS() float64 {
	if r.TrainSeconds <= 0 {
		return math.NaN()
	}
	return float64(r.Summary.Samples) / r.TrainSeconds
}

// NsPerStep is the run's time per step without test evaluations.
func (r *RunRecord) NsPerStep() float64 {
	if r.Summary.Steps == 0 {
		return math.NaN()
	}
	return r.TrainSeconds * 1e9 / float64(r.Summary.Steps)
}

// Validate reports every problem with o at once.
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("bench: "+format+": %w", append(a, ErrInvalidOptions)...))
	}
	if len(o.Variants) == 0 {
		bad("no modes to run")
	}
	seen := map[string]bool{}
	for i, v := range o.Variants {
		if seen[v.Name] {
			bad("variant %s listed twice", v.Name)
		}
		seen[v.Name] = true
		if i == 0 {
			continue
		}
		a, b := o.Variants[0].Config.Train, v.Config.Train
		if a.Seed != b.Seed || a.BatchSize != b.BatchSize || a.Steps != b.Steps || a.Epochs != b.Epochs || a.EvalEvery != b.EvalEvery {
			bad("%s and %s differ in seed, batch size, steps, epochs or eval_every; every variant must train the same way", o.Variants[0].Name, v.Name)
		}
	}
	if o.Repeat < 0 {
		bad("repeat %d < 0", o.Repeat)
	}
	if o.Host == nil {
		bad("no host backend")
	}
	for _, v := range o.Variants {
		if v.Config.Train.Mode.NeedsDevice() && o.Device == nil {
			bad("variant %s needs a device backend", v.Name)
			break
		}
	}
	if o.Data.Layout == nil {
		bad("no FAE layout to train on")
	}
	if o.OutDir == "" {
		bad("no output directory")
	}
	return errors.Join(errs...)
}

// Run trains every variant Repeat times, interleaved, and returns the
// report. When ctx ends it stops after the current step and returns an
// error wrapping ctx's.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Repeat == 0 {
		opts.Repeat = 1
	}
	if opts.Procs <= 0 {
		opts.Procs = runtime.GOMAXPROCS(0)
	}
	runsDir := filepath.Join(opts.OutDir, RunsDir)
	if err := os.RemoveAll(runsDir); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if opts.Bench != nil {
		WriteBenchHeader(opts.Bench, opts.Environment)
	}
	var recs []RunRecord
	n := len(opts.Variants) * opts.Repeat
	for r := 1; r <= opts.Repeat; r++ {
		for i, v := range opts.Variants {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("bench: stopped before run %d of %d: %w", len(recs)+1, n, err)
			}
			ri := RunInfo{Index: (r-1)*len(opts.Variants) + i + 1, Runs: n, Repeat: r, Repeats: opts.Repeat, Variant: v,
				Dir: filepath.Join(runsDir, v.Name, fmt.Sprintf("r%d", r))}
			rec, err := runOne(ctx, &opts, &ri)
			if err != nil {
				return nil, err
			}
			recs = append(recs, *rec)
			if opts.Bench != nil {
				fmt.Fprintln(opts.Bench, BenchLine(v.Name, opts.Procs, rec))
			}
			if opts.OnDone != nil {
				opts.OnDone(ri, *rec)
			}
		}
	}
	return NewReport(opts.Setup, opts.Environment, opts.Variants, recs), nil
}

func runOne(ctx context.Context, opts *Options, ri *RunInfo) (*RunRecord, error) {
	v := ri.Variant
	if err := os.MkdirAll(ri.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if err := writeYAML(filepath.Join(ri.Dir, "config.yaml"), v.Config); err != nil {
		return nil, err
	}
	to := v.Config.TrainerOptions()
	to.Data, to.Host, to.Device, to.OutDir, to.LogEvery = opts.Data, opts.Host, opts.Device, ri.Dir, opts.LogEvery
	// The callbacks see ri once its Steps is known.
	if opts.TrainLogf != nil {
		to.Logf = func(format string, a ...any) { opts.TrainLogf(*ri, format, a...) }
	}
	if opts.Progress != nil {
		to.Progress = func(step, total int64) { opts.Progress(*ri, step, total) }
	}
	tr, err := train.New(ctx, to)
	if err != nil {
		return nil, fmt.Errorf("bench: %s (repeat %d): %w", v.Name, ri.Repeat, err)
	}
	defer tr.Close()
	ri.Steps = tr.Total()
	if opts.OnStart != nil {
		opts.OnStart(*ri)
	}
	sum, err := tr.Run(ctx)
	if err != nil {
		return nil, fmt.Errorf("bench: run %d of %d (%s, repeat %d): %w", ri.Index, ri.Runs, v.Name, ri.Repeat, err)
	}
	rec := &RunRecord{Variant: v.Name, Repeat: ri.Repeat, Dir: ri.Dir, Summary: sum}
	for _, e := range sum.Evals {
		rec.TestEvalSeconds += e.Seconds
	}
	rec.TrainSeconds = sum.Seconds - rec.TestEvalSeconds
	if rec.Rate, err = ReadRate(filepath.Join(ri.Dir, train.MetricsFile)); err != nil {
		return nil, err
	}
	if !opts.KeepCheckpoints {
		if err := os.Remove(filepath.Join(ri.Dir, train.CheckpointFile)); err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("bench: %w", err)
		}
		// hybridhash's saved caches and disk tier go with the checkpoint.
		extra, _ := filepath.Glob(filepath.Join(ri.Dir, "hybridhash-*"))
		for _, d := range extra {
			if err := os.RemoveAll(d); err != nil {
				return nil, fmt.Errorf("bench: %w", err)
			}
		}
	}
	return rec, nil
}

func writeYAML(path string, v any) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		enc := yaml.NewEncoder(w)
		enc.SetIndent(2)
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("bench: %s: %w", path, err)
		}
		return enc.Close()
	})
}

// RatePoint is the Shuffle Scheduler's rate from a step on.
type RatePoint struct {
	Step int64   `json:"step"`
	Rate float64 `json:"rate"`
	// EvalLoss is the held-out loss the decision was made on (null at the
	// start), Action the decision ("start", "first", "halve", "double",
	// "keep").
	EvalLoss train.Number `json:"eval_loss"`
	Action   string       `json:"action"`
}

// ReadRate reads the scheduler's rate over a run from its metrics.jsonl:
// the rate at the start and after every swap's decision. It returns nil for
// a run without a scheduler.
func ReadRate(path string) ([]RatePoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer f.Close()
	var pts []RatePoint
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		var rec struct {
			Kind     string          `json:"kind"`
			Step     int64           `json:"step"`
			Decision *train.Decision `json:"decision"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("bench: %s line %d: %w", path, line, err)
		}
		d := rec.Decision
		if rec.Kind != "swap" || d == nil {
			continue
		}
		if len(pts) == 0 {
			pts = append(pts, RatePoint{Step: 0, Rate: d.RateBefore, EvalLoss: train.Number(math.NaN()), Action: "start"})
		}
		pts = append(pts, RatePoint{Step: rec.Step, Rate: d.RateAfter, EvalLoss: d.Loss, Action: d.Action})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("bench: %s: %w", path, err)
	}
	return pts, nil
}
