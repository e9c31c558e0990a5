package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/picasso-ctr/picasso/pkg/atomicfile"
	"github.com/picasso-ctr/picasso/pkg/config"
	"github.com/picasso-ctr/picasso/pkg/convert"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/layout"
	"github.com/picasso-ctr/picasso/pkg/profile"
	"github.com/picasso-ctr/picasso/pkg/train"
)

type trainOptions struct {
	data     string
	layout   string
	out      string
	resume   string
	logEvery int64
	verbose  bool
	asJSON   bool
	force    bool
}

// runArgsFile records where a run's data came from, so --resume can find it.
const runArgsFile = "train-args.json"

// runArgs is the content of runArgsFile.
type runArgs struct {
	Data   string `json:"data"`
	Layout string `json:"layout,omitempty"`
}

func newTrainCmd(g *globals) *cobra.Command {
	opts := &trainOptions{}
	def := config.Default()
	cmd := &cobra.Command{
		Use:   "train --data D --out RUN [--mode fae|hybrid|device|cpu|artifact|hybridhash]",
		Short: "Train a CTR model with hot embedding rows on the device and cold rows in host memory",
		Long: `train trains a click-through-rate model (one embedding bag per sparse feature,
binary cross-entropy) chosen by model.arch (--arch):

  dcn       DCN-v2 (the default): model.cross_layers full-rank cross layers
            over the dense features and the pooled embeddings, stacked before
            the deep MLP (model.deep_mlp)
  dlrm      DLRM: bottom MLP over the dense features, dot interaction with the
            embeddings, top MLP (model.bottom_mlp, model.top_mlp)
  wdl       Wide&Deep: a linear part over the sparse IDs beside the deep MLP
  deepfm    DeepFM: a factorization machine beside the deep MLP

The default recipe is DCN-v2 with row-wise Adagrad (0.1, eps 1e-3: a row's step
is lr*g/(sqrt(acc)+eps), so a larger eps damps the first steps of rows seen a
few times) on the embeddings and Adam (0.001) on the MLPs at batch 1024, the
dense features standardized with
the training rows' mean and standard deviation (model.dense_norm, computed in
one pass when training starts and saved with the model): on the kaggle preset
(scale 0.05, 5M rows) one epoch reaches within 0.02 of the true model's AUC,
where DLRM with plain SGD stays 0.05 short (README, "Models and recipes").
configs/ holds a recipe per model.

It trains in one of the placement modes:

  fae       hot rows (packed into one table) on the device, all rows in host
            memory; hot mini-batches run on the device, cold ones look up in
            host memory; hot rows are synchronised at each hot/cold swap, and
            the Shuffle Scheduler adapts how often swaps happen (needs a layout
            from 'picasso classify')
  artifact  like fae, in the FAE artifact's order: each epoch all cold
            mini-batches, then all hot ones
  hybrid    embeddings in host memory, MLPs on the device (the DLRM CPU-GPU
            baseline)
  device    everything on the device
  cpu       everything in host memory
  hybridhash
            PICASSO's HybridHash, on raw data with no profile or layout: a
            frequency counter picks the hottest rows, which live on the
            device (--hh-device-budget); the others live in host memory
            (--hh-host-budget) and spill to a disk tier (a log of rows);
            new IDs get rows as they arrive (after --hh-admit-after
            sightings)

Without a GPU the device is emulated in host memory, and every byte that would
cross the host/device link is counted. Every mode trains the same model from
the same seed.

--data is a dataset directory (with the dataset.yaml that gen and convert
write) or a layout written by 'picasso classify' (it has a manifest.json).
fae and artifact read the layout given by --layout, or --data when it is one,
or DIR/fae beside the data; the other modes read the raw data, or the layout's
mini-batches when --data is a layout, so that every mode can train on exactly
the same mini-batches. The test split (the dataset's, or the layout's copy) is
evaluated every --eval-every steps and at the end; so is the validation split
(--valid or data.valid) when there is one: the model with the best validation
log loss is kept as RUN/best.bin, and --early-stop N ends the run after N
validations in a row without a better one.

RUN receives config.yaml (the effective configuration), metrics.jsonl (loss,
learning rate, samples/s, bytes moved and scheduler rate per logging interval;
scheduler decisions; test log loss, accuracy and AUC at each evaluation),
summary.json and checkpoint.bin. Ctrl-C stops at the end of the current step,
writes a checkpoint and exits; --resume RUN continues from it and reaches the
same result as an uninterrupted run.`,
		Example: `  picasso train --data data/fae --out run                  # fae on a classify layout
  picasso train --data data --mode hybrid --out run-hybrid --epochs 2
  picasso train --config data/dataset.yaml --config configs/rmc2-kaggle.yaml --data data --mode cpu --steps 500 --out run-cpu
  picasso train --resume run --steps 2000                  # continue run to step 2000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.resume != "" {
				if opts.out != "" && filepath.Clean(opts.out) != filepath.Clean(opts.resume) {
					return usageErrorf("train: --out %s and --resume %s differ; a resumed run writes to its own directory", opts.out, opts.resume)
				}
				opts.out = opts.resume
			}
			if opts.out == "" {
				return usageErrorf("train: --out is required")
			}
			if cmd.Flags().Changed("epochs") && cmd.Flags().Changed("steps") {
				return usageErrorf("train: set --epochs or --steps, not both")
			}
			if opts.logEvery < 0 {
				return usageErrorf("train: --log-every must be >= 0")
			}
			return runTrain(cmd, g, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.data, "data", "", "dataset directory (with dataset.yaml), Parquet path, or classify layout directory")
	f.StringVar(&opts.layout, "layout", "", "classify layout for fae and artifact (default: --data when it is a layout, else DATA/fae)")
	f.StringVar(&opts.out, "out", "", "run directory to write (required unless --resume)")
	f.StringVar(&opts.resume, "resume", "", "continue the run in this directory from its checkpoint (its config.yaml is read first)")
	f.BoolVar(&opts.force, "force", false, "replace a run already at --out (without it, an existing run is an error)")
	f.String("mode", string(def.Train.Mode), "placement: fae, artifact, hybrid, device, cpu or hybridhash")
	f.Int("batch-size", def.Train.BatchSize, "inputs per mini-batch (default with a layout: the layout's, which fae and artifact require)")
	f.Float64("epochs", def.Train.Epochs, "passes over the training data (fractions allowed)")
	f.Int64("steps", def.Train.Steps, "train this many mini-batches instead of --epochs (0: use epochs)")
	f.Int64("eval-every", def.Train.EvalEvery, "evaluate on the test set every N steps (0: only at the end)")
	f.Int64("checkpoint-every", def.Train.CheckpointEvery, "write a checkpoint every N steps (0: only at the end and on interrupt)")
	f.Uint64("seed", def.Train.Seed, "seed of the initialisation and of the data order")
	f.Int("micro-batches", def.Train.MicroBatches, "split each mini-batch into M micro-batches (gradients accumulated, one update)")
	f.Int("prefetch", def.Train.Prefetch, "mini-batches decoded ahead on a background goroutine (0: read in line)")
	f.String("blas", string(def.Train.BLAS), "GEMM: auto (OpenBLAS if it loads, else gonum), openblas, gonum or ref")
	f.Bool("tf32", def.Train.TF32, "let a GPU run the MLPs' float32 GEMMs on tensor cores at TF32 precision (10 mantissa bits)")
	f.String("device", string(def.Train.Device), "where the modes other than cpu put their device part: auto (a GPU if one is found, else the device emulated in host memory), emulated, cuda, cuda:N, or cpu (no device: mode cpu only)")
	f.Int("threads", def.Train.Threads, "compute threads (0: all cores)")
	f.String("arch", def.Model.Arch, "model: dcn (DCN-v2), dlrm, wdl (Wide&Deep) or deepfm")
	f.Bool("dense-wide", def.Model.DenseWide, "wdl and deepfm: the dense features join the wide part too, a first-order weight each and, for deepfm, an FM field each (factors scaled by the value)")
	f.String("dense-norm", def.Model.DenseNorm, "dense features into the model: standardize (minus the training rows' mean, over their standard deviation, computed in one pass when training starts and saved with the model) or none (as the data holds them)")
	f.String("optimizer", string(def.Train.Optimizer), "embedding optimizer: adagrad (row-wise) or sgd")
	f.Float64("learning-rate", def.Train.LearningRate, "embedding learning rate")
	f.Float64("adagrad-eps", def.Train.AdagradEps, "row-wise Adagrad's eps in the embeddings' step lr*g/(sqrt(acc)+eps): larger values damp the first steps of rarely seen rows")
	f.String("dense-optimizer", string(def.Train.DenseOptimizer), "MLP optimizer: adam, adagrad or sgd (empty: --optimizer)")
	f.Float64("dense-learning-rate", def.Train.DenseLearningRate, "MLP learning rate (0: --learning-rate)")
	f.Float64("weight-decay", def.Train.WeightDecay, "L2 weight decay of the embedding rows a mini-batch looks up")
	f.Float64("dense-weight-decay", def.Train.DenseWeightDecay, "L2 weight decay of the MLP weights")
	f.Float64("decay-fraction", def.Train.DecayFraction, "decay both learning rates to 0 (power 2) over this last fraction of the run's steps, whatever the data's size (0: none; train.decay_start/decay_steps, when set, take precedence)")
	f.String("valid", "", "validation data (Parquet file or directory; default: data.valid of the config): evaluated with the test set, the best model is kept as RUN/best.bin")
	f.Int("early-stop", def.Train.EarlyStop, "stop after N validations in a row without a better validation log loss (0: never; needs validation data)")
	hh := def.HybridHash
	devB, hostB := hh.DeviceBudget, hh.HostBudget
	f.Var(&devB, "hh-device-budget", "hybridhash: device memory for the hot store (hot rows and optimizer state, a default row per table, one mini-batch's missed rows), e.g. 64MiB")
	f.Var(&hostB, "hh-host-budget", "hybridhash: host memory for the host tier (rows, state and ~64 bytes each of bookkeeping); rows beyond it spill to disk, whose index keeps ~25 bytes of host memory a row")
	f.Int64("hh-warmup", hh.WarmupIters, "hybridhash: steps served from host and disk while the frequency counter warms up")
	f.Int64("hh-flush-iters", hh.FlushIters, "hybridhash: steps between refreshes of the hot set from the counts (only rows that enter or leave move)")
	f.Int64("hh-decay-iters", hh.DecayIters, "hybridhash: steps between halvings of the counts, so the hot set follows drift (0: 4 x --hh-flush-iters)")
	f.Int("hh-admit-after", hh.AdmitAfter, "hybridhash: sightings before a new ID gets a row of its own (until then it shares its table's default row)")
	f.String("hh-disk-dir", hh.DiskDir, "hybridhash: directory of the disk tier, emptied at start (default RUN/hybridhash-disk)")
	f.Int("hh-sketch-width", hh.SketchWidth, "hybridhash: counters per hash row of the count-min sketch (4 rows of 4 bytes each)")
	f.Int64Var(&opts.logEvery, "log-every", train.DefaultLogEvery, "steps per training line in metrics.jsonl")
	f.BoolVarP(&opts.verbose, "verbose", "v", false, "print evaluations, scheduler decisions and checkpoints on stderr")
	f.BoolVar(&opts.asJSON, "json", false, "print the run's summary (summary.json) on stdout instead of a summary")
	return cmd
}

// trainBindings ties train's flags to configuration keys.
var trainBindings = []flagBinding{
	{"mode", "train.mode"}, {"batch-size", "train.batch_size"}, {"epochs", "train.epochs"}, {"steps", "train.steps"},
	{"eval-every", "train.eval_every"}, {"checkpoint-every", "train.checkpoint_every"}, {"seed", "train.seed"},
	{"micro-batches", "train.micro_batches"}, {"prefetch", "train.prefetch"}, {"blas", "train.blas"},
	{"threads", "train.threads"}, {"device", "train.device"}, {"tf32", "train.tf32"},
	{"arch", "model.arch"}, {"dense-norm", "model.dense_norm"}, {"dense-wide", "model.dense_wide"}, {"optimizer", "train.optimizer"}, {"learning-rate", "train.learning_rate"},
	{"adagrad-eps", "train.adagrad_eps"},
	{"dense-optimizer", "train.dense_optimizer"}, {"dense-learning-rate", "train.dense_learning_rate"},
	{"weight-decay", "train.weight_decay"}, {"dense-weight-decay", "train.dense_weight_decay"},
	{"decay-fraction", "train.decay_fraction"},
	{"valid", "data.valid"}, {"early-stop", "train.early_stop"},
	{"hh-device-budget", "hybridhash.device_budget"}, {"hh-host-budget", "hybridhash.host_budget"},
	{"hh-warmup", "hybridhash.warmup_iters"}, {"hh-flush-iters", "hybridhash.flush_iters"},
	{"hh-decay-iters", "hybridhash.decay_iters"}, {"hh-admit-after", "hybridhash.admit_after"},
	{"hh-disk-dir", "hybridhash.disk_dir"}, {"hh-sketch-width", "hybridhash.sketch_width"},
}

// isLayout reports whether dir is a classify layout.
func isLayout(dir string) bool {
	if dir == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(dir, layout.ManifestFile))
	return err == nil
}

func runTrain(cmd *cobra.Command, g *globals, opts *trainOptions) error {
	ctx := cmd.Context()
	release, err := lockOutput("train", opts.out)
	if err != nil {
		return err
	}
	defer release()
	if err := removeTemps("train", filepath.Join(opts.out, ".*.tmp-*")); err != nil {
		return err
	}
	if opts.resume != "" {
		if err := resumeArgs(g, opts); err != nil {
			return err
		}
	}
	if err := checkOutNotInput("train", opts.out, opts.data, opts.layout); err != nil {
		return err
	}
	if opts.resume == "" {
		if err := clearRun(opts.out, opts.force); err != nil {
			return err
		}
	}
	var lay *layout.Layout
	layoutDir := opts.layout
	if layoutDir == "" && isLayout(opts.data) {
		layoutDir = opts.data
	}
	dataDir := opts.data
	if layoutDir != "" && layoutDir == opts.data {
		l, err := layout.Open(layoutDir)
		if err != nil {
			return err
		}
		lay = l
		// The data section comes from the manifest. A dataset.yaml in the
		// layout's parent directory (classify's usual DATA/fae) supplies the
		// model defaults, as --data DATA would.
		dataDir = ""
		if parent := filepath.Dir(filepath.Clean(layoutDir)); fileExists(filepath.Join(parent, datasetFile)) {
			dataDir = parent
		}
	}
	c, err := g.loadConfig(cmd, loadOptions{dataDir: dataDir, bindings: trainBindings, needData: lay == nil})
	if err != nil {
		return err
	}
	if lay != nil {
		valid := c.Data.Valid // --valid or data.valid: the manifest's data section does not replace it
		c.Data = lay.Manifest.Spec
		c.Data.Train, c.Data.Test = absPath(layoutDir), "" // the test split is the layout's copy
		if valid != "" {
			c.Data.Valid = valid
		}
		if err := c.Validate(); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
	}
	if cmd.Flags().Changed("epochs") {
		c.Train.Steps = 0
	}
	mode := c.Train.Mode
	if err := checkMemory("train", trainMemory(c), physicalMemory()); err != nil {
		return err
	}
	needLayout := mode.NeedsLayout()
	if needLayout && lay == nil {
		if layoutDir == "" && opts.data != "" && isLayout(filepath.Join(opts.data, "fae")) {
			layoutDir = filepath.Join(opts.data, "fae")
		}
		if layoutDir == "" {
			return usageErrorf("train: mode %s needs a layout from 'picasso classify': pass --layout DIR or --data DIR/fae", mode)
		}
		if lay, err = layout.Open(layoutDir); err != nil {
			return err
		}
	}
	if lay != nil && !cmd.Flags().Changed("batch-size") {
		// A layout is cut into mini-batches of its own size.
		c.Train.BatchSize = lay.Manifest.BatchSize
	}
	var data train.Data
	switch {
	case needLayout || layoutDir == opts.data && lay != nil:
		data.Layout = lay
	default:
		if data.Train, err = dataset.Open(&c.Data, c.Data.Train); err != nil {
			return err
		}
	}
	if lay != nil {
		if ts, ok := lay.TestSpec(); ok {
			if data.Test, err = dataset.Open(&ts, ts.Train); err != nil {
				return err
			}
		}
	}
	if data.Test == nil && c.Data.Test != "" {
		if data.Test, err = dataset.Open(&c.Data, c.Data.Test); err != nil {
			return err
		}
	}
	if c.Data.Valid != "" {
		c.Data.Valid = absPath(c.Data.Valid)
		spec := c.Data
		if lay != nil {
			spec = lay.Manifest.Spec
		}
		if data.Valid, err = dataset.Open(&spec, c.Data.Valid); err != nil {
			return err
		}
	}
	if c.Train.EarlyStop > 0 && data.Valid == nil {
		return usageErrorf("train: --early-stop %d needs validation data: pass --valid PATH or set data.valid (convert --split train=0.8,valid=0.1,test=0.1 writes one)", c.Train.EarlyStop)
	}

	bes, err := g.newBackends("train", c, mode.NeedsDevice())
	if err != nil {
		return err
	}
	defer bes.close()

	if err := os.MkdirAll(opts.out, 0o755); err != nil {
		return err
	}
	// The saved data paths are absolute: --resume reads config.yaml as a
	// config file, whose relative paths count from the run directory, not
	// from where train was started.
	saved := *c
	saved.Data.Train, saved.Data.Test, saved.Data.Valid = absPath(c.Data.Train), absPath(c.Data.Test), absPath(c.Data.Valid)
	if err := writeConfig(filepath.Join(opts.out, "config.yaml"), &saved); err != nil {
		return err
	}
	if err := copyMapping(opts.out, opts.data, dataDir, layoutDir); err != nil {
		return err
	}
	args := runArgs{Data: absPath(opts.data), Layout: absPath(layoutDir)}
	if err := writeJSON(filepath.Join(opts.out, runArgsFile), args); err != nil {
		return err
	}

	var logf func(string, ...any)
	if opts.verbose {
		logf = func(format string, a ...any) { fmt.Fprintf(g.stderr, "train: "+format+"\n", a...) }
	}
	batch := int64(c.Train.BatchSize)
	var bar *progress
	to := c.TrainerOptions()
	to.Data, to.Host, to.Device = data, bes.host, bes.dev
	to.OutDir, to.Resume, to.LogEvery, to.Logf = opts.out, opts.resume != "", opts.logEvery, logf
	to.Progress = func(step, total int64) { bar.set(step*batch, total*batch) }
	tr, err := train.New(ctx, to)
	if err != nil {
		return err
	}
	defer tr.Close()
	if tr.Step() >= tr.Total() {
		// A run killed after its last checkpoint but before its summary
		// is finished (the final evaluation is in the checkpoint); one
		// with its summary has nothing left to do.
		// A summary of an earlier end (the run was resumed past it, then
		// killed before its new summary) does not count.
		if raw, err := os.ReadFile(filepath.Join(opts.out, train.SummaryFile)); err == nil {
			var done train.Summary
			if json.Unmarshal(raw, &done) == nil && done.Steps == tr.Step() {
				return usageErrorf("train: %s is already at step %d of %d; pass a larger --steps or --epochs to continue", opts.out, tr.Step(), tr.Total())
			}
		}
		if !g.quiet {
			fmt.Fprintf(g.stderr, "train: %s is at its last step (%d) without %s: writing it\n", opts.out, tr.Step(), train.SummaryFile)
		}
	}
	if !opts.verbose {
		bar = g.newProgress(tr.Total()*batch, "train "+mode.String(), false)
		bar.resumeAt(tr.Step() * batch)
	}
	sum, err := tr.Run(ctx)
	bar.finish()
	if err != nil {
		if errors.Is(err, train.ErrInterrupted) && sum != nil {
			w := g.stdout
			if opts.asJSON {
				w = g.stderr
			}
			fmt.Fprintf(w, "train: interrupted at step %d of %d; checkpoint written; continue with: picasso train --resume %s\n",
				sum.Steps, tr.Total(), opts.out)
		}
		return err
	}
	if opts.asJSON {
		return printJSON(g.stdout, sum)
	}
	printTrainSummary(g.stdout, sum, opts.out)
	return nil
}

// runFiles are the files whose presence makes a directory a (possibly
// finished) run.
var runFiles = []string{train.SummaryFile, train.CheckpointFile, "config.yaml", runArgsFile}

// clearRun makes out ready for a new run: absent or without run files is
// fine; an existing run is an error unless force, in which case it is moved
// aside under a hidden name and then removed, so that a kill at any moment
// never leaves the old summary.json or checkpoint beside a new config.yaml.
func clearRun(out string, force bool) error {
	var found string
	for _, f := range runFiles {
		if fileExists(filepath.Join(out, f)) {
			found = f
			break
		}
	}
	if found == "" {
		return nil
	}
	if !force {
		return usageErrorf("train: --out %s already holds a run (%s); pass --force to replace it or --resume %s to continue it", out, found, out)
	}
	clean := filepath.Clean(out)
	aside := filepath.Join(filepath.Dir(clean), fmt.Sprintf(".%s.old-%d", filepath.Base(clean), os.Getpid()))
	if err := os.Rename(clean, aside); err != nil {
		return fmt.Errorf("train: move the old run aside: %w", err)
	}
	if err := os.RemoveAll(aside); err != nil {
		return fmt.Errorf("train: remove the old run %s: %w", aside, err)
	}
	return nil
}

// resumeArgs reads the run's recorded data paths and puts its saved
// configuration first among the config files.
func resumeArgs(g *globals, opts *trainOptions) error {
	run := opts.resume
	if !fileExists(filepath.Join(run, train.CheckpointFile)) {
		return usageErrorf("train: --resume %s: no %s there", run, train.CheckpointFile)
	}
	b, err := os.ReadFile(filepath.Join(run, runArgsFile))
	if err == nil {
		var a runArgs
		if err := json.Unmarshal(b, &a); err != nil {
			return fmt.Errorf("train: %s: %w", filepath.Join(run, runArgsFile), err)
		}
		if opts.data == "" {
			opts.data = a.Data
		}
		if opts.layout == "" && a.Layout != a.Data {
			opts.layout = a.Layout
		}
	}
	if cfg := filepath.Join(run, "config.yaml"); fileExists(cfg) {
		m, err := readConfigFile(cfg)
		if err != nil {
			return err
		}
		if tr, _ := m["train"].(map[string]any); tr != nil {
			if _, ok := tr["adagrad_eps"]; !ok {
				// Saved before train.adagrad_eps existed: such runs
				// stepped with the eps of that time.
				g.defaults = map[string]any{"train.adagrad_eps": legacyAdagradEps}
			}
		}
		g.configs = append([]string{cfg}, g.configs...)
	}
	return nil
}

// legacyAdagradEps is the Adagrad eps of the runs saved before
// train.adagrad_eps was a setting.
const legacyAdagradEps = 1e-8

// copyMapping copies the ID mapping convert wrote beside the data (the
// first of dirs, or of their parents, that has one) into the run, so that
// predict and eval can convert raw text with the IDs the model learnt.
func copyMapping(run string, dirs ...string) error {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		for _, c := range []string{d, filepath.Dir(filepath.Clean(d))} {
			src := filepath.Join(c, convert.MappingFile)
			if !fileExists(src) {
				continue
			}
			b, err := os.ReadFile(src)
			if err != nil {
				return fmt.Errorf("train: %w", err)
			}
			return atomicfile.WriteBytes(filepath.Join(run, convert.MappingFile), b)
		}
	}
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func absPath(p string) string {
	if p == "" {
		return ""
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func printTrainSummary(w io.Writer, s *train.Summary, out string) {
	num := func(v train.Number, format string) string {
		if math.IsNaN(float64(v)) {
			return "n/a"
		}
		return fmt.Sprintf(format, float64(v))
	}
	on := s.Backend
	if s.Device != "" {
		on += " and " + s.Device
	}
	fmt.Fprintf(w, "train: %s on %s: %d steps (%.2f epochs, %d samples) in %.1fs: %.0f samples/s, median step %s ms\n",
		s.Mode, on, s.Steps, s.Epochs, s.Samples, s.Seconds, s.SamplesPerS, num(s.StepMsMedian, "%.2f"))
	fmt.Fprintf(w, "train: test AUC %s (oracle %s), log loss %s, accuracy %s\n",
		num(s.TestAUC, "%.5f"), num(s.OracleAUC, "%.5f"), num(s.TestLogLoss, "%.5f"), num(s.TestAccuracy, "%.5f"))
	var extra []string
	if s.HotInputShare > 0 {
		extra = append(extra, fmt.Sprintf("hot inputs %.1f%%", 100*s.HotInputShare))
	}
	if s.Swaps > 0 {
		word := "swaps"
		if s.Swaps == 1 {
			word = "swap"
		}
		extra = append(extra, fmt.Sprintf("%d %s (%d rows to the device, %d back)", s.Swaps, word, s.SyncRowsH2D, s.SyncRowsD2H))
	}
	if s.FinalRate != nil {
		extra = append(extra, fmt.Sprintf("final rate R(%g)", float64(*s.FinalRate)))
	}
	if h := s.HybridHash; h != nil {
		fmt.Fprintf(w, "train: hybridhash: hit ratio %.1f%% of lookups, %.1f%% of unique IDs per batch; rows: %d hot, %d host, %d disk only; %d evictions; disk read %s, written %s\n",
			100*float64(h.HitRatio), 100*float64(h.UniqueHitRatio), h.HotRows, h.HostRows, h.DiskOnlyRows, h.Evictions,
			profile.FormatBytes(float64(h.DiskBytesRead)), profile.FormatBytes(float64(h.DiskBytesWritten)))
	}
	line := fmt.Sprintf("train: moved %s host→device, %s device→host", profile.FormatBytes(float64(s.BytesH2D)), profile.FormatBytes(float64(s.BytesD2H)))
	if len(extra) > 0 {
		line += "; " + strings.Join(extra, ", ")
	}
	fmt.Fprintln(w, line)
	fmt.Fprintf(w, "train: wrote %s, %s, %s\n", filepath.Join(out, train.SummaryFile), filepath.Join(out, train.MetricsFile), filepath.Join(out, train.CheckpointFile))
}
