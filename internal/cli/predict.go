package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/cobra"

	"github.com/picasso-ctr/picasso/pkg/config"
	"github.com/picasso-ctr/picasso/pkg/convert"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/score"
	"github.com/picasso-ctr/picasso/pkg/train"
)

// scoreOptions are the flags predict and eval share.
type scoreOptions struct {
	run    string
	best   bool
	data   string
	split  string
	format string
	out    string
	bins   int
	asJSON bool
}

// splits are the values of --split.
var splits = []string{"test", "train"}

func (o *scoreOptions) flags(cmd *cobra.Command, withOut bool) {
	f := cmd.Flags()
	f.StringVar(&o.run, "run", "", "run directory written by 'picasso train' (its checkpoint.bin and config.yaml) (required)")
	f.BoolVar(&o.best, "best", false, "use the run's best.bin (the model with the best validation log loss, written with --valid) instead of checkpoint.bin")
	f.StringVar(&o.data, "data", "", "what to score: a dataset directory (with dataset.yaml), a Parquet file or directory with the run's columns, or Criteo/Avazu/csv text with --format (required)")
	f.StringVar(&o.split, "split", "", "with a dataset directory: test or train (default: test when the dataset has one, else train)")
	f.StringVar(&o.format, "format", "", "--data is raw text of this format, criteo, avazu or csv (with the training log's column roles), converted with the ID mapping saved with the run")
	f.IntVar(&o.bins, "bins", score.DefaultBins, "calibration bins of equal width over [0, 1]")
	f.BoolVar(&o.asJSON, "json", false, "print the result as JSON on stdout instead of a summary")
	if withOut {
		f.StringVar(&o.out, "out", "", "Parquet file to write: row (input position), label, score, and p_true when the data has it (required)")
	}
	_ = cmd.RegisterFlagCompletionFunc("split", fixedCompletion(splits...))
	_ = cmd.RegisterFlagCompletionFunc("format", fixedCompletion("criteo", "avazu", "csv"))
}

func (o *scoreOptions) validate(cmd string, needOut bool) error {
	var errs []string
	if o.run == "" {
		errs = append(errs, "--run is required")
	}
	if o.data == "" {
		errs = append(errs, "--data is required")
	}
	if needOut && o.out == "" {
		errs = append(errs, "--out is required")
	}
	if o.split != "" && o.split != "test" && o.split != "train" {
		errs = append(errs, fmt.Sprintf("--split must be test or train, got %q", o.split))
	}
	if o.format != "" && o.format != "criteo" && o.format != "avazu" && o.format != "csv" {
		errs = append(errs, fmt.Sprintf("--format must be criteo, avazu or csv, got %q", o.format))
	}
	if o.bins < 1 {
		errs = append(errs, fmt.Sprintf("--bins must be >= 1, got %d", o.bins))
	}
	if len(errs) > 0 {
		return usageErrorf("%s: %s", cmd, strings.Join(errs, "; "))
	}
	return nil
}

func newPredictCmd(g *globals) *cobra.Command {
	opts := &scoreOptions{}
	cmd := &cobra.Command{
		Use:   "predict --run RUN --data PATH --out scores.parquet",
		Short: "Score data with a trained run; write one score per input row as Parquet",
		Long: `predict reads the model a 'picasso train' run saved (RUN/checkpoint.bin) and
scores every row of --data, in input order, with the kernels and batch size of
the run's own test evaluation: on the run's test split it reproduces the run's
test AUC exactly.

--data is a dataset directory (gen's or convert's; --split picks test or train),
a Parquet file or directory with the columns the run trained on, or, with
--format criteo, avazu or csv, raw labelled text in the layout of the training
logs, converted with the ID mapping (hash buckets or re-index vocabulary, and
for csv the column roles and standardize statistics) that convert saved and
train copied into the run.

--out receives a Parquet file with one row per input row: row (the 0-based
position in the input), label, score (the click probability) and p_true for
generated data. The metrics of 'picasso eval' are printed too.`,
		Example: `  picasso predict --run runs/fae --data data --out scores.parquet            # the test split
  picasso predict --run runs/criteo --data day_23.gz --format criteo --out day23.parquet`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.validate("predict", true); err != nil {
				return err
			}
			return runScore(cmd, g, opts, "predict")
		},
	}
	opts.flags(cmd, true)
	return cmd
}

func newEvalCmd(g *globals) *cobra.Command {
	opts := &scoreOptions{}
	cmd := &cobra.Command{
		Use:   "eval --run RUN --data PATH",
		Short: "Evaluate a trained run on labelled data: AUC, log loss, accuracy, calibration",
		Long: `eval scores --data with the model of a 'picasso train' run, as predict does,
and reports the AUC, the log loss, the accuracy (threshold 0.5), the oracle AUC
of generated data (its true click probability), and the calibration: the mean
score against the observed click rate, their ratio, the expected calibration
error (ECE) and a reliability table of --bins bins.`,
		Example: `  picasso eval --run runs/fae --data data
  picasso eval --run runs/fae --data data --split train --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.validate("eval", false); err != nil {
				return err
			}
			return runScore(cmd, g, opts, "eval")
		},
	}
	opts.flags(cmd, false)
	return cmd
}

// modelPath is the checkpoint predict, eval and export read: the final
// one, or with best the one of the best validation log loss.
func modelPath(run string, best bool) string {
	if best {
		return filepath.Join(run, train.BestFile)
	}
	return filepath.Join(run, train.CheckpointFile)
}

// runConfig reads a run's effective configuration (RUN/config.yaml).
func runConfig(run string) (*config.Config, error) {
	path := filepath.Join(run, "config.yaml")
	if _, err := os.Stat(path); err != nil {
		return nil, usageErrorf("--run %s: not a run directory (no config.yaml: %v)", run, err)
	}
	m, err := readConfigFile(path)
	if err != nil {
		return nil, err // a usage error naming the file
	}
	c := config.Default()
	if err := decodeConfig(m, &c); err != nil {
		return nil, usageErrorf("--run %s: %s: %v", run, path, err)
	}
	return &c, nil
}

// readSpec reads the data section of a dataset.yaml.
func readSpec(path string) (*dataset.Spec, error) {
	m, err := readConfigFile(path)
	if err != nil {
		return nil, err
	}
	var s dataset.Spec
	if d, ok := m["data"]; ok {
		if err := mapstructure.Decode(d, &s); err != nil {
			return nil, usageErrorf("%s: %v", path, err)
		}
	}
	return &s, nil
}

// scoreData opens what predict and eval score, checked against the model.
func scoreData(cmd *cobra.Command, g *globals, opts *scoreOptions, c *config.Config, m *train.Model) (*dataset.Dataset, func(), error) {
	none := func() {}
	if opts.format != "" {
		ds, cleanup, err := convertForScoring(cmd, g, opts, c)
		if err == nil {
			err = checkSpecFits(ds.Spec(), m)
		}
		return ds, cleanup, err
	}
	spec := c.Data
	path := opts.data
	if isLayout(path) {
		// Its hot parts hold slots, not IDs.
		return nil, none, usageErrorf("--data %s is a classify layout; pass the dataset it was made from, or %s for its test split", path, filepath.Join(path, "test"))
	}
	if st, err := os.Stat(path); err != nil {
		return nil, none, usageErrorf("--data %s: %v", path, err)
	} else if st.IsDir() && fileExists(filepath.Join(path, datasetFile)) {
		s, err := readSpec(filepath.Join(path, datasetFile))
		if err != nil {
			return nil, none, err
		}
		spec = *s
		split := opts.split
		if split == "" {
			split = "train"
			if spec.Test != "" {
				split = "test"
			}
		}
		path = spec.Train
		if split == "test" {
			if spec.Test == "" {
				return nil, none, usageErrorf("--data %s has no test split (dataset.yaml names none); pass --split train", opts.data)
			}
			path = spec.Test
		}
	} else if opts.split != "" {
		return nil, none, usageErrorf("--split needs a dataset directory (with %s); %s is none", datasetFile, opts.data)
	}
	if err := checkSpecFits(&spec, m); err != nil {
		return nil, none, err
	}
	ds, err := dataset.Open(&spec, path)
	return ds, none, err
}

// checkSpecFits reports data whose columns do not match the model's inputs.
func checkSpecFits(spec *dataset.Spec, m *train.Model) error {
	s := m.Shape
	got := train.ShapeOf(train.ModelOptions{Dim: s.Dim, Bottom: s.Bottom, Top: s.Top, Interaction: s.Interaction}, spec)
	if got.Dense != s.Dense || got.Features != s.Features || fmt.Sprint(got.TableRows) != fmt.Sprint(s.TableRows) {
		return fmt.Errorf("score: the data has %d dense and %d sparse features with tables of %v rows; the model was trained on %d and %d with %v: %w",
			got.Dense, got.Features, got.TableRows, s.Dense, s.Features, s.TableRows, dataset.ErrSchema)
	}
	return nil
}

// scoreResult is the JSON of predict and eval.
type scoreResult struct {
	Command     string           `json:"command"`
	Run         string           `json:"run"`
	Data        string           `json:"data"`
	Rows        int64            `json:"rows"`
	Positives   int64            `json:"positives"`
	AUC         train.Number     `json:"auc"`
	LogLoss     train.Number     `json:"logloss"`
	Accuracy    train.Number     `json:"accuracy"`
	OracleAUC   train.Number     `json:"oracle_auc"`
	Calibration calibrationJSON  `json:"calibration"`
	Out         string           `json:"out,omitempty"`
	Model       scoreResultModel `json:"model"`
}

type scoreResultModel struct {
	Mode  train.Mode `json:"mode"`
	Step  int64      `json:"step"`
	Batch int        `json:"batch_size"`
}

type calibrationJSON struct {
	MeanScore train.Number `json:"mean_score"`
	Rate      train.Number `json:"rate"`
	Ratio     train.Number `json:"ratio"`
	ECE       train.Number `json:"ece"`
	Bins      []binJSON    `json:"bins"`
}

type binJSON struct {
	Lo        float64      `json:"lo"`
	Hi        float64      `json:"hi"`
	Rows      int          `json:"rows"`
	MeanScore train.Number `json:"mean_score"`
	Rate      train.Number `json:"rate"`
}

func runScore(cmd *cobra.Command, g *globals, opts *scoreOptions, name string) error {
	ctx := cmd.Context()
	c, err := runConfig(opts.run)
	if err != nil {
		return err
	}
	m, err := train.ReadModel(modelPath(opts.run, opts.best))
	if err != nil {
		return err
	}
	ds, cleanup, err := scoreData(cmd, g, opts, c, m)
	defer cleanup()
	if err != nil {
		return err
	}
	host, err := g.newHostBackend(name, c)
	if err != nil {
		return err
	}
	defer host.Close()
	p, err := train.NewPredictor(m, host)
	if err != nil {
		return err
	}
	defer p.Close()
	bar := g.newProgress(ds.Rows(), name, false)
	res, err := score.Run(ctx, score.Options{Predictor: p, Data: ds, Out: opts.out, Bins: opts.bins,
		Progress: func(rows int64) { bar.set(rows, ds.Rows()) }})
	bar.finish()
	if err != nil {
		return err
	}
	out := scoreResult{Command: name, Run: opts.run, Data: opts.data, Rows: res.Rows, Positives: res.Positives,
		AUC: train.Number(res.AUC), LogLoss: train.Number(res.LogLoss), Accuracy: train.Number(res.Accuracy),
		OracleAUC: train.Number(res.OracleAUC), Out: res.Out,
		Model: scoreResultModel{Mode: m.Mode, Step: m.Step, Batch: m.BatchSize}}
	cal := res.Calibration
	out.Calibration = calibrationJSON{MeanScore: train.Number(cal.MeanScore), Rate: train.Number(cal.Rate),
		Ratio: train.Number(cal.Ratio), ECE: train.Number(cal.ECE)}
	for _, b := range cal.Bins {
		out.Calibration.Bins = append(out.Calibration.Bins, binJSON{Lo: b.Lo, Hi: b.Hi, Rows: b.Rows,
			MeanScore: train.Number(b.MeanScore), Rate: train.Number(b.Rate)})
	}
	if opts.asJSON {
		return printJSON(g.stdout, out)
	}
	printScore(g.stdout, name, &out)
	return nil
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printScore(w io.Writer, name string, r *scoreResult) {
	f := func(v train.Number, format string) string {
		if math.IsNaN(float64(v)) {
			return "n/a"
		}
		return fmt.Sprintf(format, float64(v))
	}
	fmt.Fprintf(w, "%s: %d rows (%d positive) scored with %s (%s mode, step %d)\n", name, r.Rows, r.Positives, r.Run, r.Model.Mode, r.Model.Step)
	fmt.Fprintf(w, "%s: AUC %s (oracle %s), log loss %s, accuracy %s\n", name,
		f(r.AUC, "%.6f"), f(r.OracleAUC, "%.6f"), f(r.LogLoss, "%.6f"), f(r.Accuracy, "%.6f"))
	cal := r.Calibration
	fmt.Fprintf(w, "%s: calibration: mean score %s against click rate %s (ratio %s), ECE %s\n", name,
		f(cal.MeanScore, "%.5f"), f(cal.Rate, "%.5f"), f(cal.Ratio, "%.3f"), f(cal.ECE, "%.5f"))
	if name == "eval" {
		fmt.Fprintf(w, "%s:   score bin      rows   mean score  click rate\n", name)
		for _, b := range cal.Bins {
			if b.Rows == 0 {
				continue
			}
			fmt.Fprintf(w, "%s:   [%.2f,%.2f) %9d   %10s  %10s\n", name, b.Lo, b.Hi, b.Rows, f(b.MeanScore, "%.5f"), f(b.Rate, "%.5f"))
		}
	}
	if r.Out != "" {
		fmt.Fprintf(w, "%s: wrote %s\n", name, r.Out)
	}
}

// convertForScoring converts raw text with the run's ID mapping into a
// temporary directory, removed by the returned function.
func convertForScoring(cmd *cobra.Command, g *globals, opts *scoreOptions, c *config.Config) (*dataset.Dataset, func(), error) {
	none := func() {}
	mpath := filepath.Join(opts.run, convert.MappingFile)
	if !fileExists(mpath) {
		return nil, none, usageErrorf("--format %s: the run %s has no %s (it was not trained on data from 'picasso convert'); convert the text yourself and pass the Parquet", opts.format, opts.run, convert.MappingFile)
	}
	m, err := convert.ReadMapping(mpath)
	if err != nil {
		return nil, none, err
	}
	if m.Format != opts.format {
		return nil, none, usageErrorf("--format %s: the run was trained on %s data", opts.format, m.Format)
	}
	tmp, err := os.MkdirTemp("", "picasso-score-*")
	if err != nil {
		return nil, none, err
	}
	cleanup := func() { os.RemoveAll(tmp) }
	bar := g.newProgress(0, "convert", true)
	res, err := convert.Run(cmd.Context(), convert.Options{Format: opts.format, Inputs: []string{opts.data}, OutDir: tmp, Mapping: m})
	bar.finish()
	if err != nil {
		return nil, cleanup, err
	}
	spec := res.Spec
	spec.Train = filepath.Join(tmp, spec.Train)
	ds, err := dataset.Open(&spec, spec.Train)
	return ds, cleanup, err
}

// fixedCompletion completes a flag with a fixed list of values.
func fixedCompletion(values ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}
