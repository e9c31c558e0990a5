package bench

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/picasso-ctr/picasso/pkg/profile"
	"github.com/picasso-ctr/picasso/pkg/train"
)

// WriteMarkdown writes the report as Markdown (report.md), referring to the
// charts by the names WriteCharts gives them.
func (r *Report) WriteMarkdown(w io.Writer, charts []string) error {
	b := &strings.Builder{}
	s, e := r.Setup, r.Environment
	fmt.Fprintf(b, "# picasso bench: %s\n\n", strings.Join(r.variantNames(), ", "))
	for _, line := range r.Conclusions() {
		fmt.Fprintf(b, "- %s\n", line)
	}
	b.WriteString("\n## Setup\n\n")
	fmt.Fprintf(b, "- Command: `%s`\n", e.Command)
	fmt.Fprintf(b, "- Machine: %s, %d logical cores (GOMAXPROCS %d), %s/%s; GPU: %s\n", e.CPU, e.Cores, e.GOMAXPROCS, e.OS, e.Arch, e.GPU)
	fmt.Fprintf(b, "- Software: picasso %s, %s, compute backend %s\n", e.Picasso, e.Go, e.Backend)
	fmt.Fprintf(b, "- Data: `%s`, %d training rows; test AUC on %d of the test split's %d rows (`%s`)\n", s.Data, s.Rows, s.TestRows, s.TestRowsTotal, s.Test)
	fmt.Fprintf(b, "- FAE layout: `%s`: %.1f%% of inputs hot, %d hot and %d cold mini-batches, hot table %d rows (profile `%s`)%s\n",
		s.Layout, 100*s.HotInputShare, s.HotBatches, s.ColdBatches, s.HotTableRows, s.Profile, reusedNote(s))
	fmt.Fprintf(b, "- Training: every run trains %d steps (%.3g epochs of %d steps) of %d samples from seed %d, evaluating the test set every %d steps and at the end; %s\n",
		s.Steps, s.Epochs, s.StepsPerEpoch, s.BatchSize, s.Seed, s.EvalEvery, repeatNote(s.Repeat))
	if len(s.Ablations) > 0 {
		fmt.Fprintf(b, "- Ablations: %s, applied to %s\n", strings.Join(s.Ablations, ", "), strings.Join(s.AblatedModes, ", "))
	}
	fmt.Fprintf(b, "- Total training time %.1f s; profile and classify %.1f s\n", r.Seconds, s.PrepSeconds)

	b.WriteString("\n## Results\n\n")
	b.WriteString("| variant | samples/s (median) | min–max | speedup vs hybrid | min–max | host→device | device→host | bytes vs hybrid | test AUC | ΔAUC vs cpu | test log loss | hot inputs | swaps |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, m := range r.Modes {
		fmt.Fprintf(b, "| %s | %s | %s–%s | %s | %s–%s | %s | %s | %s | %s | %s | %s | %.1f%% | %d |\n", m.label(),
			fnum(m.TrainSamplesPerS.Median, "%.0f"), fnum(m.TrainSamplesPerS.Min, "%.0f"), fnum(m.TrainSamplesPerS.Max, "%.0f"),
			fnum(m.SpeedupVsHybrid, "%.2f×"), fnum(m.SpeedupSpread.Min, "%.2f"), fnum(m.SpeedupSpread.Max, "%.2f"),
			profile.FormatBytes(float64(m.BytesH2D)), profile.FormatBytes(float64(m.BytesD2H)), bytesRatio(m.BytesRatioVsHybrid),
			fnum(m.TestAUC, "%.5f"), fnum(m.AUCDeltaVsCPU, "%+.5f"), fnum(m.TestLogLoss, "%.5f"),
			100*m.HotInputShare, m.Swaps)
	}
	if o := r.oracle(); !math.IsNaN(o) {
		fmt.Fprintf(b, "\nOracle AUC (the generator's true click probability on the same test rows): %.5f.\n", o)
	}
	if r.Deterministic {
		fmt.Fprintf(b, "\nEvery repeat of every variant moved the same bytes and reached the same test metrics at every checkpoint.\n")
	} else {
		b.WriteString("\n**Not deterministic:**\n\n")
		for _, m := range r.Modes {
			if !m.Deterministic {
				fmt.Fprintf(b, "- %s: %s\n", m.Name, m.DeterminismNote)
			}
		}
	}
	chart(b, charts, ChartThroughput, "Throughput by variant")
	chart(b, charts, ChartBytes, "Bytes moved between host and device")

	b.WriteString("\n## Time per phase\n\n")
	b.WriteString("Seconds of each variant's median run (by training time). \"other\" is the measured time minus the sum of the phases; negative means phases overlap.\n\n")
	b.WriteString("| variant | measured |")
	for _, p := range PhaseNames {
		fmt.Fprintf(b, " %s |", p.Label)
	}
	b.WriteString(" other | other share |\n|---|---:|")
	b.WriteString(strings.Repeat("---:|", len(PhaseNames)+2) + "\n")
	for _, m := range r.Modes {
		fmt.Fprintf(b, "| %s | %.3f |", m.label(), m.Seconds)
		for _, v := range phaseValues(m.PhaseSeconds) {
			fmt.Fprintf(b, " %.3f |", v)
		}
		fmt.Fprintf(b, " %.3f | %.1f%% |\n", m.PhaseOtherSeconds, 100*m.PhaseOtherShare)
	}
	pc := r.PhaseCheck
	if pc.Within {
		fmt.Fprintf(b, "\nPhase check: in every run the phases add up to the measured time within %.0f%% (largest gap %.2f%%, %s).\n",
			100*pc.Tolerance, 100*pc.MaxAbsOtherShare, pc.WorstRun)
	} else {
		fmt.Fprintf(b, "\n**Phase check failed:** the largest gap between the measured time and the sum of the phases is %.1f%% (%s), above %.0f%%:\n\n",
			100*pc.MaxAbsOtherShare, pc.WorstRun, 100*pc.Tolerance)
		for _, n := range pc.Notes {
			fmt.Fprintf(b, "- %s\n", n)
		}
	}
	chart(b, charts, ChartPhases, "Time per phase")

	b.WriteString("\n## Test metrics at checkpoints\n\n")
	r.evalTable(b, "test AUC", func(e train.EvalResult) train.Number { return e.AUC })
	b.WriteString("\n")
	r.evalTable(b, "test log loss", func(e train.EvalResult) train.Number { return e.LogLoss })
	chart(b, charts, ChartAUC, "Test AUC over steps")

	if r.hasScheduler() {
		b.WriteString("\n## Shuffle Scheduler\n\n")
		b.WriteString("The rate R is the share (%) of each class's mini-batches run in one phase before the next hot/cold swap; the scheduler halves it when the held-out loss rose since the previous swap and doubles it after several falls in a row.\n\n")
		for _, m := range r.Modes {
			switch {
			case len(m.RateHistory) > 0:
				fmt.Fprintf(b, "- %s: %s\n", m.label(), rateSummary(m.RateHistory))
			case m.FinalRate != nil:
				fmt.Fprintf(b, "- %s: no hot/cold swap in %d steps (the run never left its first phase, or the layout has one class only); R(%g) throughout\n",
					m.label(), m.Steps, float64(*m.FinalRate))
			}
		}
		chart(b, charts, ChartRate, "Shuffle Scheduler rate over steps")
	}

	hh := false
	for _, m := range r.Modes {
		hh = hh || m.HybridHash != nil
	}
	if hh {
		b.WriteString("\n## HybridHash\n\n")
		b.WriteString("| variant | hit ratio (lookups) | hit ratio (unique IDs) | rows hot | host | disk only | evictions | disk read | disk written |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, m := range r.Modes {
			if h := m.HybridHash; h != nil {
				fmt.Fprintf(b, "| %s | %.1f%% | %.1f%% | %d | %d | %d | %d | %s | %s |\n", m.Name, 100*float64(h.HitRatio), 100*float64(h.UniqueHitRatio),
					h.HotRows, h.HostRows, h.DiskOnlyRows, h.Evictions, profile.FormatBytes(float64(h.DiskBytesRead)), profile.FormatBytes(float64(h.DiskBytesWritten)))
			}
		}
	}

	b.WriteString("\n## Repeats\n\n")
	b.WriteString("| variant | repeat | measured s | test eval s | training s | samples/s | phase other s | run directory |\n|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, m := range r.Modes {
		for _, rr := range m.Runs {
			fmt.Fprintf(b, "| %s | %d | %.3f | %.3f | %.3f | %.0f | %.3f | `%s` |\n", m.Name, rr.Repeat, rr.Seconds, rr.TestEvalSeconds,
				rr.TrainSeconds, rr.TrainSamplesPerS, rr.OtherSeconds, rr.Dir)
		}
	}

	b.WriteString(`
## How to read this report

- **samples/s** is samples trained divided by the training time: a run's measured time (train's summary.json "seconds": the training loop with its synchronisations and the Shuffle Scheduler's evaluations) minus the test-set evaluations at the checkpoints, which are measurement, not training. The Go benchmark lines (bench.txt) report the same time per step as ns/op.
- **speedup vs hybrid** is, per repeat, hybrid's training time divided by the variant's in the same repeat (every repeat runs all variants back to back, so both saw the same machine load); the table shows the median over repeats and the range.
- **host→device / device→host** count every byte that crosses the host/device link during training (the initial placement of the model is not counted): pooled embeddings and their gradients, dense inputs, labels and IDs, and hot rows synchronised at swaps. Without a GPU the link is emulated and its bytes counted. **bytes vs hybrid** is the variant's total over hybrid's.
- **hot inputs** is the share of trained samples that ran in all-hot mini-batches.
- **ΔAUC vs cpu** is the final test AUC minus the cpu mode's; every mode trains the same mini-batches from the same seed, fae and artifact in hot/cold phases, the others in one seeded interleaved order.
`)
	_, err := io.WriteString(w, b.String())
	return err
}

// Conclusions states the main results in sentences.
func (r *Report) Conclusions() []string {
	var out []string
	if w := profile.ShareWarning(r.Setup.HotInputShare); w != "" {
		out = append(out, "**Warning:** "+w+".")
	}
	var base *VariantReport
	for i := range r.Modes {
		if r.Modes[i].Name == r.Setup.Baseline {
			base = &r.Modes[i]
		}
	}
	cpuName := "cpu"
	for _, m := range r.Modes {
		line := fmt.Sprintf("**%s** trained %s samples/s", m.label(), fnum(m.TrainSamplesPerS.Median, "%.0f"))
		if base != nil && m.Name != base.Name {
			line += fmt.Sprintf(", %s hybrid's (%s–%s over %d repeats)", fnum(m.SpeedupVsHybrid, "%.2f×"),
				fnum(m.SpeedupSpread.Min, "%.2f"), fnum(m.SpeedupSpread.Max, "%.2f"), len(m.Runs))
			if ratio := float64(m.BytesRatioVsHybrid); ratio > 0 {
				line += fmt.Sprintf(", and moved %s host↔device (%s)", profile.FormatBytes(float64(m.BytesH2D+m.BytesD2H)), bytesRatio(m.BytesRatioVsHybrid))
			} else if ratio == 0 {
				line += ", and moved nothing host↔device"
			}
		} else {
			line += fmt.Sprintf(" and moved %s host↔device", profile.FormatBytes(float64(m.BytesH2D+m.BytesD2H)))
		}
		line += fmt.Sprintf("; test AUC %s", fnum(m.TestAUC, "%.5f"))
		if d := float64(m.AUCDeltaVsCPU); !math.IsNaN(d) && m.Name != cpuName {
			line += fmt.Sprintf(" (%+.5f vs cpu)", d)
		}
		out = append(out, line+".")
	}
	if !r.PhaseCheck.Within {
		out = append(out, fmt.Sprintf("The phase breakdown does not add up within %.0f%% (worst %.1f%%, %s): see Time per phase.",
			100*r.PhaseCheck.Tolerance, 100*r.PhaseCheck.MaxAbsOtherShare, r.PhaseCheck.WorstRun))
	}
	return out
}

func (m *VariantReport) label() string {
	if m.Setting == "" {
		return m.Name
	}
	return fmt.Sprintf("%s (%s)", m.Name, m.Setting)
}

func (r *Report) variantNames() []string {
	var out []string
	for _, m := range r.Modes {
		out = append(out, m.Name)
	}
	return out
}

func (r *Report) oracle() float64 {
	for _, m := range r.Modes {
		if o := float64(m.OracleAUC); !math.IsNaN(o) {
			return o
		}
	}
	return math.NaN()
}

// hasScheduler reports whether any variant ran the Shuffle Scheduler.
func (r *Report) hasScheduler() bool {
	for _, m := range r.Modes {
		if m.FinalRate != nil || len(m.RateHistory) > 0 {
			return true
		}
	}
	return false
}

func (r *Report) hasRate() bool {
	for _, m := range r.Modes {
		if len(m.RateHistory) > 0 {
			return true
		}
	}
	return false
}

// evalTable writes one row per checkpoint step and one column per variant.
func (r *Report) evalTable(b *strings.Builder, what string, get func(train.EvalResult) train.Number) {
	fmt.Fprintf(b, "| step | %s |\n|---:|%s\n", strings.Join(r.variantNames(), " "+what+" | ")+" "+what, strings.Repeat("---:|", len(r.Modes)))
	var steps []int64
	seen := map[int64]bool{}
	for _, m := range r.Modes {
		for _, e := range m.Evals {
			if !seen[e.Step] {
				seen[e.Step] = true
				steps = append(steps, e.Step)
			}
		}
	}
	for _, st := range steps {
		fmt.Fprintf(b, "| %d |", st)
		for _, m := range r.Modes {
			v := "–"
			for _, e := range m.Evals {
				if e.Step == st {
					v = fnum(get(e), "%.5f")
				}
			}
			fmt.Fprintf(b, " %s |", v)
		}
		b.WriteString("\n")
	}
}

func rateSummary(pts []RatePoint) string {
	var parts []string
	const most = 24
	for i, p := range pts {
		if i == most && len(pts) > most+1 {
			parts = append(parts, fmt.Sprintf("… (%d more swaps)", len(pts)-most-1))
			p = pts[len(pts)-1]
		} else if i > most {
			continue
		}
		if p.Action == "start" {
			parts = append(parts, fmt.Sprintf("R(%g) at the start", p.Rate))
			continue
		}
		parts = append(parts, fmt.Sprintf("step %d %s → R(%g)", p.Step, p.Action, p.Rate))
	}
	return strings.Join(parts, ", ")
}

func chart(b *strings.Builder, charts []string, name, alt string) {
	for _, c := range charts {
		if c == name {
			fmt.Fprintf(b, "\n![%s](%s)\n", alt, name)
		}
	}
}

func reusedNote(s Setup) string {
	var reused []string
	for _, k := range []string{"profile", "classify", "test"} {
		if s.Reused[k] {
			reused = append(reused, k)
		}
	}
	if len(reused) == 0 {
		return ""
	}
	return "; reused up-to-date " + strings.Join(reused, ", ") + " outputs from " + "`" + s.Prep + "`"
}

func repeatNote(k int) string {
	if k <= 1 {
		return "one run per variant (no spread: use --repeat)"
	}
	return fmt.Sprintf("%d repeats, interleaved (repeat r runs every variant before repeat r+1)", k)
}

func fnum(v train.Number, format string) string {
	if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
		return "n/a"
	}
	return fmt.Sprintf(format, float64(v))
}

// bytesRatio describes a variant's bytes over hybrid's.
func bytesRatio(r train.Number) string {
	f := float64(r)
	switch {
	case math.IsNaN(f):
		return "n/a"
	case f == 0:
		return "none"
	case f < 0.95:
		return fmt.Sprintf("%.3g (%.1f× fewer)", f, 1/f)
	}
	return fmt.Sprintf("%.3g", f)
}
