package compute

import (
	"errors"
	"fmt"
	"runtime"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// BLAS names a GEMM implementation of the CPU backend.
type BLAS string

// BLAS choices for Options.BLAS.
const (
	BLASAuto     BLAS = "auto"     // OpenBLAS when it loads, else gonum
	BLASOpenBLAS BLAS = "openblas" // OpenBLAS or an error
	BLASGonum    BLAS = "gonum"    // gonum's pure-Go GEMM
	BLASRef      BLAS = "ref"      // the reference triple loop (slow; for checking)
)

// BLASChoices lists the BLAS values, for help texts and completion.
var BLASChoices = []BLAS{BLASAuto, BLASOpenBLAS, BLASGonum, BLASRef}

// UnmarshalText implements encoding.TextUnmarshaler.
func (b *BLAS) UnmarshalText(t []byte) error {
	for _, v := range BLASChoices {
		if string(t) == string(v) {
			*b = v
			return nil
		}
	}
	return fmt.Errorf("compute: blas %q not one of %v: %w", t, BLASChoices, ErrInvalidOptions)
}

// Options configures the CPU backend.
type Options struct {
	// BLAS picks the GEMM implementation: "auto" (or ""), "openblas",
	// "gonum" or "ref".
	BLAS BLAS
	// Library is the BLAS shared library to load; empty tries
	// libopenblas.so.0, libopenblas.so and libblas.so.3 in turn.
	Library string
	// Threads is the number of goroutines (the caller's included) that one
	// kernel call uses; 0 means runtime.GOMAXPROCS(0).
	Threads int
}

// Validate reports every problem with o at once.
func (o Options) Validate() error {
	var errs []error
	switch o.BLAS {
	case "", BLASAuto, BLASOpenBLAS, BLASGonum, BLASRef:
	default:
		errs = append(errs, fmt.Errorf("compute: blas %q not one of auto, openblas, gonum, ref: %w", o.BLAS, ErrInvalidOptions))
	}
	if o.Threads < 0 {
		errs = append(errs, fmt.Errorf("compute: threads %d is negative: %w", o.Threads, ErrInvalidOptions))
	}
	return errors.Join(errs...)
}

// CPU is the CPU backend: GEMM from OpenBLAS (loaded at run time), gonum or
// the reference loop, with AVX2 kernels for a short batch side, and the
// other kernels in Go, split over a small pool of worker goroutines. It
// computes in host memory (Space Host), or, made by Emulate, in a memory of
// its own that stands for a device's.
type CPU struct {
	*hostMem
	pool     *pool
	ownsPool bool // Close stops the pool (not for an emulated device's view)
	blas     BLAS
	lib      *blasLib
	fallback error
	// gemmSplit: split large GEMMs over the pool, running the library
	// single-threaded in each part, instead of leaving threading to it.
	gemmSplit bool
	impl      gemmFunc // gemmImpl's choice, bound once (a method value allocates)
	// small: run GEMMs with a short batch side on the kernels of
	// gemm_small.go instead of the BLAS library (not with BLAS "ref").
	small bool
}

var (
	_ Backend  = (*CPU)(nil)
	_ Splitter = (*CPU)(nil)
)

// New returns a CPU backend computing in host memory. With BLAS "auto", a
// BLAS library that cannot be loaded is not an error: the backend uses
// gonum and Fallback reports why. Call Close when done to stop its worker
// goroutines.
func New(opts Options) (*CPU, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	threads := opts.Threads
	if threads == 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	c := &CPU{hostMem: &hostMem{space: Host}, blas: opts.BLAS, gemmSplit: true, ownsPool: true}
	switch opts.BLAS {
	case "", BLASAuto, BLASOpenBLAS:
		lib, err := loadBLAS(opts.Library)
		switch {
		case err == nil:
			c.blas, c.lib = BLASOpenBLAS, lib
			if lib.setThreads != nil {
				// Our own split over the pool beats the library's
				// threads on the small GEMMs of DLRM (see bench_test.go).
				lib.setThreads(1)
			}
		case opts.BLAS == BLASOpenBLAS:
			return nil, err
		default:
			c.blas, c.fallback = BLASGonum, err
		}
	}
	c.pool = newPool(threads)
	c.impl = c.gemmImpl()
	c.small = c.blas != BLASRef
	return c, nil
}

// Emulate returns a backend that stands for a device on a machine without
// one: it runs c's kernels on c's worker goroutines, but computes in a
// memory of its own, which the program may not read. Data reaches it only
// through CopyIn and CopyOut, as with a GPU, so a program that trains on it
// moves (and counts) every byte a device would need. With deferred,
// CopyOut delivers its data only at Sync, as an asynchronous device queue
// would: tests use it to catch a read that does not wait for Sync. Closing
// the emulated device leaves c running.
func (c *CPU) Emulate(deferred bool) *CPU {
	e := *c
	e.hostMem = &hostMem{space: NewSpace("emulated device", false), deferred: deferred}
	e.ownsPool = false
	return &e
}

// Name returns "cpu/openblas", "cpu/gonum" or "cpu/ref", with " (emulated
// device)" for a backend made by Emulate.
func (c *CPU) Name() string {
	if !c.space.host {
		return "cpu/" + string(c.blas) + " (emulated device)"
	}
	return "cpu/" + string(c.blas)
}

// BLAS returns the GEMM implementation in use: "openblas", "gonum" or "ref".
func (c *CPU) BLAS() BLAS { return c.blas }

// Library returns the path of the loaded BLAS library and its build
// configuration string (empty when not OpenBLAS), or "", "" when none is used.
func (c *CPU) Library() (path, config string) {
	if c.lib == nil {
		return "", ""
	}
	return c.lib.path, c.lib.config
}

// Fallback returns why BLAS "auto" fell back to gonum (an error wrapping
// ErrBLASUnavailable), or nil. The CLI prints it once as a warning.
func (c *CPU) Fallback() error { return c.fallback }

// Threads returns the number of goroutines a kernel call uses.
func (c *CPU) Threads() int { return c.pool.threads() }

// Parallel implements Splitter: it calls fn(i) for every i in [0, n) on
// the backend's goroutines, the caller's included. Which goroutine runs
// which i is left to scheduling. It is how a caller with its own parallel
// work (the trainer's lanes) shares the backend's workers instead of
// starting goroutines that would compete with them for cores.
func (c *CPU) Parallel(n int, fn func(i int)) { c.pool.run(n, fn) }

// Lanes implements Splitter: k single-pool backends of Threads()/k threads
// each, computing in c's memory, or nil when c has fewer than k threads.
// Two single-threaded GEMMs on half the rows each keep two cores busier
// than one GEMM split in two, and the small kernels of each lane run
// without a fork per call.
func (c *CPU) Lanes(k int) ([]Backend, error) {
	if k < 1 || c.Threads() < k {
		return nil, nil
	}
	out := make([]Backend, k)
	for i := range out {
		l := *c
		l.pool = newPool(c.Threads() / k)
		l.ownsPool = true
		out[i] = &l
	}
	return out, nil
}

// Close stops the worker goroutines. It is idempotent. The pool of a
// backend made by Emulate belongs to the backend it was made from.
func (c *CPU) Close() error {
	if c.ownsPool {
		c.pool.close()
	}
	return nil
}

// Gemm implements Backend.
func (c *CPU) Gemm(transA, transB bool, m, n, k int, alpha float32, ab Buffer, lda int, bb Buffer, ldb int, beta float32, cb Buffer, ldc int) {
	a, b, cm := c.f32("Gemm", "a", ab), c.f32("Gemm", "b", bb), c.f32("Gemm", "c", cb)
	checkGemm(transA, transB, m, n, k, a, lda, b, ldb, cm, ldc)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		scaleRows(cm, m, n, ldc, beta)
		return
	}
	impl := c.impl
	if c.small && smallGemmFits(transA, transB, m, n, k, alpha, beta) {
		impl = gemmSmall
	}
	if !c.gemmSplit || c.pool.threads() == 1 || 2*m*n*k < gemmSplitFlops {
		impl(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, cm, ldc)
		return
	}
	// Split C into blocks of whole rows or whole columns, whichever
	// dimension is longer; each block is an independent GEMM. Blocks are
	// align rows (columns) long, the last one taking the remainder, so
	// that every part is at least align long: as long as the small
	// kernels' blocks.
	const align = 16
	if m >= n {
		blocks := max(m/align, 1)
		c.pool.rangeChunks(blocks, 1, 1, func(lo, hi int) {
			i0, i1 := lo*align, hi*align
			if hi == blocks {
				i1 = m
			}
			ao := i0 * lda
			if transA {
				ao = i0
			}
			impl(transA, transB, i1-i0, n, k, alpha, a[ao:], lda, b, ldb, beta, cm[i0*ldc:], ldc)
		})
		return
	}
	blocks := max(n/align, 1)
	c.pool.rangeChunks(blocks, 1, 1, func(lo, hi int) {
		j0, j1 := lo*align, hi*align
		if hi == blocks {
			j1 = n
		}
		bo := j0
		if transB {
			bo = j0 * ldb
		}
		impl(transA, transB, m, j1-j0, k, alpha, a, lda, b[bo:], ldb, beta, cm[j0:], ldc)
	})
}

// gemmSplitFlops is the work below which a GEMM runs on one goroutine.
const gemmSplitFlops = 1 << 22

type gemmFunc func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)

func (c *CPU) gemmImpl() gemmFunc {
	switch c.blas {
	case BLASOpenBLAS:
		return c.lib.gemm
	case BLASRef:
		return gemmRef
	}
	return gemmGonum
}

func gemmGonum(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	ta, tb := blas.NoTrans, blas.NoTrans
	if transA {
		ta = blas.Trans
	}
	if transB {
		tb = blas.Trans
	}
	gonum.Implementation{}.Sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// scaleRows sets C = beta*C for an m×n matrix with row stride ldc; beta 0
// writes zeros without reading C.
func scaleRows(c []float32, m, n, ldc int, beta float32) {
	if beta == 1 {
		return
	}
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}
