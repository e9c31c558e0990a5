// DLRM's dot interaction, forward and backward, and the loss.

// Row r of sample s's T = [x; e1; ...; ef].
DEV const float *interact_row(const InteractArgs &a, i64 s, i64 r) {
	if (r == 0) return PTR(const float, a.x) + s * a.d;
	return PTR(const float, a.emb) + (s * a.f + r - 1) * a.d;
}

// Output element p of a sample: x for p < d, then the strictly lower
// triangle of T·Tᵀ row by row (rows 1..f, columns 0..i-1).
KERNEL(interact_fwd, InteractArgs) {
	i64 w = a.d + (i64)a.f * (a.f + 1) / 2;
	float *out = PTR(float, a.out);
	FOR_EACH(idx, a.n * w) {
		i64 s = idx / w, p = idx % w;
		if (p < a.d) {
			out[idx] = PTR(const float, a.x)[s * a.d + p];
			continue;
		}
		i64 q = p - a.d, i = 1;
		while ((i + 1) * i / 2 <= q) i++;
		i64 j = q - i * (i - 1) / 2;
		const float *ti = interact_row(a, s, i), *tj = interact_row(a, s, j);
		float z = 0.0f;
		for (i32 k = 0; k < a.d; k++) z += ti[k] * tj[k];
		out[idx] = z;
	}
}

// dT = S·T, S the symmetric matrix of the pair gradients with a zero
// diagonal; dx = dT[0] + dOut's pass-through part, demb = dT[1..].
KERNEL(interact_bwd, InteractArgs) {
	i64 w = a.d + (i64)a.f * (a.f + 1) / 2, m = a.f + 1;
	const float *dout = PTR(const float, a.dout);
	FOR_EACH(idx, a.n * m * a.d) {
		i64 s = idx / (m * a.d), i = (idx / a.d) % m, k = idx % a.d;
		const float *g = dout + s * w + a.d;
		float v = 0.0f;
		for (i64 j = 0; j < m; j++) {
			if (j == i) continue;
			i64 r = i > j ? i : j, c = i > j ? j : i;
			v += g[r * (r - 1) / 2 + c] * interact_row(a, s, j)[k];
		}
		if (i == 0) {
			PTR(float, a.dx)[s * a.d + k] = dout[s * w + k] + v;
		} else {
			PTR(float, a.demb)[(s * a.f + i - 1) * a.d + k] = v;
		}
	}
}

// Per sample: the loss (into lossbuf, double) and dLoss/dlogit of the mean.
KERNEL(bce, BCEArgs) {
	const float *z = PTR(const float, a.logit), *y = PTR(const float, a.label);
	FOR_EACH(i, a.n) {
		double zi = z[i], yi = y[i];
		double e = exp(-fabs(zi));
		double l = (zi > 0 ? zi : 0.0) - zi * yi + log1p(e);
		double sig = zi >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
		if (a.dlogit) {
			float g = (float)((sig - yi) / (double)a.n);
			if (a.scale != 1.0f) g *= a.scale;
			PTR(float, a.dlogit)[i] = g;
		}
		if (a.lossbuf) PTR(double, a.lossbuf)[i] = l;
	}
}

// loss[0] = Σ lossbuf, in order, on one thread.
KERNEL(bce_sum, BCEArgs) {
	FOR_EACH(t, 1) {
		double s = 0.0;
		for (i64 i = 0; i < a.n; i++) s += PTR(const double, a.lossbuf)[i];
		PTR(float, a.loss)[0] = (float)s;
	}
}
