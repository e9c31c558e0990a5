package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/picasso-ctr/picasso/pkg/atomicfile"
	"github.com/picasso-ctr/picasso/pkg/bench"
	"github.com/picasso-ctr/picasso/pkg/classify"
	"github.com/picasso-ctr/picasso/pkg/config"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/layout"
	"github.com/picasso-ctr/picasso/pkg/profile"
	"github.com/picasso-ctr/picasso/pkg/train"
)

// Bench defaults.
const (
	// Without --steps or --epochs, a run is one epoch when an epoch has at
	// most benchAutoEpoch mini-batches (fae's phases then run as they
	// would in real training), else defaultBenchSteps steps.
	benchAutoEpoch       = 1000
	defaultBenchSteps    = 300
	defaultBenchRepeat   = 3
	defaultBenchTestRows = 50000
	// benchEvalPoints is the number of test evaluations per run when
	// --eval-every is not given: every steps/benchEvalPoints steps.
	benchEvalPoints = 4
	// benchFile receives the Go benchmark lines printed on stdout.
	benchFile = "bench.txt"
)

var (
	defaultBenchModes   = []string{"fae", "hybrid", "cpu", "artifact", "hybridhash"}
	defaultBenchAblate  = []string{"packing", "interleaving"}
	defaultAblatedModes = []string{"fae"}
)

type benchOptions struct {
	data, out, prep string
	modes           []string
	ablate          []string
	ablateModes     []string
	steps           int64
	epochs          float64
	repeat          int
	testRows        int64
	logEvery        int64
	workers         int
	keepCheckpoints bool
	verbose         bool
	stages          bool
	stagesRates     []float64
	stagesConvert   []string
	asJSON          bool
}

// benchBindings ties bench's flags to configuration keys.
var benchBindings = []flagBinding{
	{"batch-size", "train.batch_size"}, {"seed", "train.seed"}, {"eval-every", "train.eval_every"},
	{"blas", "train.blas"}, {"threads", "train.threads"}, {"device", "train.device"}, {"tf32", "train.tf32"}, {"budget", "fae.budget"},
	{"hh-device-budget", "hybridhash.device_budget"}, {"hh-host-budget", "hybridhash.host_budget"},
	{"hh-warmup", "hybridhash.warmup_iters"}, {"hh-flush-iters", "hybridhash.flush_iters"},
}

func newBenchCmd(g *globals) *cobra.Command {
	opts := &benchOptions{}
	def := config.Default()
	cmd := &cobra.Command{
		Use:   "bench --data D --out R [--modes fae,hybrid,cpu,artifact,hybridhash] [--ablate packing,interleaving] [--steps N | --epochs E] [--repeat K]",
		Short: "Train the placement modes side by side on the same data and report speed, bytes moved and accuracy",
		Long: `bench trains each placement mode (see 'picasso train --help') on the same
mini-batches, from the same seed, for the same number of steps, one run after
another, and writes a report comparing them.

Preparation: bench profiles and classifies --data itself, into --prep
(default R/prep): profile.json, profile.counts, the FAE layout fae/ and, with
--test-rows, a copy of the first rows of the test split. prep.json records a
fingerprint of the data (file names, sizes, row-group row counts) and of the
settings each output was made with; a later bench reuses every output that is
still up to date and redoes the rest. Every mode, cpu and hybrid included,
trains on the layout's mini-batches, so all modes see the same data; fae and
artifact run them in hot/cold phases, the others in one seeded interleaved
order. hybridhash ignores the profile: its counter finds the hot rows while it
trains, within --hh-device-budget, and its cold rows live in a host tier of
--hh-host-budget and a disk tier in the run directory; the report adds its hit
ratios and disk traffic.

Ablations (--ablate) rerun the modes named by --ablate-modes with one of
PICASSO's optimisations turned off, as variants named MODE-no-ABLATION:
  packing       train.packing=false: each table looked up and updated on its
                own instead of one packed operation over all tables
  interleaving  train.prefetch=0: mini-batches read in line with compute
                instead of ahead on a background goroutine
An ablation whose configuration key this build lacks is an error, never
silently skipped. --ablate none runs no ablations.

Length: each run trains --steps N mini-batches or --epochs E passes over the
layout. Without either flag, train.steps from the config or environment is
used when set, else one epoch when an epoch has at most 1000 mini-batches,
else 300 steps (train.epochs is not used: an epoch of a large dataset is too
long for a bench). fae's phases follow the data's epochs, so a run much
shorter than an epoch sees mostly the class of its first phases; where the
layout has cold mini-batches, measure a few --steps first and then bench
--epochs 1 if the time allows.
The test set is evaluated every --eval-every steps (default a quarter of the
run) and at the end.

Repeats: --repeat K runs every variant K times, interleaved (repeat r runs all
variants before repeat r+1), so that speedups compare runs made under the same
machine load; the report gives medians and min-max ranges. Training is
deterministic: bytes moved and test metrics must be identical in every
repeat, and the report says whether they were.

Output, in R: report.md (tables, conclusions, charts), report.json (per
variant the fields of train's summary.json for its median run, plus
speedup_vs_hybrid, bytes_ratio_vs_hybrid, per-repeat runs, scheduler rate
history; environment: CPU, cores, GPU, versions, command), throughput.svg,
phases.svg, bytes.svg, auc.svg, rate.svg (fae's Shuffle Scheduler), bench.txt
and runs/VARIANT/rK/ (config.yaml, metrics.jsonl, summary.json; checkpoints are
deleted unless --keep-checkpoints). Go benchmark lines go to stdout (and
bench.txt) as runs finish, for benchstat:
  BenchmarkTrain/mode=fae-2   300   41234567 ns/op   24834.1 samples/s ...
where N is the steps and ns/op the time per step without test evaluations.
Progress goes to stderr. Ctrl-C stops after the current step; no report is
written, and the preparation in --prep is kept for the next bench.

Data stages (--stages): instead of training, time the data stages on --data,
alternated round by round (--repeat rounds, each running every stage once):
profile at each --stages-rates percent (the counts file written each time),
classify with the hot set of the 5% profile, and, given --stages-convert
files (Criteo text), convert with hashed IDs. Writes R/stages.md (every
round's seconds, the median, rows/s at the median) and R/stages.json, and
prints the table; outputs go to R/stages-scratch and are removed.`,
		Example: `  picasso bench --data demo/data --config configs/demo.yaml --out demo/bench
  picasso bench --data kaggle --config configs/rmc2-kaggle.yaml --out bench-kaggle --steps 500 --repeat 3
  picasso bench --data data --out b --modes fae,hybrid --ablate none --epochs 1 --repeat 1
  picasso bench --data kaggle --out stages --stages --stages-convert criteo.tsv
  benchstat old/bench.txt new/bench.txt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.data == "" || opts.out == "" {
				return usageErrorf("bench: --data and --out are required")
			}
			if cmd.Flags().Changed("steps") && cmd.Flags().Changed("epochs") {
				return usageErrorf("bench: set --steps or --epochs, not both")
			}
			if opts.steps <= 0 && cmd.Flags().Changed("steps") {
				return usageErrorf("bench: --steps must be > 0, got %d", opts.steps)
			}
			if opts.epochs <= 0 && cmd.Flags().Changed("epochs") {
				return usageErrorf("bench: --epochs must be > 0, got %v", opts.epochs)
			}
			if opts.repeat < 1 {
				return usageErrorf("bench: --repeat must be >= 1, got %d", opts.repeat)
			}
			if opts.testRows < 0 || opts.logEvery < 0 {
				return usageErrorf("bench: --test-rows and --log-every must be >= 0")
			}
			if isLayout(opts.data) {
				return usageErrorf("bench: --data %s is a classify layout; pass the dataset it was made from (bench profiles and classifies it into --prep)", opts.data)
			}
			if opts.stages {
				return runBenchStages(cmd, g, opts)
			}
			err := runBench(cmd, g, opts)
			if errors.Is(err, bench.ErrInvalidOptions) {
				return fmt.Errorf("%w: %w", errUsage, err)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.data, "data", "", "dataset directory (with dataset.yaml) or Parquet path (required); it needs a test split")
	f.StringVar(&opts.out, "out", "", "report directory to write (required)")
	f.StringVar(&opts.prep, "prep", "", "where profile and classify outputs are kept and reused (default OUT/prep)")
	f.StringSliceVar(&opts.modes, "modes", defaultBenchModes, "placement modes to run, in order: fae, hybrid, cpu, artifact, device, hybridhash")
	f.StringSliceVar(&opts.ablate, "ablate", defaultBenchAblate, "optimisations to turn off in extra runs: packing, interleaving, or none")
	f.StringSliceVar(&opts.ablateModes, "ablate-modes", defaultAblatedModes, "modes the ablations are applied to")
	f.Int64Var(&opts.steps, "steps", 0, fmt.Sprintf("mini-batches per run (default: one epoch when it has at most %d mini-batches, else %d)", benchAutoEpoch, defaultBenchSteps))
	f.Float64Var(&opts.epochs, "epochs", 0, "passes over the layout per run, instead of --steps")
	f.IntVar(&opts.repeat, "repeat", defaultBenchRepeat, "runs of every variant, interleaved; the report gives medians and min-max")
	f.Int64Var(&opts.testRows, "test-rows", defaultBenchTestRows, "evaluate on the first N rows of the test split (0: all of it)")
	f.Int64("eval-every", def.Train.EvalEvery, "evaluate on the test set every N steps (default: a quarter of the run)")
	f.Int("batch-size", def.Train.BatchSize, "inputs per mini-batch (the layout is cut to this size)")
	f.Uint64("seed", def.Train.Seed, "seed of the profile sample, the layout's shuffle, the initialisation and the data order")
	f.String("blas", string(def.Train.BLAS), "GEMM: auto (OpenBLAS if it loads, else gonum), openblas, gonum or ref")
	f.Int("threads", def.Train.Threads, "compute threads (0: all cores)")
	f.String("device", string(def.Train.Device), "device of the modes other than cpu: auto (a GPU if one is found, else emulated), emulated, cuda, cuda:N")
	f.Bool("tf32", def.Train.TF32, "let a GPU run float32 GEMMs on tensor cores at TF32 precision")
	budget := def.FAE.Budget
	f.Var(&budget, "budget", "device memory for hot rows and their optimizer state (L) when profiling, e.g. 64MiB; unset: the config's fae.budget")
	devB, hostB := def.HybridHash.DeviceBudget, def.HybridHash.HostBudget
	f.Var(&devB, "hh-device-budget", "hybridhash: device memory for the hot store (hot rows and state, default rows, one mini-batch's misses)")
	f.Var(&hostB, "hh-host-budget", "hybridhash: host memory for the host tier; rows beyond it spill to the run's disk tier")
	f.Int64("hh-warmup", def.HybridHash.WarmupIters, "hybridhash: warm-up steps before the first hot set")
	f.Int64("hh-flush-iters", def.HybridHash.FlushIters, "hybridhash: steps between refreshes of the hot set")
	f.IntVar(&opts.workers, "workers", 0, "parallel readers for profile and classify (0: one per core)")
	f.Int64Var(&opts.logEvery, "log-every", train.DefaultLogEvery, "steps per training line in each run's metrics.jsonl")
	f.BoolVar(&opts.keepCheckpoints, "keep-checkpoints", false, "keep each run's checkpoint.bin (the whole model; deleted by default)")
	f.BoolVarP(&opts.verbose, "verbose", "v", false, "print each run's evaluations and scheduler decisions on stderr")
	f.BoolVar(&opts.stages, "stages", false, "time the data stages (profile, classify, convert) instead of training; see Data stages above")
	f.Float64SliceVar(&opts.stagesRates, "stages-rates", []float64{1, 5, 20, 100}, "with --stages, profile sample rates to time, in percent")
	f.StringArrayVar(&opts.stagesConvert, "stages-convert", nil, "with --stages, Criteo text files to time convert on (hashed IDs); may repeat; none: convert is not timed")
	f.BoolVar(&opts.asJSON, "json", false, "print the report (report.json; with --stages, stages.json) on stdout instead of the Go benchmark lines or the table")
	return cmd
}

func runBench(cmd *cobra.Command, g *globals, opts *benchOptions) error {
	ctx := cmd.Context()
	started := time.Now()
	c, err := g.loadConfig(cmd, loadOptions{dataDir: opts.data, bindings: benchBindings, needData: true})
	if err != nil {
		return err
	}
	variants, ablations, err := benchVariants(c, opts)
	if err != nil {
		return err
	}
	if opts.prep == "" {
		opts.prep = filepath.Join(opts.out, "prep")
	}
	logf := func(format string, a ...any) {
		if !g.quiet {
			fmt.Fprintf(g.stderr, "bench: "+format+"\n", a...)
		}
	}

	// Profile and classify when needed.
	ds, err := dataset.Open(&c.Data, c.Data.Train)
	if err != nil {
		return err
	}
	var test *dataset.Dataset
	if c.Data.Test != "" {
		if test, err = dataset.Open(&c.Data, c.Data.Test); err != nil {
			return err
		}
	}
	var bar *progress
	stage := ""
	prepStart := time.Now()
	prep, err := bench.Prepare(ctx, ds, bench.PrepOptions{
		Dir:     opts.prep,
		Profile: profileLibOptions(c, &profileOptions{workers: opts.workers}),
		Classify: classify.Options{BatchSize: c.Train.BatchSize, Workers: opts.workers, Seed: c.Train.Seed,
			EmbeddingDim: c.Model.RowDim(), Version: Version},
		Test: test, TestRows: opts.testRows, Logf: logf,
		Progress: func(s string, done, total int64) {
			if s != stage {
				bar.finish()
				bar, stage = g.newProgress(total, s, false), s
			}
			bar.set(done, total)
		},
	})
	bar.finish()
	if err != nil {
		return budgetHint(err)
	}
	prepSeconds := time.Since(prepStart).Seconds()
	m := prep.Layout.Manifest
	if m.BatchSize != c.Train.BatchSize {
		return fmt.Errorf("bench: layout %s has mini-batches of %d, want %d: %w", prep.LayoutDir, m.BatchSize, c.Train.BatchSize, layout.ErrInvalid)
	}

	// Length of every run.
	perEpoch := int64(m.HotBatches + m.ColdBatches)
	if perEpoch == 0 {
		return fmt.Errorf("bench: layout %s has no mini-batches: %w", prep.LayoutDir, dataset.ErrNoData)
	}
	steps, epochs := c.Train.Steps, 0.0
	switch {
	case cmd.Flags().Changed("epochs"):
		steps, epochs = int64(math.Ceil(opts.epochs*float64(perEpoch))), opts.epochs
	case cmd.Flags().Changed("steps"):
		steps = opts.steps
	case steps <= 0 && perEpoch <= benchAutoEpoch:
		steps = perEpoch
	case steps <= 0:
		steps = defaultBenchSteps
	}
	evalEvery := c.Train.EvalEvery
	if evalEvery <= 0 && !cmd.Flags().Changed("eval-every") {
		evalEvery = (steps + benchEvalPoints - 1) / benchEvalPoints
	}
	for i := range variants {
		t := &variants[i].Config.Train
		t.Steps, t.Epochs, t.EvalEvery = steps, max(epochs, c.Train.Epochs), evalEvery
		if epochs > 0 {
			t.Steps = 0
		}
	}

	needDevice := false
	for _, v := range variants {
		needDevice = needDevice || v.Config.Train.Mode.NeedsDevice()
	}
	bes, err := g.newBackends("bench", c, needDevice)
	if err != nil {
		return err
	}
	defer bes.close()

	env := bench.DetectEnvironment(Version, benchCommandLine(cmd))
	env.Backend = bes.host.Name()
	if bes.dev != nil {
		env.Device = bes.dev.Name()
	}
	var modes []string
	for _, v := range variants {
		if v.Ablation == "" {
			modes = append(modes, v.Name)
		}
	}
	setup := bench.Setup{
		Data: absPath(opts.data), Rows: ds.Rows(), Prep: absPath(opts.prep), Reused: prep.Reused,
		Profile: absPath(prep.ProfilePath), Layout: absPath(prep.LayoutDir),
		HotInputShare: m.HotInputShare, HotBatches: m.HotBatches, ColdBatches: m.ColdBatches, HotTableRows: m.HotTableRows,
		Test: absPath(prep.TestPath), TestRows: prep.Test.Rows(), TestRowsTotal: prep.TestRowsTotal,
		Steps: steps, StepsPerEpoch: perEpoch, Epochs: float64(steps) / float64(perEpoch),
		BatchSize: c.Train.BatchSize, Seed: c.Train.Seed, EvalEvery: evalEvery, Repeat: opts.repeat,
		Modes: modes, Ablations: ablations, AblatedModes: opts.ablateModes, Baseline: bench.Baseline,
		PrepSeconds: prepSeconds, Started: started.UTC().Truncate(time.Second),
	}
	if len(ablations) == 0 {
		setup.AblatedModes = nil
	}
	if steps < perEpoch && !g.quiet {
		fmt.Fprintf(g.stderr, "bench: note: %d steps is %.0f%% of an epoch (%d mini-batches); fae's hot/cold phases follow the epoch, so a short run sees mostly its first phases\n",
			steps, 100*float64(steps)/float64(perEpoch), perEpoch)
	}
	logf("%d variants × %d repeats of %d steps on %s (%.1f%% of inputs hot)", len(variants), opts.repeat, steps, setup.Layout, 100*m.HotInputShare)
	warnShare(g, "bench", m.HotInputShare)

	var benchOut bytes.Buffer
	if err := os.MkdirAll(opts.out, 0o755); err != nil {
		return err
	}
	var runBar *progress
	batch := int64(c.Train.BatchSize)
	bo := bench.Options{
		Variants: variants, Data: train.Data{Layout: prep.Layout, Test: prep.Test},
		Host: bes.host, Device: bes.dev, OutDir: opts.out, Repeat: opts.repeat, LogEvery: opts.logEvery,
		KeepCheckpoints: opts.keepCheckpoints, Bench: benchSink(g, opts, &benchOut),
		Setup: setup, Environment: env,
		OnStart: func(ri bench.RunInfo) {
			v := ri.Variant
			what := v.Name
			if v.Setting != "" {
				what += " (" + v.Setting + ")"
			}
			logf("run %d/%d (repeat %d/%d): %s, %d steps", ri.Index, ri.Runs, ri.Repeat, ri.Repeats, what, ri.Steps)
			if !opts.verbose {
				runBar = g.newProgress(ri.Steps*batch, fmt.Sprintf("%s r%d", v.Name, ri.Repeat), false)
			}
		},
		Progress: func(_ bench.RunInfo, step, total int64) { runBar.set(step*batch, total*batch) },
		OnDone: func(ri bench.RunInfo, r bench.RunRecord) {
			runBar.finish()
			runBar = nil
			s := r.Summary
			logf("%s r%d: %.0f samples/s, %s moved, test AUC %s", ri.Variant.Name, ri.Repeat, r.TrainSamplesPerS(),
				profile.FormatBytes(float64(s.BytesH2D+s.BytesD2H)), formatNumber(s.TestAUC, "%.5f"))
		},
	}
	if opts.verbose {
		bo.TrainLogf = func(ri bench.RunInfo, format string, a ...any) {
			fmt.Fprintf(g.stderr, "bench: %s r%d: "+format+"\n", append([]any{ri.Variant.Name, ri.Repeat}, a...)...)
		}
	}
	rep, err := bench.Run(ctx, bo)
	runBar.finish()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w; no report written (profile and classify outputs in %s are kept for the next bench)", err, opts.prep)
		}
		return err
	}
	if err := atomicfile.WriteBytes(filepath.Join(opts.out, benchFile), benchOut.Bytes()); err != nil {
		return err
	}
	paths, err := rep.WriteFiles(opts.out)
	if err != nil {
		return err
	}
	if opts.asJSON {
		if err := printJSON(g.stdout, rep); err != nil {
			return err
		}
	}
	if !g.quiet {
		for _, line := range rep.Conclusions() {
			fmt.Fprintf(g.stderr, "bench: %s\n", strings.ReplaceAll(line, "**", ""))
		}
		pc := rep.PhaseCheck
		fmt.Fprintf(g.stderr, "bench: phases add up to the measured time within %.1f%% at worst (%s)\n", 100*pc.MaxAbsOtherShare, pc.WorstRun)
		if !rep.Deterministic {
			fmt.Fprintf(g.stderr, "bench: warning: repeats differ in bytes moved or test metrics; see %s\n", filepath.Join(opts.out, bench.ReportMarkdown))
		}
		fmt.Fprintf(g.stderr, "bench: wrote %s and %s\n", strings.Join(paths, ", "), filepath.Join(opts.out, benchFile))
	}
	return nil
}

// benchSink is where the Go benchmark lines go: bench.txt, and stdout
// unless stdout is for --json.
func benchSink(g *globals, opts *benchOptions, file io.Writer) io.Writer {
	if opts.asJSON {
		return file
	}
	return io.MultiWriter(g.stdout, file)
}

// benchVariants builds the variants to run from the modes and ablations,
// and returns the ablations' names.
func benchVariants(c *config.Config, opts *benchOptions) ([]bench.Variant, []string, error) {
	var variants []bench.Variant
	seen := map[train.Mode]bool{}
	for _, name := range opts.modes {
		var mode train.Mode
		if err := mode.UnmarshalText([]byte(strings.TrimSpace(name))); err != nil {
			return nil, nil, usageErrorf("bench: --modes: unknown mode %q (want one of %v)", strings.TrimSpace(name), train.Modes)
		}
		if seen[mode] {
			return nil, nil, usageErrorf("bench: --modes: %s listed twice", mode)
		}
		seen[mode] = true
		vc := *c
		vc.Train.Mode = mode
		variants = append(variants, bench.Variant{Name: mode.String(), Config: vc})
	}
	if len(variants) == 0 {
		return nil, nil, usageErrorf("bench: --modes is empty")
	}
	var names []string
	if len(opts.ablate) == 1 && strings.TrimSpace(opts.ablate[0]) == "none" || len(opts.ablate) == 0 {
		return variants, nil, nil
	}
	for _, am := range opts.ablateModes {
		if !seen[train.Mode(strings.TrimSpace(am))] {
			return nil, nil, usageErrorf("bench: --ablate-modes: %s is not among --modes %s", am, strings.Join(opts.modes, ","))
		}
	}
	for _, name := range opts.ablate {
		a, err := bench.AblationNamed(strings.TrimSpace(name))
		if err != nil {
			return nil, nil, err
		}
		names = append(names, a.Name)
		for _, am := range opts.ablateModes {
			base := *c
			base.Train.Mode = train.Mode(strings.TrimSpace(am))
			v, err := a.Apply(base)
			if err != nil {
				return nil, nil, err
			}
			variants = append(variants, v)
		}
	}
	return variants, names, nil
}

// benchCommandLine reconstructs the command line from the flags that were
// set (in name order; repeated flags in their order), after the PICASSO_*
// environment variables that affect the configuration.
func benchCommandLine(cmd *cobra.Command) string {
	var parts []string
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PICASSO_") {
			env = append(env, shellQuote(kv))
		}
	}
	sort.Strings(env)
	parts = append(parts, env...)
	parts = append(parts, strings.Fields(cmd.CommandPath())...)
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if sv, ok := f.Value.(pflag.SliceValue); ok && f.Value.Type() == "stringArray" {
			for _, v := range sv.GetSlice() {
				parts = append(parts, "--"+f.Name, shellQuote(v))
			}
			return
		}
		v := f.Value.String()
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			v = strings.Join(sv.GetSlice(), ",")
		}
		if f.Value.Type() == "bool" && v == "true" {
			parts = append(parts, "--"+f.Name)
			return
		}
		parts = append(parts, "--"+f.Name, shellQuote(v))
	})
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=,:+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func formatNumber(v train.Number, format string) string {
	if math.IsNaN(float64(v)) {
		return "n/a"
	}
	return fmt.Sprintf(format, float64(v))
}
