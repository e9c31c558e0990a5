//go:build darwin || freebsd || linux || netbsd

package compute

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// libCandidates are tried in order when Options.Library is empty.
var libCandidates = []string{"libopenblas.so.0", "libopenblas.so", "libblas.so.3", "libopenblas.dylib"}

// blasLib is a BLAS library loaded at run time. sgemm_ is the Fortran entry
// point, present in every BLAS: all arguments by reference, column-major.
type blasLib struct {
	path       string
	sgemm      uintptr
	sgemv      uintptr     // sgemv_, for GEMMs with one row or column; 0 if absent
	sger       uintptr     // sger_, for GEMMs with k = 1; 0 if absent
	setThreads func(int32) // openblas_set_num_threads; nil if absent
	getThreads func() int32
	config     string // openblas_get_config(), if present
}

var (
	blasMu    sync.Mutex
	blasCache = map[string]blasResult{}
)

type blasResult struct {
	lib *blasLib
	err error
}

// loadBLAS opens path (or the first candidate that opens when path is empty)
// once per process and binds sgemm_.
func loadBLAS(path string) (*blasLib, error) {
	blasMu.Lock()
	defer blasMu.Unlock()
	if r, ok := blasCache[path]; ok {
		return r.lib, r.err
	}
	lib, err := openBLASLib(path)
	blasCache[path] = blasResult{lib, err}
	return lib, err
}

func openBLASLib(path string) (*blasLib, error) {
	names := libCandidates
	if path != "" {
		names = []string{path}
	}
	var errs []error
	for _, name := range names {
		h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sym, err := purego.Dlsym(h, "sgemm_")
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			_ = purego.Dlclose(h)
			continue
		}
		lib := &blasLib{path: name, sgemm: sym}
		if sym, err := purego.Dlsym(h, "sgemv_"); err == nil {
			lib.sgemv = sym
		}
		if sym, err := purego.Dlsym(h, "sger_"); err == nil {
			lib.sger = sym
		}
		if _, err := purego.Dlsym(h, "openblas_set_num_threads"); err == nil {
			purego.RegisterLibFunc(&lib.setThreads, h, "openblas_set_num_threads")
		}
		if _, err := purego.Dlsym(h, "openblas_get_num_threads"); err == nil {
			purego.RegisterLibFunc(&lib.getThreads, h, "openblas_get_num_threads")
		}
		if _, err := purego.Dlsym(h, "openblas_get_config"); err == nil {
			var getConfig func() string
			purego.RegisterLibFunc(&getConfig, h, "openblas_get_config")
			lib.config = getConfig()
		}
		return lib, nil
	}
	return nil, fmt.Errorf("compute: load BLAS (tried %v): %w: %w", names, errors.Join(errs...), ErrBLASUnavailable)
}

// blasArgs holds sgemm_'s by-reference scalars in one heap block, reused
// through a pool so that a call allocates nothing.
type blasArgs struct {
	transA, transB byte
	m, n, k        int32
	lda, ldb, ldc  int32
	alpha, beta    float32
	// call holds the arguments of the call itself: passing it to SyscallN
	// as a slice avoids the allocation of a variadic argument list. The
	// matrices it points to are stored in keep for the call's duration:
	// that makes them escape to the heap, where objects never move, which
	// is what SyscallN's go:uintptrescapes would otherwise ensure.
	call [15]uintptr
	keep [3][]float32
}

var blasArgsPool = sync.Pool{New: func() any { return new(blasArgs) }}

// gemm computes row-major C = alpha*op(A)*op(B) + beta*C by asking the
// column-major library for Cᵀ = op(B)ᵀ·op(A)ᵀ: a row-major matrix with row
// stride ld is its transpose in column-major order with leading dimension ld.
// Arguments are checked by the caller; m, n and k are positive.
func (l *blasLib) gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	for _, v := range [...]int{m, n, k, lda, ldb, ldc} {
		if v > 1<<31-1 {
			shapePanic("Gemm", "size %d exceeds the BLAS 32-bit integer range", v)
		}
	}
	if l.sgemv != 0 && (m == 1 || n == 1) {
		l.gemv(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	if l.sger != 0 && k == 1 {
		l.ger(transA, transB, m, n, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	p := blasArgsPool.Get().(*blasArgs)
	*p = blasArgs{
		transA: 'N', transB: 'N',
		m: int32(n), n: int32(m), k: int32(k),
		lda: int32(ldb), ldb: int32(lda), ldc: int32(ldc),
		alpha: alpha, beta: beta,
	}
	if transB {
		p.transA = 'T'
	}
	if transA {
		p.transB = 'T'
	}
	// Trailing 1, 1: the hidden lengths of the two character arguments that
	// Fortran compilers pass by value.
	p.keep = [3][]float32{a, b, c}
	p.call = [15]uintptr{
		uintptr(unsafe.Pointer(&p.transA)),
		uintptr(unsafe.Pointer(&p.transB)),
		uintptr(unsafe.Pointer(&p.m)),
		uintptr(unsafe.Pointer(&p.n)),
		uintptr(unsafe.Pointer(&p.k)),
		uintptr(unsafe.Pointer(&p.alpha)),
		uintptr(unsafe.Pointer(unsafe.SliceData(b))),
		uintptr(unsafe.Pointer(&p.lda)),
		uintptr(unsafe.Pointer(unsafe.SliceData(a))),
		uintptr(unsafe.Pointer(&p.ldb)),
		uintptr(unsafe.Pointer(&p.beta)),
		uintptr(unsafe.Pointer(unsafe.SliceData(c))),
		uintptr(unsafe.Pointer(&p.ldc)),
		1,
		1,
	}
	purego.SyscallN(l.sgemm, p.call[:15]...)
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	runtime.KeepAlive(c)
	p.keep = [3][]float32{}
	blasArgsPool.Put(p)
}

// gemv handles m == 1 or n == 1 with sgemv_, which the library runs much
// faster than sgemm_ on such shapes. The result is a matrix-vector product
// y = alpha*M·x + beta*y in column-major terms:
//
//	n == 1: y = C's column (stride ldc), M = op(A), x = op(B)'s column
//	m == 1: y = C's row (stride 1), M = op(B)ᵀ, x = op(A)'s row
func (l *blasLib) gemv(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if beta == 0 {
		// Do not rely on the library to ignore NaNs in y when beta is 0.
		scaleRows(c, m, n, ldc, 0)
	}
	p := blasArgsPool.Get().(*blasArgs)
	var mat, x []float32
	var incx, incy int32
	if n == 1 {
		// Row-major op(A) (m×k). Stored A is m×k (or k×m when transA),
		// which column-major reads as its transpose with leading dim lda.
		mat, x, incy = a, b, int32(ldc)
		*p = blasArgs{transA: 'T', m: int32(k), n: int32(m), lda: int32(lda)}
		if transA {
			*p = blasArgs{transA: 'N', m: int32(m), n: int32(k), lda: int32(lda)}
		}
		incx = int32(ldb) // B is k×1: its column has stride ldb
		if transB {
			incx = 1 // B is stored 1×k
		}
	} else {
		// y (n) = op(B)ᵀ · op(A)ᵀ, op(B) is k×n.
		mat, x, incy = b, a, 1
		*p = blasArgs{transA: 'N', m: int32(n), n: int32(k), lda: int32(ldb)}
		if transB {
			*p = blasArgs{transA: 'T', m: int32(k), n: int32(n), lda: int32(ldb)}
		}
		incx = 1 // A is stored 1×k
		if transA {
			incx = int32(lda) // A is stored k×1
		}
	}
	p.alpha, p.beta = alpha, beta
	p.ldb, p.ldc = incx, incy
	p.keep = [3][]float32{mat, x, c}
	p.call = [15]uintptr{
		uintptr(unsafe.Pointer(&p.transA)),
		uintptr(unsafe.Pointer(&p.m)),
		uintptr(unsafe.Pointer(&p.n)),
		uintptr(unsafe.Pointer(&p.alpha)),
		uintptr(unsafe.Pointer(unsafe.SliceData(mat))),
		uintptr(unsafe.Pointer(&p.lda)),
		uintptr(unsafe.Pointer(unsafe.SliceData(x))),
		uintptr(unsafe.Pointer(&p.ldb)),
		uintptr(unsafe.Pointer(&p.beta)),
		uintptr(unsafe.Pointer(unsafe.SliceData(c))),
		uintptr(unsafe.Pointer(&p.ldc)),
		1,
	}
	purego.SyscallN(l.sgemv, p.call[:12]...)
	runtime.KeepAlive(mat)
	runtime.KeepAlive(x)
	runtime.KeepAlive(c)
	p.keep = [3][]float32{}
	blasArgsPool.Put(p)
}

// ger handles k == 1, an outer product, with sger_: C = beta*C, then
// C += alpha*u·vᵀ with u = op(A)'s column and v = op(B)'s row. Row-major C
// is column-major Cᵀ, so the call is Cᵀ += alpha*v·uᵀ.
func (l *blasLib) ger(transA, transB bool, m, n int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	scaleRows(c, m, n, ldc, beta)
	p := blasArgsPool.Get().(*blasArgs)
	*p = blasArgs{m: int32(n), n: int32(m), alpha: alpha, lda: 1, ldb: int32(lda), ldc: int32(ldc)}
	if transB {
		p.lda = int32(ldb) // v: B stored n×1
	}
	if transA {
		p.ldb = 1 // u: A stored 1×m
	}
	p.keep = [3][]float32{a, b, c}
	p.call = [15]uintptr{
		uintptr(unsafe.Pointer(&p.m)),
		uintptr(unsafe.Pointer(&p.n)),
		uintptr(unsafe.Pointer(&p.alpha)),
		uintptr(unsafe.Pointer(unsafe.SliceData(b))),
		uintptr(unsafe.Pointer(&p.lda)),
		uintptr(unsafe.Pointer(unsafe.SliceData(a))),
		uintptr(unsafe.Pointer(&p.ldb)),
		uintptr(unsafe.Pointer(unsafe.SliceData(c))),
		uintptr(unsafe.Pointer(&p.ldc)),
	}
	purego.SyscallN(l.sger, p.call[:9]...)
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	runtime.KeepAlive(c)
	p.keep = [3][]float32{}
	blasArgsPool.Put(p)
}
