// Elementwise and per-column kernels of the MLPs.

KERNEL(bias_act, BiasActArgs) {
	float *out = PTR(float, a.out);
	const float *bias = PTR(const float, a.bias);
	FOR_EACH(i, a.n * a.w) {
		float v = out[i];
		if (a.bias) v += bias[i % a.w];
		if (a.relu && !(v > 0.0f)) v = 0.0f;
		out[i] = v;
	}
}

KERNEL(relu_backward, ReLUBackwardArgs) {
	float *g = PTR(float, a.grad);
	const float *act = PTR(const float, a.act);
	FOR_EACH(i, a.n) {
		if (!(act[i] > 0.0f)) g[i] = 0.0f;
	}
}

// One thread per column, rows summed in order: the reference's order.
KERNEL(bias_grad, BiasGradArgs) {
	const float *g = PTR(const float, a.grad);
	float *db = PTR(float, a.db);
	FOR_EACH(j, a.w) {
		float s = 0.0f;
		for (i64 i = 0; i < a.n; i++) s += g[i * a.w + j];
		db[j] = s;
	}
}

KERNEL(relu_bias_grad, ReLUBiasGradArgs) {
	float *g = PTR(float, a.grad);
	const float *act = PTR(const float, a.act);
	float *db = PTR(float, a.db);
	FOR_EACH(j, a.w) {
		float s = 0.0f;
		for (i64 i = 0; i < a.n; i++) {
			i64 p = i * a.w + j;
			float v = act[p] > 0.0f ? g[p] : 0.0f;
			g[p] = v;
			s += v;
		}
		db[j] = s;
	}
}

KERNEL(dense_update, DenseUpdateArgs) {
	float *w = PTR(float, a.w);
	FOR_EACH(i, a.n) {
		float g = PTR(const float, a.g0)[i];
		if (a.ng > 1) g += PTR(const float, a.g1)[i];
		if (a.ng > 2) g += PTR(const float, a.g2)[i];
		if (a.ng > 3) g += PTR(const float, a.g3)[i];
		if (a.wd != 0.0f) g += a.wd * w[i];
		if (a.opt == 0) {
			w[i] -= a.lr * g;
		} else if (a.opt == 1) {
			float *acc = PTR(float, a.acc);
			float s = acc[i] + g * g;
			acc[i] = s;
			w[i] -= a.lr * g / (sqrtf(s) + a.eps);
		} else { // Adam: first moments at acc[0, n), second at acc[n, 2n)
			float *m = PTR(float, a.acc), *v = m + a.n;
			float mi = a.b1 * m[i] + (1.0f - a.b1) * g;
			float vi = a.b2 * v[i] + (1.0f - a.b2) * g * g;
			m[i] = mi;
			v[i] = vi;
			w[i] -= a.lr * (mi / a.c1) / (sqrtf(vi / a.c2) + a.eps);
		}
	}
}

KERNEL(axpy, AxpyArgs) {
	float *y = PTR(float, a.y);
	const float *x = PTR(const float, a.x);
	FOR_EACH(i, a.n) { y[i] += a.alpha * x[i]; }
}

KERNEL(fill, AxpyArgs) {
	float *y = PTR(float, a.y);
	FOR_EACH(i, a.n) { y[i] = a.v; }
}

KERNEL(copy2d, Copy2DArgs) {
	float *dst = PTR(float, a.dst);
	const float *src = PTR(const float, a.src);
	FOR_EACH(i, a.rows * a.cols) {
		i64 r = i / a.cols, c = i % a.cols;
		dst[r * a.ldd + c] = src[r * a.lds + c];
	}
}

// C = beta·C over an m×n matrix (rows, cols) with row stride ldd: the GEMM
// of k = 0 or alpha = 0; beta = 0 writes zeros without reading C.
KERNEL(scale2d, Copy2DArgs) {
	float *c = PTR(float, a.dst);
	FOR_EACH(i, a.rows * a.cols) {
		i64 p = (i / a.cols) * a.ldd + i % a.cols;
		c[p] = a.beta == 0.0f ? 0.0f : a.beta * c[p];
	}
}

DEV i64 row_index(const RowsArgs &a, i64 k) {
	return a.wide ? PTR(const i64, a.idx)[k] : (i64)PTR(const i32, a.idx)[k];
}

KERNEL(gather_rows, RowsArgs) {
	float *dst = PTR(float, a.dst);
	const float *src = PTR(const float, a.src);
	FOR_EACH(i, a.k * a.width) {
		i64 r = row_index(a, i / a.width);
		dst[i] = src[r * a.width + i % a.width];
	}
}

KERNEL(scatter_rows, RowsArgs) {
	float *dst = PTR(float, a.dst);
	const float *src = PTR(const float, a.src);
	FOR_EACH(i, a.k * a.width) {
		i64 r = row_index(a, i / a.width);
		dst[r * a.width + i % a.width] = src[i];
	}
}

KERNEL(mul, MulArgs) {
	float *out = PTR(float, a.out);
	const float *x = PTR(const float, a.a), *y = PTR(const float, a.b);
	FOR_EACH(i, a.n) {
		float v = x[i] * y[i];
		out[i] = a.acc ? out[i] + v : v;
	}
}

// One thread per sample: the factorization machine's second-order term,
// with the per-factor sums in field order, as the reference.
KERNEL(fm_fwd, FMArgs) {
	const float *e = PTR(const float, a.emb);
	float *out = PTR(float, a.out);
	FOR_EACH(s, a.n) {
		float tot = 0.0f, sq = 0.0f;
		for (i32 k = 0; k < a.d; k++) {
			float sum = 0.0f;
			for (i32 i = 0; i < a.f; i++) {
				float v = e[(s * a.f + i) * a.stride + k];
				sum += v;
				sq += v * v;
			}
			tot += sum * sum;
		}
		out[s] += 0.5f * (tot - sq);
	}
}

// One thread per (sample, factor): its sum over fields, then every field's
// gradient of that factor.
KERNEL(fm_bwd, FMArgs) {
	const float *e = PTR(const float, a.emb), *dout = PTR(const float, a.dout);
	float *de = PTR(float, a.demb);
	FOR_EACH(p, a.n * a.d) {
		i64 s = p / a.d;
		i32 k = (i32)(p % a.d);
		float sum = 0.0f;
		for (i32 i = 0; i < a.f; i++) sum += e[(s * a.f + i) * a.stride + k];
		float g = dout[s];
		for (i32 i = 0; i < a.f; i++) {
			i64 q = (s * a.f + i) * a.stride + k;
			de[q] += g * (sum - e[q]);
		}
	}
}
