package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/picasso-ctr/picasso/pkg/config"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/hybridhash"
	"github.com/picasso-ctr/picasso/pkg/profile"
)

type hitratioOptions struct {
	data      string
	out       string
	rows      int64
	hotRows   []int
	fractions []float64
	stateDim  int
	asJSON    bool
}

// hitratioBindings tie hitratio's flags to the settings train --mode
// hybridhash reads, so that --config files and PICASSO_* variables set
// both alike.
var hitratioBindings = []flagBinding{
	{"batch-size", "train.batch_size"}, {"warmup", "hybridhash.warmup_iters"}, {"flush-iters", "hybridhash.flush_iters"},
	{"decay-iters", "hybridhash.decay_iters"}, {"sketch-width", "hybridhash.sketch_width"}, {"dim", "model.embedding_dim"},
	{"optimizer", "train.optimizer"},
}

func newHitratioCmd(g *globals) *cobra.Command {
	opts := &hitratioOptions{}
	def := config.Default()
	cmd := &cobra.Command{
		Use:   "hitratio --data D [--fractions 0.01,0.05 | --hot-rows 1000,10000] [--rows N] [--out table.json]",
		Short: "Measure HybridHash's hit ratio against hot-store size on a dataset's ID trace (PICASSO Table VI)",
		Long: `hitratio replays the sparse IDs of --data, in file order and in mini-batches of
--batch-size, through one HybridHash counter and hot set per hot-store size,
warmed up and refreshed as 'picasso train --mode hybridhash' does, and prints
for each size the hit ratio of lookups and of the distinct IDs of each
mini-batch after warm-up (the two ratios of PICASSO's Table VI), beside the
oracle's: a hot store holding the top-k IDs by their true count over the
whole trace. The oracle counts every distinct ID exactly, so this command's
memory grows with the trace's vocabulary; training's counter does not.

Sizes are hot rows (--hot-rows), or shares of the trace's distinct IDs
(--fractions); the bytes column is the rows at the model's embedding
dimension (--dim) plus --state-dim floats of optimizer state.`,
		Example: `  picasso hitratio --data data --fractions 0.005,0.01,0.02,0.05,0.1,0.2
  picasso hitratio --data data --hot-rows 1000,10000,100000 --rows 1000000 --out hit.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.data == "" {
				return usageErrorf("hitratio: --data is required")
			}
			if opts.rows < 0 || opts.stateDim < -1 {
				return usageErrorf("hitratio: --rows must be >= 0 and --state-dim >= 0 (or -1: as --optimizer keeps)")
			}
			return runHitratio(cmd, g, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.data, "data", "", "dataset directory (with dataset.yaml) or Parquet path")
	f.StringVar(&opts.out, "out", "", "also write the table as JSON to this file")
	f.BoolVar(&opts.asJSON, "json", false, "print the table as JSON on stdout (what --out writes) instead of text")
	f.Int64Var(&opts.rows, "rows", 0, "read at most this many training rows (0: all)")
	f.IntSliceVar(&opts.hotRows, "hot-rows", nil, "hot-store sizes in rows (overrides --fractions)")
	f.Float64SliceVar(&opts.fractions, "fractions", []float64{0.005, 0.01, 0.02, 0.05, 0.1, 0.2}, "hot-store sizes as shares of the trace's distinct IDs")
	f.Int("batch-size", def.Train.BatchSize, "rows per mini-batch (train.batch_size)")
	f.Int64("warmup", def.HybridHash.WarmupIters, "warm-up mini-batches, counted, not measured (hybridhash.warmup_iters)")
	f.Int64("flush-iters", def.HybridHash.FlushIters, "mini-batches between refreshes of the hot set (hybridhash.flush_iters)")
	f.Int64("decay-iters", def.HybridHash.DecayIters, "mini-batches between halvings of the counts (hybridhash.decay_iters; 0: 4 x --flush-iters)")
	f.Int("sketch-width", def.HybridHash.SketchWidth, "counters per hash row of the count-min sketch (hybridhash.sketch_width)")
	f.Int("dim", def.Model.EmbeddingDim, "embedding dimension for the bytes column (model.embedding_dim)")
	f.String("optimizer", string(def.Train.Optimizer), "optimizer whose per-row state the bytes column counts (train.optimizer: adagrad keeps one float a row)")
	f.IntVar(&opts.stateDim, "state-dim", -1, "optimizer-state floats per row for the bytes column (-1: as --optimizer keeps)")
	return cmd
}

func runHitratio(cmd *cobra.Command, g *globals, opts *hitratioOptions) error {
	ctx := cmd.Context()
	c, err := g.loadConfig(cmd, loadOptions{dataDir: opts.data, bindings: hitratioBindings, needData: true})
	if err != nil {
		return err
	}
	hh := c.HybridHash
	batch := c.Train.BatchSize
	ds, err := dataset.Open(&c.Data, c.Data.Train)
	if err != nil {
		return err
	}
	ft := c.Data.FeatureTable()
	nt := len(c.Data.Tables())
	trace := func(fn func(hybridhash.Step) error) error {
		return replayIDs(ctx, ds, batch, opts.rows, ft, nt, fn)
	}
	scratch, err := os.MkdirTemp("", "picasso-hitratio-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	so := hybridhash.SweepOptions{Tables: nt, HotRows: opts.hotRows, Fractions: opts.fractions, WarmupIters: hh.WarmupIters,
		FlushIters: hh.FlushIters, DecayIters: hh.DecayIters, SketchWidth: hh.SketchWidth, Seed: c.Train.Seed, Dir: scratch}
	res, err := hybridhash.Sweep(ctx, trace, so)
	if err != nil {
		return err
	}
	rowBytes := float64(profile.BytesPerRow(c.Model.EmbeddingDim, string(c.Train.Optimizer)))
	if opts.stateDim >= 0 {
		rowBytes = float64(4 * (c.Model.EmbeddingDim + opts.stateDim))
	}
	if res.Steps <= hh.WarmupIters {
		fmt.Fprintf(g.stderr, "hitratio: warning: the trace has %d mini-batches of %d, no more than the %d of warm-up: nothing was measured (lower --warmup or --batch-size)\n",
			res.Steps, batch, hh.WarmupIters)
	}
	if opts.out != "" {
		if err := writeJSON(opts.out, res); err != nil { // through a temporary file
			return fmt.Errorf("hitratio: write %s: %w", opts.out, err)
		}
	}
	if opts.asJSON {
		return printJSON(g.stdout, res)
	}
	w := g.stdout
	fmt.Fprintf(w, "hitratio: %s: %d mini-batches of %d, %d lookups, %d distinct IDs; warm-up %d, flush every %d\n",
		opts.data, res.Steps, batch, res.Lookups, res.Distinct, hh.WarmupIters, hh.FlushIters)
	fmt.Fprintf(w, "%12s %10s %9s | %9s %9s %7s | %9s %9s %7s\n", "hot rows", "bytes", "share", "hit", "oracle", "gap", "unique", "oracle", "gap")
	for _, r := range res.Rows {
		fmt.Fprintf(w, "%12d %10s %8.2f%% | %8.2f%% %8.2f%% %7.2f | %8.2f%% %8.2f%% %7.2f\n", r.HotRows, profile.FormatBytes(float64(r.HotRows)*rowBytes),
			100*r.HotShare, 100*r.HitRatio, 100*r.OracleHitRatio, 100*(r.HitRatio-r.OracleHitRatio),
			100*r.UniqueHitRatio, 100*r.OracleUniqueHitRatio, 100*(r.UniqueHitRatio-r.OracleUniqueHitRatio))
	}
	return nil
}

// replayIDs calls fn with the IDs of each mini-batch of ds, per table, in
// file order, up to maxRows rows (0: all).
func replayIDs(ctx context.Context, ds *dataset.Dataset, batch int, maxRows int64, ft []int, nt int, fn func(hybridhash.Step) error) error {
	r, err := ds.NewReader(dataset.ReaderOptions{BatchRows: batch})
	if err != nil {
		return err
	}
	defer r.Close()
	step := make(hybridhash.Step, nt)
	var rows int64
	for maxRows == 0 || rows < maxRows {
		b, err := r.Next(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		n := b.N
		if maxRows > 0 {
			n = int(min(int64(n), maxRows-rows))
		}
		for t := range step {
			step[t] = step[t][:0]
		}
		for f, col := range b.Sparse {
			t := ft[f]
			if col.Offsets == nil {
				step[t] = append(step[t], col.IDs[:n]...)
			} else {
				step[t] = append(step[t], col.IDs[:col.Offsets[n]]...)
			}
		}
		rows += int64(n)
		if err := fn(step); err != nil {
			return err
		}
	}
	return nil
}
