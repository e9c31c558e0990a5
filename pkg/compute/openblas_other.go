//go:build !(darwin || freebsd || linux || netbsd)

package compute

import "fmt"

type blasLib struct {
	path       string
	setThreads func(int32)
	getThreads func() int32
	config     string
}

func loadBLAS(string) (*blasLib, error) {
	return nil, fmt.Errorf("compute: load BLAS: not supported on this platform: %w", ErrBLASUnavailable)
}

func (l *blasLib) gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	panic("compute: no BLAS on this platform")
}
