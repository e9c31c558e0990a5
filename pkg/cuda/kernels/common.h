// Kernels of picasso's CUDA backend: types, argument blocks and the KERNEL
// macro shared by every .cu file.
//
// Each kernel takes one argument, a struct whose layout the Go backend
// mirrors field for field (pkg/cuda/args.go): 8-byte fields first, then
// 4-byte fields in pairs, so that C and Go agree without padding rules.
// Device addresses travel as u64. Every kernel is a grid-stride loop in
// which one thread computes whole output elements in a fixed order, with
// no shared memory, no __syncthreads and no floating-point atomics:
// results do not depend on the launch shape or on timing, and the same
// source builds for the CPU test harness (emu.h), which runs the threads
// one after another.
#ifndef PICASSO_COMMON_H
#define PICASSO_COMMON_H

#ifdef __CUDACC_RTC__
typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;
typedef int i32;
#define KERNEL(name, T) extern "C" __global__ void name(const T a)
#define DEV __device__ __forceinline__
#endif

// Grid-stride loop over [0, n).
#define FOR_EACH(i, n) \
	for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (i64)(n); i += (i64)blockDim.x * gridDim.x)

#define PTR(T, a) ((T *)(a))

// An embedding table's part of a packed lookup (EmbTable in args.go).
struct EmbTable {
	u64 ids;     // device address of the IDs
	u64 offs;    // of the n+1 bag bounds (int32), 0 for one ID per sample
	i64 lo;      // first valid ID
	i64 rows;    // valid IDs: [lo, lo+rows)
	i64 to_row;  // ID + to_row = packed row
	i64 first;   // index of the table's first ID among all tables' IDs
	i32 wide;    // IDs are int64 (1) or int32 (0)
	i32 count;   // IDs of the table
};

DEV i64 emb_id(const EmbTable &t, i64 p) {
	return t.wide ? PTR(const i64, t.ids)[p] : (i64)PTR(const i32, t.ids)[p];
}

// Bounds of bag s of table t, kept inside the table's IDs (bad bounds are
// reported by emb_check, and must not make a lookup read elsewhere).
DEV void emb_bag(const EmbTable &t, i64 s, i64 *lo, i64 *hi) {
	if (!t.offs) {
		*lo = s;
		*hi = s + 1;
		return;
	}
	i64 l = PTR(const i32, t.offs)[s], h = PTR(const i32, t.offs)[s + 1];
	l = l < 0 ? 0 : (l > t.count ? t.count : l);
	h = h < l ? l : (h > t.count ? t.count : h);
	*lo = l;
	*hi = h;
}

// Error codes of the check kernels (the first error wins, by position).
#define ERR_NONE 0
#define ERR_ID 1
#define ERR_OFFSETS 2

#endif

// Argument blocks, one per kernel (mirrored in args.go).
#ifndef PICASSO_ARGS_H
#define PICASSO_ARGS_H
struct BiasActArgs { u64 out, bias; i64 n, w; i32 relu, pad; };
struct ReLUBackwardArgs { u64 grad, act; i64 n; };
struct BiasGradArgs { u64 db, grad; i64 n, w; };
struct ReLUBiasGradArgs { u64 db, grad, act; i64 n, w; };
struct InteractArgs { u64 out, x, emb, dx, demb, dout; i64 n; i32 f, d; };
struct BCEArgs { u64 dlogit, logit, label, lossbuf, loss; i64 n; float scale; i32 pad; };
struct DenseUpdateArgs { u64 w, acc, g0, g1, g2, g3; i64 n; i32 ng, opt; float lr, eps; float wd, b1; float b2, c1; float c2, pad; };
struct MulArgs { u64 out, a, b; i64 n; i32 acc, pad; };
struct FMArgs { u64 out, emb, demb, dout; i64 n; i32 f, d; i32 stride, pad; };
struct AxpyArgs { u64 y, x; i64 n; float alpha, v; };
struct Copy2DArgs { u64 dst, src; i64 rows, cols, ldd, lds; float beta; i32 pad; };
struct RowsArgs { u64 dst, src, idx; i64 k, width; i32 wide, pad; };
struct EmbArgs {
	u64 tabs;   // EmbTable[ntab]
	u64 w;      // the packed table's weights
	u64 acc;    // its row-wise Adagrad state
	u64 out;    // forward: pooled output; update: dOut
	u64 err;    // u64[2]: the first bad ID's position, the first bad bound's
	u64 keys, cnt, start, fill, list, occ_row, occ_out, total; // update scratch
	i64 n;      // samples
	i64 ids;    // IDs of all tables
	i64 slots;  // hash slots (a power of two)
	i32 ntab, d;
	i32 opt;
	float wd;   // weight decay added to each looked-up row's gradient
	float lr, eps;
	i32 split;  // the last value of a row has its own accumulator (acc[2r+1])
	i32 pad;
};
#endif
