package cli

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/picasso-ctr/picasso/pkg/atomicfile"
	"github.com/picasso-ctr/picasso/pkg/config"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/gen"
	"github.com/picasso-ctr/picasso/pkg/train"
)

type genOptions struct {
	preset       string
	scale        float64
	rows         int64
	seed         uint64
	out          string
	testFraction float64
	rowGroupRows int
	fileRows     int64
	workers      int
	force        bool
	asJSON       bool
}

func newGenCmd(g *globals) *cobra.Command {
	opts := &genOptions{}
	cmd := &cobra.Command{
		Use:   "gen --preset NAME --out DIR",
		Short: "Write a synthetic, skewed, Criteo-shaped dataset with a known true model",
		Long: `gen writes a synthetic click log whose embedding accesses are skewed like real
ones (per-table Zipf-like popularity, popular IDs spread over each table) and
whose labels come from a planted model (a bias, dense terms, per-ID effects and
low-rank interactions between tables), calibrated to the preset's click rate.
The true click probability is written as p_true, so reports can show how close
a trained model gets to the best possible AUC.

It writes DIR/train/*.parquet, DIR/test/*.parquet and DIR/dataset.yaml, the
data config the other commands read with --data DIR. The same arguments always
give byte-identical files.`,
		Example: `  picasso gen --preset demo --out data
  picasso gen --preset kaggle --scale 0.05 --rows 5000000 --seed 7 --out kaggle5m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.out == "" {
				return usageErrorf("gen: --out is required")
			}
			if !slices.Contains(gen.Presets(), opts.preset) {
				return usageErrorf("gen: unknown --preset %q; the presets are %s", opts.preset, strings.Join(gen.Presets(), ", "))
			}
			return runGen(cmd, g, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.preset, "preset", "demo", fmt.Sprintf("table sizes, skew and click rate to imitate: %v", gen.Presets()))
	f.Float64Var(&opts.scale, "scale", 1, "multiply every table's row count by this factor (e.g. 0.05 for a laptop-sized kaggle)")
	f.Int64Var(&opts.rows, "rows", 0, "rows to write, train and test together (0: the preset's default)")
	f.Uint64Var(&opts.seed, "seed", 1, "random seed; the same seed gives the same bytes")
	f.StringVar(&opts.out, "out", "", "output directory (required)")
	f.Float64Var(&opts.testFraction, "test-fraction", 0.1, "share of rows written to DIR/test")
	f.IntVar(&opts.rowGroupRows, "row-group-rows", 65536, "rows per Parquet row group")
	f.Int64Var(&opts.fileRows, "file-rows", 1<<20, "rows per Parquet file")
	f.IntVar(&opts.workers, "workers", 0, "generator goroutines (0: one per core)")
	f.BoolVar(&opts.force, "force", false, "replace data already in --out")
	f.BoolVar(&opts.asJSON, "json", false, "print the result (rows, click rate, oracle AUC) as JSON on stdout instead of a summary")
	return cmd
}

func runGen(cmd *cobra.Command, g *globals, opts *genOptions) error {
	ctx := cmd.Context()
	bar := g.newProgress(opts.rows, "gen", false)
	res, err := gen.Run(ctx, gen.Options{
		Preset: opts.preset, Scale: opts.scale, Rows: opts.rows, Seed: opts.seed,
		OutDir: opts.out, TestFraction: opts.testFraction, RowGroupRows: opts.rowGroupRows,
		FileRows: opts.fileRows, Workers: opts.workers, Overwrite: opts.force,
		Progress: bar.set,
	})
	bar.finish()
	if err != nil {
		return err
	}
	c := config.Default()
	c.Data = res.Spec
	if m, ok := gen.PresetModel(opts.preset); ok {
		c.Model.EmbeddingDim, c.Model.BottomMLP, c.Model.TopMLP = m.EmbeddingDim, m.BottomMLP, m.TopMLP
	}
	if err := writeDatasetConfig(filepath.Join(opts.out, datasetFile), &c); err != nil {
		return err
	}
	if opts.asJSON {
		return printJSON(g.stdout, genResult{Preset: opts.preset, Seed: opts.seed, Out: opts.out, TrainRows: res.TrainRows, TestRows: res.TestRows,
			ClickRate: res.CTR, OracleAUC: train.Number(res.OracleAUC), Seconds: res.Seconds, RowsPerS: res.RowsPerSecond,
			DatasetConfig: filepath.Join(opts.out, datasetFile)})
	}
	fmt.Fprintf(g.stdout, "gen: wrote %d train and %d test rows to %s in %.1fs (%.0f rows/s)\n",
		res.TrainRows, res.TestRows, opts.out, res.Seconds, res.RowsPerSecond)
	fmt.Fprintf(g.stdout, "gen: click rate %.4f, oracle AUC of p_true on test %.4f; data config %s\n",
		res.CTR, res.OracleAUC, filepath.Join(opts.out, datasetFile))
	return nil
}

// genResult is gen's --json output.
type genResult struct {
	Preset        string       `json:"preset"`
	Seed          uint64       `json:"seed"`
	Out           string       `json:"out"`
	TrainRows     int64        `json:"train_rows"`
	TestRows      int64        `json:"test_rows"`
	ClickRate     float64      `json:"click_rate"`
	OracleAUC     train.Number `json:"oracle_auc"` // of p_true on the test split
	Seconds       float64      `json:"seconds"`
	RowsPerS      float64      `json:"rows_per_s"`
	DatasetConfig string       `json:"dataset_config"`
}

// writeDatasetConfig writes a dataset.yaml: the data section with paths
// relative to the file, and a default model that suits the data.
func writeDatasetConfig(path string, c *config.Config) error {
	dir := filepath.Dir(path)
	cp := *c
	for _, p := range []*string{&cp.Data.Train, &cp.Data.Test, &cp.Data.Valid} {
		if *p != "" && filepath.IsAbs(*p) {
			if rel, err := filepath.Rel(dir, *p); err == nil {
				*p = rel
			}
		}
	}
	type datasetYAML struct {
		Data  dataset.Spec `yaml:"data"`
		Model config.Model `yaml:"model"`
	}
	b, err := configYAMLOf(datasetYAML{Data: cp.Data, Model: cp.Model})
	if err != nil {
		return err
	}
	header := []byte("# Data config written by picasso; pass the directory with --data, or this\n# file with --config. Later --config files (e.g. configs/rmc2-kaggle.yaml) override the model.\n")
	return atomicfile.WriteBytes(path, append(header, b...))
}
