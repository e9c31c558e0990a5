package train

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/picasso-ctr/picasso/pkg/atomicfile"
)

// Files of a run directory.
const (
	MetricsFile    = "metrics.jsonl"
	SummaryFile    = "summary.json"
	CheckpointFile = "checkpoint.bin"
	// BestFile is the checkpoint of the model with the best validation log
	// loss so far, in CheckpointFile's format.
	BestFile = "best.bin"
)

// Summary is the outcome of a run, written to summary.json.
type Summary struct {
	Mode Mode `json:"mode"`
	// Backend computes in host memory; Device is what the mode put on the
	// device (empty in cpu mode): a GPU, or the CPU emulating one.
	Backend string `json:"backend"`
	Device  string `json:"device,omitempty"`
	Seed    uint64 `json:"seed"`
	// Steps and Samples trained; Epochs = Steps / StepsPerEpoch.
	Steps         int64   `json:"steps"`
	Samples       int64   `json:"samples"`
	StepsPerEpoch int64   `json:"steps_per_epoch"`
	Epochs        float64 `json:"epochs"`
	// Seconds is the wall time of the training loop (all sessions of a
	// resumed run), evaluations and synchronisation included; SamplesPerS
	// is Samples / Seconds.
	Seconds     float64 `json:"seconds"`
	SamplesPerS float64 `json:"samples_per_s"`
	// StepMsMedian is the median time of one step's lookups, MLP forward
	// and backward, transfers and updates (reading excluded), over the last
	// 65536 steps of this session.
	StepMsMedian Number `json:"step_ms_median"`
	// Test metrics of the last evaluation, and the AUC of the data's true
	// click probability on the test set (null when the data has none).
	TestAUC      Number `json:"test_auc"`
	TestLogLoss  Number `json:"test_logloss"`
	TestAccuracy Number `json:"test_accuracy"`
	OracleAUC    Number `json:"oracle_auc"`
	// TrainLoss is the mean training loss of the last logging interval.
	TrainLoss Number `json:"train_loss"`
	// Bytes that crossed between host and device memory during training:
	// per-batch inputs and gradients, the hot-row syncs (rows, optimizer
	// state and the slots they belong to) and one loss value per step.
	// Placing the model, evaluations and checkpoints are not counted.
	BytesH2D     int64        `json:"bytes_h2d"`
	BytesD2H     int64        `json:"bytes_d2h"`
	PhaseSeconds PhaseSeconds `json:"phase_seconds"`
	// HotInputShare is the share of trained samples that ran in hot
	// mini-batches (0 for raw data).
	HotInputShare float64 `json:"hot_input_share"`
	// Swaps between hot and cold phases, the rows they copied each way,
	// and the scheduler's rate at the end (fae).
	Swaps       int64        `json:"swaps"`
	SyncRowsH2D int64        `json:"sync_rows_h2d"`
	SyncRowsD2H int64        `json:"sync_rows_d2h"`
	FinalRate   *Number      `json:"final_rate,omitempty"`
	Evals       []EvalResult `json:"evals"`
	// HybridHash holds the cache's figures over the whole run (mode
	// hybridhash).
	HybridHash *CacheFigures `json:"hybridhash,omitempty"`
	// Validation results, the step of the best log loss (whose model is
	// BestFile), and whether early stopping ended the run.
	Valids           []EvalResult `json:"valids,omitempty"`
	BestStep         int64        `json:"best_step,omitempty"`
	BestValidLogLoss *Number      `json:"best_valid_logloss,omitempty"`
	StoppedEarly     bool         `json:"stopped_early,omitempty"`
	// Interrupted is set when the run stopped early; Checkpoint names the
	// file to resume from.
	Interrupted bool   `json:"interrupted,omitempty"`
	Checkpoint  string `json:"checkpoint,omitempty"`
}

func (t *Trainer) summary(interrupted bool) *Summary {
	st := &t.st
	s := &Summary{
		Mode: t.opts.Mode, Backend: t.opts.Host.Name(), Seed: t.opts.Seed,
		Steps: st.Step, Samples: st.Samples, StepsPerEpoch: t.epochN,
		Epochs:       float64(st.Step) / float64(t.epochN),
		Seconds:      st.Seconds + time.Since(t.started).Seconds(),
		StepMsMedian: Number(t.stepMs.median()),
		TestAUC:      Number(math.NaN()), TestLogLoss: Number(math.NaN()), TestAccuracy: Number(math.NaN()),
		OracleAUC: Number(t.oracle), TrainLoss: Number(math.NaN()),
		BytesH2D: t.l.h2d, BytesD2H: t.l.d2h, PhaseSeconds: st.Phases,
		Swaps: st.Syncs, SyncRowsH2D: st.RowsH2D, SyncRowsD2H: st.RowsD2H,
		Evals:       append([]EvalResult{}, st.Evals...),
		Interrupted: interrupted,
	}
	if s.Seconds > 0 {
		s.SamplesPerS = float64(s.Samples) / s.Seconds
	}
	if st.Samples > 0 {
		s.HotInputShare = float64(st.HotSamples) / float64(st.Samples)
	}
	if n := len(st.Evals); n > 0 {
		e := st.Evals[n-1]
		s.TestAUC, s.TestLogLoss, s.TestAccuracy = e.AUC, e.LogLoss, e.Accuracy
	}
	s.TrainLoss = st.LastLoss
	if len(st.Valids) > 0 {
		s.Valids = append([]EvalResult{}, st.Valids...)
		b := st.BestValid
		s.BestStep, s.BestValidLogLoss, s.StoppedEarly = st.BestStep, &b, st.Stopped
	}
	if sched := t.ord.scheduler(); sched != nil {
		r := Number(sched.Rate())
		s.FinalRate = &r
	}
	if cs := t.place.cacheStats(); cs != nil {
		s.HybridHash = cacheInterval(*cs, nil)
	}
	if t.opts.Mode.NeedsDevice() {
		s.Device = t.opts.Device.Name()
	}
	return s
}

// ring keeps the last values added, for a median over a bounded window.
type ring struct {
	v    []float32
	next int
	full bool
	tmp  []float32
}

func newRing(n int) ring { return ring{v: make([]float32, n)} }

func (r *ring) add(x float32) {
	r.v[r.next] = x
	r.next++
	if r.next == len(r.v) {
		r.next, r.full = 0, true
	}
}

// median returns the median of the values kept, NaN when there are none.
func (r *ring) median() float64 {
	n := r.next
	if r.full {
		n = len(r.v)
	}
	if n == 0 {
		return math.NaN()
	}
	r.tmp = append(r.tmp[:0], r.v[:n]...)
	slices.Sort(r.tmp)
	if n%2 == 1 {
		return float64(r.tmp[n/2])
	}
	return (float64(r.tmp[n/2-1]) + float64(r.tmp[n/2])) / 2
}

// runLog appends JSON lines to metrics.jsonl, tracking its length so that
// a checkpoint can record it and a resumed run can cut off the lines
// written after the checkpoint.
type runLog struct {
	f   *os.File
	off int64
}

// openRunLog opens dir/metrics.jsonl: truncated to keep bytes when resuming
// (keep < 0 keeps everything), emptied otherwise.
func openRunLog(dir string, resume bool, keep int64) (*runLog, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, MetricsFile)
	flags := os.O_CREATE | os.O_WRONLY
	if !resume {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	off := st.Size()
	if resume && keep >= 0 && keep <= off {
		if err := f.Truncate(keep); err != nil {
			f.Close()
			return nil, err
		}
		off = keep
	}
	if _, err := f.Seek(off, 0); err != nil {
		f.Close()
		return nil, err
	}
	return &runLog{f: f, off: off}, nil
}

func (l *runLog) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	n, err := l.f.Write(b)
	l.off += int64(n)
	if err != nil {
		return err
	}
	return nil
}

func (l *runLog) close() error { return l.f.Close() }

func joinPath(dir, name string) string { return filepath.Join(dir, name) }

// writeJSONAtomic writes v as indented JSON through a temporary file.
func writeJSONAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(path, append(b, '\n'))
}
