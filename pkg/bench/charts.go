package bench

import (
	"fmt"
	"math"
	"path/filepath"

	"github.com/picasso-ctr/picasso/pkg/atomicfile"
	"github.com/picasso-ctr/picasso/pkg/profile"
)

// Chart file names. The charts are SVG: drawn as text, they need no fonts
// in the program (a plotting library's took 0.6 ms of every start of it),
// and stay sharp at any size.
const (
	ChartThroughput = "throughput.svg"
	ChartPhases     = "phases.svg"
	ChartBytes      = "bytes.svg"
	ChartAUC        = "auc.svg"
	ChartRate       = "rate.svg"
)

// palette is Tableau's ten colours: distinct, and readable when printed.
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

func colorOf(i int) string { return palette[i%len(palette)] }

// WriteCharts draws the report's charts as SVG files in dir and returns
// their names.
func (r *Report) WriteCharts(dir string) ([]string, error) {
	type chartFn struct {
		name string
		make func() *svgPlot
	}
	charts := []chartFn{
		{ChartThroughput, r.throughputChart},
		{ChartPhases, r.phasesChart},
		{ChartBytes, r.bytesChart},
		{ChartAUC, r.aucChart},
	}
	if r.hasRate() {
		charts = append(charts, chartFn{ChartRate, r.rateChart})
	}
	var names []string
	for _, c := range charts {
		if err := atomicfile.WriteBytes(filepath.Join(dir, c.name), c.make().SVG()); err != nil {
			return names, fmt.Errorf("bench: chart %s: %w", c.name, err)
		}
		names = append(names, c.name)
	}
	return names, nil
}

// newPlot returns a chart with the title and the report's one-line
// context.
func (r *Report) newPlot(title string, widthIn, heightIn float64) *svgPlot {
	s := r.Setup
	return newSVGPlot([]string{title, fmt.Sprintf("%d steps × %d samples, %s; %s", s.Steps, s.BatchSize, repeatsText(s.Repeat), machineText(r.Environment))},
		widthIn, heightIn)
}

func repeatsText(k int) string {
	if k <= 1 {
		return "1 run each"
	}
	return fmt.Sprintf("median of %d runs", k)
}

func machineText(e Environment) string {
	gpu := "no GPU (device emulated)"
	if e.HasGPU {
		gpu = e.GPU
	}
	return fmt.Sprintf("%s, %d cores, %s", e.CPU, e.Cores, gpu)
}

// barHeight is a horizontal bar chart's height in inches for n bars (or
// groups).
func barHeight(n int) float64 { return 2.0 + 0.5*float64(n) }

// rows returns the variant names bottom to top, so the first variant is
// drawn at the top, and the row of variant i.
func (r *Report) rows() ([]string, func(i int) float64) {
	n := len(r.Modes)
	names := make([]string, n)
	for i, m := range r.Modes {
		names[n-1-i] = m.Name
	}
	return names, func(i int) float64 { return float64(n - 1 - i) }
}

func (r *Report) throughputChart() *svgPlot {
	n := len(r.Modes)
	p := r.newPlot("Training throughput by mode (higher is better)", 9, barHeight(n))
	p.xLabel = "samples per second (test evaluations excluded)"
	names, pos := r.rows()
	p.nominalY(names...)
	var top float64
	for i, m := range r.Modes {
		med, lo, hi := float64(m.TrainSamplesPerS.Median), float64(m.TrainSamplesPerS.Min), float64(m.TrainSamplesPerS.Max)
		if math.IsNaN(med) {
			med, lo, hi = 0, 0, 0
		}
		top = max(top, hi)
		p.hbar(pos(i), 0, med, 24, 0, colorOf(0))
		if r.Setup.Repeat > 1 {
			p.xErr(pos(i), lo, hi)
		}
		text := fmt.Sprintf("%.0f/s", med)
		if s := float64(m.SpeedupVsHybrid); !math.IsNaN(s) && m.Name != r.Setup.Baseline {
			text += fmt.Sprintf(", %.2f× hybrid", s)
		}
		p.label(hi, pos(i), text, 8, 0)
	}
	p.xMin, p.xMax = 0, math.Max(top, 1)*1.45
	return p
}

func (r *Report) phasesChart() *svgPlot {
	n := len(r.Modes)
	p := r.newPlot("Where the time goes: seconds per phase of each mode's median run", 9, max(barHeight(n), 4.2))
	p.xLabel = "seconds (bars: phases stacked; black mark: measured wall time)"
	names, pos := r.rows()
	p.nominalY(names...)
	var top float64
	for i, m := range r.Modes {
		x := 0.0
		vals := append(phaseValues(m.PhaseSeconds), max(m.PhaseOtherSeconds, 0))
		for k, v := range vals {
			p.hbar(pos(i), x, x+v, 24, 0, colorOf(k))
			x += v
		}
		p.mark(m.Seconds, pos(i), 1, 3.5, "#000")
		top = max(top, m.Seconds, phaseSum(m.PhaseSeconds))
	}
	for k := range len(PhaseNames) + 1 {
		label := "other (not in a phase)"
		if k < len(PhaseNames) {
			label = PhaseNames[k].Label
		}
		p.legend = append(p.legend, legendEntry{label: label, fill: colorOf(k)})
	}
	p.legend = append(p.legend, legendEntry{label: "measured", mark: 2, color: "#000"})
	p.xMin, p.xMax = 0, math.Max(top, 1e-3)*1.55 // room for the legend
	return p
}

func (r *Report) bytesChart() *svgPlot {
	n := len(r.Modes)
	p := r.newPlot("Bytes moved between host and device during training (lower is better)", 9, barHeight(n)+0.4)
	p.xLabel = "MiB over the host↔device link (FAE Table 7)"
	names, pos := r.rows()
	p.nominalY(names...)
	var top float64
	for i, m := range r.Modes {
		h2d, d2h := float64(m.BytesH2D)/(1<<20), float64(m.BytesD2H)/(1<<20)
		top = max(top, h2d, d2h)
		p.hbar(pos(i), 0, h2d, 14, 7, colorOf(0))
		p.hbar(pos(i), 0, d2h, 14, -7, colorOf(1))
		text := profile.FormatBytes(float64(m.BytesH2D+m.BytesD2H)) + " in all"
		if f := float64(m.BytesRatioVsHybrid); !math.IsNaN(f) && m.Name != r.Setup.Baseline {
			if f == 0 {
				text += ", none vs hybrid"
			} else {
				text += fmt.Sprintf(", %.3g× hybrid's", f)
			}
		}
		p.label(max(h2d, d2h), pos(i), text, 8, 0)
	}
	p.legend = []legendEntry{{label: "host → device", fill: colorOf(0)}, {label: "device → host", fill: colorOf(1)}}
	p.xMin, p.xMax = 0, math.Max(top, 1e-3)*1.6
	return p
}

func (r *Report) aucChart() *svgPlot {
	p := r.newPlot("Test AUC at the checkpoints (higher is better)", 9, 5.5)
	p.xLabel = "training step"
	p.yLabel = fmt.Sprintf("AUC on %d test rows", r.Setup.TestRows)
	p.grid, p.legendLeft = true, true
	var maxStep float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, m := range r.Modes {
		var pts [][2]float64
		for _, e := range m.Evals {
			if a := float64(e.AUC); !math.IsNaN(a) {
				pts = append(pts, [2]float64{float64(e.Step), a})
				maxStep = max(maxStep, float64(e.Step))
				lo, hi = min(lo, a), max(hi, a)
			}
		}
		if len(pts) == 0 {
			continue
		}
		p.line(pts, colorOf(i), 1.5, dashes(i), false)
		for _, pt := range pts {
			p.mark(pt[0], pt[1], i, 3, colorOf(i))
		}
		p.legend = append(p.legend, legendEntry{label: m.Name, stroke: colorOf(i), dashes: dashes(i), mark: i%8 + 1, color: colorOf(i)})
	}
	if math.IsInf(lo, 0) {
		lo, hi = 0.5, 1
	}
	if o := r.oracle(); !math.IsNaN(o) {
		// The oracle is drawn only when it does not squash the curves.
		if o <= hi+max(hi-lo, 0.01) {
			p.line([][2]float64{{0, o}, {math.Max(maxStep, 1), o}}, "#505050", 1, "6 3", false)
			p.legend = append(p.legend, legendEntry{label: fmt.Sprintf("oracle: true click probability, %.4f", o), stroke: "#505050", dashes: "6 3"})
			lo, hi = min(lo, o), max(hi, o)
		} else {
			p.notes = append(p.notes, fmt.Sprintf("oracle AUC of the true click probability: %.4f (above the range shown)", o))
		}
	}
	pad := max((hi-lo)*0.08, 0.002)
	p.xMin, p.xMax = 0, math.Max(maxStep, 1)
	p.yMin, p.yMax = lo-pad, hi+pad
	return p
}

func (r *Report) rateChart() *svgPlot {
	p := r.newPlot("Shuffle Scheduler rate over training (fae)", 9, 4.5)
	p.xLabel = "training step"
	p.yLabel = "rate R: % of each class per phase"
	p.grid = true
	var maxStep float64
	for i, m := range r.Modes {
		if len(m.RateHistory) == 0 {
			continue
		}
		pts := make([][2]float64, 0, len(m.RateHistory)+1)
		for _, rp := range m.RateHistory {
			pts = append(pts, [2]float64{float64(rp.Step), rp.Rate})
		}
		last := m.RateHistory[len(m.RateHistory)-1]
		if float64(m.Steps) > float64(last.Step) {
			pts = append(pts, [2]float64{float64(m.Steps), last.Rate})
		}
		maxStep = max(maxStep, pts[len(pts)-1][0])
		p.line(pts, colorOf(i), 1.5, dashes(i), true)
		for _, pt := range pts[:len(m.RateHistory)] {
			p.mark(pt[0], pt[1], i, 2.5, colorOf(i))
		}
		p.legend = append(p.legend, legendEntry{label: m.Name + " (marks: swaps)", stroke: colorOf(i), dashes: dashes(i), mark: i%8 + 1, color: colorOf(i)})
	}
	p.xMin, p.xMax = 0, math.Max(maxStep, 1)
	p.yMin, p.yMax = 0, 105
	return p
}

// dashes is the dash pattern of line i: solid, dashed or dotted.
func dashes(i int) string {
	switch i % 3 {
	case 1:
		return "6 2"
	case 2:
		return "2 2"
	}
	return ""
}
