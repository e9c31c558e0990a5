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
		if (a.opt == 0) {
			w[i] -= a.lr * g;
		} else {
			float *acc = PTR(float, a.acc);
			float s = acc[i] + g * g;
			acc[i] = s;
			w[i] -= a.lr * g / (sqrtf(s) + a.eps);
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
