package bench

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/picasso-ctr/picasso/pkg/train"
)

// ReportVersion is the version of report.json's layout.
const ReportVersion = 1

// PhaseTolerance is the share of a run's measured time that its phases may
// leave unaccounted (or count twice) before the report flags it.
const PhaseTolerance = 0.05

// Setup records what the bench trained on and how.
type Setup struct {
	// Data is the dataset; Rows its training rows.
	Data string `json:"data"`
	Rows int64  `json:"rows"`
	// Prep is the directory of the profile and layout; Reused says which
	// of its stages were up to date and reused.
	Prep    string          `json:"prep"`
	Reused  map[string]bool `json:"reused"`
	Profile string          `json:"profile"`
	Layout  string          `json:"layout"`
	// Layout figures: the share of inputs that are hot, the mini-batches of
	// each class and the rows of the packed hot table.
	HotInputShare float64 `json:"layout_hot_input_share"`
	HotBatches    int     `json:"hot_batches"`
	ColdBatches   int     `json:"cold_batches"`
	HotTableRows  int64   `json:"hot_table_rows"`
	// Test is the test set evaluated at the checkpoints: TestRows of the
	// split's TestRowsTotal rows.
	Test          string `json:"test"`
	TestRows      int64  `json:"test_rows"`
	TestRowsTotal int64  `json:"test_rows_total"`
	// Every run trains Steps mini-batches of BatchSize (Epochs passes over
	// the layout) from Seed, evaluating every EvalEvery steps and at the end.
	Steps         int64    `json:"steps"`
	StepsPerEpoch int64    `json:"steps_per_epoch"`
	Epochs        float64  `json:"epochs"`
	BatchSize     int      `json:"batch_size"`
	Seed          uint64   `json:"seed"`
	EvalEvery     int64    `json:"eval_every"`
	Repeat        int      `json:"repeat"`
	Modes         []string `json:"modes"`
	Ablations     []string `json:"ablations"`
	AblatedModes  []string `json:"ablated_modes"`
	Baseline      string   `json:"baseline"`
	// PrepSeconds is the time spent profiling and classifying (0 when reused).
	PrepSeconds float64   `json:"prep_seconds"`
	Started     time.Time `json:"started"`
}

// Report is the outcome of a bench: report.json.
type Report struct {
	Version     int         `json:"version"`
	Environment Environment `json:"environment"`
	Setup       Setup       `json:"setup"`
	// Modes has one entry per variant (mode, or mode without an
	// optimisation), in the order they ran.
	Modes      []VariantReport `json:"modes"`
	PhaseCheck PhaseCheck      `json:"phase_check"`
	// Deterministic is true when every variant moved the same bytes and
	// reached the same test metrics in every repeat.
	Deterministic bool `json:"deterministic"`
	// Seconds is the wall time of all runs.
	Seconds float64 `json:"seconds"`
}

// VariantReport is one variant's results. The embedded Summary holds the
// fields of train's summary.json of the variant's median run (by training
// time; SummaryRepeat names it); bytes and test metrics are the same in
// every repeat when training is deterministic.
type VariantReport struct {
	Name     string `json:"name"`
	Ablation string `json:"ablation,omitempty"`
	Setting  string `json:"setting,omitempty"`
	train.Summary
	SummaryRepeat int `json:"summary_repeat"`
	// TrainSeconds is each repeat's time without test evaluations, and
	// TrainSamplesPerS the throughput it gives.
	TrainSeconds     Spread `json:"train_seconds"`
	TrainSamplesPerS Spread `json:"train_samples_per_s"`
	// SpeedupVsHybrid is the median over repeats of hybrid's training time
	// divided by this variant's in the same repeat (>1: faster than
	// hybrid); SpeedupSpread holds the per-repeat ratios and their range.
	// Null when hybrid did not run.
	SpeedupVsHybrid train.Number `json:"speedup_vs_hybrid"`
	SpeedupSpread   Spread       `json:"speedup_vs_hybrid_spread"`
	// BytesRatioVsHybrid is the bytes this variant moved between host and
	// device (both ways) divided by hybrid's (0.1: ten times fewer).
	BytesRatioVsHybrid train.Number `json:"bytes_ratio_vs_hybrid"`
	// AUCDeltaVsCPU is the final test AUC minus cpu's (null without cpu).
	AUCDeltaVsCPU train.Number `json:"auc_delta_vs_cpu"`
	// PhaseOtherSeconds is the median run's measured time minus the sum of
	// its phases (negative when phases overlap), PhaseOtherShare its share
	// of the measured time.
	PhaseOtherSeconds float64 `json:"phase_other_seconds"`
	PhaseOtherShare   float64 `json:"phase_other_share"`
	// RateHistory is the Shuffle Scheduler's rate over the median run.
	RateHistory []RatePoint `json:"rate_history,omitempty"`
	// Deterministic: every repeat moved the same bytes and reached the same
	// test metrics at every checkpoint; DeterminismNote says what differed.
	Deterministic   bool        `json:"deterministic"`
	DeterminismNote string      `json:"determinism_note,omitempty"`
	Runs            []RunReport `json:"runs"`
}

// RunReport is one repeat of a variant.
type RunReport struct {
	Repeat           int                `json:"repeat"`
	Dir              string             `json:"dir"`
	Seconds          float64            `json:"seconds"`
	TrainSeconds     float64            `json:"train_seconds"`
	TestEvalSeconds  float64            `json:"test_eval_seconds"`
	SamplesPerS      float64            `json:"samples_per_s"`
	TrainSamplesPerS float64            `json:"train_samples_per_s"`
	PhaseSeconds     train.PhaseSeconds `json:"phase_seconds"`
	OtherSeconds     float64            `json:"phase_other_seconds"`
	BytesH2D         int64              `json:"bytes_h2d"`
	BytesD2H         int64              `json:"bytes_d2h"`
	TestAUC          train.Number       `json:"test_auc"`
	TestLogLoss      train.Number       `json:"test_logloss"`
}

// PhaseCheck says whether the phases of every run add up to its measured
// time within Tolerance.
type PhaseCheck struct {
	Tolerance float64 `json:"tolerance"`
	// MaxAbsOtherShare is the largest |measured - Σ phases| / measured of
	// any run, in WorstRun.
	MaxAbsOtherShare float64 `json:"max_abs_other_share"`
	WorstRun         string  `json:"worst_run"`
	Within           bool    `json:"within"`
	// Notes explain runs outside the tolerance.
	Notes []string `json:"notes,omitempty"`
}

// PhaseNames lists the phases of train.PhaseSeconds in report order, with
// their labels.
var PhaseNames = []struct{ Key, Label string }{
	{"read", "read (waiting for data)"}, {"emb_forward", "embedding forward"}, {"mlp_forward", "MLP forward"},
	{"mlp_backward", "MLP backward + step"}, {"emb_update", "embedding update"}, {"sync", "hot-row sync"},
	{"transfer", "host↔device transfer"}, {"eval", "evaluation"},
}

// phaseValues returns the phases in PhaseNames order.
func phaseValues(p train.PhaseSeconds) []float64 {
	return []float64{p.Read, p.EmbForward, p.MLPForward, p.MLPBackward, p.EmbUpdate, p.Sync, p.Transfer, p.Eval}
}

func phaseSum(p train.PhaseSeconds) float64 {
	var s float64
	for _, v := range phaseValues(p) {
		s += v
	}
	return s
}

// NewReport gathers the runs of every variant into a report.
func NewReport(setup Setup, env Environment, variants []Variant, recs []RunRecord) *Report {
	rep := &Report{Version: ReportVersion, Environment: env, Setup: setup, Deterministic: true,
		PhaseCheck: PhaseCheck{Tolerance: PhaseTolerance, Within: true}}
	if rep.Setup.Baseline == "" {
		rep.Setup.Baseline = Baseline
	}
	byVariant := map[string][]RunRecord{}
	for _, r := range recs {
		byVariant[r.Variant] = append(byVariant[r.Variant], r)
		rep.Seconds += r.Summary.Seconds
	}
	for _, rs := range byVariant {
		slices.SortFunc(rs, func(a, b RunRecord) int { return a.Repeat - b.Repeat })
	}
	trainSecs := func(rs []RunRecord) []float64 {
		out := make([]float64, len(rs))
		for i, r := range rs {
			out[i] = r.TrainSeconds
		}
		return out
	}
	base := byVariant[rep.Setup.Baseline]
	var baseSum, cpuSum *train.Summary
	if len(base) > 0 {
		baseSum = base[medianIndex(trainSecs(base))].Summary
	}
	if cpu := byVariant["cpu"]; len(cpu) > 0 {
		cpuSum = cpu[medianIndex(trainSecs(cpu))].Summary
	}
	nan := train.Number(math.NaN())
	for _, v := range variants {
		rs := byVariant[v.Name]
		if len(rs) == 0 {
			continue
		}
		secs := trainSecs(rs)
		mi := medianIndex(secs)
		med := rs[mi]
		vr := VariantReport{Name: v.Name, Ablation: v.Ablation, Setting: v.Setting, Summary: *med.Summary,
			SummaryRepeat: med.Repeat, TrainSeconds: SpreadOf(secs), RateHistory: med.Rate,
			SpeedupVsHybrid: nan, BytesRatioVsHybrid: nan, AUCDeltaVsCPU: nan, Deterministic: true}
		sps := make([]float64, len(rs))
		for i := range rs {
			sps[i] = rs[i].TrainSamplesPerS()
		}
		vr.TrainSamplesPerS = SpreadOf(sps)
		if len(base) > 0 {
			vr.SpeedupSpread = SpreadOf(Ratios(alignRepeats(base, rs), secs))
			vr.SpeedupVsHybrid = vr.SpeedupSpread.Median
			if b := baseSum.BytesH2D + baseSum.BytesD2H; b > 0 {
				vr.BytesRatioVsHybrid = train.Number(float64(med.Summary.BytesH2D+med.Summary.BytesD2H) / float64(b))
			}
		} else {
			vr.SpeedupSpread = SpreadOf(nil)
		}
		if cpuSum != nil {
			vr.AUCDeltaVsCPU = med.Summary.TestAUC - cpuSum.TestAUC
		}
		vr.PhaseOtherSeconds = med.Summary.Seconds - phaseSum(med.Summary.PhaseSeconds)
		if med.Summary.Seconds > 0 {
			vr.PhaseOtherShare = vr.PhaseOtherSeconds / med.Summary.Seconds
		}
		for _, r := range rs {
			s := r.Summary
			rr := RunReport{Repeat: r.Repeat, Dir: r.Dir, Seconds: s.Seconds, TrainSeconds: r.TrainSeconds,
				TestEvalSeconds: r.TestEvalSeconds, SamplesPerS: s.SamplesPerS, TrainSamplesPerS: r.TrainSamplesPerS(),
				PhaseSeconds: s.PhaseSeconds, OtherSeconds: s.Seconds - phaseSum(s.PhaseSeconds),
				BytesH2D: s.BytesH2D, BytesD2H: s.BytesD2H, TestAUC: s.TestAUC, TestLogLoss: s.TestLogLoss}
			vr.Runs = append(vr.Runs, rr)
			rep.PhaseCheck.observe(v.Name, r)
			if note := sameOutcome(rs[0].Summary, s); note != "" && vr.Deterministic {
				vr.Deterministic = false
				vr.DeterminismNote = fmt.Sprintf("repeat %d differs from repeat %d: %s", r.Repeat, rs[0].Repeat, note)
				rep.Deterministic = false
			}
		}
		rep.Modes = append(rep.Modes, vr)
	}
	return rep
}

// alignRepeats returns base's training times in the repeats of rs (NaN
// where base has no such repeat).
func alignRepeats(base, rs []RunRecord) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = math.NaN()
		for _, b := range base {
			if b.Repeat == r.Repeat {
				out[i] = b.TrainSeconds
			}
		}
	}
	return out
}

// sameOutcome compares what must not change between repeats: the steps,
// the bytes moved, the swaps and every evaluation's metrics. It returns ""
// when they agree, else what differs.
func sameOutcome(a, b *train.Summary) string {
	switch {
	case a.Steps != b.Steps:
		return fmt.Sprintf("steps %d vs %d", a.Steps, b.Steps)
	case a.BytesH2D != b.BytesH2D || a.BytesD2H != b.BytesD2H:
		return fmt.Sprintf("bytes host→device %d vs %d, device→host %d vs %d", a.BytesH2D, b.BytesH2D, a.BytesD2H, b.BytesD2H)
	case a.Swaps != b.Swaps:
		return fmt.Sprintf("swaps %d vs %d", a.Swaps, b.Swaps)
	case len(a.Evals) != len(b.Evals):
		return fmt.Sprintf("%d vs %d evaluations", len(a.Evals), len(b.Evals))
	}
	for i := range a.Evals {
		x, y := a.Evals[i], b.Evals[i]
		if x.Step != y.Step || !sameNumber(x.AUC, y.AUC) || !sameNumber(x.LogLoss, y.LogLoss) {
			return fmt.Sprintf("evaluation at step %d: AUC %v vs %v, log loss %v vs %v", x.Step, float64(x.AUC), float64(y.AUC), float64(x.LogLoss), float64(y.LogLoss))
		}
	}
	return ""
}

func sameNumber(a, b train.Number) bool {
	return a == b || math.IsNaN(float64(a)) && math.IsNaN(float64(b))
}

// observe checks one run's phases against its measured time.
func (pc *PhaseCheck) observe(variant string, r RunRecord) {
	s := r.Summary
	if s.Seconds <= 0 {
		return
	}
	other := s.Seconds - phaseSum(s.PhaseSeconds)
	share := math.Abs(other) / s.Seconds
	run := fmt.Sprintf("%s repeat %d", variant, r.Repeat)
	if share > pc.MaxAbsOtherShare {
		pc.MaxAbsOtherShare, pc.WorstRun = share, run
	}
	if share <= pc.Tolerance {
		return
	}
	pc.Within = false
	p := s.PhaseSeconds
	schedEval := p.Eval - r.TestEvalSeconds
	var note string
	if other < 0 {
		note = fmt.Sprintf("%s: the phases add up to %.3fs, %.1f%% more than the measured %.3fs, so some time is counted twice",
			run, phaseSum(p), 100*share, s.Seconds)
		if swap := p.Sync + schedEval; s.Swaps > 0 && swap >= -other/2 {
			note += fmt.Sprintf("; the %d hot/cold swaps took %.3fs (hot-row sync %.3fs, Shuffle Scheduler evaluations %.3fs), and this trainer times each swap inside \"read\" as well as in \"sync\" and \"eval\": read without the swaps would be about %.3fs",
				s.Swaps, swap, p.Sync, schedEval, max(p.Read-swap, 0))
		}
	} else {
		note = fmt.Sprintf("%s: %.3fs (%.1f%%) of the measured %.3fs is in no phase (the oracle AUC pass over the test set at the start, opening the data streams, metrics lines and loop bookkeeping are not timed as phases)",
			run, other, 100*share, s.Seconds)
	}
	pc.Notes = append(pc.Notes, note)
}
