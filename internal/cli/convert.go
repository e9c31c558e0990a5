package cli

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/picasso-ctr/picasso/pkg/config"
	"github.com/picasso-ctr/picasso/pkg/convert"
)

type convertOptions struct {
	format       string
	in           []string
	testIn       []string
	out          string
	ids          string
	rows         []int64
	minCount     int
	skipBad      bool
	rowGroupRows int
	fileRows     int64
	asJSON       bool
}

func newConvertCmd(g *globals) *cobra.Command {
	opts := &convertOptions{}
	cmd := &cobra.Command{
		Use:   "convert --format criteo|avazu --in PATH... --out DIR",
		Short: "Turn Criteo TSV or Avazu CSV click logs into picasso's Parquet layout",
		Long: `convert streams click-log text (plain or gzip) into Parquet that the other
commands read, and writes DIR/dataset.yaml describing it.

Criteo (Kaggle train.txt, Terabyte day_N, or CSV with a header): label, 13
integer features (missing -> 0, negatives -> 0, then log(1+x)) and 26 hex
categorical features (missing -> a reserved ID). Avazu CSV: click is the label,
hour is split into hour of day and weekday, and the 21 categorical fields
become sparse features.

Categorical values become table rows either by hashing into --rows buckets per
table (one pass) or by re-indexing to contiguous IDs in order of first
appearance (--ids reindex, two passes; the per-table counts are printed and
written to dataset.yaml).

A line with the wrong number of fields or a value that does not parse stops
the conversion with the file, line number and field; --skip-bad-rows skips and
counts such lines instead.`,
		Example: `  picasso convert --format criteo --in day_0.gz --in day_1.gz --test-in day_23.gz --out tb
  picasso convert --format avazu --in train.csv --ids reindex --out avazu`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var errs []string
			if opts.format != "criteo" && opts.format != "avazu" {
				errs = append(errs, fmt.Sprintf("--format must be criteo or avazu, got %q", opts.format))
			}
			if len(opts.in) == 0 {
				errs = append(errs, "--in is required")
			}
			if opts.out == "" {
				errs = append(errs, "--out is required")
			}
			if opts.ids != "hash" && opts.ids != "reindex" {
				errs = append(errs, fmt.Sprintf("--ids must be hash or reindex, got %q", opts.ids))
			}
			if len(errs) > 0 {
				return usageErrorf("convert: %s", strings.Join(errs, "; "))
			}
			return runConvert(cmd, g, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.format, "format", "criteo", "input format: criteo (TSV, or CSV with a header) or avazu (CSV with a header)")
	f.StringArrayVar(&opts.in, "in", nil, "training input file, plain or gzip; may repeat")
	f.StringArrayVar(&opts.testIn, "test-in", nil, "test input file converted to DIR/test with the same ID mapping; may repeat")
	f.StringVar(&opts.out, "out", "", "output directory (required)")
	f.StringVar(&opts.ids, "ids", "hash", "hash: hash values into --rows buckets per table; reindex: contiguous IDs by first appearance")
	f.Int64SliceVar(&opts.rows, "rows", nil, "buckets per table with --ids hash: one number for every table, or one per table, comma-separated")
	f.Lookup("rows").DefValue = fmt.Sprint(convert.DefaultRows) // the nil slice would show as []
	f.IntVar(&opts.minCount, "min-count", 1, "with --ids reindex, values seen fewer times share one ID")
	f.BoolVar(&opts.skipBad, "skip-bad-rows", false, "skip and count malformed lines instead of stopping")
	f.IntVar(&opts.rowGroupRows, "row-group-rows", 65536, "rows per Parquet row group")
	f.Int64Var(&opts.fileRows, "file-rows", 1<<20, "rows per Parquet file")
	f.BoolVar(&opts.asJSON, "json", false, "print the result (rows, skipped lines, distinct values per table) as JSON on stdout instead of a summary")
	return cmd
}

func runConvert(cmd *cobra.Command, g *globals, opts *convertOptions) error {
	bar := g.newProgress(0, "convert: input", true)
	res, err := convert.Run(cmd.Context(), convert.Options{
		Format: opts.format, Inputs: opts.in, TestInputs: opts.testIn, OutDir: opts.out,
		IDs: opts.ids, Rows: opts.rows, MinCount: opts.minCount, SkipBad: opts.skipBad,
		RowGroupRows: opts.rowGroupRows, FileRows: opts.fileRows,
		Progress: bar.set,
	})
	bar.finish()
	if err != nil {
		return err
	}
	c := config.Default()
	c.Data = res.Spec
	if err := writeDatasetConfig(filepath.Join(opts.out, datasetFile), &c); err != nil {
		return err
	}
	if err := convert.WriteMapping(filepath.Join(opts.out, convert.MappingFile), res.Mapping); err != nil {
		return err
	}
	if opts.asJSON {
		return printJSON(g.stdout, convertResult{Format: opts.format, IDs: res.Mapping.IDs, Out: opts.out,
			TrainRows: res.Rows, TestRows: res.TestRows, Skipped: res.Skipped, TestSkipped: res.TestSkipped,
			Distinct: res.Counts, DistinctExact: res.CountsExact, TableRows: res.Mapping.Rows,
			Seconds: res.Seconds, RowsPerS: res.RowsPerSecond,
			DatasetConfig: filepath.Join(opts.out, datasetFile), Mapping: filepath.Join(opts.out, convert.MappingFile)})
	}
	fmt.Fprintf(g.stdout, "convert: %d train rows, %d test rows, %d bad lines skipped, %.1fs (%.0f rows/s)\n",
		res.Rows, res.TestRows, res.Skipped, res.Seconds, res.RowsPerSecond)
	fmt.Fprintf(g.stdout, "convert: distinct values per table: %s\n", joinInts(res.Counts))
	fmt.Fprintf(g.stdout, "convert: data config %s\n", filepath.Join(opts.out, datasetFile))
	return nil
}

// convertResult is convert's --json output.
type convertResult struct {
	Format        string  `json:"format"`
	IDs           string  `json:"ids"`
	Out           string  `json:"out"`
	TrainRows     int64   `json:"train_rows"`
	TestRows      int64   `json:"test_rows"`
	Skipped       int64   `json:"skipped_lines"`
	TestSkipped   int64   `json:"test_skipped_lines"`
	Distinct      []int64 `json:"distinct_values"`
	DistinctExact []bool  `json:"distinct_exact"`
	TableRows     []int64 `json:"table_rows"`
	Seconds       float64 `json:"seconds"`
	RowsPerS      float64 `json:"rows_per_s"`
	DatasetConfig string  `json:"dataset_config"`
	Mapping       string  `json:"id_mapping"`
}

func joinInts(v []int64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, "-")
}
