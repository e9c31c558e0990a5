package bench

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// svgPlot is a chart drawn as SVG: a title, an x axis of numbers, a y axis
// of numbers or of names (one row each, bars), a grid, marks drawn in data
// coordinates, and a legend. The browser or viewer sets the text, so the
// program carries no fonts. Sizes are in pixels at 96 per inch.
type svgPlot struct {
	title          []string // the first line larger
	xLabel, yLabel string
	w, h           float64
	xMin, xMax     float64
	yMin, yMax     float64
	yNames         []string // when set, rows 0..n-1 bottom to top, and yMin/yMax frame them
	grid           bool
	legendLeft     bool
	marks          []func(t *frame, b *strings.Builder)
	legend         []legendEntry
	notes          []string // extra lines under the title
}

// frame maps data coordinates to pixels in the plot area.
type frame struct {
	left, top, pw, ph float64
	p                 *svgPlot
}

func (f *frame) x(v float64) float64 {
	return f.left + (v-f.p.xMin)/(f.p.xMax-f.p.xMin)*f.pw
}

func (f *frame) y(v float64) float64 {
	return f.top + (f.p.yMax-v)/(f.p.yMax-f.p.yMin)*f.ph
}

// legendEntry is a legend line: a swatch (a filled box, a line, a mark,
// or a line through a mark) and its text.
type legendEntry struct {
	label  string
	fill   string // a box of this colour
	stroke string // a line of this colour
	dashes string
	mark   int // mark shape + 1; 0 for none
	color  string
}

const (
	fontSans  = `font-family="DejaVu Sans, Helvetica, Arial, sans-serif"`
	textColor = "#222"
)

func newSVGPlot(title []string, widthIn, heightIn float64) *svgPlot {
	return &svgPlot{title: title, w: 96 * widthIn, h: 96 * heightIn}
}

// nominalY makes the y axis a row per name, the first name at the bottom.
func (p *svgPlot) nominalY(names ...string) {
	p.yNames = names
	p.yMin, p.yMax = -0.6, float64(len(names))-0.4
}

// hbar draws a horizontal bar of row y from x0 to x1, thick pixels high,
// moved off pixels up from the row's centre.
func (p *svgPlot) hbar(y, x0, x1, thick, off float64, color string) {
	p.marks = append(p.marks, func(t *frame, b *strings.Builder) {
		if !(x1 > x0) {
			return
		}
		fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"/>`+"\n",
			num(t.x(x0)), num(t.y(y)-off-thick/2), num(t.x(x1)-t.x(x0)), num(thick), color)
	})
}

// xErr draws an error bar of row y from lo to hi.
func (p *svgPlot) xErr(y, lo, hi float64) {
	p.marks = append(p.marks, func(t *frame, b *strings.Builder) {
		py, x0, x1 := t.y(y), t.x(lo), t.x(hi)
		fmt.Fprintf(b, `<path d="M%s %sH%sM%s %sV%sM%s %sV%s" stroke="#000" stroke-width="1.2" fill="none"/>`+"\n",
			num(x0), num(py), num(x1), num(x0), num(py-5), num(py+5), num(x1), num(py-5), num(py+5))
	})
}

// label writes s at (x, y), moved dx, dy pixels, starting there.
func (p *svgPlot) label(x, y float64, s string, dx, dy float64) {
	p.marks = append(p.marks, func(t *frame, b *strings.Builder) {
		fmt.Fprintf(b, `<text x="%s" y="%s" font-size="11" fill="%s" dominant-baseline="middle">%s</text>`+"\n",
			num(t.x(x)+dx), num(t.y(y)+dy), textColor, html.EscapeString(s))
	})
}

// mark draws mark shape k (see markPath) of radius r at (x, y).
func (p *svgPlot) mark(x, y float64, k int, r float64, color string) {
	p.marks = append(p.marks, func(t *frame, b *strings.Builder) {
		b.WriteString(markPath(k, t.x(x), t.y(y), r, color))
	})
}

// line draws a polyline through pts ({x, y} pairs); step draws it as a
// staircase that holds each value until the next x.
func (p *svgPlot) line(pts [][2]float64, color string, width float64, dashes string, step bool) {
	p.marks = append(p.marks, func(t *frame, b *strings.Builder) {
		if len(pts) == 0 {
			return
		}
		d := &strings.Builder{}
		fmt.Fprintf(d, "M%s %s", num(t.x(pts[0][0])), num(t.y(pts[0][1])))
		for i := 1; i < len(pts); i++ {
			if step {
				fmt.Fprintf(d, "H%s", num(t.x(pts[i][0])))
			}
			fmt.Fprintf(d, "L%s %s", num(t.x(pts[i][0])), num(t.y(pts[i][1])))
		}
		fmt.Fprintf(b, `<path d="%s" stroke="%s" stroke-width="%s" fill="none"%s/>`+"\n", d, color, num(width), dashAttr(dashes))
	})
}

func dashAttr(d string) string {
	if d == "" {
		return ""
	}
	return ` stroke-dasharray="` + d + `"`
}

// markPath is the SVG of mark shape k (circle, square, triangle, plus,
// cross, ring, box, diamond) at (x, y).
func markPath(k int, x, y, r float64, color string) string {
	X, Y, R := num(x), num(y), num(r)
	switch k % 8 {
	case 0:
		return fmt.Sprintf(`<circle cx="%s" cy="%s" r="%s" fill="%s"/>`+"\n", X, Y, R, color)
	case 1:
		return fmt.Sprintf(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s"/>`+"\n", num(x-r), num(y-r), num(2*r), num(2*r), color)
	case 2:
		return fmt.Sprintf(`<path d="M%s %sL%s %sL%s %sZ" fill="%s"/>`+"\n", X, num(y-r), num(x+r), num(y+r*0.8), num(x-r), num(y+r*0.8), color)
	case 3:
		return fmt.Sprintf(`<path d="M%s %sH%sM%s %sV%s" stroke="%s" stroke-width="1.5"/>`+"\n", num(x-r), Y, num(x+r), X, num(y-r), num(y+r), color)
	case 4:
		return fmt.Sprintf(`<path d="M%s %sL%s %sM%s %sL%s %s" stroke="%s" stroke-width="1.5"/>`+"\n", num(x-r), num(y-r), num(x+r), num(y+r), num(x-r), num(y+r), num(x+r), num(y-r), color)
	case 5:
		return fmt.Sprintf(`<circle cx="%s" cy="%s" r="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", X, Y, R, color)
	case 6:
		return fmt.Sprintf(`<rect x="%s" y="%s" width="%s" height="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", num(x-r), num(y-r), num(2*r), num(2*r), color)
	default:
		return fmt.Sprintf(`<path d="M%s %sL%s %sL%s %sL%s %sZ" fill="%s"/>`+"\n", X, num(y-r), num(x+r), Y, X, num(y+r), num(x-r), Y, color)
	}
}

// num writes a pixel coordinate to a tenth of a pixel.
func num(v float64) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

// ticks returns round values spanning [lo, hi], about n of them.
func ticks(lo, hi float64, n int) []float64 {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return []float64{lo}
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	// At most a few times n: a step too small to move v (a range tiny
	// beside its values) would otherwise never end.
	for v := math.Ceil(lo/step-1e-9) * step; v <= hi+step*1e-9 && len(out) <= 4*n; v += step {
		t := math.Round(v/step) * step
		if t == 0 {
			t = 0 // not -0
		}
		out = append(out, t)
	}
	return out
}

// tickText writes a tick value: thousands with a thin space, no trailing
// zeros.
func tickText(v float64) string {
	if math.Abs(v) >= 10000 && v == math.Trunc(v) {
		s := strconv.FormatInt(int64(math.Abs(v)), 10)
		var parts []string
		for len(s) > 3 {
			parts = append([]string{s[len(s)-3:]}, parts...)
			s = s[:len(s)-3]
		}
		s = strings.Join(append([]string{s}, parts...), ",")
		if v < 0 {
			s = "-" + s
		}
		return s
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// SVG returns the chart.
func (p *svgPlot) SVG() []byte {
	b := &strings.Builder{}
	// The plot area: room for the title lines, the x labels and the y
	// labels (names are measured at about 6.5 pixels a character).
	lines := len(p.title) + len(p.notes)
	top := 14 + 18*float64(lines) + 8
	left := 56.0
	if p.yNames != nil {
		longest := 0
		for _, n := range p.yNames {
			longest = max(longest, len([]rune(n)))
		}
		left = 20 + 6.5*float64(longest)
	}
	if p.yLabel != "" {
		left += 18
	}
	bottom := 44.0
	right := 24.0
	f := &frame{left: left, top: top, pw: p.w - left - right, ph: p.h - top - bottom, p: p}
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" %s>`+"\n",
		num(p.w), num(p.h), num(p.w), num(p.h), fontSans)
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="#fff"/>`+"\n")
	for i, t := range append(append([]string{}, p.title...), p.notes...) {
		size, weight := 11, ""
		if i == 0 {
			size, weight = 14, ` font-weight="bold"`
		}
		fmt.Fprintf(b, `<text x="%s" y="%s" font-size="%d"%s text-anchor="middle" fill="%s">%s</text>`+"\n",
			num(p.w/2), num(20+18*float64(i)), size, weight, textColor, html.EscapeString(t))
	}
	// Axes, ticks and grid.
	xt := ticks(p.xMin, p.xMax, 6)
	for _, v := range xt {
		if v < p.xMin || v > p.xMax {
			continue
		}
		x := f.x(v)
		if p.grid {
			fmt.Fprintf(b, `<path d="M%s %sV%s" stroke="#ddd"/>`+"\n", num(x), num(f.top), num(f.top+f.ph))
		}
		fmt.Fprintf(b, `<path d="M%s %sv5" stroke="#000"/>`+"\n", num(x), num(f.top+f.ph))
		fmt.Fprintf(b, `<text x="%s" y="%s" font-size="11" text-anchor="middle" fill="%s">%s</text>`+"\n",
			num(x), num(f.top+f.ph+18), textColor, tickText(v))
	}
	if p.yNames != nil {
		for i, n := range p.yNames {
			fmt.Fprintf(b, `<text x="%s" y="%s" font-size="11" text-anchor="end" dominant-baseline="middle" fill="%s">%s</text>`+"\n",
				num(f.left-8), num(f.y(float64(i))), textColor, html.EscapeString(n))
		}
	} else {
		for _, v := range ticks(p.yMin, p.yMax, 5) {
			if v < p.yMin || v > p.yMax {
				continue
			}
			y := f.y(v)
			if p.grid {
				fmt.Fprintf(b, `<path d="M%s %sH%s" stroke="#ddd"/>`+"\n", num(f.left), num(y), num(f.left+f.pw))
			}
			fmt.Fprintf(b, `<path d="M%s %sh-5" stroke="#000"/>`+"\n", num(f.left), num(y))
			fmt.Fprintf(b, `<text x="%s" y="%s" font-size="11" text-anchor="end" dominant-baseline="middle" fill="%s">%s</text>`+"\n",
				num(f.left-8), num(y), textColor, tickText(v))
		}
	}
	fmt.Fprintf(b, `<path d="M%s %sV%sH%s" stroke="#000" fill="none"/>`+"\n", num(f.left), num(f.top), num(f.top+f.ph), num(f.left+f.pw))
	if p.xLabel != "" {
		fmt.Fprintf(b, `<text x="%s" y="%s" font-size="12" text-anchor="middle" fill="%s">%s</text>`+"\n",
			num(f.left+f.pw/2), num(p.h-8), textColor, html.EscapeString(p.xLabel))
	}
	if p.yLabel != "" {
		fmt.Fprintf(b, `<text transform="translate(14 %s) rotate(-90)" font-size="12" text-anchor="middle" fill="%s">%s</text>`+"\n",
			num(f.top+f.ph/2), textColor, html.EscapeString(p.yLabel))
	}
	for _, m := range p.marks {
		m(f, b)
	}
	p.drawLegend(f, b)
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// drawLegend draws the legend in the plot area's top right (or left)
// corner, on a white box.
func (p *svgPlot) drawLegend(f *frame, b *strings.Builder) {
	if len(p.legend) == 0 {
		return
	}
	longest := 0
	for _, e := range p.legend {
		longest = max(longest, len([]rune(e.label)))
	}
	w, h := 40+6.5*float64(longest), 8+18*float64(len(p.legend))
	x := f.left + f.pw - w - 6
	if p.legendLeft {
		x = f.left + 6
	}
	y := f.top + 6
	fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s" fill="#fff" fill-opacity="0.9" stroke="#bbb"/>`+"\n", num(x), num(y), num(w), num(h))
	for i, e := range p.legend {
		cy := y + 13 + 18*float64(i)
		switch {
		case e.fill != "":
			fmt.Fprintf(b, `<rect x="%s" y="%s" width="18" height="10" fill="%s"/>`+"\n", num(x+8), num(cy-5), e.fill)
		case e.stroke != "":
			fmt.Fprintf(b, `<path d="M%s %sh22" stroke="%s" stroke-width="1.5"%s/>`+"\n", num(x+6), num(cy), e.stroke, dashAttr(e.dashes))
		}
		if e.mark > 0 {
			b.WriteString(markPath(e.mark-1, x+17, cy, 3, e.color))
		}
		fmt.Fprintf(b, `<text x="%s" y="%s" font-size="11" dominant-baseline="middle" fill="%s">%s</text>`+"\n",
			num(x+34), num(cy), textColor, html.EscapeString(e.label))
	}
}
