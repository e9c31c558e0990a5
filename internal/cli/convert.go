package cli

import (
	"cmp"
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
	force        bool
	rowGroupRows int
	fileRows     int64
	asJSON       bool

	// csv column roles
	columnsFile    string
	delimiter      string
	label          string
	dense          []string
	sparse         []string
	multiHot       []string
	timeCol        string
	timeFormat     string
	ignore         []string
	ignoreUnlisted bool

	// splits
	split     string
	splitBy   string
	splitSeed uint64
}

// columnFlags are the flags that give csv column roles.
var columnFlags = []string{"columns", "delimiter", "label", "dense", "sparse", "multi-hot", "time", "time-format", "ignore", "ignore-unlisted"}

func newConvertCmd(g *globals) *cobra.Command {
	opts := &convertOptions{}
	cmd := &cobra.Command{
		Use:   "convert --format criteo|avazu|csv --in PATH... --out DIR",
		Short: "Turn Criteo TSV, Avazu CSV or any delimited click log into picasso's Parquet layout",
		Long: `convert streams click-log text (plain or gzip) into Parquet that the other
commands read, and writes DIR/dataset.yaml describing it.

Criteo (Kaggle train.txt, Terabyte day_N, or CSV with a header): label, 13
integer features (missing -> 0, negatives -> 0, then log(1+x)) and 26 hex
categorical features (missing -> a reserved ID). Avazu CSV: click is the label,
hour is split into hour of day and weekday, and the 21 categorical fields
become sparse features.

csv is any delimited log with a header line (delimiter detected from the
header, or --delimiter). Each column gets a role, by flags or by a YAML file
(--columns, see configs/talkingdata-columns.yaml; flags add to it, and
--label, --delimiter, --time and --time-format override it):
  --label COL             the 0/1 label (0.0/1.0 accepted)
  --dense COL[:T]         a number, T = none (default, as is), log1p
                          (log(1+max(x,0))) or standardize ((x-mean)/std of
                          the training rows; one more pass); empty -> 0
  --sparse COL            a categorical value, any string; empty -> missing
  --multi-hot COL:SEP     categorical values joined by SEP (one byte)
  --time COL              a time, written as --time-format says; it becomes
                          the dense features COL_hour and COL_weekday and is
                          the column --split-by may name
  --ignore COL            a column to drop (e.g. one that leaks the label)
A header column with no role is an error unless --ignore-unlisted; a column
named by a role but absent from a header is an error too. A field may be
quoted ("a,b"; a doubled quote inside is kept as it is), but not across lines.
Tables are numbered
--sparse first, then --multi-hot, for --rows and in dataset.yaml.

--split train=0.8,valid=0.1,test=0.1 divides the rows of --in into DIR/train,
DIR/valid and DIR/test (parts may be left out; train is required). A row's
part comes from a hash of its text seeded by --split-seed (equal lines go to
the same part), or, with --split-by TIME_COLUMN, from its rank in time: the
earliest rows go to train, the latest to test (rows of equal time are ordered
by the hash; this costs one more pass over the input). --split-by names the
csv --time column or Avazu's hour; Criteo logs have no time column.
dataset.yaml lists the parts as data.train, data.valid and data.test.

Categorical values become table rows either by hashing into --rows buckets per
table (one pass) or by re-indexing to contiguous IDs in order of first
appearance (--ids reindex, two passes; the per-table counts are printed and
written to dataset.yaml).

A line with the wrong number of fields or a value that does not parse stops
the conversion with the file, line number and field; --skip-bad-rows skips and
counts such lines instead. Errors name the file, line, field and column.`,
		Example: `  picasso convert --format criteo --in day_0.gz --in day_1.gz --test-in day_23.gz --out tb
  picasso convert --format avazu --in train.csv --ids reindex --out avazu
  picasso convert --format csv --in talkingdata.csv --label is_attributed \
      --sparse ip,app,device,os,channel --time click_time --ignore attributed_time \
      --split train=0.8,test=0.2 --split-by click_time --out td
  picasso convert --format csv --columns configs/talkingdata-columns.yaml --in talkingdata.csv \
      --split train=0.8,valid=0.1,test=0.1 --out td`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var errs []string
			switch opts.format {
			case "criteo", "avazu":
				for _, name := range columnFlags {
					if cmd.Flags().Changed(name) {
						errs = append(errs, fmt.Sprintf("--%s applies to --format csv only", name))
					}
				}
			case "csv":
			default:
				errs = append(errs, fmt.Sprintf("--format must be criteo, avazu or csv, got %q", opts.format))
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
	f.StringVar(&opts.format, "format", "criteo", "input format: criteo (TSV, or CSV with a header), avazu (CSV with a header) or csv (any delimited log with a header; roles by flags or --columns)")
	f.StringArrayVar(&opts.in, "in", nil, "training input file, plain or gzip; may repeat")
	f.StringArrayVar(&opts.testIn, "test-in", nil, "test input file converted to DIR/test with the same ID mapping; may repeat")
	f.StringVar(&opts.out, "out", "", "output directory (required)")
	f.StringVar(&opts.ids, "ids", "hash", "hash: hash values into --rows buckets per table; reindex: contiguous IDs by first appearance")
	f.Int64SliceVar(&opts.rows, "rows", nil, "buckets per table with --ids hash: one number for every table, or one per table, comma-separated")
	f.Lookup("rows").DefValue = fmt.Sprint(convert.DefaultRows) // the nil slice would show as []
	f.IntVar(&opts.minCount, "min-count", 1, "with --ids reindex, values seen fewer times share one ID")
	f.BoolVar(&opts.skipBad, "skip-bad-rows", false, "skip and count malformed lines instead of stopping")
	f.BoolVar(&opts.force, "force", false, "replace a dataset already in --out, removing what was made from it (dataset.yaml, ids.json, profile.json, profile.counts, fae/)")
	f.IntVar(&opts.rowGroupRows, "row-group-rows", 65536, "rows per Parquet row group")
	f.Int64Var(&opts.fileRows, "file-rows", 1<<20, "rows per Parquet file")
	f.StringVar(&opts.columnsFile, "columns", "", "csv: YAML file of column roles (keys delimiter, label, dense, sparse, multi_hot, time, time_format, ignore, ignore_unlisted)")
	f.StringVar(&opts.delimiter, "delimiter", "", "csv: field delimiter, one byte or 'tab' (default: the most frequent of , tab ; | in the header)")
	f.StringVar(&opts.label, "label", "", "csv: the 0/1 label column")
	f.StringSliceVar(&opts.dense, "dense", nil, "csv: dense column COL or COL:TRANSFORM (none, log1p, standardize); comma-separated or repeated")
	f.StringSliceVar(&opts.sparse, "sparse", nil, "csv: categorical column; comma-separated or repeated")
	f.StringArrayVar(&opts.multiHot, "multi-hot", nil, "csv: multi-hot column COL:SEP, values joined by the one-byte SEP; may repeat")
	f.StringVar(&opts.timeCol, "time", "", "csv: time column; becomes dense COL_hour and COL_weekday, and may be --split-by")
	f.StringVar(&opts.timeFormat, "time-format", "", "csv: how --time is written: unix, unix_ms, yymmddhh or a Go layout (default \""+convert.DefaultTimeFormat+"\")")
	f.StringSliceVar(&opts.ignore, "ignore", nil, "csv: column to drop; comma-separated or repeated")
	f.BoolVar(&opts.ignoreUnlisted, "ignore-unlisted", false, "csv: drop header columns without a role instead of failing")
	f.StringVar(&opts.split, "split", "", "split --in into parts: train=F[,valid=F][,test=F], fractions summing to 1 (default: all rows to train)")
	f.StringVar(&opts.splitBy, "split-by", "", "with --split, the time column to split by (csv --time column, or avazu's hour): earliest rows to train, latest to test")
	f.Uint64Var(&opts.splitSeed, "split-seed", 1, "seed of the row hash that assigns --split parts (and orders rows of equal time)")
	f.BoolVar(&opts.asJSON, "json", false, "print the result (rows, skipped lines, distinct values per table) as JSON on stdout instead of a summary")
	return cmd
}

func runConvert(cmd *cobra.Command, g *globals, opts *convertOptions) error {
	if err := checkOutNotInput("convert", opts.out, append(append([]string(nil), opts.in...), opts.testIn...)...); err != nil {
		return err
	}
	release, err := lockOutput("convert", opts.out)
	if err != nil {
		return err
	}
	defer release()
	if err := removeTemps("convert", tempsIn(opts.out, "train", "valid", "test", datasetFile, convert.MappingFile)...); err != nil {
		return err
	}
	copts := convert.Options{
		Format: opts.format, Inputs: opts.in, TestInputs: opts.testIn, OutDir: opts.out,
		IDs: opts.ids, Rows: opts.rows, MinCount: opts.minCount, SkipBad: opts.skipBad,
		RowGroupRows: opts.rowGroupRows, FileRows: opts.fileRows,
		SplitBy: opts.splitBy, SplitSeed: opts.splitSeed, Overwrite: opts.force,
	}
	if opts.format == "csv" {
		cols, err := opts.columns()
		if err != nil {
			return err
		}
		copts.Columns = cols
	}
	if opts.split != "" {
		parts, err := convert.ParseSplit(opts.split)
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		copts.Split = parts
	}
	if err := copts.Validate(); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	bar := g.newProgress(0, "convert: input", true)
	copts.Progress = bar.set
	res, err := convert.Run(cmd.Context(), copts)
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
	first := ""
	if res.FirstSkipped != nil {
		first = res.FirstSkipped.Where()
	}
	if opts.asJSON {
		return printJSON(g.stdout, convertResult{Format: opts.format, IDs: res.Mapping.IDs, Out: opts.out,
			TrainRows: res.Rows, ValidRows: res.ValidRows, TestRows: res.TestRows, Skipped: res.Skipped, TestSkipped: res.TestSkipped,
			FirstSkipped: first,
			Distinct:     res.Counts, DistinctExact: res.CountsExact, TableRows: res.Mapping.Rows,
			Standardized: res.Standardized,
			Seconds:      res.Seconds, RowsPerS: res.RowsPerSecond,
			DatasetConfig: filepath.Join(opts.out, datasetFile), Mapping: filepath.Join(opts.out, convert.MappingFile)})
	}
	fmt.Fprintf(g.stdout, "convert: %d train rows, %d valid rows, %d test rows, %d bad lines skipped, %.1fs (%.0f rows/s)\n",
		res.Rows, res.ValidRows, res.TestRows, res.Skipped+res.TestSkipped, res.Seconds, res.RowsPerSecond)
	if first != "" {
		// Where to look: the count alone left the user to find them.
		fmt.Fprintf(g.stdout, "convert: the first bad line skipped: %s\n", first)
	}
	fmt.Fprintf(g.stdout, "convert: distinct values per table: %s\n", joinInts(res.Counts))
	for _, st := range res.Standardized {
		fmt.Fprintf(g.stdout, "convert: standardized %s with mean %g, std %g (training rows)\n", st.Name, st.Mean, st.Std)
	}
	fmt.Fprintf(g.stdout, "convert: data config %s\n", filepath.Join(opts.out, datasetFile))
	return nil
}

// columns builds the csv column roles: the --columns file, if any, then the
// flags (which add roles, and override the label, delimiter and time).
func (o *convertOptions) columns() (*convert.Columns, error) {
	c := &convert.Columns{}
	if o.columnsFile != "" {
		var err error
		if c, err = convert.ReadColumns(o.columnsFile); err != nil {
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
	}
	c.Label = cmp.Or(o.label, c.Label)
	c.Delimiter = cmp.Or(o.delimiter, c.Delimiter)
	c.Time = cmp.Or(o.timeCol, c.Time)
	c.TimeFormat = cmp.Or(o.timeFormat, c.TimeFormat)
	c.Dense = append(c.Dense, o.dense...)
	c.Sparse = append(c.Sparse, o.sparse...)
	c.MultiHot = append(c.MultiHot, o.multiHot...)
	c.Ignore = append(c.Ignore, o.ignore...)
	c.IgnoreUnlisted = c.IgnoreUnlisted || o.ignoreUnlisted
	return c, nil
}

// convertResult is convert's --json output.
type convertResult struct {
	Format        string  `json:"format"`
	IDs           string  `json:"ids"`
	Out           string  `json:"out"`
	TrainRows     int64   `json:"train_rows"`
	ValidRows     int64   `json:"valid_rows"`
	TestRows      int64   `json:"test_rows"`
	Skipped       int64   `json:"skipped_lines"`
	TestSkipped   int64   `json:"test_skipped_lines"`
	FirstSkipped  string  `json:"first_skipped,omitempty"` // file, line, field and why
	Distinct      []int64 `json:"distinct_values"`
	DistinctExact []bool  `json:"distinct_exact"`
	TableRows     []int64 `json:"table_rows"`
	Seconds       float64 `json:"seconds"`
	RowsPerS      float64 `json:"rows_per_s"`
	DatasetConfig string  `json:"dataset_config"`
	Mapping       string  `json:"id_mapping"`
	// Standardized lists the mean and std of each standardized csv column.
	Standardized []convert.DenseStats `json:"standardized,omitempty"`
}

func joinInts(v []int64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, "-")
}
