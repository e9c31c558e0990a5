package compute

import "sync"

// Small-batch GEMMs. A linear layer's three GEMMs at a training batch of a
// few hundred rows have one short side, the batch, and two long ones, the
// layer's widths. The trainer runs such a batch as two lanes of half the
// rows, at once on the two cores, each on a single-threaded backend. Called
// like that, from two threads of one process, OpenBLAS barely scales:
// BenchmarkGemmConcurrent measured 60 GFLOP/s on one goroutine and 74 on
// two, against 58 and 98 for the kernels here, and BenchmarkTrainStep at
// batch 128 went from 6.0-7.0 ms to 4.1-4.6 ms a step (alternated runs).
// Alone on one core with hot caches OpenBLAS is still the faster by about
// 10-15% on the widest layers (BenchmarkGemm, openblas-1thread-nosmall).
//
// The kernels read the weights where they lie, without packing:
//
//   - forward, Y = X·Wᵀ: both operands are read along k, twelve dot products
//     at a time (dotNT3x4);
//   - input gradient, dX = dY·W, and weight gradient, dW = dYᵀ·X: six
//     values of the first operand, read through its strides, are broadcast
//     against 16-wide rows of the second (bcast6x16).
//
// Each element of C is one sum in a fixed order, so results depend on the
// shape only, never on how the caller splits C.

// smallGemmRows is the longest batch side the forward and input-gradient
// kernels take: up to one lane's share of batch 1,024. With both lanes at
// once they ran the 512-row GEMMs at 89 and 108 GFLOP/s against OpenBLAS's
// 86 and 88, and the batch-1024 step took about 4% less time (alternated
// runs). The weight-gradient kernel, which reads and writes all of C once
// per call, fell behind OpenBLAS at 512 rows (79 against 86 GFLOP/s) and
// takes at most smallTNRows.
const smallGemmRows = 512

// smallTNRows is the longest batch side (k) the weight-gradient kernel
// takes; it also sizes that kernel's scratch.
const smallTNRows = 256

// smallGemmFits reports whether a GEMM of this shape runs on the small
// kernels. The choice depends on the whole call, never on how it is split,
// so that a result does not depend on the thread count; every part of a
// split (CPU.Gemm) is at least 16 long on the split side, which fits every
// kernel's block.
func smallGemmFits(transA, transB bool, m, n, k int, alpha, beta float32) bool {
	switch {
	case !hasAVX2:
		return false
	case !transA && transB: // forward
		return beta == 0 && alpha == 1 && m <= smallGemmRows && m >= 3 && n >= 4
	case !transA && !transB: // input gradient
		return beta == 0 && m <= smallGemmRows && m >= 6 && n >= 16
	case transA && !transB: // weight gradient
		return k <= smallTNRows
	}
	return false
}

// gemmSmall is a gemmFunc for the shapes smallGemmFits accepts, with m, n,
// k > 0 and alpha != 0.
func gemmSmall(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	switch {
	case transB:
		gemmNT(m, n, k, a, lda, b, ldb, c, ldc)
	case transA:
		gemmTN(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	default:
		gemmNN(m, n, k, alpha, a, lda, b, ldb, c, ldc)
	}
}

// gemmNT: C = A·Bᵀ (m >= 3, n >= 4). The last block of rows or columns is
// moved back to end at the matrix's edge, overlapping the block before it;
// the overlap is computed twice, to the same values.
func gemmNT(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	for j := 0; j < n; j += 4 {
		j = min(j, n-4)
		for i := 0; i < m; i += 3 {
			i = min(i, m-3)
			dotNT3x4(k, &a[i*lda], lda, &b[j*ldb], ldb, &c[i*ldc+j], ldc)
		}
	}
}

// gemmNN: C = alpha·A·B (m >= 6, n >= 16), edge blocks overlapping as in
// gemmNT.
func gemmNN(m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	for j := 0; j < n; j += 16 {
		j = min(j, n-16)
		for i := 0; i < m; i += 6 {
			i = min(i, m-6)
			bcast6x16(k, &a[i*lda], lda, 1, &b[j], ldb, &c[i*ldc+j], ldc, alpha, 0)
		}
	}
}

// tnScratch holds gemmTN's zero-padded copies of partial blocks; pooled, so
// that a call with none does not clear them and a call with some does not
// allocate.
type tnScratch struct {
	ap [smallTNRows * 6]float32  // A's last m%6 columns, k×6
	bp [smallTNRows * 16]float32 // B's last n%16 columns, k×16
	cp [6 * 16]float32           // a partial block of C
}

var tnScratchPool = sync.Pool{New: func() any { return new(tnScratch) }}

// gemmTN: C = alpha·Aᵀ·B + beta·C, with k <= smallTNRows. C is read,
// so edge blocks cannot overlap: a partial block runs on zero-padded copies
// of its operands, packed once per call, and of its part of C.
func gemmTN(m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	full := m - m%6 // rows of C in whole blocks of 6
	var sc *tnScratch
	if full < m || n%16 != 0 {
		sc = tnScratchPool.Get().(*tnScratch)
		defer tnScratchPool.Put(sc)
	}
	if full < m {
		for p := range k {
			row := sc.ap[p*6 : p*6+6]
			clear(row[copy(row, a[p*lda+full:p*lda+m]):])
		}
	}
	for j := 0; j < n; j += 16 {
		nj := min(16, n-j)
		bb, bld := &b[j], ldb
		if nj < 16 {
			for p := range k {
				row := sc.bp[p*16 : p*16+16]
				clear(row[copy(row, b[p*ldb+j:p*ldb+j+nj]):])
			}
			bb, bld = &sc.bp[0], 16
		}
		for i := 0; i < m; i += 6 {
			aa, ars, aps := &a[i], 1, lda
			if i == full {
				aa, ars, aps = &sc.ap[0], 1, 6
			}
			mi := min(6, m-i)
			if mi == 6 && nj == 16 {
				bcast6x16(k, aa, ars, aps, bb, bld, &c[i*ldc+j], ldc, alpha, beta)
				continue
			}
			cp := sc.cp[:]
			if beta != 0 { // with beta == 0, C is not read
				for r := range mi {
					copy(cp[r*16:r*16+nj], c[(i+r)*ldc+j:(i+r)*ldc+j+nj])
				}
			}
			bcast6x16(k, aa, ars, aps, bb, bld, &cp[0], 16, alpha, beta)
			for r := range mi {
				copy(c[(i+r)*ldc+j:(i+r)*ldc+j+nj], cp[r*16:r*16+nj])
			}
		}
	}
}
