package cuda

import "unsafe"

// gpu is what the backend asks of a device: memory, copies and memsets
// queued on one stream, kernel launches, a single-precision GEMM and a
// synchronisation point. The CUDA driver implements it (cudaGPU); the
// tests also run the backend on a CPU stand-in that runs the same kernel
// sources built as C++ (emu_test.go), so that the backend's logic and the
// kernels' are tested on machines without a GPU.
type gpu interface {
	// name describes the device, for messages and reports.
	name() string
	// blocks is the most blocks a grid-stride launch needs.
	blocks() int
	alloc(bytes int64) (uintptr, error)
	free(p uintptr) error
	// htod and dtoh copy between host and device memory, in stream order;
	// htod has read src, and dtoh written dst, when they return.
	htod(dst uintptr, src unsafe.Pointer, bytes int64) error
	dtoh(dst unsafe.Pointer, src uintptr, bytes int64) error
	memset8(dst uintptr, v byte, n int64) error
	memset32(dst uintptr, v uint32, n int64) error
	// launch queues kernel k on grid × block threads with its argument
	// block (the kernel's struct, which the call copies).
	launch(k kernel, grid, block int, args unsafe.Pointer) error
	// sgemm computes the row-major C = alpha·op(A)·op(B) + beta·C on the
	// stream, m, n, k > 0.
	sgemm(transA, transB bool, m, n, k int, alpha float32, a uintptr, lda int, b uintptr, ldb int, beta float32, c uintptr, ldc int) error
	sync() error
	close() error
}

// kernel names one CUDA C kernel of kernels/.
type kernel int

const (
	kBiasAct kernel = iota
	kReLUBackward
	kBiasGrad
	kReLUBiasGrad
	kDenseUpdate
	kAxpy
	kFill
	kCopy2D
	kScale2D
	kGatherRows
	kScatterRows
	kInteractFwd
	kInteractBwd
	kBCE
	kBCESum
	kEmbCheck
	kEmbFwd
	kEmbOcc
	kEmbInsert
	kEmbClaim
	kEmbFill
	kEmbApply
	kMul
	kFMFwd
	kFMBwd
	numKernels
)

// kernelNames are the kernels' symbols, by kernel.
var kernelNames = [numKernels]string{
	kBiasAct: "bias_act", kReLUBackward: "relu_backward", kBiasGrad: "bias_grad", kReLUBiasGrad: "relu_bias_grad",
	kDenseUpdate: "dense_update", kAxpy: "axpy", kFill: "fill", kCopy2D: "copy2d", kScale2D: "scale2d",
	kGatherRows: "gather_rows", kScatterRows: "scatter_rows", kInteractFwd: "interact_fwd", kInteractBwd: "interact_bwd",
	kBCE: "bce", kBCESum: "bce_sum", kEmbCheck: "emb_check", kEmbFwd: "emb_fwd", kEmbOcc: "emb_occ",
	kEmbInsert: "emb_insert", kEmbClaim: "emb_claim", kEmbFill: "emb_fill", kEmbApply: "emb_apply",
	kMul: "mul", kFMFwd: "fm_fwd", kFMBwd: "fm_bwd",
}

// Argument blocks of the kernels, field for field the structs of
// kernels/common.h (args_test.go checks the sizes against a C++ build).
type (
	biasActArgs struct {
		out, bias uint64
		n, w      int64
		relu, _   int32
	}
	reluBackwardArgs struct {
		grad, act uint64
		n         int64
	}
	biasGradArgs struct {
		db, grad uint64
		n, w     int64
	}
	reluBiasGradArgs struct {
		db, grad, act uint64
		n, w          int64
	}
	interactArgs struct {
		out, x, emb, dx, demb, dout uint64
		n                           int64
		f, d                        int32
	}
	bceArgs struct {
		dlogit, logit, label, lossbuf, loss uint64
		n                                   int64
		scale                               float32
		_                                   int32
	}
	denseUpdateArgs struct {
		w, acc, g0, g1, g2, g3 uint64
		n                      int64
		ng, opt                int32
		lr, eps                float32
		wd, b1                 float32
		b2, c1                 float32
		c2, _                  float32
	}
	mulArgs struct {
		out, a, b uint64
		n         int64
		acc, _    int32
	}
	fmArgs struct {
		out, emb, demb, dout uint64
		n                    int64
		f, d                 int32
		stride, _            int32
	}
	axpyArgs struct {
		y, x     uint64
		n        int64
		alpha, v float32
	}
	copy2DArgs struct {
		dst, src             uint64
		rows, cols, ldd, lds int64
		beta                 float32
		_                    int32
	}
	rowsArgs struct {
		dst, src, idx uint64
		k, width      int64
		wide, _       int32
	}
	embTable struct {
		ids, offs              uint64
		lo, rows, toRow, first int64
		wide, count            int32
	}
	embArgs struct {
		tabs, w, acc, out, err                              uint64
		keys, cnt, start, fill, list, occRow, occOut, total uint64
		n, ids, slots                                       int64
		ntab, d                                             int32
		opt                                                 int32
		wd                                                  float32
		lr, eps                                             float32
		split, _                                            int32
	}
)

// colGemm is a column-major GEMM call, BLAS style: C = alpha·opA(A)·opB(B)
// + beta·C, C m×n, op 0 for none and 1 for the transpose.
type colGemm struct {
	opA, opB, m, n, k int
	a                 uintptr
	lda               int
	b                 uintptr
	ldb               int
}

// colMajor turns the row-major C = op(A)·op(B) (C m×n) into the
// column-major call cuBLAS takes: a row-major matrix is the transpose of
// the column-major one with the same storage, so it computes
// Cᵀ = op(B)ᵀ·op(A)ᵀ, with B first and the dimensions swapped; C's stride
// stays ldc.
func colMajor(transA, transB bool, m, n, k int, a uintptr, lda int, b uintptr, ldb int) colGemm {
	g := colGemm{m: n, n: m, k: k, a: b, lda: ldb, b: a, ldb: lda}
	if transB {
		g.opA = 1
	}
	if transA {
		g.opB = 1
	}
	return g
}
