//go:build linux

package cuda

import (
	"fmt"

	"github.com/ebitengine/purego"
)

// cublasAPI is the part of cuBLAS picasso uses: one handle per device,
// bound to the backend's stream, and SGEMM.
type cublasAPI struct {
	lib         *library
	create      func(h *uintptr) int32
	destroy     func(h uintptr) int32
	setStream   func(h, stream uintptr) int32
	setMathMode func(h uintptr, mode int32) int32
	getVersion  func(h uintptr, v *int32) int32
	sgemm       uintptr
}

// cuBLAS constants.
const (
	cublasOpN             = 0
	cublasOpT             = 1
	cublasDefaultMath     = 0
	cublasTF32TensorOpMat = 3
)

var cublasStatus = map[int32]string{
	1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED", 7: "CUBLAS_STATUS_INVALID_VALUE",
	8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR", 13: "CUBLAS_STATUS_EXECUTION_FAILED",
	14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED", 16: "CUBLAS_STATUS_LICENSE_ERROR",
}

func cublasError(call string, r int32) error {
	if r == 0 {
		return nil
	}
	name, ok := cublasStatus[r]
	if !ok {
		name = "CUBLAS_STATUS_UNKNOWN"
	}
	return &Error{Call: call, Code: r, Name: name}
}

// loadCUBLAS opens cuBLAS (libcublas.so.13, .12 or .11, or the file
// PICASSO_LIBCUBLAS names).
func loadCUBLAS() (*cublasAPI, error) {
	lib, err := openLibrary("cuBLAS", EnvLibCUBLAS, cublasNames)
	if err != nil {
		return nil, err
	}
	c := &cublasAPI{lib: lib}
	b := &binder{lib: lib}
	b.fn(&c.create, "cublasCreate_v2")
	b.fn(&c.destroy, "cublasDestroy_v2")
	b.fn(&c.setStream, "cublasSetStream_v2")
	b.fn(&c.setMathMode, "cublasSetMathMode")
	b.fn(&c.getVersion, "cublasGetVersion_v2")
	c.sgemm = b.sym("cublasSgemm_v2")
	if b.err != nil {
		return nil, b.err
	}
	return c, nil
}

// cublasHandle is a cuBLAS handle on a context's stream.
type cublasHandle struct {
	api     *cublasAPI
	h       uintptr
	version string
	// alpha and beta live on the heap: cuBLAS reads them (host pointer
	// mode) during the call.
	alpha, beta *float32
}

// newHandle creates a handle for the current context, on stream. TF32
// lets SGEMM use tensor cores at TF32 precision.
func (c *cublasAPI) newHandle(stream uintptr, tf32 bool) (*cublasHandle, error) {
	h := &cublasHandle{api: c, alpha: new(float32), beta: new(float32)}
	if err := cublasError("cublasCreate", c.create(&h.h)); err != nil {
		return nil, err
	}
	if err := cublasError("cublasSetStream", c.setStream(h.h, stream)); err != nil {
		c.destroy(h.h)
		return nil, err
	}
	mode := int32(cublasDefaultMath)
	if tf32 {
		mode = cublasTF32TensorOpMat
	}
	if err := cublasError("cublasSetMathMode", c.setMathMode(h.h, mode)); err != nil {
		c.destroy(h.h)
		return nil, err
	}
	var v int32
	if c.getVersion(h.h, &v) == 0 {
		h.version = fmt.Sprintf("%d.%d.%d", v/10000, v%10000/100, v%100)
	}
	return h, nil
}

// sgemm computes the row-major C = alpha·op(A)·op(B) + beta·C with cuBLAS
// (see colMajor).
func (h *cublasHandle) sgemm(transA, transB bool, m, n, k int, alpha float32, a uintptr, lda int, b uintptr, ldb int, beta float32, c uintptr, ldc int) error {
	g := colMajor(transA, transB, m, n, k, a, lda, b, ldb)
	*h.alpha, *h.beta = alpha, beta
	r, _, _ := purego.SyscallN(h.api.sgemm, h.h, uintptr(g.opA), uintptr(g.opB), uintptr(g.m), uintptr(g.n), uintptr(g.k),
		uintptrOf(h.alpha), g.a, uintptr(g.lda), g.b, uintptr(g.ldb), uintptrOf(h.beta), c, uintptr(ldc))
	return cublasError("cublasSgemm", int32(r))
}

func (h *cublasHandle) close() { h.api.destroy(h.h) }

// CUBLASLibrary returns the file cuBLAS loads from, or why it does not.
func CUBLASLibrary() (string, error) {
	c, err := loadCUBLAS()
	if err != nil {
		return "", err
	}
	return c.lib.name, nil
}
