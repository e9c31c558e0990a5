package compute

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// The small-batch kernels against the reference GEMM on every tail length
// of k, on blocks that end at the matrix edge and on padded strides, with
// guard values around C and in the padding between its rows.
func TestGemmSmallMatchesReference(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2: the small kernels never run")
	}
	r := rand.New(rand.NewPCG(3, 4))
	type shape struct{ m, n, k int }
	var shapes []shape
	for _, m := range []int{6, 7, 13, 64} {
		for _, n := range []int{16, 17, 37, 367} {
			for _, k := range []int{1, 5, 8, 9, 15, 16, 64, 129} {
				shapes = append(shapes, shape{m, n, k})
			}
		}
	}
	shapes = append(shapes, shape{3, 4, 7}, shape{4, 5, 8}, shape{128, 512, 367}, shape{512, 20, 37}, shape{256, 13, 64}, shape{1, 16, 3}, shape{5, 1, 256})
	kinds := []struct {
		name           string
		transA, transB bool
		alpha, beta    float32
	}{
		{"NT", false, true, 1, 0},
		{"NN", false, false, 1, 0},
		{"NN-scaled", false, false, -0.5, 0},
		{"TN-sgd", true, false, -0.25, 1},
		{"TN", true, false, 1, 0},
		{"TN-beta", true, false, 0.5, -1.5},
	}
	ran := map[string]int{}
	for i, s := range shapes {
		for _, kd := range kinds {
			if !smallGemmFits(kd.transA, kd.transB, s.m, s.n, s.k, kd.alpha, kd.beta) {
				continue
			}
			ran[kd.name]++
			pad := i % 3
			ar, ac := opDims(kd.transA, s.m, s.k)
			br, bc := opDims(kd.transB, s.k, s.n)
			lda, ldb, ldc := ac+pad, bc+pad, s.n+pad
			a := make([]float32, (ar-1)*lda+ac)
			b := make([]float32, (br-1)*ldb+bc)
			for j := range a {
				a[j] = float32(r.NormFloat64())
			}
			for j := range b {
				b[j] = float32(r.NormFloat64())
			}
			c, intact := guardedSlice((s.m-1)*ldc+s.n, func(int) float32 { return float32(r.NormFloat64()) })
			for row := range s.m - 1 {
				for j := s.n; j < ldc; j++ {
					c[row*ldc+j] = 777
				}
			}
			if kd.beta == 0 {
				for row := range s.m {
					for j := range s.n {
						c[row*ldc+j] = float32(math.NaN()) // must not be read
					}
				}
			}
			want := append([]float32(nil), c...)
			gemmRef(kd.transA, kd.transB, s.m, s.n, s.k, kd.alpha, a, lda, b, ldb, kd.beta, want, ldc)
			gemmSmall(kd.transA, kd.transB, s.m, s.n, s.k, kd.alpha, a, lda, b, ldb, kd.beta, c, ldc)
			name := fmt.Sprintf("%s m=%d n=%d k=%d pad=%d", kd.name, s.m, s.n, s.k, pad)
			if !intact() {
				t.Fatalf("%s: wrote outside C", name)
			}
			for row := range s.m {
				for j := range ldc {
					p := row*ldc + j
					if p >= len(c) {
						break
					}
					if j >= s.n {
						if c[p] != 777 {
							t.Fatalf("%s: padding C[%d][%d] = %v", name, row, j, c[p])
						}
						continue
					}
					tol := 1e-5 * float64(s.k+2) * (1 + math.Abs(float64(want[p])))
					if d := math.Abs(float64(c[p] - want[p])); !(d <= tol) {
						t.Fatalf("%s: C[%d][%d] = %v; want %v", name, row, j, c[p], want[p])
					}
				}
			}
		}
	}
	for _, kd := range kinds {
		if ran[kd.name] == 0 {
			t.Errorf("%s: no shape took the small kernel", kd.name)
		}
	}
}

// A small GEMM that the CPU backend splits over its goroutines gives the
// same bits as the whole one, whatever the number of parts.
func TestGemmSmallSplitSameBits(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2: the small kernels never run")
	}
	r := rand.New(rand.NewPCG(5, 6))
	fillN := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(r.NormFloat64())
		}
		return s
	}
	for _, tc := range []struct {
		transA, transB bool
		m, n, k        int
		beta           float32
	}{
		{false, true, 200, 512, 367, 0},
		{false, false, 128, 367, 512, 0},
		{true, false, 512, 367, 128, 1},
		{true, false, 40, 600, 128, 1},
		{false, true, 256, 40, 367, 0},   // rows split
		{false, false, 256, 64, 300, 0},  // rows split
		{true, false, 256, 40, 256, 1},   // rows split
		{false, false, 200, 100, 250, 0}, // rows split, a 200-row part
	} {
		if !smallGemmFits(tc.transA, tc.transB, tc.m, tc.n, tc.k, 1, tc.beta) {
			t.Fatalf("%+v: no small kernel", tc)
		}
		if 2*tc.m*tc.n*tc.k < gemmSplitFlops {
			t.Fatalf("%+v: too small to be split", tc)
		}
		ar, ac := opDims(tc.transA, tc.m, tc.k)
		br, bc := opDims(tc.transB, tc.k, tc.n)
		const pad = 3
		lda, ldb, ldc := ac+pad, bc+pad, tc.n+pad
		a, b, c0 := fillN(ar*lda), fillN(br*ldb), fillN(tc.m*ldc)
		whole := append([]float32(nil), c0...)
		gemmSmall(tc.transA, tc.transB, tc.m, tc.n, tc.k, 1, a, lda, b, ldb, tc.beta, whole, ldc)
		for _, threads := range []int{2, 3, 5} {
			be, err := New(Options{BLAS: BLASGonum, Threads: threads})
			if err != nil {
				t.Fatal(err)
			}
			got := append([]float32(nil), c0...)
			be.Gemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, 1, Wrap(a), lda, Wrap(b), ldb, tc.beta, Wrap(got), ldc)
			be.Close()
			if err := sameBitsSlices(got, whole); err != nil {
				t.Errorf("%+v, %d threads: %v", tc, threads, err)
			}
		}
	}
}

// opDims returns the rows and columns of a GEMM operand stored for
// op(X) = rows×cols: transposed when trans is set.
func opDims(trans bool, rows, cols int) (int, int) {
	if trans {
		return cols, rows
	}
	return rows, cols
}
