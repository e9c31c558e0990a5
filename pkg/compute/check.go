package compute

import "fmt"

// Kernels panic on shape mismatches: they are programmer errors, never data
// errors. Data errors (IDs, offsets) are returned as error values.

func shapePanic(kernel, format string, args ...any) {
	panic(fmt.Sprintf("compute: %s: %s", kernel, fmt.Sprintf(format, args...)))
}

// needLen panics unless len(s) >= n.
func needLen(kernel, name string, s []float32, n int) {
	if len(s) < n {
		shapePanic(kernel, "len(%s) = %d; want at least %d", name, len(s), n)
	}
}

// needMat panics unless s holds a rows×cols row-major matrix with row stride ld.
func needMat(kernel, name string, s []float32, rows, cols, ld int) {
	if ld < max(1, cols) {
		shapePanic(kernel, "%s: leading dimension %d < max(1, %d)", name, ld, cols)
	}
	if rows > 0 && cols > 0 {
		needLen(kernel, name, s, (rows-1)*ld+cols)
	}
}

func checkGemm(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		shapePanic("Gemm", "negative size m=%d n=%d k=%d", m, n, k)
	}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	needMat("Gemm", "a", a, ar, ac, lda)
	needMat("Gemm", "b", b, br, bc, ldb)
	needMat("Gemm", "c", c, m, n, ldc)
}

func checkRows(kernel string, n, width int) {
	if n < 0 || width < 0 {
		shapePanic(kernel, "negative size n=%d width=%d", n, width)
	}
}

func checkInteract(kernel string, n, f, d int) {
	if n < 0 || f < 0 || d < 0 {
		shapePanic(kernel, "negative size n=%d f=%d d=%d", n, f, d)
	}
}

// InteractWidth is the width of one interaction output row for f embedding
// vectors of dimension d: d + (f+1)f/2.
func InteractWidth(f, d int) int { return d + (f+1)*f/2 }
