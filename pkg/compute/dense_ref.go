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
