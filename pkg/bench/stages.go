package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/picasso-ctr/picasso/pkg/classify"
	"github.com/picasso-ctr/picasso/pkg/convert"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/profile"
)

// StagesOptions configures RunStages, which times the data stages (profile
// at several sample rates, classify and, given text inputs, convert) on one
// dataset, alternating them round by round so that every stage sees the
// same machine load.
type StagesOptions struct {
	// Rates are the profile sample rates to time, in percent (default 1,
	// 5, 20, 100).
	Rates []float64
	// Rounds is how many times every stage runs (default 3).
	Rounds int
	// Profile is the base profile configuration; SampleRate is set per
	// stage. The classify stage uses the hot set of the 5% profile (or of
	// the first rate when 5 is not among Rates).
	Profile profile.Options
	// Classify configures the classify stage; Force is always set.
	Classify classify.Options
	// Scratch is a directory for the stages' outputs (required); every
	// output is removed after its stage.
	Scratch string
	// ConvertInputs are text files for the convert stage (Criteo format,
	// hashed IDs); none: convert is not timed.
	ConvertInputs []string
}

// Validate reports unusable options.
func (o StagesOptions) Validate() error {
	if o.Scratch == "" {
		return fmt.Errorf("bench: stages: a scratch directory is required: %w", ErrInvalidOptions)
	}
	if o.Rounds < 0 {
		return fmt.Errorf("bench: stages: rounds %d < 0: %w", o.Rounds, ErrInvalidOptions)
	}
	for _, r := range o.Rates {
		if !(r > 0 && r <= 100) {
			return fmt.Errorf("bench: stages: sample rate %v%% is not in (0, 100]: %w", r, ErrInvalidOptions)
		}
	}
	return nil
}

func (o StagesOptions) withDefaults() StagesOptions {
	if len(o.Rates) == 0 {
		o.Rates = []float64{1, 5, 20, 100}
	}
	o.Rounds = cmp.Or(o.Rounds, 3)
	return o
}

// StageTiming is one timed run of one stage.
type StageTiming struct {
	Stage   string  `json:"stage"`
	Round   int     `json:"round"`
	Seconds float64 `json:"seconds"`
	// Rows is the rows (convert: lines) the stage went through: the
	// dataset's rows for profile whatever the rate, so that rows/s compare
	// with the exact pass.
	Rows int64 `json:"rows"`
}

// RunStages times the stages of opts on ds, round by round: in each round
// every profile rate, then classify, then convert run once.
func RunStages(ctx context.Context, ds *dataset.Dataset, opts StagesOptions) ([]StageTiming, error) {
	opts = opts.withDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.Scratch, 0o755); err != nil {
		return nil, fmt.Errorf("bench: stages: %w", err)
	}
	hotRate := opts.Rates[0]
	if slices.Contains(opts.Rates, 5) {
		hotRate = 5
	}
	var out []StageTiming
	for round := 1; round <= opts.Rounds; round++ {
		var hotRes *profile.Result
		var hotLog *profile.Logger
		for _, rate := range opts.Rates {
			po := opts.Profile
			po.SampleRate = rate
			// The pair is part of the stage: profile writes it on every
			// run, the counts while the analysis runs.
			jp, cp := filepath.Join(opts.Scratch, "profile.json"), filepath.Join(opts.Scratch, "profile.counts")
			start := time.Now()
			res, lg, err := profile.RunAndWrite(ctx, ds, po, jp, cp)
			if err != nil {
				return nil, fmt.Errorf("bench: stages: profile at %v%%: %w", rate, err)
			}
			out = append(out, StageTiming{Stage: fmt.Sprintf("profile %v%%", rate), Round: round, Seconds: time.Since(start).Seconds(), Rows: ds.Rows()})
			os.Remove(jp)
			os.Remove(cp)
			if rate == hotRate {
				hotRes, hotLog = res, lg
			}
		}
		hot, err := classify.HotSetFromProfile(hotRes, hotLog, ds.Spec())
		if err != nil {
			return nil, fmt.Errorf("bench: stages: %w", err)
		}
		co := opts.Classify
		co.Force = true
		dir := filepath.Join(opts.Scratch, "fae")
		start := time.Now()
		if _, err := classify.Run(ctx, ds, hot, dir, co); err != nil {
			return nil, fmt.Errorf("bench: stages: classify: %w", err)
		}
		out = append(out, StageTiming{Stage: "classify", Round: round, Seconds: time.Since(start).Seconds(), Rows: ds.Rows()})
		if err := os.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("bench: stages: %w", err)
		}
		if len(opts.ConvertInputs) > 0 {
			dir := filepath.Join(opts.Scratch, "convert")
			start := time.Now()
			res, err := convert.Run(ctx, convert.Options{Format: "criteo", Inputs: opts.ConvertInputs, OutDir: dir, IDs: "hash"})
			if err != nil {
				return nil, fmt.Errorf("bench: stages: convert: %w", err)
			}
			out = append(out, StageTiming{Stage: "convert (hash)", Round: round, Seconds: time.Since(start).Seconds(), Rows: res.Rows + res.Skipped})
			if err := os.RemoveAll(dir); err != nil {
				return nil, fmt.Errorf("bench: stages: %w", err)
			}
		}
	}
	return out, nil
}

// WriteStages writes timings as a Markdown table: one line per stage, every
// round's seconds, the median, and rows per second at the median.
func WriteStages(w io.Writer, ts []StageTiming) error {
	var order []string
	by := map[string][]StageTiming{}
	for _, t := range ts {
		if _, ok := by[t.Stage]; !ok {
			order = append(order, t.Stage)
		}
		by[t.Stage] = append(by[t.Stage], t)
	}
	var b strings.Builder
	b.WriteString("| stage | seconds per round | median s | rows/s at median |\n|---|---|---:|---:|\n")
	for _, st := range order {
		runs := by[st]
		secs := make([]string, len(runs))
		vals := make([]float64, len(runs))
		for i, r := range runs {
			secs[i] = fmt.Sprintf("%.3f", r.Seconds)
			vals[i] = r.Seconds
		}
		med := vals[medianIndex(vals)]
		rate := 0.0
		if med > 0 {
			rate = float64(runs[0].Rows) / med
		}
		fmt.Fprintf(&b, "| %s | %s | %.3f | %.0f |\n", st, strings.Join(secs, " / "), med, rate)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
