package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/bench/benchtest"
	"github.com/picasso-ctr/picasso/pkg/config"
	"github.com/picasso-ctr/picasso/pkg/train"
)

// fakeRun makes a run record whose phases add up to its time and whose
// outcome is fixed by the variant.
func fakeRun(variant string, repeat int, trainSec float64, bytes int64, auc float64) RunRecord {
	const evalSec = 0.5
	s := &train.Summary{Mode: train.Mode(strings.SplitN(variant, "-", 2)[0]), Steps: 100, Samples: 100 * 256, Seconds: trainSec + evalSec,
		BytesH2D: bytes, BytesD2H: bytes / 2, TestAUC: train.Number(auc), TestLogLoss: 0.5, OracleAUC: train.Number(math.NaN()),
		PhaseSeconds: train.PhaseSeconds{Read: trainSec * 0.1, EmbForward: trainSec * 0.2, MLPForward: trainSec * 0.3,
			MLPBackward: trainSec * 0.3, EmbUpdate: trainSec * 0.1, Eval: evalSec},
		Evals: []train.EvalResult{{Step: 50, AUC: train.Number(auc - 0.01), LogLoss: 0.6, Seconds: evalSec / 2},
			{Step: 100, AUC: train.Number(auc), LogLoss: 0.5, Seconds: evalSec / 2}}}
	return RunRecord{Variant: variant, Repeat: repeat, Summary: s, TrainSeconds: trainSec, TestEvalSeconds: evalSec,
		Dir: filepath.Join("runs", variant)}
}

func fakeReport(t *testing.T) *Report {
	t.Helper()
	var variants []Variant
	for _, n := range []string{"fae", "hybrid", "cpu"} {
		variants = append(variants, Variant{Name: n})
	}
	recs := []RunRecord{
		// Repeat 2 ran under load: every mode slowed, the ratios held.
		fakeRun("fae", 1, 4, 100, 0.7001), fakeRun("hybrid", 1, 10, 1500, 0.7000), fakeRun("cpu", 1, 12, 0, 0.7000),
		fakeRun("fae", 2, 8, 100, 0.7001), fakeRun("hybrid", 2, 16, 1500, 0.7000), fakeRun("cpu", 2, 20, 0, 0.7000),
		fakeRun("fae", 3, 5, 100, 0.7001), fakeRun("hybrid", 3, 12, 1500, 0.7000), fakeRun("cpu", 3, 13, 0, 0.7000),
	}
	rep := NewReport(Setup{Steps: 100, BatchSize: 256, Repeat: 3, TestRows: 1000}, Environment{CPU: "test CPU", Cores: 2, GPU: NoGPU}, variants, recs)
	if len(rep.Modes) != 3 {
		t.Fatalf("report has %d modes; want 3", len(rep.Modes))
	}
	return rep
}

func TestNewReportSpeedupAndRatios(t *testing.T) {
	rep := fakeReport(t)
	fae, hybrid, cpu := rep.Modes[0], rep.Modes[1], rep.Modes[2]
	// Per repeat: 10/4 = 2.5, 16/8 = 2, 12/5 = 2.4.
	if got := fae.SpeedupSpread; got.Median != 2.4 || got.Min != 2 || got.Max != 2.5 {
		t.Errorf("fae speedup = median %v, range %v–%v; want 2.4, 2–2.5", got.Median, got.Min, got.Max)
	}
	if fae.SpeedupVsHybrid != fae.SpeedupSpread.Median {
		t.Errorf("speedup_vs_hybrid %v differs from the spread's median %v", fae.SpeedupVsHybrid, fae.SpeedupSpread.Median)
	}
	if hybrid.SpeedupVsHybrid != 1 {
		t.Errorf("hybrid's speedup over itself = %v; want 1", hybrid.SpeedupVsHybrid)
	}
	if want := 150.0 / 2250; math.Abs(float64(fae.BytesRatioVsHybrid)-want) > 1e-12 {
		t.Errorf("fae bytes ratio = %v; want %v", fae.BytesRatioVsHybrid, want)
	}
	if cpu.BytesRatioVsHybrid != 0 {
		t.Errorf("cpu bytes ratio = %v; want 0", cpu.BytesRatioVsHybrid)
	}
	if d := float64(fae.AUCDeltaVsCPU); math.Abs(d-0.0001) > 1e-9 {
		t.Errorf("fae AUC delta vs cpu = %v; want 0.0001", d)
	}
	// The summary is the median run's by training time: fae's repeat 3 (5s).
	if fae.SummaryRepeat != 3 || fae.Seconds != 5.5 {
		t.Errorf("fae summary from repeat %d (%vs); want repeat 3 (5.5s)", fae.SummaryRepeat, fae.Seconds)
	}
	if got := fae.TrainSamplesPerS; got.Max != 25600.0/4 || got.Min != 25600.0/8 {
		t.Errorf("fae samples/s range %v–%v; want %v–%v", got.Min, got.Max, 25600.0/8, 25600.0/4)
	}
	if !rep.Deterministic || !rep.PhaseCheck.Within {
		t.Errorf("deterministic %v, phases within %v; want both true", rep.Deterministic, rep.PhaseCheck.Within)
	}
}

func TestNewReportWithoutBaseline(t *testing.T) {
	rep := NewReport(Setup{Repeat: 1}, Environment{}, []Variant{{Name: "fae"}}, []RunRecord{fakeRun("fae", 1, 4, 100, 0.7)})
	m := rep.Modes[0]
	if !math.IsNaN(float64(m.SpeedupVsHybrid)) || !math.IsNaN(float64(m.BytesRatioVsHybrid)) || !math.IsNaN(float64(m.AUCDeltaVsCPU)) {
		t.Errorf("without hybrid and cpu: speedup %v, bytes ratio %v, AUC delta %v; want NaN", m.SpeedupVsHybrid, m.BytesRatioVsHybrid, m.AUCDeltaVsCPU)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatalf("report.json: %v", err)
	}
	if !bytes.Contains(b, []byte(`"speedup_vs_hybrid":null`)) {
		t.Errorf("report.json lacks a null speedup_vs_hybrid: %s", b)
	}
}

func TestNewReportFlagsNondeterminismAndPhaseGaps(t *testing.T) {
	a, b := fakeRun("fae", 1, 4, 100, 0.7), fakeRun("fae", 2, 4, 104, 0.7)
	b.Summary.Seconds += 1 // a second in no phase: 22% of 4.5s
	rep := NewReport(Setup{Repeat: 2}, Environment{}, []Variant{{Name: "fae"}}, []RunRecord{a, b})
	if rep.Deterministic || rep.Modes[0].Deterministic || !strings.Contains(rep.Modes[0].DeterminismNote, "bytes") {
		t.Errorf("runs moving different bytes: deterministic %v, note %q; want false and a note naming bytes", rep.Deterministic, rep.Modes[0].DeterminismNote)
	}
	pc := rep.PhaseCheck
	if pc.Within || pc.WorstRun != "fae repeat 2" || math.Abs(pc.MaxAbsOtherShare-1/5.5) > 1e-9 || len(pc.Notes) != 1 {
		t.Errorf("phase check = %+v; want a failure in fae repeat 2 of share %v with one note", pc, 1/5.5)
	}
	// Phases counted twice: the note says so.
	c := fakeRun("fae", 1, 4, 100, 0.7)
	c.Summary.PhaseSeconds.Read += 1
	rep = NewReport(Setup{Repeat: 1}, Environment{}, []Variant{{Name: "fae"}}, []RunRecord{c})
	if rep.PhaseCheck.Within || len(rep.PhaseCheck.Notes) != 1 || !strings.Contains(rep.PhaseCheck.Notes[0], "counted twice") {
		t.Errorf("overlapping phases: check %+v; want a failure noting time counted twice", rep.PhaseCheck)
	}
}

func TestWriteFiles(t *testing.T) {
	rep := fakeReport(t)
	rep.Modes[0].RateHistory = []RatePoint{{Step: 0, Rate: 50, Action: "start", EvalLoss: train.Number(math.NaN())}, {Step: 40, Rate: 25, Action: "halve", EvalLoss: 0.5}}
	dir := t.TempDir()
	paths, err := rep.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ReportJSON, ChartThroughput, ChartPhases, ChartBytes, ChartAUC, ChartRate, ReportMarkdown}
	if len(paths) != len(want) {
		t.Fatalf("WriteFiles wrote %v; want %v", paths, want)
	}
	for i, w := range want {
		if filepath.Base(paths[i]) != w {
			t.Errorf("file %d is %s; want %s", i, paths[i], w)
		}
		if strings.HasSuffix(w, ".svg") {
			benchtest.CheckChart(t, paths[i])
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, ReportMarkdown))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"## Results", "2.40×", "15.0× fewer", "## Time per phase", "Phase check: in every run", "step 40 halve → R(25)", "![Throughput by variant](throughput.svg)"} {
		if !bytes.Contains(md, []byte(s)) {
			t.Errorf("report.md lacks %q", s)
		}
	}
	var got map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, ReportJSON))
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	m := got["modes"].([]any)[0].(map[string]any)
	for _, k := range []string{"name", "mode", "steps", "samples_per_s", "phase_seconds", "bytes_h2d", "bytes_d2h", "test_auc", "evals",
		"hot_input_share", "speedup_vs_hybrid", "speedup_vs_hybrid_spread", "bytes_ratio_vs_hybrid", "rate_history", "runs"} {
		if _, ok := m[k]; !ok {
			t.Errorf("report.json modes[0] lacks %q", k)
		}
	}
}

var benchLineRE = regexp.MustCompile(`^Benchmark\S+\t\s*\d+\t\s*\d+ ns/op(\t\s*[0-9.e+-]+ \S+)+$`)

func TestBenchLine(t *testing.T) {
	r := fakeRun("fae-no-packing", 1, 4, 100, 0.7)
	line := BenchLine("fae-no-packing", 2, &r)
	if !benchLineRE.MatchString(line) {
		t.Errorf("BenchLine = %q; not in Go's benchmark format", line)
	}
	if !strings.HasPrefix(line, "BenchmarkTrain/mode=fae-no-packing-2\t") || !strings.Contains(line, " 40000000 ns/op") || !strings.Contains(line, "6400.0 samples/s") {
		t.Errorf("BenchLine = %q; want name BenchmarkTrain/mode=fae-no-packing-2, 40000000 ns/op (4s/100 steps), 6400.0 samples/s", line)
	}
}

func TestAblationApply(t *testing.T) {
	base := config.Default()
	a, err := AblationNamed("interleaving")
	if err != nil {
		t.Fatal(err)
	}
	v, err := a.Apply(base)
	if err != nil {
		t.Fatal(err)
	}
	if v.Name != "fae-no-interleaving" || v.Config.Train.Prefetch != 0 || v.Setting != "train.prefetch=0" || base.Train.Prefetch == 0 {
		t.Errorf("interleaving ablation = %s (%s), prefetch %d, base prefetch %d; want fae-no-interleaving (train.prefetch=0), 0, unchanged",
			v.Name, v.Setting, v.Config.Train.Prefetch, base.Train.Prefetch)
	}
	base.Train.Prefetch = 0
	if _, err := a.Apply(base); err == nil {
		t.Errorf("interleaving ablation of a config already without prefetch: no error")
	}
	p, err := AblationNamed("packing")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := p.Apply(base); err != nil || v.Config.Train.Packing || v.Setting != "train.packing=false" || !base.Train.Packing {
		t.Errorf("packing ablation = %+v, %v; want packing off in the variant only", v.Setting, err)
	}
	if _, err := AblationNamed("caching"); err == nil {
		t.Errorf("AblationNamed(caching): no error")
	}
}

func TestReadRate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.jsonl")
	lines := `{"kind":"train","step":100,"rate":50}
{"kind":"swap","step":120,"from":"cold","to":"hot","decision":{"swap":1,"eval_loss":0.52,"prev_loss":null,"rate_before":50,"rate_after":50,"action":"first"}}
{"kind":"eval","step":150,"test_auc":0.7}
{"kind":"swap","step":180,"from":"hot","to":"cold","decision":{"swap":2,"eval_loss":0.55,"prev_loss":0.52,"rate_before":50,"rate_after":25,"action":"halve"}}
`
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	pts, err := ReadRate(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []RatePoint{{Step: 0, Rate: 50, Action: "start"}, {Step: 120, Rate: 50, Action: "first"}, {Step: 180, Rate: 25, Action: "halve"}}
	if len(pts) != len(want) {
		t.Fatalf("ReadRate = %+v; want %+v", pts, want)
	}
	for i := range want {
		if pts[i].Step != want[i].Step || pts[i].Rate != want[i].Rate || pts[i].Action != want[i].Action {
			t.Errorf("ReadRate[%d] = %+v; want %+v", i, pts[i], want[i])
		}
	}
	if err := os.WriteFile(path, []byte("{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRate(path); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("ReadRate of a bad line: error %v; want one naming line 1", err)
	}
}

// TestConclusionsWarnAllHot checks that report.md's headline warns first
// when every input is hot (or none), and says nothing at a split share.
func TestConclusionsWarnAllHot(t *testing.T) {
	for _, tc := range []struct {
		share float64
		warn  bool
	}{{1, true}, {0, true}, {0.6, false}} {
		r := &Report{Setup: Setup{HotInputShare: tc.share}}
		c := r.Conclusions()
		got := len(c) > 0 && strings.HasPrefix(c[0], "**Warning:**")
		if got != tc.warn {
			t.Errorf("Conclusions at hot share %v: %q; warning %v, want %v", tc.share, c, got, tc.warn)
		}
	}
}

// TestTicks: round steps spanning the range, zero written without a sign.
func TestTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   []float64
	}{
		{0, 10, []float64{0, 2, 4, 6, 8, 10}},
		{-0.6, 2.4, []float64{-0.5, 0, 0.5, 1, 1.5, 2}},
		{0.68, 0.70, []float64{0.68, 0.685, 0.69, 0.695, 0.7}},
		{0, 9280, []float64{0, 2000, 4000, 6000, 8000}},
	} {
		got := ticks(c.lo, c.hi, 6)
		if len(got) != len(c.want) {
			t.Errorf("ticks(%g, %g) = %v; want %v", c.lo, c.hi, got, c.want)
			continue
		}
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-9 {
				t.Errorf("ticks(%g, %g) = %v; want %v", c.lo, c.hi, got, c.want)
				break
			}
		}
	}
	if s := tickText(ticks(-1, 1, 4)[2]); s != "0" {
		t.Errorf("zero tick written %q", s)
	}
	if s := tickText(12000); s != "12,000" {
		t.Errorf("tickText(12000) = %q", s)
	}
}

// TestAUCChartFramesTheOracle: an oracle below the curves is drawn inside
// the axes, not under them.
func TestAUCChartFramesTheOracle(t *testing.T) {
	rep := fakeReport(t)
	for i := range rep.Modes {
		rep.Modes[i].OracleAUC = 0.6
	}
	p := rep.aucChart()
	if !(p.yMin <= 0.6 && 0.6 <= p.yMax) {
		t.Errorf("AUC axis [%g, %g] leaves out the oracle 0.6", p.yMin, p.yMax)
	}
}

// TestTicksEnd: a range too narrow for its values to step through still
// gives a few ticks.
func TestTicksEnd(t *testing.T) {
	for _, c := range [][2]float64{{1, 1.0000000000000002}, {1e20, 1.0000000000000002e20}, {0, math.Inf(1)}} {
		if got := ticks(c[0], c[1], 6); len(got) == 0 || len(got) > 25 {
			t.Errorf("ticks(%g, %g) = %d values", c[0], c[1], len(got))
		}
	}
}
