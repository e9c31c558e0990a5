package compute

// gemmRef is the reference GEMM: a triple loop accumulating in float64.
// Arguments are checked by the caller.
func gemmRef(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		for j := range row {
			var s float64
			if alpha != 0 {
				for l := range k {
					var av, bv float32
					if transA {
						av = a[l*lda+i]
					} else {
						av = a[i*lda+l]
					}
					if transB {
						bv = b[j*ldb+l]
					} else {
						bv = b[l*ldb+j]
					}
					s += float64(av) * float64(bv)
				}
			}
			v := float64(alpha) * s
			if beta != 0 {
				v += float64(beta) * float64(row[j])
			}
			row[j] = float32(v)
		}
	}
}
