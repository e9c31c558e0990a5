package compute

// interactForwardRef follows the definition: T = [x; e1..ef], Z = T·Tᵀ,
// output x then the strictly lower triangle of Z row by row. Dot products
// accumulate in float64.
func interactForwardRef(out, x, emb []float32, n, f, d int) {
	w := InteractWidth(f, d)
	vec := func(s, i int) []float32 {
		if i == 0 {
			return x[s*d : s*d+d]
		}
		o := (s*f + i - 1) * d
		return emb[o : o+d]
	}
	for s := range n {
		o := out[s*w : s*w+w]
		copy(o, x[s*d:s*d+d])
		p := d
		for i := 1; i <= f; i++ {
			ti := vec(s, i)
			for j := range i {
				tj := vec(s, j)
				var dot float64
				for k := range d {
					dot += float64(ti[k]) * float64(tj[k])
				}
				o[p] = float32(dot)
				p++
			}
		}
	}
}

// interactBackwardRef: for every pair (i, j) with gradient g, dT_i += g*T_j
// and dT_j += g*T_i; dx also receives the pass-through part of dOut.
func interactBackwardRef(dx, demb, dOut, x, emb []float32, n, f, d int) {
	w := InteractWidth(f, d)
	dt := make([]float64, (f+1)*d)
	for s := range n {
		t := func(i int) []float32 {
			if i == 0 {
				return x[s*d : s*d+d]
			}
			o := (s*f + i - 1) * d
			return emb[o : o+d]
		}
		g := dOut[s*w : s*w+w]
		for k := range dt {
			dt[k] = 0
		}
		for k := range d {
			dt[k] = float64(g[k])
		}
		p := d
		for i := 1; i <= f; i++ {
			ti := t(i)
			for j := range i {
				tj := t(j)
				gp := float64(g[p])
				p++
				for k := range d {
					dt[i*d+k] += gp * float64(tj[k])
					dt[j*d+k] += gp * float64(ti[k])
				}
			}
		}
		for k := range d {
			dx[s*d+k] = float32(dt[k])
		}
		for i := 1; i <= f; i++ {
			o := (s*f + i - 1) * d
			for k := range d {
				demb[o+k] = float32(dt[i*d+k])
			}
		}
	}
}
