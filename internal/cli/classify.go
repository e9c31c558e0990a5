package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/picasso-ctr/picasso/pkg/classify"
	"github.com/picasso-ctr/picasso/pkg/config"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/layout"
	"github.com/picasso-ctr/picasso/pkg/profile"
)

type classifyOptions struct {
	data          string
	profile       string
	out           string
	workers       int
	force         bool
	asJSON        bool
	shuffleMemory config.ByteSize
}

func newClassifyCmd(g *globals) *cobra.Command {
	opts := &classifyOptions{}
	def := config.Default()
	cmd := &cobra.Command{
		Use:   "classify --data D --profile profile.json --out DIR",
		Short: "Rewrite the data into all-hot and all-cold mini-batches (the FAE layout)",
		Long: `classify marks the embedding rows the profile found hot, marks an input hot
only when every ID it looks up is hot, shuffles each class with the seed and
writes mini-batches that are entirely hot or entirely cold: DIR/hot and
DIR/cold (one Parquet row group per mini-batch; hot IDs become slots of the
packed hot table), DIR/hotmap.bin and DIR/hotmap.parquet (table, table_name,
slot, id: how other tools map hot slots back to IDs; see docs/layout.md),
DIR/test (the test split, unchanged) and DIR/manifest.json, written last. The layout is built beside DIR and renamed
into place when complete; 'picasso classify verify DIR' checks one.`,
		Example: `  picasso classify --data data --profile data/profile.json --out data/fae
  picasso classify verify data/fae --data data`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.out == "" || opts.profile == "" {
				return usageErrorf("classify: --profile and --out are required")
			}
			c, err := g.loadConfig(cmd, loadOptions{dataDir: opts.data, needData: true, bindings: []flagBinding{
				{"batch-size", "train.batch_size"}, {"seed", "train.seed"},
			}})
			if err != nil {
				return err
			}
			return runClassify(cmd, g, opts, c)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.data, "data", "", "dataset directory (with dataset.yaml) or Parquet path")
	f.StringVar(&opts.profile, "profile", "", "profile JSON written by 'picasso profile' (required)")
	f.StringVar(&opts.out, "out", "", "layout directory to write (required)")
	f.Int("batch-size", def.Train.BatchSize, "rows per mini-batch, train with the same size (default: train.batch_size of the config files, else 1024)")
	f.Lookup("batch-size").DefValue = "0" // the default is the configuration's, not a fixed number
	f.Uint64("seed", def.Train.Seed, "seed of the shuffle within each class")
	f.IntVar(&opts.workers, "workers", 0, "parallel readers (0: one per core)")
	opts.shuffleMemory = classify.DefaultShuffleMemory
	f.Var(&opts.shuffleMemory, "shuffle-memory", "memory the shuffle may hold the rows in (at most a quarter of the machine's; the process peaks at about twice the rows held); larger inputs, or any with 0, are shuffled through bucket files beside --out, with the same result")
	f.BoolVar(&opts.force, "force", false, "replace an existing layout at --out")
	f.BoolVar(&opts.asJSON, "json", false, "print the manifest as JSON on stdout instead of a summary")
	cmd.AddCommand(newClassifyVerifyCmd(g))
	return cmd
}

// hotSetFromProfile reads a profile and its counts and lists each table's hot rows.
func hotSetFromProfile(path string, spec *dataset.Spec) (*layout.HotSet, *profile.Result, error) {
	res, lg, err := profile.ReadPair(path)
	if err != nil {
		return nil, nil, err
	}
	hs, err := classify.HotSetFromProfile(res, lg, spec)
	if errors.Is(err, profile.ErrMismatch) {
		// The wrong --profile (or --data) for the other: a usage error,
		// with what to do.
		return nil, nil, fmt.Errorf("%w: classify: --profile %s was made from other data; profile this data (picasso profile --data ...) or pass the profile made from it: %w", errUsage, path, err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("classify: profile %s: %w", path, err)
	}
	return hs, res, nil
}

func runClassify(cmd *cobra.Command, g *globals, opts *classifyOptions, c *config.Config) error {
	ctx := cmd.Context()
	if err := checkOutNotInput("classify", opts.out, opts.data, c.Data.Train, c.Data.Test, opts.profile); err != nil {
		return err
	}
	release, err := lockOutput("classify", opts.out)
	if err != nil {
		return err
	}
	defer release()
	ds, err := dataset.Open(&c.Data, c.Data.Train)
	if err != nil {
		return err
	}
	phys := physicalMemory()
	shuffle := int64(opts.shuffleMemory)
	if phys > 0 {
		shuffle = min(shuffle, int64(phys/4))
	}
	if err := checkMemory("classify", classifyMemory(&c.Data, c.Train.BatchSize, ds.Rows(), shuffle), phys); err != nil {
		return err
	}
	hs, res, err := hotSetFromProfile(opts.profile, &c.Data)
	if err != nil {
		return err
	}
	if res.Fingerprint != "" && res.Fingerprint != ds.Fingerprint() {
		fmt.Fprintf(g.stderr, "classify: warning: profile %s was made on other data (fingerprint %s, data %s)\n", opts.profile, res.Fingerprint, ds.Fingerprint())
	}
	bar := g.newProgress(2*ds.Rows(), "classify", false)
	m, err := classify.Run(ctx, ds, hs, opts.out, classify.Options{
		BatchSize: c.Train.BatchSize, Workers: opts.workers, Seed: c.Train.Seed, Force: opts.force, ShuffleMemory: max(shuffle, 1),
		EmbeddingDim: c.Model.RowDim(), Threshold: res.Threshold, ProfileFingerprint: res.Fingerprint,
		Version: Version, Progress: bar.set,
	})
	bar.finish()
	if err != nil {
		return err
	}
	warnShare(g, "classify", m.HotInputShare)
	if opts.asJSON {
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(m)
	}
	fmt.Fprintf(g.stdout, "classify: %d inputs: %d hot (%.1f%%), %d cold; estimated by profile: %.1f%%\n",
		m.RowsIn, m.HotRows, 100*m.HotInputShare, m.ColdRows, 100*res.HotInputShare)
	fmt.Fprintf(g.stdout, "classify: %d hot and %d cold mini-batches of %d; hot table %d rows (%s at dim %d)\n",
		m.HotBatches, m.ColdBatches, m.BatchSize, m.HotTableRows, profile.FormatBytes(float64(m.HotTableBytes)), m.EmbeddingDim)
	fmt.Fprintf(g.stdout, "classify: %.1fs (%.0f rows/s); layout %s\n", m.Seconds, float64(m.RowsIn)/max(m.Seconds, 1e-9), opts.out)
	return nil
}

func newClassifyVerifyCmd(g *globals) *cobra.Command {
	var data string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify DIR",
		Short: "Check a layout against its manifest (and, with --data, against its input)",
		Long: `verify reads every mini-batch of a layout and checks: hot + cold rows equal the
input rows; every batch but the last of each class is full; every ID in a hot
batch is a valid hot slot; every cold row has at least one cold ID; and the rows
(hot slots mapped back to IDs) are exactly the input rows, by an
order-independent digest. With --data the input's digest is recomputed too.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var ds *dataset.Dataset
			if data != "" {
				c, err := g.loadConfig(cmd, loadOptions{dataDir: data, needData: true})
				if err != nil {
					return err
				}
				if ds, err = dataset.Open(&c.Data, c.Data.Train); err != nil {
					return err
				}
			}
			if err := classify.Verify(cmd.Context(), args[0], ds); err != nil {
				return err
			}
			if asJSON {
				return printJSON(g.stdout, struct {
					Layout       string `json:"layout"`
					OK           bool   `json:"ok"`
					CheckedInput string `json:"checked_input,omitempty"`
				}{args[0], true, data})
			}
			fmt.Fprintf(g.stdout, "classify verify: %s is complete and consistent\n", args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "also recompute the digest of this input dataset")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON on stdout (a failed check is an error, exit 3)")
	return cmd
}
