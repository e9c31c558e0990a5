// The CPU test harness of the CUDA kernels: with this header first, the
// kernel sources build as C++ (g++ -include emu.h), and each kernel becomes
// a C function that runs every thread of its launch, one after another.
// pkg/cuda's tests load the result with purego and run the backend's
// conformance suites through it. Kernels must not depend on threads running
// at once (no __syncthreads, no shared memory), which common.h asks of them
// anyway.
#include <cmath>
#include <cstdint>

typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;
typedef int i32;

struct dim3 {
	u32 x, y, z;
};
static thread_local dim3 blockIdx, threadIdx, blockDim, gridDim;

#define DEV static inline

static inline u64 atomicMin(u64 *p, u64 v) {
	u64 o = *p;
	if (v < o) *p = v;
	return o;
}
static inline u64 atomicCAS(u64 *p, u64 cmp, u64 v) {
	u64 o = *p;
	if (o == cmp) *p = v;
	return o;
}
static inline u32 atomicAdd(u32 *p, u32 v) {
	u32 o = *p;
	*p = o + v;
	return o;
}
static inline u64 atomicAdd(u64 *p, u64 v) {
	u64 o = *p;
	*p = o + v;
	return o;
}
using std::exp;
using std::fabs;
using std::log1p;
using std::sqrt;

#define KERNEL(name, T)                                                        \
	static void name##_body(const T a);                                        \
	extern "C" void name(u64 grid, u64 block, const void *args) {              \
		gridDim = dim3{(u32)grid, 1, 1};                                       \
		blockDim = dim3{(u32)block, 1, 1};                                     \
		for (u32 b = 0; b < grid; b++)                                         \
			for (u32 t = 0; t < block; t++) {                                  \
				blockIdx = dim3{b, 0, 0};                                      \
				threadIdx = dim3{t, 0, 0};                                     \
				name##_body(*(const T *)args);                                 \
			}                                                                  \
	}                                                                          \
	static void name##_body(const T a)
