// Packed embedding-bag lookups and deterministic sparse updates. Every
// table of one dimension is served by one launch: EmbTable[t] says where
// table t's IDs are and which rows they may name.

// The table of global ID position p (tables in order of their first).
DEV i32 emb_table_of(const EmbTable *tabs, i32 ntab, i64 p) {
	i32 t = 0;
	while (t + 1 < ntab && tabs[t + 1].first <= p) t++;
	return t;
}

// The sample whose bag holds position q of table t's IDs.
DEV i64 emb_sample_of(const EmbTable &t, i64 q, i64 n) {
	if (!t.offs) return q;
	const i32 *off = PTR(const i32, t.offs);
	i64 lo = 0, hi = n; // the last s with off[s] <= q
	while (hi - lo > 1) {
		i64 mid = (lo + hi) / 2;
		if (off[mid] <= q) lo = mid; else hi = mid;
	}
	return lo;
}

// Flags the first ID out of range (err[0] = its position) and the first
// bad bound (err[1] = table·(n+1) + sample); err starts at all ones.
KERNEL(emb_check, EmbArgs) {
	const EmbTable *tabs = PTR(const EmbTable, a.tabs);
	u64 *err = PTR(u64, a.err);
	FOR_EACH(p, a.ids) {
		const EmbTable &t = tabs[emb_table_of(tabs, a.ntab, p)];
		i64 id = emb_id(t, p - t.first);
		if (id < t.lo || id >= t.lo + t.rows) atomicMin(&err[0], (u64)p);
	}
	FOR_EACH(q, (i64)a.ntab * (a.n + 1)) {
		i64 ti = q / (a.n + 1), s = q % (a.n + 1);
		const EmbTable &t = tabs[ti];
		if (!t.offs) continue;
		const i32 *off = PTR(const i32, t.offs);
		bool bad = (s == 0 && off[0] != 0) || (s == a.n && off[s] != t.count) || (s > 0 && off[s] < off[s - 1]);
		if (bad) atomicMin(&err[1], (u64)q);
	}
}

// out[s][t][k] = Σ over bag (s, t), in ID order, of row k.
KERNEL(emb_fwd, EmbArgs) {
	const EmbTable *tabs = PTR(const EmbTable, a.tabs);
	const float *w = PTR(const float, a.w);
	float *out = PTR(float, a.out);
	FOR_EACH(idx, a.n * a.ntab * a.d) {
		i64 s = idx / ((i64)a.ntab * a.d), t = (idx / a.d) % a.ntab, k = idx % a.d;
		const EmbTable &tb = tabs[t];
		i64 lo, hi;
		emb_bag(tb, s, &lo, &hi);
		float v = 0.0f;
		bool first = true;
		for (i64 p = lo; p < hi; p++) {
			i64 id = emb_id(tb, p);
			if (id < tb.lo || id >= tb.lo + tb.rows) continue; // reported by emb_check
			float r = w[(id + tb.to_row) * a.d + k];
			if (first) v = r; else v += r;
			first = false;
		}
		out[idx] = v;
	}
}

// The sparse update runs in five launches after emb_check. Each ID
// occurrence gets its packed row and the offset of its gradient
// (emb_occ); occurrences of one row meet in a hash slot, counted with
// integer atomics (emb_insert); each slot claims room for its list
// (emb_claim) and its occurrences write themselves there (emb_fill); one
// thread per slot sorts its list by position and sums the gradients in
// batch order before one step (emb_apply). Integer atomics decide only
// where things are stored, so the sums, and the results, do not depend on
// timing.

DEV u64 emb_hash(i64 row, i64 slots) {
	return ((u64)row * 0x9E3779B97F4A7C15ull) & (u64)(slots - 1);
}

#define EMPTY_KEY 0xFFFFFFFFFFFFFFFFull

KERNEL(emb_occ, EmbArgs) {
	const EmbTable *tabs = PTR(const EmbTable, a.tabs);
	FOR_EACH(p, a.ids) {
		i32 ti = emb_table_of(tabs, a.ntab, p);
		const EmbTable &t = tabs[ti];
		i64 q = p - t.first, id = emb_id(t, q);
		bool ok = id >= t.lo && id < t.lo + t.rows;
		PTR(i64, a.occ_row)[p] = ok ? id + t.to_row : -1;
		PTR(i64, a.occ_out)[p] = (emb_sample_of(t, q, a.n) * a.ntab + ti) * a.d;
	}
}

KERNEL(emb_insert, EmbArgs) {
	u64 *keys = PTR(u64, a.keys);
	FOR_EACH(p, a.ids) {
		i64 row = PTR(const i64, a.occ_row)[p];
		if (row < 0) continue;
		u64 h = emb_hash(row, a.slots);
		for (;;) {
			u64 old = atomicCAS(&keys[h], EMPTY_KEY, (u64)row);
			if (old == EMPTY_KEY || old == (u64)row) {
				atomicAdd(&PTR(u32, a.cnt)[h], 1u);
				break;
			}
			h = (h + 1) & (u64)(a.slots - 1);
		}
	}
}

KERNEL(emb_claim, EmbArgs) {
	FOR_EACH(h, a.slots) {
		if (PTR(const u64, a.keys)[h] == EMPTY_KEY) continue;
		PTR(u64, a.start)[h] = atomicAdd(PTR(u64, a.total), (u64)PTR(const u32, a.cnt)[h]);
	}
}

KERNEL(emb_fill, EmbArgs) {
	const u64 *keys = PTR(const u64, a.keys);
	FOR_EACH(p, a.ids) {
		i64 row = PTR(const i64, a.occ_row)[p];
		if (row < 0) continue;
		u64 h = emb_hash(row, a.slots);
		while (keys[h] != (u64)row) h = (h + 1) & (u64)(a.slots - 1);
		u32 k = atomicAdd(&PTR(u32, a.fill)[h], 1u);
		PTR(i64, a.list)[PTR(const u64, a.start)[h] + k] = p;
	}
}

KERNEL(emb_apply, EmbArgs) {
	const u64 *err = PTR(const u64, a.err);
	if (err[0] != EMPTY_KEY || err[1] != EMPTY_KEY) return; // bad data: change nothing
	const u64 *keys = PTR(const u64, a.keys);
	const float *g = PTR(const float, a.out);
	const i64 *occ_out = PTR(const i64, a.occ_out);
	float *w = PTR(float, a.w);
	FOR_EACH(h, a.slots) {
		if (keys[h] == EMPTY_KEY) continue;
		i64 row = (i64)keys[h];
		u32 len = PTR(const u32, a.cnt)[h];
		i64 *seg = PTR(i64, a.list) + PTR(const u64, a.start)[h];
		for (u32 i = 1; i < len; i++) { // batch order: insertion sort by position
			i64 v = seg[i];
			u32 j = i;
			while (j > 0 && seg[j - 1] > v) { seg[j] = seg[j - 1]; j--; }
			seg[j] = v;
		}
		float *wr = w + row * a.d;
		// With split, values [0, d-1) share accumulator acc[2·row] and the
		// last has acc[2·row+1]; otherwise all share acc[row].
		i32 nk = (a.split && a.d > 1) ? a.d - 1 : a.d;
		float den = 1.0f, den2 = 1.0f;
		if (a.opt != 0) {
			float *acc = PTR(float, a.acc);
			double ss = 0.0, ss2 = 0.0;
			for (i32 k = 0; k < a.d; k++) {
				float s = g[occ_out[seg[0]] + k];
				for (u32 i = 1; i < len; i++) s += g[occ_out[seg[i]] + k];
				if (a.wd != 0.0f) s += a.wd * wr[k];
				if (k < nk) ss += (double)s * (double)s;
				else ss2 += (double)s * (double)s;
			}
			if (nk == a.d) {
				float v = acc[row] + (float)(ss / (double)a.d);
				acc[row] = v;
				den = sqrtf(v) + a.eps;
			} else {
				float v = acc[2 * row] + (float)(ss / (double)nk);
				acc[2 * row] = v;
				den = sqrtf(v) + a.eps;
				float v2 = acc[2 * row + 1] + (float)ss2;
				acc[2 * row + 1] = v2;
				den2 = sqrtf(v2) + a.eps;
			}
		}
		for (i32 k = 0; k < a.d; k++) {
			float s = g[occ_out[seg[0]] + k];
			for (u32 i = 1; i < len; i++) s += g[occ_out[seg[i]] + k];
			if (a.wd != 0.0f) s += a.wd * wr[k];
			if (a.opt == 0) wr[k] -= a.lr * s;
			else wr[k] -= a.lr * s / (k < nk ? den : den2);
		}
	}
}
