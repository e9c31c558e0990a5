package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync/atomic"

	"github.com/spf13/cobra"

	"github.com/picasso-ctr/picasso/internal/gcfirst"
	"github.com/picasso-ctr/picasso/pkg/config"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/profile"
	"github.com/picasso-ctr/picasso/pkg/train"
)

// profileOptions are profile's own flags; the threshold search's are
// bound to the configuration (profileBindings) and read from it.
type profileOptions struct {
	data     string
	out      string
	asJSON   bool
	sampling string
	workers  int
	skipBad  bool
}

var profileBindings = []flagBinding{
	{"budget", "fae.budget"}, {"sample-rate", "fae.sample_rate"}, {"method", "fae.method"},
	{"confidence", "fae.confidence"}, {"chunks", "fae.chunks"}, {"chunk-size", "fae.chunk_size"},
	{"seed", "train.seed"}, {"promote-tables", "fae.promote_tables"},
}

// addProfileFlags adds the flags of the threshold search; sampling ones
// too unless merge (which reads no data: each counts file says how it was
// sampled).
func addProfileFlags(cmd *cobra.Command, opts *profileOptions, merge bool) {
	def := config.Default()
	f := cmd.Flags()
	budget := def.FAE.Budget
	f.Var(&budget, "budget", "device memory for hot rows and their optimizer state (L), e.g. 512MiB")
	if !merge {
		f.Float64("sample-rate", def.FAE.SampleRate, "percent of inputs to sample (x)")
	}
	f.String("method", string(def.FAE.Method), "tinterval (Student's t-interval on logger chunks), exact (exact counts on the sample) or topk (global top-K rows by sampled count)")
	f.Float64("confidence", def.FAE.Confidence, "confidence 1-α of the t-interval")
	f.Int("chunks", def.FAE.Chunks, "logger chunks drawn per table (n)")
	f.Int("chunk-size", def.FAE.ChunkSize, "logger entries per chunk (m)")
	f.Bool("promote-tables", def.FAE.PromoteTables, "when every row seen in the sample fits the budget, spend the rest on whole tables, most unseen accesses per byte first (false: stop where the paper's search stops)")
	f.Uint64("seed", def.Train.Seed, "random seed of the sample and the chunk draws")
	f.BoolVar(&opts.asJSON, "json", false, "print the result as JSON on stdout instead of a summary")
	if merge {
		f.IntVar(&opts.workers, "workers", 0, "goroutines estimating the tables (0: one per core)")
	} else {
		f.IntVar(&opts.workers, "workers", 0, "parallel readers, and goroutines estimating the tables (0: one per core)")
	}
}

// mergeBindings are profileBindings but the sampling ones, which merge
// has no flags for.
func mergeBindings() []flagBinding {
	var out []flagBinding
	for _, b := range profileBindings {
		if b.flag != "sample-rate" {
			out = append(out, b)
		}
	}
	return out
}

func newProfileCmd(g *globals) *cobra.Command {
	opts := &profileOptions{}
	cmd := &cobra.Command{
		Annotations: map[string]string{lazyGCAnnotation: "yes"},
		Use:         "profile --data D --out profile.json",
		Short:       "Sample the data, count embedding accesses and pick the hot threshold",
		Long: `profile reads a random sample of the training inputs (--sample-rate percent,
whole row groups when the data is not ordered, the last one cut at the rows
asked when the data says it is shuffled), counts how often each embedding
row is looked up, and searches for the smallest threshold t whose hot rows, with
their optimizer state, fit --budget at the upper bound of a Student's
t-interval (FAE's estimator; --method exact and topk are alternatives).

It writes the result (JSON) to --out and the access counts beside it
(profile.counts), which classify reads. The summary shows the estimate next to
the exact figure on the sample, so the estimator's error is always visible.`,
		Example: `  picasso profile --data data --out data/profile.json --budget 64MiB
  picasso profile --data data --config configs/rmc2-kaggle.yaml --out p.json --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.out == "" {
				return usageErrorf("profile: --out is required")
			}
			c, err := g.loadConfig(cmd, loadOptions{dataDir: opts.data, bindings: profileBindings, needData: true})
			if err != nil {
				return err
			}
			return runProfile(cmd, g, opts, c)
		},
	}
	cmd.Flags().StringVar(&opts.data, "data", "", "dataset directory (with dataset.yaml) or Parquet path")
	cmd.Flags().StringVar(&opts.out, "out", "", "profile JSON to write (required); counts go to the same name with .counts")
	cmd.Flags().StringVar(&opts.sampling, "sampling", "auto", "auto, row-groups or rows")
	cmd.Flags().BoolVar(&opts.skipBad, "skip-bad-rows", false, "skip and count malformed rows instead of stopping")
	addProfileFlags(cmd, opts, false)
	cmd.AddCommand(newProfileMergeCmd(g))
	return cmd
}

func profileLibOptions(c *config.Config, opts *profileOptions) profile.Options {
	o := profile.DefaultOptions()
	o.SampleRate = c.FAE.SampleRate
	o.Budget = int64(c.FAE.Budget)
	o.Confidence = c.FAE.Confidence
	o.Chunks = c.FAE.Chunks
	o.ChunkSize = c.FAE.ChunkSize
	o.Method = c.FAE.Method
	o.Seed = c.Train.Seed
	o.Dim = c.Model.RowDim() // Wide&Deep and DeepFM rows carry a first-order weight
	if o.Dim > c.Model.EmbeddingDim && c.Train.Optimizer == train.OptAdagrad {
		o.ExtraRowBytes = 4 // with its own Adagrad accumulator
	}
	o.Optimizer = string(c.Train.Optimizer)
	o.SmallTableBytes = int64(c.FAE.SmallTable)
	o.NoPromote = !c.FAE.PromoteTables
	if opts.workers > 0 {
		o.Workers = opts.workers
	}
	o.SkipBad = opts.skipBad
	if opts.sampling != "" {
		o.Sampling = profile.Sampling(opts.sampling)
	}
	return o
}

func countsPath(profilePath string) string {
	return strings.TrimSuffix(profilePath, filepath.Ext(profilePath)) + ".counts"
}

func runProfile(cmd *cobra.Command, g *globals, opts *profileOptions, c *config.Config) error {
	ctx := cmd.Context()
	if err := checkOutNotInput("profile", opts.out, opts.data, c.Data.Train); err != nil {
		return err
	}
	release, err := lockOutput("profile", opts.out, filepath.Base(countsPath(opts.out)))
	if err != nil {
		return err
	}
	defer release()
	gcCheck, gcRestore := lazyGC(&c.Data)
	defer gcRestore()
	ds, err := dataset.Open(&c.Data, c.Data.Train)
	if err != nil {
		return err
	}
	po := profileLibOptions(c, opts)
	if err := po.Validate(); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	bar := g.newProgress(0, "profile", false)
	po.Progress = func(done, total int64) {
		gcCheck()
		bar.set(done, total)
	}
	lg, err := profile.Sample(ctx, ds, po)
	bar.finish()
	if err != nil {
		return err
	}
	return finishProfile(ctx, g, opts, po, lg)
}

// finishProfile analyses the counts of lg, writes them beside opts.out
// while it does, then the result, and reports it.
func finishProfile(ctx context.Context, g *globals, opts *profileOptions, po profile.Options, lg *profile.Logger) error {
	cp := countsPath(opts.out)
	res, err := profile.AnalyzeAndWrite(ctx, lg, po, opts.out, cp)
	if err != nil {
		return budgetHint(err)
	}
	warnShare(g, "profile", res.HotInputShare)
	if opts.asJSON {
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	if err := res.Summary(g.stdout); err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "profile: wrote %s and %s\n", opts.out, cp)
	return nil
}

func newProfileMergeCmd(g *globals) *cobra.Command {
	opts := &profileOptions{}
	cmd := &cobra.Command{
		Use:   "merge --out profile.json COUNTS...",
		Short: "Merge access counts profiled on shards of a dataset and pick the threshold",
		Long: `merge adds up the access counts (.counts files) that 'picasso profile' wrote
for separate shards of one dataset, as if one profile had sampled them all, and
then picks the threshold over the merged counts.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.out == "" {
				return usageErrorf("profile merge: --out is required")
			}
			c, err := g.loadConfig(cmd, loadOptions{bindings: mergeBindings()})
			if err != nil {
				return err
			}
			lg, err := profile.ReadLogger(args[0])
			if err != nil {
				return err
			}
			for _, p := range args[1:] {
				o, err := profile.ReadLogger(p)
				if err != nil {
					return err
				}
				if err := lg.Merge(o); err != nil {
					return fmt.Errorf("profile merge: %s: %w", p, err)
				}
			}
			return finishProfile(cmd.Context(), g, opts, profileLibOptions(c, opts), lg)
		},
	}
	cmd.Flags().StringVar(&opts.out, "out", "", "profile JSON to write (required)")
	addProfileFlags(cmd, opts, true)
	return cmd
}

// budgetHint adds to a budget error what to change: the budget, or the
// small-table size that keeps tables whole.
func budgetHint(err error) error {
	if !errors.Is(err, profile.ErrBudget) {
		return err
	}
	return fmt.Errorf("%w: %w; raise --budget (fae.budget), or lower fae.small_table (tables under it are kept whole) in a --config file "+
		"or with PICASSO_FAE_SMALL_TABLE=32KiB; for the demo preset, --config configs/demo.yaml sets both", errUsage, err)
}

// warnShare prints, on stderr, a warning when a hot input share leaves
// FAE nothing to do (all hot or all cold).
func warnShare(g *globals, cmd string, share float64) {
	if w := profile.ShareWarning(share); w != "" {
		fmt.Fprintf(g.stderr, "%s: warning: %s\n", cmd, w)
	}
}

// lazyGCAnnotation marks a command that sets the collector itself
// (lazyGC): the root's pre-run leaves it off, as the program started.
const lazyGCAnnotation = "picasso/lazy-gc"

// lazyGC keeps the collector off for a profile, unless the user set GOGC,
// and returns check, to call as the sample goes, and what restores the
// settings. A profile's heap is its counts and kept inputs, which live to
// its end: at the kaggle preset's 5% the one collection of a profile
// (at 15 MB, with GOGC=400) freed almost nothing and cost 2-3 ms of a
// 55 ms run. The collector stays off while the heap grows by at most the
// counts' dense tables twice over and a GiB (a soft memory limit there,
// at most half the machine's memory or GOMEMLIMIT); check, past half of
// that growth, lets it run a fifth as often as by default (GOGC=400)
// under a limit of half the memory, for samples whose garbage grows with
// the data (lists and files that are not plain are read batch by batch).
func lazyGC(spec *dataset.Spec) (check func(), restore func()) {
	if os.Getenv("GOGC") != "" {
		gcfirst.Restore()
		return func() {}, func() {}
	}
	limit := debug.SetMemoryLimit(-1) // the current one: GOMEMLIMIT's, or none
	lazyLimit := limit
	if m := physicalMemory(); m > 0 && os.Getenv("GOMEMLIMIT") == "" {
		lazyLimit = int64(m / 2)
	}
	tables := profile.DenseBytes(spec)
	start := heapBytes()
	soft := min(start+2*tables+1<<30, lazyLimit)
	debug.SetGCPercent(-1) // off since the program started (gcfirst)
	debug.SetMemoryLimit(soft)
	var lazy atomic.Bool
	check = func() {
		if !lazy.Load() && heapBytes() > start+(soft-start)/2 && lazy.CompareAndSwap(false, true) {
			debug.SetGCPercent(400)
			debug.SetMemoryLimit(lazyLimit)
		}
	}
	return check, func() {
		gcfirst.Restore()
		debug.SetMemoryLimit(limit)
	}
}

// heapBytes returns the bytes of the heap's objects, live or not yet
// collected.
func heapBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}
