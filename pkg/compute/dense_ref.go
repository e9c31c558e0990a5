package compute

import "math"

func biasActRef(out []float32, n, width int, bias []float32, relu bool) {
	for i := range n {
		row := out[i*width : i*width+width]
		for j := range row {
			v := row[j]
			if bias != nil {
				v += bias[j]
			}
			if relu && !(v > 0) {
				v = 0
			}
			row[j] = v
		}
	}
}

func reluBackwardRef(grad, act []float32) {
	for i := range grad {
		if !(act[i] > 0) {
			grad[i] = 0
		}
	}
}

// biasGradRef sums columns in float32, row by row; the fast kernel uses the
// same order per column and so matches it exactly.
func biasGradRef(db, grad []float32, n, width int) {
	for j := range width {
		db[j] = 0
	}
	for i := range n {
		row := grad[i*width : i*width+width]
		for j, g := range row {
			db[j] += g
		}
	}
}

func sgdRef(w, g []float32, lr float32) {
	for i := range w {
		w[i] -= lr * g[i]
	}
}

func adagradRef(w, g, acc []float32, lr, eps float32) {
	for i := range w {
		gi := g[i]
		acc[i] += gi * gi
		w[i] -= lr * gi / (float32(math.Sqrt(float64(acc[i]))) + eps)
	}
}

// adamRef applies Adam with bias corrections c1, c2 to w, with the first
// moments m and second moments v.
func adamRef(w, g, m, v []float32, step Step, c1, c2 float32) {
	b1, b2 := step.Beta1, step.Beta2
	m, v, g = m[:len(w)], v[:len(w)], g[:len(w)]
	for i := range w {
		gi := g[i]
		mi := b1*m[i] + (1-b1)*gi
		vi := b2*v[i] + (1-b2)*gi*gi
		m[i], v[i] = mi, vi
		w[i] -= step.LR * (mi / c1) / (float32(math.Sqrt(float64(vi/c2))) + step.Eps)
	}
}

// decayRef adds wd·w to the gradient g.
func decayRef(g, w []float32, wd float32) {
	g = g[:len(w)]
	for i, x := range w {
		g[i] += wd * x
	}
}

// stepRef applies step to w with the summed gradient g (overwritten when
// step.WD is set) and the optimizer state acc of the whole parameter
// vector, of which w is the part starting at lo of n.
func stepRef(w, g, acc []float32, step Step, lo, n int) {
	if step.WD != 0 {
		decayRef(g, w, step.WD)
	}
	switch step.Opt {
	case OptSGD:
		sgdRef(w, g, step.LR)
	case OptAdagrad:
		adagradRef(w, g, acc[lo:lo+len(w)], step.LR, step.Eps)
	case OptAdam:
		c1, c2 := step.AdamCorrection()
		adamRef(w, g, acc[lo:lo+len(w)], acc[n+lo:n+lo+len(w)], step, c1, c2)
	}
}

func fillRef(x []float32, v float32) {
	for i := range x {
		x[i] = v
	}
}

func copy2DRef(dst []float32, ldd int, src []float32, lds int, rows, cols int) {
	for i := range rows {
		copy(dst[i*ldd:i*ldd+cols], src[i*lds:i*lds+cols])
	}
}
