package compute

func checkInteractForward(out, x, emb []float32, n, f, d int) {
	checkInteract("InteractForward", n, f, d)
	needLen("InteractForward", "out", out, n*InteractWidth(f, d))
	needLen("InteractForward", "x", x, n*d)
	needLen("InteractForward", "emb", emb, n*f*d)
}

func checkInteractBackward(dx, demb, dOut, x, emb []float32, n, f, d int) {
	checkInteract("InteractBackward", n, f, d)
	needLen("InteractBackward", "dx", dx, n*d)
	needLen("InteractBackward", "demb", demb, n*f*d)
	needLen("InteractBackward", "dOut", dOut, n*InteractWidth(f, d))
	needLen("InteractBackward", "x", x, n*d)
	needLen("InteractBackward", "emb", emb, n*f*d)
}

// interactGrain returns how many samples make a chunk worth a goroutine.
func interactGrain(f, d int) int {
	return max(1, elemGrain/max(1, (f+1)*f/2*d))
}

// InteractForward implements Backend, splitting samples over goroutines.
// With AVX2 and d a multiple of 8, an assembly kernel computes each
// sample's triangle (simd.go); otherwise, with OpenBLAS, each sample's Gram
// matrix is one small sgemm, and without it a register-blocked Go loop
// computes the triangle.
func (c *CPU) InteractForward(ob, xb, eb Buffer, n, f, d int) {
	const k = "InteractForward"
	out, x, emb := c.f32(k, "out", ob), c.f32(k, "x", xb), c.f32(k, "emb", eb)
	checkInteractForward(out, x, emb, n, f, d)
	w := InteractWidth(f, d)
	if interactAVX2(d) {
		c.pool.rangeChunks(n, interactGrain(f, d), 1, func(lo, hi int) {
			interactForwardAVX2(out, x, emb, lo, hi, f, d)
		})
		return
	}
	if c.lib != nil && d > 0 {
		m := f + 1
		c.pool.rangeChunks(n, interactGrain(f, d), 1, func(lo, hi int) {
			tt := make([]float32, m*d)
			z := make([]float32, m*m)
			for s := lo; s < hi; s++ {
				copy(tt, x[s*d:s*d+d])
				copy(tt[d:], emb[s*f*d:(s+1)*f*d])
				c.lib.gemm(false, true, m, m, d, 1, tt, d, tt, d, 0, z, m)
				o := out[s*w : s*w+w]
				copy(o, tt[:d])
				p := d
				for i := 1; i < m; i++ {
					copy(o[p:p+i], z[i*m:i*m+i])
					p += i
				}
			}
		})
		return
	}
	c.pool.rangeChunks(n, interactGrain(f, d), 1, func(lo, hi int) {
		for s := lo; s < hi; s++ {
			interactSample(out[s*w:s*w+w], x[s*d:s*d+d], emb[s*f*d:(s+1)*f*d], f, d)
		}
	})
}

// interactSample computes one output row. Row i of the triangle is done
// four dot products at a time, which loads ti once for four columns.
func interactSample(o, xs, es []float32, f, d int) {
	copy(o[:d], xs)
	p := d
	row := func(i int) []float32 {
		if i == 0 {
			return xs[:d:d]
		}
		return es[(i-1)*d : i*d : i*d]
	}
	for i := 1; i <= f; i++ {
		ti := row(i)
		j := 0
		for ; j+4 <= i; j += 4 {
			a, b, c, e := row(j), row(j+1), row(j+2), row(j+3)
			a, b, c, e = a[:len(ti)], b[:len(ti)], c[:len(ti)], e[:len(ti)]
			var s0, s1, s2, s3 float32
			for k, v := range ti {
				s0 += v * a[k]
				s1 += v * b[k]
				s2 += v * c[k]
				s3 += v * e[k]
			}
			o4 := o[p : p+4 : p+4]
			o4[0], o4[1], o4[2], o4[3] = s0, s1, s2, s3
			p += 4
		}
		for ; j < i; j++ {
			o[p] = dot(ti, row(j))
			p++
		}
	}
}

// dot returns Σ a[k]·b[k] with four partial sums.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	for len(a) >= 4 && len(b) >= 4 {
		a4, b4 := a[:4:4], b[:4:4]
		s0 += a4[0] * b4[0]
		s1 += a4[1] * b4[1]
		s2 += a4[2] * b4[2]
		s3 += a4[3] * b4[3]
		a, b = a[4:], b[4:]
	}
	for k, v := range a {
		s0 += v * b[k]
	}
	return (s0 + s1) + (s2 + s3)
}

// axpy computes y += alpha*x.
func axpy(y []float32, alpha float32, x []float32) {
	x = x[:len(y)]
	for k, v := range x {
		y[k] += alpha * v
	}
}

// InteractBackward implements Backend, splitting samples over goroutines,
// with the same choice of kernels as InteractForward.
func (c *CPU) InteractBackward(dxb, deb, gb, xb, eb Buffer, n, f, d int) {
	const k = "InteractBackward"
	dx, demb, dOut := c.f32(k, "dx", dxb), c.f32(k, "demb", deb), c.f32(k, "dOut", gb)
	x, emb := c.f32(k, "x", xb), c.f32(k, "emb", eb)
	checkInteractBackward(dx, demb, dOut, x, emb, n, f, d)
	w := InteractWidth(f, d)
	if interactAVX2(d) {
		c.pool.rangeChunks(n, interactGrain(f, d), 1, func(lo, hi int) {
			interactBackwardAVX2(dx, demb, dOut, x, emb, lo, hi, f, d)
		})
		return
	}
	if c.lib != nil && d > 0 {
		m := f + 1
		c.pool.rangeChunks(n, interactGrain(f, d), 1, func(lo, hi int) {
			sym := make([]float32, m*m)
			tt := make([]float32, m*d)
			dt := make([]float32, m*d)
			for s := lo; s < hi; s++ {
				g := dOut[s*w : s*w+w]
				fillSym(sym, g[d:], m)
				copy(tt, x[s*d:s*d+d])
				copy(tt[d:], emb[s*f*d:(s+1)*f*d])
				c.lib.gemm(false, false, m, d, m, 1, sym, m, tt, d, 0, dt, d)
				dxs := dx[s*d : s*d+d]
				for k := range dxs {
					dxs[k] = g[k] + dt[k]
				}
				copy(demb[s*f*d:(s+1)*f*d], dt[d:])
			}
		})
		return
	}
	c.pool.rangeChunks(n, interactGrain(f, d), 1, func(lo, hi int) {
		sym := make([]float32, (f+1)*(f+1))
		tt := make([]float32, (f+1)*d)
		for s := lo; s < hi; s++ {
			interactBackwardSample(sym, tt, dx[s*d:s*d+d], demb[s*f*d:(s+1)*f*d], dOut[s*w:s*w+w],
				x[s*d:s*d+d], emb[s*f*d:(s+1)*f*d], f, d)
		}
	})
}

// fillSym writes the m×m symmetric matrix with zero diagonal whose strictly
// lower triangle, row by row, is tri.
func fillSym(sym, tri []float32, m int) {
	p := 0
	for i := range m {
		sym[i*m+i] = 0
		for j := range i {
			v := tri[p]
			sym[i*m+j], sym[j*m+i] = v, v
			p++
		}
	}
}

// interactBackwardSample computes dT = S·T for one sample, where S is the
// symmetric (f+1)×(f+1) matrix holding the pair gradients of dOut on both
// sides of a zero diagonal, then adds dOut's pass-through part to dx. Each
// row of dT is built four columns at a time in registers.
func interactBackwardSample(sym, tt, dxs, des, g, xs, es []float32, f, d int) {
	m := f + 1
	fillSym(sym, g[d:], m)
	copy(tt, xs[:d])
	copy(tt[d:], es[:f*d])
	dst := func(i int) []float32 {
		if i == 0 {
			return dxs[:d:d]
		}
		return des[(i-1)*d : i*d : i*d]
	}
	i := 0
	for ; i+2 <= m; i += 2 {
		// Two rows of dT, four columns at a time: eight sums in registers.
		s0 := sym[i*m : i*m+m : i*m+m]
		s1 := sym[(i+1)*m : (i+1)*m+m : (i+1)*m+m]
		d0, d1 := dst(i), dst(i+1)
		k := 0
		for ; k+4 <= d; k += 4 {
			var a0, a1, a2, a3, b0, b1, b2, b3 float32
			for j, u := range s0 {
				v := s1[j]
				t := tt[j*d+k : j*d+k+4 : j*d+k+4]
				a0 += u * t[0]
				a1 += u * t[1]
				a2 += u * t[2]
				a3 += u * t[3]
				b0 += v * t[0]
				b1 += v * t[1]
				b2 += v * t[2]
				b3 += v * t[3]
			}
			d0[k], d0[k+1], d0[k+2], d0[k+3] = a0, a1, a2, a3
			d1[k], d1[k+1], d1[k+2], d1[k+3] = b0, b1, b2, b3
		}
		for ; k < d; k++ {
			var a, b float32
			for j, u := range s0 {
				a += u * tt[j*d+k]
				b += s1[j] * tt[j*d+k]
			}
			d0[k], d1[k] = a, b
		}
	}
	for ; i < m; i++ {
		si, di := sym[i*m:i*m+m:i*m+m], dst(i)
		for k := range d {
			var a float32
			for j, u := range si {
				a += u * tt[j*d+k]
			}
			di[k] = a
		}
	}
	axpy(dxs[:d], 1, g[:d])
}
