package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/picasso-ctr/picasso/pkg/atomicfile"
	"github.com/picasso-ctr/picasso/pkg/classify"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/layout"
	"github.com/picasso-ctr/picasso/pkg/profile"
)

// Files of a preparation directory.
const (
	PrepFile    = "prep.json"
	ProfileFile = "profile.json"
	CountsFile  = "profile.counts"
	LayoutDir   = "fae"
)

// PrepOptions says how Prepare profiles and classifies the data.
type PrepOptions struct {
	// Dir receives prep.json (the fingerprints of what was made from what),
	// profile.json, profile.counts, the layout fae/ and, with TestRows, the
	// test subset test-N/.
	Dir string
	// Profile configures the profile (its Progress is set by Prepare).
	Profile profile.Options
	// Classify configures the layout: BatchSize, Seed and EmbeddingDim
	// decide it; Workers, Version and Progress are passed on; Force,
	// Threshold and ProfileFingerprint are set by Prepare.
	Classify classify.Options
	// Test is the test split to evaluate on; nil uses the layout's copy of
	// it. (The dataset's own split keeps its p_true column, so the report
	// can show the oracle AUC.)
	Test *dataset.Dataset
	// TestRows, when > 0 and smaller than the test split, makes the bench
	// evaluate on a copy of the split's first TestRows rows.
	TestRows int64
	// Logf, when set, receives one line per stage: run or reused.
	Logf func(format string, args ...any)
	// Progress, when set, is called with the stage ("profile", "classify",
	// "test") and its progress.
	Progress func(stage string, done, total int64)
}

// Prepared is what Prepare made or found.
type Prepared struct {
	ProfilePath string
	Profile     *profile.Result
	LayoutDir   string
	Layout      *layout.Layout
	// Test is the test set the bench evaluates on: the layout's copy of the
	// test split, or the first TestRows rows of it.
	Test     *dataset.Dataset
	TestPath string
	// TestRowsTotal is the number of rows of the whole test split.
	TestRowsTotal int64
	// Reused reports, per stage, whether an up-to-date output was reused.
	Reused map[string]bool
}

// prepRecord is the content of prep.json: the key of each stage's output,
// a digest of everything the output depends on.
type prepRecord struct {
	Version         int    `json:"version"`
	DataFingerprint string `json:"data_fingerprint"`
	ProfileKey      string `json:"profile_key,omitempty"`
	ClassifyKey     string `json:"classify_key,omitempty"`
	TestKey         string `json:"test_key,omitempty"`
	TestRows        int64  `json:"test_rows,omitempty"`
}

const prepVersion = 1

func digest(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic("bench: digest: " + err.Error()) // only plain data is digested
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:12])
}

// Prepare makes sure opts.Dir holds a profile and a FAE layout of ds made
// with the given settings, running profile and classify only when an output
// is missing or stale: its record in prep.json was made from a dataset with
// another fingerprint (file names, sizes and row-group row counts) or with
// other settings. A crash leaves no output that passes for complete:
// prep.json is updated after each stage, and classify writes its layout
// under a temporary name.
func Prepare(ctx context.Context, ds *dataset.Dataset, opts PrepOptions) (*Prepared, error) {
	if opts.Dir == "" {
		return nil, fmt.Errorf("bench: no preparation directory: %w", ErrInvalidOptions)
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	logf := func(format string, a ...any) {
		if opts.Logf != nil {
			opts.Logf(format, a...)
		}
	}
	progress := func(stage string) func(done, total int64) {
		if opts.Progress == nil {
			return nil
		}
		return func(done, total int64) { opts.Progress(stage, done, total) }
	}
	recPath := filepath.Join(opts.Dir, PrepFile)
	var rec prepRecord
	if b, err := os.ReadFile(recPath); err == nil {
		if json.Unmarshal(b, &rec) != nil || rec.Version != prepVersion {
			rec = prepRecord{}
		}
	}
	fp := ds.Fingerprint()
	if rec.DataFingerprint != fp {
		rec = prepRecord{}
	}
	rec.Version, rec.DataFingerprint = prepVersion, fp
	save := func() error {
		b, _ := json.MarshalIndent(rec, "", "  ")
		if err := atomicfile.WriteBytes(recPath, append(b, '\n')); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		return nil
	}
	p := &Prepared{
		ProfilePath: filepath.Join(opts.Dir, ProfileFile),
		LayoutDir:   filepath.Join(opts.Dir, LayoutDir),
		Reused:      map[string]bool{},
	}
	countsPath := filepath.Join(opts.Dir, CountsFile)

	// Profile.
	po := opts.Profile
	po.Progress, po.Workers = nil, 0
	profKey := digest(struct {
		FP      string
		Opts    profile.Options
		Version int
	}{fp, po, profile.ResultVersion})
	var lg *profile.Logger
	if rec.ProfileKey == profKey && fileExists(p.ProfilePath) && fileExists(countsPath) {
		res, err := profile.ReadResult(p.ProfilePath)
		if err != nil {
			return nil, fmt.Errorf("bench: reading the saved profile (delete %s to start over): %w", opts.Dir, err)
		}
		p.Profile, p.Reused["profile"] = res, true
		logf("profile: up to date in %s (threshold t=%.4g, %.1f%% of inputs hot), reused", p.ProfilePath, res.Threshold, 100*res.HotInputShare)
	} else {
		logf("profile: sampling %g%% of %d rows", opts.Profile.SampleRate, ds.Rows())
		po := opts.Profile
		po.Progress = progress("profile")
		res, l, err := profile.RunAndWrite(ctx, ds, po, p.ProfilePath, countsPath)
		if err != nil {
			return nil, fmt.Errorf("bench: profile: %w", err)
		}
		rec.ProfileKey, rec.ClassifyKey = profKey, ""
		if err := save(); err != nil {
			return nil, err
		}
		p.Profile, lg = res, l
		logf("profile: threshold t=%.4g, %.1f%% of inputs estimated hot; wrote %s", res.Threshold, 100*res.HotInputShare, p.ProfilePath)
	}

	// Classify.
	co := opts.Classify
	clsKey := digest(struct {
		Profile              string
		BatchSize            int
		Seed                 uint64
		Dim, ManifestVersion int
	}{profKey, co.BatchSize, co.Seed, co.EmbeddingDim, layout.ManifestVersion})
	if rec.ClassifyKey == clsKey {
		if l, err := layout.Open(p.LayoutDir); err == nil && l.Manifest.DataFingerprint == fp {
			p.Layout, p.Reused["classify"] = l, true
			logf("classify: layout %s up to date (%d hot and %d cold mini-batches), reused", p.LayoutDir, l.Manifest.HotBatches, l.Manifest.ColdBatches)
		}
	}
	if p.Layout == nil {
		if lg == nil {
			if err := profile.CheckLoggerFile(p.Profile, countsPath); err != nil {
				return nil, fmt.Errorf("bench: reading the saved access counts: %w", err)
			}
			l, err := profile.ReadLogger(countsPath)
			if err != nil {
				return nil, fmt.Errorf("bench: reading the saved access counts: %w", err)
			}
			lg = l
		}
		hs, err := classify.HotSetFromProfile(p.Profile, lg, ds.Spec())
		if err != nil {
			return nil, fmt.Errorf("bench: classify: %w", err)
		}
		logf("classify: writing all-hot and all-cold mini-batches of %d to %s", co.BatchSize, p.LayoutDir)
		co.Force, co.Threshold, co.ProfileFingerprint = true, p.Profile.Threshold, p.Profile.Fingerprint
		co.Progress = progress("classify")
		m, err := classify.Run(ctx, ds, hs, p.LayoutDir, co)
		if err != nil {
			return nil, fmt.Errorf("bench: classify: %w", err)
		}
		rec.ClassifyKey = clsKey
		if err := save(); err != nil {
			return nil, err
		}
		if p.Layout, err = layout.Open(p.LayoutDir); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		logf("classify: %.1f%% of inputs hot: %d hot and %d cold mini-batches", 100*m.HotInputShare, m.HotBatches, m.ColdBatches)
	}

	// Test set.
	full := opts.Test
	if full == nil {
		ts, ok := p.Layout.TestSpec()
		if !ok {
			return nil, fmt.Errorf("bench: the data has no test split (set data.test in its dataset.yaml): the report's AUC and fae's Shuffle Scheduler evaluate on it: %w", ErrInvalidOptions)
		}
		var err error
		if full, err = dataset.Open(&ts, ts.Train); err != nil {
			return nil, fmt.Errorf("bench: test split: %w", err)
		}
	}
	ts := *full.Spec()
	p.TestRowsTotal = full.Rows()
	if opts.TestRows <= 0 || opts.TestRows >= full.Rows() {
		p.Test, p.TestPath = full, datasetPath(full)
		return p, nil
	}
	sub := ts
	sub.Sparse = append([]dataset.SparseFeature(nil), ts.Sparse...)
	for i := range sub.Sparse {
		sub.Sparse[i].IDs = dataset.IDIndex // written as table rows already
	}
	sub.Train = filepath.Join(opts.Dir, fmt.Sprintf("test-%d", opts.TestRows))
	testKey := digest(struct {
		Test string
		Rows int64
	}{full.Fingerprint(), opts.TestRows})
	if rec.TestKey == testKey {
		if d, err := dataset.Open(&sub, sub.Train); err == nil && d.Rows() == opts.TestRows {
			p.Test, p.TestPath, p.Reused["test"] = d, sub.Train, true
			return p, nil
		}
	}
	if err := writeHead(ctx, full, &sub, opts.TestRows); err != nil {
		return nil, err
	}
	rec.TestKey, rec.TestRows = testKey, opts.TestRows
	if err := save(); err != nil {
		return nil, err
	}
	var err error
	if p.Test, err = dataset.Open(&sub, sub.Train); err != nil {
		return nil, fmt.Errorf("bench: test subset: %w", err)
	}
	p.TestPath = sub.Train
	logf("test: evaluating on the first %d of %d test rows (%s)", opts.TestRows, full.Rows(), sub.Train)
	return p, nil
}

// writeHead copies the first n rows of src into dst.Train/part-00000.parquet.
func writeHead(ctx context.Context, src *dataset.Dataset, dst *dataset.Spec, n int64) error {
	dir := dst.Train
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	withP := src.HasPTrue()
	r, err := src.NewReader(dataset.ReaderOptions{WithPTrue: withP})
	if err != nil {
		return fmt.Errorf("bench: test subset: %w", err)
	}
	defer r.Close()
	w, err := dataset.NewWriter(filepath.Join(dir, "part-00000.parquet"), dst, dataset.WriterOptions{WithPTrue: withP})
	if err != nil {
		return fmt.Errorf("bench: test subset: %w", err)
	}
	for w.Rows() < n {
		b, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			w.Abort()
			return fmt.Errorf("bench: test subset: %w", err)
		}
		if err := w.Write(b, 0, int(min(int64(b.N), n-w.Rows()))); err != nil {
			w.Abort()
			return fmt.Errorf("bench: test subset: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("bench: test subset: %w", err)
	}
	return nil
}

// datasetPath names where a dataset's files are: the file, or the
// directory of the first one.
func datasetPath(ds *dataset.Dataset) string {
	fs := ds.Files()
	switch len(fs) {
	case 0:
		return ""
	case 1:
		return fs[0]
	}
	return filepath.Dir(fs[0])
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
