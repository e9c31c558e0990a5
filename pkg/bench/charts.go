package bench

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/picasso-ctr/picasso/pkg/atomicfile"
	"github.com/picasso-ctr/picasso/pkg/profile"
)

// Chart file names.
const (
	ChartThroughput = "throughput.png"
	ChartPhases     = "phases.png"
	ChartBytes      = "bytes.png"
	ChartAUC        = "auc.png"
	ChartRate       = "rate.png"
)

// palette is Tableau's ten colours: distinct, and readable when printed.
var palette = []color.Color{
	rgb(0x4e, 0x79, 0xa7), rgb(0xf2, 0x8e, 0x2b), rgb(0xe1, 0x57, 0x59), rgb(0x76, 0xb7, 0xb2), rgb(0x59, 0xa1, 0x4f),
	rgb(0xed, 0xc9, 0x48), rgb(0xb0, 0x7a, 0xa1), rgb(0xff, 0x9d, 0xa7), rgb(0x9c, 0x75, 0x5f), rgb(0xba, 0xb0, 0xac),
}

func rgb(r, g, b uint8) color.Color { return color.RGBA{R: r, G: g, B: b, A: 255} }

func colorOf(i int) color.Color { return palette[i%len(palette)] }

// WriteCharts draws the report's charts as PNG files in dir and returns
// their names.
func (r *Report) WriteCharts(dir string) ([]string, error) {
	type chartFn struct {
		name string
		make func() (*plot.Plot, vg.Length, vg.Length, error)
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
		p, w, h, err := c.make()
		if err != nil {
			return names, fmt.Errorf("bench: chart %s: %w", c.name, err)
		}
		wt, err := p.WriterTo(w, h, "png")
		if err != nil {
			return names, fmt.Errorf("bench: chart %s: %w", c.name, err)
		}
		err = atomicfile.Write(filepath.Join(dir, c.name), func(w io.Writer) error {
			_, err := wt.WriteTo(w)
			return err
		})
		if err != nil {
			return names, fmt.Errorf("bench: chart %s: %w", c.name, err)
		}
		names = append(names, c.name)
	}
	return names, nil
}

// newPlot returns a plot with the title and the report's one-line context.
func (r *Report) newPlot(title string) *plot.Plot {
	p := plot.New()
	s := r.Setup
	p.Title.Text = fmt.Sprintf("%s\n%d steps × %d samples, %s; %s", title, s.Steps, s.BatchSize, repeatsText(s.Repeat), machineText(r.Environment))
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.Title.Padding = vg.Points(6)
	return p
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

// barLayout sizes a horizontal bar chart with n bars (or groups).
func barLayout(n int) (w, h vg.Length) {
	return 9 * vg.Inch, vg.Length(2.0+0.5*float64(n)) * vg.Inch
}

// rows returns the variant names bottom to top, so the first variant is
// drawn at the top, and the position of variant i.
func (r *Report) rows() ([]string, func(i int) float64) {
	n := len(r.Modes)
	names := make([]string, n)
	for i, m := range r.Modes {
		names[n-1-i] = m.Name
	}
	return names, func(i int) float64 { return float64(n - 1 - i) }
}

func (r *Report) throughputChart() (*plot.Plot, vg.Length, vg.Length, error) {
	p := r.newPlot("Training throughput by mode (higher is better)")
	p.X.Label.Text = "samples per second (test evaluations excluded)"
	names, pos := r.rows()
	n := len(r.Modes)
	vals := make(plotter.Values, n)
	type xerr struct {
		plotter.XYs
		plotter.XErrors
	}
	e := xerr{XYs: make(plotter.XYs, n), XErrors: make(plotter.XErrors, n)}
	lab := plotter.XYLabels{XYs: make(plotter.XYs, n), Labels: make([]string, n)}
	var top float64
	for i, m := range r.Modes {
		med, lo, hi := float64(m.TrainSamplesPerS.Median), float64(m.TrainSamplesPerS.Min), float64(m.TrainSamplesPerS.Max)
		if math.IsNaN(med) {
			med, lo, hi = 0, 0, 0
		}
		j := int(pos(i))
		vals[j] = med
		e.XYs[j] = plotter.XY{X: med, Y: pos(i)}
		e.XErrors[j] = struct{ Low, High float64 }{med - lo, hi - med}
		top = max(top, hi)
		lab.XYs[j] = plotter.XY{X: hi, Y: pos(i)}
		lab.Labels[j] = fmt.Sprintf("  %.0f/s", med)
		if s := float64(m.SpeedupVsHybrid); !math.IsNaN(s) && m.Name != r.Setup.Baseline {
			lab.Labels[j] += fmt.Sprintf(", %.2f× hybrid", s)
		}
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(18))
	if err != nil {
		return nil, 0, 0, err
	}
	bars.Horizontal = true
	bars.Color = colorOf(0)
	bars.LineStyle.Width = 0
	p.Add(bars)
	if r.Setup.Repeat > 1 {
		eb, err := plotter.NewXErrorBars(e)
		if err != nil {
			return nil, 0, 0, err
		}
		eb.LineStyle.Width = vg.Points(1.2)
		p.Add(eb)
	}
	labels, err := plotter.NewLabels(lab)
	if err != nil {
		return nil, 0, 0, err
	}
	labels.Offset = vg.Point{Y: -vg.Points(4)}
	p.Add(labels)
	p.NominalY(names...)
	p.X.Min, p.X.Max = 0, top*1.45
	w, h := barLayout(n)
	return p, w, h, nil
}

func (r *Report) phasesChart() (*plot.Plot, vg.Length, vg.Length, error) {
	p := r.newPlot("Where the time goes: seconds per phase of each mode's median run")
	p.X.Label.Text = "seconds (bars: phases stacked; black mark: measured wall time)"
	names, pos := r.rows()
	n := len(r.Modes)
	series := make([]plotter.Values, len(PhaseNames)+1)
	for k := range series {
		series[k] = make(plotter.Values, n)
	}
	measured := make(plotter.XYs, n)
	var top float64
	for i, m := range r.Modes {
		j := int(pos(i))
		for k, v := range phaseValues(m.PhaseSeconds) {
			series[k][j] = v
		}
		series[len(PhaseNames)][j] = max(m.PhaseOtherSeconds, 0)
		measured[j] = plotter.XY{X: m.Seconds, Y: pos(i)}
		top = max(top, m.Seconds, phaseSum(m.PhaseSeconds))
	}
	var prev *plotter.BarChart
	p.Legend.Top = true
	for k, vals := range series {
		bars, err := plotter.NewBarChart(vals, vg.Points(18))
		if err != nil {
			return nil, 0, 0, err
		}
		bars.Horizontal = true
		bars.Color = colorOf(k)
		bars.LineStyle.Width = 0
		if prev != nil {
			bars.StackOn(prev)
		}
		prev = bars
		p.Add(bars)
		label := "other (not in a phase)"
		if k < len(PhaseNames) {
			label = PhaseNames[k].Label
		}
		p.Legend.Add(label, bars)
	}
	sc, err := plotter.NewScatter(measured)
	if err != nil {
		return nil, 0, 0, err
	}
	sc.GlyphStyle = draw.GlyphStyle{Shape: draw.BoxGlyph{}, Radius: vg.Points(2.5), Color: color.Black}
	p.Add(sc)
	p.Legend.Add("measured", sc)
	p.NominalY(names...)
	p.X.Min, p.X.Max = 0, top*1.55 // room for the legend
	w, h := barLayout(n)
	return p, w, max(h, 4.2*vg.Inch), nil
}

func (r *Report) bytesChart() (*plot.Plot, vg.Length, vg.Length, error) {
	p := r.newPlot("Bytes moved between host and device during training (lower is better)")
	p.X.Label.Text = "MiB over the host↔device link (FAE Table 7)"
	names, pos := r.rows()
	n := len(r.Modes)
	h2d, d2h := make(plotter.Values, n), make(plotter.Values, n)
	lab := plotter.XYLabels{XYs: make(plotter.XYs, n), Labels: make([]string, n)}
	var top float64
	for i, m := range r.Modes {
		j := int(pos(i))
		h2d[j], d2h[j] = float64(m.BytesH2D)/(1<<20), float64(m.BytesD2H)/(1<<20)
		top = max(top, h2d[j], d2h[j])
		lab.XYs[j] = plotter.XY{X: max(h2d[j], d2h[j]), Y: pos(i)}
		lab.Labels[j] = "  " + profile.FormatBytes(float64(m.BytesH2D+m.BytesD2H)) + " in all"
		if f := float64(m.BytesRatioVsHybrid); !math.IsNaN(f) && m.Name != r.Setup.Baseline {
			if f == 0 {
				lab.Labels[j] += ", none vs hybrid"
			} else {
				lab.Labels[j] += fmt.Sprintf(", %.3g× hybrid's", f)
			}
		}
	}
	w := vg.Points(12)
	for k, vals := range []plotter.Values{h2d, d2h} {
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, 0, 0, err
		}
		bars.Horizontal = true
		bars.Color = colorOf(k)
		bars.LineStyle.Width = 0
		bars.Offset = w/2 - vg.Length(k)*w
		p.Add(bars)
		p.Legend.Add([]string{"host → device", "device → host"}[k], bars)
	}
	labels, err := plotter.NewLabels(lab)
	if err != nil {
		return nil, 0, 0, err
	}
	labels.Offset = vg.Point{Y: -vg.Points(4)}
	p.Add(labels)
	p.Legend.Top = true
	p.NominalY(names...)
	p.X.Min, p.X.Max = 0, math.Max(top, 1e-3)*1.6
	width, height := barLayout(n)
	return p, width, height + 0.4*vg.Inch, nil
}

func (r *Report) aucChart() (*plot.Plot, vg.Length, vg.Length, error) {
	p := r.newPlot("Test AUC at the checkpoints (higher is better)")
	p.X.Label.Text = "training step"
	p.Y.Label.Text = fmt.Sprintf("AUC on %d test rows", r.Setup.TestRows)
	var maxStep float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, m := range r.Modes {
		var pts plotter.XYs
		for _, e := range m.Evals {
			if a := float64(e.AUC); !math.IsNaN(a) {
				pts = append(pts, plotter.XY{X: float64(e.Step), Y: a})
				maxStep = max(maxStep, float64(e.Step))
				lo, hi = min(lo, a), max(hi, a)
			}
		}
		if len(pts) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, 0, 0, err
		}
		line.Color = colorOf(i)
		line.Width = vg.Points(1.5)
		line.Dashes = dashes(i)
		points.Color = colorOf(i)
		points.Shape = glyph(i)
		points.Radius = vg.Points(3)
		p.Add(line, points)
		p.Legend.Add(m.Name, line, points)
	}
	if o := r.oracle(); !math.IsNaN(o) {
		// The oracle is drawn only when it does not squash the curves.
		if math.IsInf(lo, 0) || o <= hi+max(hi-lo, 0.01) {
			ol, err := plotter.NewLine(plotter.XYs{{X: 0, Y: o}, {X: math.Max(maxStep, 1), Y: o}})
			if err != nil {
				return nil, 0, 0, err
			}
			ol.Color = color.Gray{Y: 80}
			ol.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
			p.Add(ol)
			p.Legend.Add(fmt.Sprintf("oracle: true click probability, %.4f", o), ol)
		} else {
			p.Title.Text += fmt.Sprintf("\noracle AUC of the true click probability: %.4f (above the range shown)", o)
		}
	}
	p.Legend.Left, p.Legend.Top = true, true
	p.Add(plotter.NewGrid())
	return p, 9 * vg.Inch, 5.5 * vg.Inch, nil
}

func (r *Report) rateChart() (*plot.Plot, vg.Length, vg.Length, error) {
	p := r.newPlot("Shuffle Scheduler rate over training (fae)")
	p.X.Label.Text = "training step"
	p.Y.Label.Text = "rate R: % of each class per phase"
	for i, m := range r.Modes {
		if len(m.RateHistory) == 0 {
			continue
		}
		pts := make(plotter.XYs, 0, len(m.RateHistory)+1)
		for _, rp := range m.RateHistory {
			pts = append(pts, plotter.XY{X: float64(rp.Step), Y: rp.Rate})
		}
		last := m.RateHistory[len(m.RateHistory)-1]
		if float64(m.Steps) > float64(last.Step) {
			pts = append(pts, plotter.XY{X: float64(m.Steps), Y: last.Rate})
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return nil, 0, 0, err
		}
		line.StepStyle = plotter.PostStep
		line.Color = colorOf(i)
		line.Width = vg.Points(1.5)
		line.Dashes = dashes(i)
		swaps, err := plotter.NewScatter(pts[:len(m.RateHistory)])
		if err != nil {
			return nil, 0, 0, err
		}
		swaps.Color, swaps.Shape, swaps.Radius = colorOf(i), glyph(i), vg.Points(2.5)
		p.Add(line, swaps)
		p.Legend.Add(m.Name+" (marks: swaps)", line, swaps)
	}
	p.Y.Min, p.Y.Max = 0, 105
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p, 9 * vg.Inch, 4.5 * vg.Inch, nil
}

func dashes(i int) []vg.Length {
	switch i % 3 {
	case 1:
		return []vg.Length{vg.Points(6), vg.Points(2)}
	case 2:
		return []vg.Length{vg.Points(2), vg.Points(2)}
	}
	return nil
}

func glyph(i int) draw.GlyphDrawer {
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PlusGlyph{}, draw.CrossGlyph{}, draw.RingGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}}
	return shapes[i%len(shapes)]
}
