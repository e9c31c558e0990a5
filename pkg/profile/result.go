package profile

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/picasso-ctr/picasso/pkg/atomicfile"
)

// ResultVersion is the version of the profile JSON format written by
// WriteResult.
const ResultVersion = 1

// Result is the outcome of a profile: the chosen threshold, per-table
// cutoffs and hot-row estimates with their intervals, the exact figures on
// the sample, the hot-input share, and how the sample was drawn. It is
// written as profile.json and read by classify.
//
// Row and byte estimates are Intervals. For a chunk-estimated table they
// are the paper's N·ȳ with N·(ȳ ± t·sqrt((N-n)/N·s²/n)) at Confidence; for a
// table counted exactly (at most n chunks, or MethodExact, MethodTopK) and
// for a table hot whole they are exact. Totals add the tables' bounds,
// which is conservative: the total interval misses only if some table's
// does.
type Result struct {
	Version int    `json:"version"`
	Method  Method `json:"method"`
	// Threshold is t, the chosen share of a table's accesses a row needs
	// to be hot. MethodTopK has none (0); its cutoffs are per table.
	Threshold   float64 `json:"threshold"`
	BudgetBytes int64   `json:"budget_bytes"`
	// HotBytes is the device memory of the hot rows (weights and optimizer
	// state) of every table, small tables kept whole included.
	HotBytes Interval `json:"hot_bytes"`
	// HotBytesExactSample is the same counted exactly on the sample.
	HotBytesExactSample int64    `json:"hot_bytes_exact_sample"`
	HotRows             Interval `json:"hot_rows"`
	HotRowsExactSample  int64    `json:"hot_rows_exact_sample"`
	// HotInputShare is the estimated share of the whole dataset's inputs
	// whose IDs are all hot, the figure classify should find: the sampled
	// inputs (a SampleRate share of the data) are hot at the in-sample rate,
	// the others at the leave-one-out rate, so HotInputShare =
	// x/100·HotInputShareInSample + (1-x/100)·HotInputShareUnsampled. -1
	// when no inputs were kept.
	HotInputShare float64 `json:"hot_input_share"`
	// HotInputShareUnsampled estimates the share among inputs the sample did
	// not read: leave-one-out on the kept sampled inputs (an input's own
	// accesses are taken out of the counts it is tested against).
	HotInputShareUnsampled float64 `json:"hot_input_share_unsampled"`
	// HotInputShareInSample is the share among the sampled inputs
	// themselves, their own accesses counted.
	HotInputShareInSample float64 `json:"hot_input_share_in_sample"`
	// ShareInputs is the number of sampled inputs the shares were computed on.
	ShareInputs int64 `json:"share_inputs"`
	// SampleRate is the measured share of rows sampled, in percent (the
	// requested one when the data's size is unknown); SampleRateRequested
	// is the one asked for.
	SampleRate          float64  `json:"sample_rate"`
	SampleRateRequested float64  `json:"sample_rate_requested"`
	Sampling            Sampling `json:"sampling"`
	RowsSampled         int64    `json:"rows_sampled"`
	RowsTotal           int64    `json:"rows_total"`
	RowsSkipped         int64    `json:"rows_skipped"`
	Seed                uint64   `json:"seed"`
	Confidence          float64  `json:"confidence"`
	Chunks              int      `json:"chunks"`
	ChunkSize           int      `json:"chunk_size"`
	Optimizer           string   `json:"optimizer"`
	SmallTableBytes     int64    `json:"small_table_bytes"`
	// TopKRows is K = Budget/(4·dim) of MethodTopK (0 otherwise).
	TopKRows    int64  `json:"topk_rows,omitempty"`
	Fingerprint string `json:"fingerprint"`
	// LoggerFile is the logger side file holding the counts; set by the
	// caller that writes it.
	LoggerFile string `json:"logger_file"`
	// LoggerXXH64 is the XXH64 of LoggerFile's bytes, 16 hex digits (set
	// by WritePair), so a counts file from another run is refused
	// (ReadPair). The digest tells pairs apart; the counts file's own
	// CRC-32C guards its bytes.
	LoggerXXH64 string `json:"logger_xxh64,omitempty"`
	// LoggerSHA256 is the SHA-256 that profiles written before XXH64
	// named instead; ReadPair checks it when it is set.
	LoggerSHA256 string        `json:"logger_sha256,omitempty"`
	Tables       []TableResult `json:"tables"`
}

// TableResult is one table's part of a Result.
type TableResult struct {
	Name        string `json:"name"`
	Rows        int64  `json:"rows"`
	Dim         int    `json:"dim"`
	BytesPerRow int64  `json:"bytes_per_row"`
	// Cutoff is H_zt = t·T_z·x/100 (Eq. 1) with T_z estimated as
	// AccessesSampled·100/x; 0 for a table hot whole. For MethodTopK it is
	// the implied cutoff (MinCount).
	Cutoff float64 `json:"cutoff"`
	// MinCount is the classifier's rule: a row is hot when its sampled count
	// is >= MinCount (ceil(Cutoff), at least 1). 0 means every row of the
	// table is hot (a table hot whole).
	MinCount uint32 `json:"min_count"`
	// AccessesSampled is A_z, the table's accesses in the sample;
	// AccessesTotalEstimate is T_z = A_z·100/x.
	AccessesSampled       int64   `json:"accesses_sampled"`
	AccessesTotalEstimate float64 `json:"accesses_total_estimate"`
	// LoggedRows is E, the rows seen in the sample (the logger's entries);
	// LoggerChunks is N = ceil(E/m).
	LoggedRows          int64    `json:"logged_rows"`
	LoggerChunks        int64    `json:"logger_chunks"`
	HotRows             Interval `json:"hot_rows"`
	HotRowsExactSample  int64    `json:"hot_rows_exact_sample"`
	HotBytes            Interval `json:"hot_bytes"`
	HotBytesExactSample int64    `json:"hot_bytes_exact_sample"`
	// Whole marks a table kept hot whole: a small table, or (Promoted) one
	// the spare budget took whole once every sampled row was hot. Exact
	// marks a table whose hot rows were counted exactly rather than
	// estimated from chunks.
	Whole    bool `json:"whole"`
	Promoted bool `json:"promoted,omitempty"`
	Exact    bool `json:"exact"`
	// UnseenMass is the Good-Turing estimate of the share of the table's
	// accesses, outside the sample, that hit rows the sample never saw
	// (rows seen once / accesses sampled): what taking the table whole
	// would gain.
	UnseenMass float64 `json:"unseen_mass"`
}

// WriteResult writes r as indented JSON to path, through a temporary file
// renamed when complete.
func WriteResult(path string, r *Result) error {
	p, err := prepareResult(path, r)
	if err != nil {
		return err
	}
	if err := p.Commit(); err != nil {
		return fmt.Errorf("profile: write %s: %w", path, err)
	}
	return nil
}

// prepareResult writes r as indented JSON to a temporary file beside path,
// to be committed there.
func prepareResult(path string, r *Result) (*atomicfile.Pending, error) {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("profile: encode %s: %w", path, err)
	}
	p, err := atomicfile.Prepare(path, func(w io.Writer) error {
		_, err := w.Write(append(data, '\n'))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("profile: write %s: %w", path, err)
	}
	return p, nil
}

// ReadResult reads a profile written by WriteResult.
func ReadResult(path string) (*Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("profile: %s: %v: %w", path, err, ErrCorrupt)
	}
	if r.Version == 0 {
		return nil, fmt.Errorf("profile: %s: no version field: %w", path, ErrCorrupt)
	}
	if r.Version > ResultVersion {
		return nil, fmt.Errorf("profile: %s: version %d, this picasso reads up to %d: %w", path, r.Version, ResultVersion, ErrVersion)
	}
	return &r, nil
}

// Summary writes a human-readable account of r.
func (r *Result) Summary(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "method %s", r.Method)
	if r.Method != MethodTopK {
		fmt.Fprintf(&b, ", threshold t = %.4g of a table's accesses", r.Threshold)
	} else {
		fmt.Fprintf(&b, ", K = %d rows", r.TopKRows)
	}
	fmt.Fprintf(&b, "\nbudget %s, optimizer %s\n", FormatBytes(float64(r.BudgetBytes)), r.Optimizer)
	fmt.Fprintf(&b, "hot bytes %s [%s, %s] at %g%% confidence; exact on the sample %s\n",
		FormatBytes(r.HotBytes.Estimate), FormatBytes(r.HotBytes.Low), FormatBytes(r.HotBytes.High),
		100*r.Confidence, FormatBytes(float64(r.HotBytesExactSample)))
	fmt.Fprintf(&b, "hot rows %.0f [%.0f, %.0f]; exact on the sample %d\n",
		r.HotRows.Estimate, r.HotRows.Low, r.HotRows.High, r.HotRowsExactSample)
	if r.HotInputShare >= 0 {
		fmt.Fprintf(&b, "hot inputs %.1f%% of the dataset (%.1f%% of unsampled inputs, leave-one-out on %d sampled ones; %.1f%% of the sampled inputs)\n",
			100*r.HotInputShare, 100*r.HotInputShareUnsampled, r.ShareInputs, 100*r.HotInputShareInSample)
	}
	if n := r.promoted(); n > 0 {
		fmt.Fprintf(&b, "every row seen in the sample fits the budget; the spare budget keeps %d more tables hot whole (most unseen accesses per byte first)\n", n)
	}
	fmt.Fprintf(&b, "sample: %d of %d rows (%.3g%%, asked %.3g%%) by %s, seed %d",
		r.RowsSampled, r.RowsTotal, r.SampleRate, r.SampleRateRequested, r.Sampling, r.Seed)
	if r.RowsSkipped > 0 {
		fmt.Fprintf(&b, ", %d bad rows skipped", r.RowsSkipped)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "%-20s %12s %10s %10s %26s %12s %10s  %s\n",
		"table", "rows", "cutoff", "accesses", "hot rows [low, high]", "exact", "hot bytes", "how")
	for _, t := range r.Tables {
		how := "chunks"
		switch {
		case t.Promoted:
			how = "whole (spare budget)"
		case t.Whole:
			how = "whole"
		case t.Exact:
			how = "exact"
		}
		fmt.Fprintf(&b, "%-20s %12d %10.4g %10d %26s %12d %10s  %s\n",
			t.Name, t.Rows, t.Cutoff, t.AccessesSampled,
			fmt.Sprintf("%.0f [%.0f, %.0f]", t.HotRows.Estimate, t.HotRows.Low, t.HotRows.High),
			t.HotRowsExactSample, FormatBytes(t.HotBytes.Estimate), how)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *Result) promoted() int {
	n := 0
	for _, t := range r.Tables {
		if t.Promoted {
			n++
		}
	}
	return n
}

// FormatBytes renders a byte count with a binary unit (KiB, MiB, GiB).
func FormatBytes(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for i < len(units)-1 && (v >= 1024 || v <= -1024) {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", v)
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

// WritePair writes the counts of l to countsPath and then r, naming that
// file and its SHA-256, to jsonPath. Each file is replaced atomically; a
// crash between the two leaves a pair whose digests disagree, which
// ReadPair refuses.
func WritePair(jsonPath, countsPath string, r *Result, l *Logger) error {
	p, sum, err := l.prepareCounts(context.Background(), countsPath)
	if err != nil {
		return err
	}
	return commitPair(jsonPath, countsPath, r, p, sum)
}

// AnalyzeAndWrite is Analyze followed by WritePair, with the counts file
// written (and synced) while the analysis runs: neither needs the other,
// and for a small sample each takes about as long as the sampling. The
// counts replace countsPath only when the analysis succeeded, so a failed
// or cancelled analysis leaves an earlier pair as it was.
func AnalyzeAndWrite(ctx context.Context, lg *Logger, opts Options, jsonPath, countsPath string) (*Result, error) {
	type written struct {
		p   *atomicfile.Pending
		sum string
		err error
	}
	done := make(chan written, 1)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		p, sum, err := lg.prepareCounts(wctx, countsPath)
		done <- written{p, sum, err}
	}()
	res, err := Analyze(ctx, lg, opts)
	if err != nil {
		stop() // the counts will not be kept: stop writing them
	}
	w := <-done
	if err != nil || w.err != nil {
		if w.p != nil {
			w.p.Abort()
		}
		return nil, cmp.Or(err, w.err)
	}
	if err := commitPair(jsonPath, countsPath, res, w.p, w.sum); err != nil {
		return nil, err
	}
	return res, nil
}

// commitPair writes r, naming the prepared counts file and its digest
// sum, beside jsonPath, then puts both in place: first the counts, then the
// result. Only a failure between the two renames can leave the new counts
// beside an old result (which ReadPair refuses); a failure to write the
// result leaves the earlier pair as it was.
func commitPair(jsonPath, countsPath string, r *Result, p *atomicfile.Pending, sum string) error {
	r.LoggerFile, r.LoggerXXH64, r.LoggerSHA256 = filepath.Base(countsPath), sum, ""
	pj, err := prepareResult(jsonPath, r)
	if err != nil {
		p.Abort()
		return err
	}
	if err := p.Commit(); err != nil {
		pj.Abort()
		return fmt.Errorf("profile: write %s: %w", countsPath, err)
	}
	if err := pj.Commit(); err != nil {
		return fmt.Errorf("profile: write %s: %w", jsonPath, err)
	}
	return nil
}

// ReadPair reads the profile at jsonPath and the counts file it names
// (beside it), checking the counts' SHA-256 when the profile records one.
func ReadPair(jsonPath string) (*Result, *Logger, error) {
	r, err := ReadResult(jsonPath)
	if err != nil {
		return nil, nil, err
	}
	countsPath := filepath.Join(filepath.Dir(jsonPath), r.LoggerFile)
	if err := CheckLoggerFile(r, countsPath); err != nil {
		return nil, nil, err
	}
	l, err := ReadLogger(countsPath)
	if err != nil {
		return nil, nil, err
	}
	return r, l, nil
}

// CheckLoggerFile reports an ErrCorrupt error when r records a digest of
// its counts file (XXH64, or SHA-256 in older profiles) and the file at path
// has another.
func CheckLoggerFile(r *Result, path string) error {
	var h hash.Hash
	want, name := r.LoggerXXH64, "XXH64"
	switch {
	case want != "":
		h = xxhash.New()
	case r.LoggerSHA256 != "":
		h, want, name = sha256.New(), r.LoggerSHA256, "SHA-256"
	default:
		return nil
	}
	sum, err := fileDigest(path, h)
	if err != nil {
		return err
	}
	if sum != want {
		return fmt.Errorf("profile: %s does not belong to its profile (%s %s, the profile names %s); run profile again: %w",
			path, name, sum, want, ErrCorrupt)
	}
	return nil
}

func fileDigest(path string, h hash.Hash) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("profile: %w", err)
	}
	defer f.Close()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("profile: read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
