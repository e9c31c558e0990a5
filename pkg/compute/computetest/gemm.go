package computetest

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/compute"
)

// GemmCase is one GEMM call of the conformance suite.
type GemmCase struct {
	TransA, TransB bool
	M, N, K        int
	Alpha, Beta    float32
	Pad            int // extra elements per row in lda, ldb and ldc
}

func (c GemmCase) String() string {
	return fmt.Sprintf("tA=%v,tB=%v,m=%d,n=%d,k=%d,alpha=%g,beta=%g,pad=%d", c.TransA, c.TransB, c.M, c.N, c.K, c.Alpha, c.Beta, c.Pad)
}

// GemmCases returns the shapes the suite runs: every combination of the odd
// sizes 1, 3, 17 and 129 and of the transposes, cycling through alpha, beta
// and padding values, plus degenerate and large (split) shapes.
func GemmCases() []GemmCase {
	sizes := []int{1, 3, 17, 129}
	ab := [][2]float32{{1, 0}, {1, 1}, {0.5, -1.5}, {-2, 0.25}, {0, 0.5}, {1, 0.75}, {0, 0}}
	pads := []int{0, 1, 5}
	var cases []GemmCase
	i := 0
	for _, m := range sizes {
		for _, n := range sizes {
			for _, k := range sizes {
				for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
					cases = append(cases, GemmCase{tr[0], tr[1], m, n, k, ab[i%len(ab)][0], ab[i%len(ab)][1], pads[i%len(pads)]})
					i++
				}
			}
		}
	}
	for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
		cases = append(cases,
			GemmCase{tr[0], tr[1], 0, 5, 3, 1, 0, 0},
			GemmCase{tr[0], tr[1], 4, 0, 3, 1, 0, 1},
			GemmCase{tr[0], tr[1], 4, 5, 0, 1, 0.5, 2},
			GemmCase{tr[0], tr[1], 4, 5, 0, 1, 0, 0},
			GemmCase{tr[0], tr[1], 301, 70, 64, 1, 0, 3},    // rows split
			GemmCase{tr[0], tr[1], 40, 257, 50, -1, 1, 0},   // columns split
			GemmCase{tr[0], tr[1], 200, 33, 130, 0.5, 0, 7}, // uneven split
		)
	}
	return cases
}

// TestGemm checks b.Gemm against the reference on GemmCases.
func TestGemm(t *testing.T, b compute.Backend) {
	m := newMem(t, b)
	for i, c := range GemmCases() {
		if !checkGemmCase(t, m, c, uint64(i)) {
			return // one failure is enough to read
		}
	}
}

// checkGemmCase runs one case and reports whether it passed.
func checkGemmCase(t *testing.T, m *mem, c GemmCase, seed uint64) bool {
	t.Helper()
	r := newRand(seed)
	ar, ac := c.M, c.K
	if c.TransA {
		ar, ac = c.K, c.M
	}
	br, bc := c.K, c.N
	if c.TransB {
		br, bc = c.N, c.K
	}
	lda, ldb, ldc := max(ac, 1)+c.Pad, max(bc, 1)+c.Pad, max(c.N, 1)+c.Pad
	size := func(rows, cols, ld int) int {
		if rows == 0 || cols == 0 {
			return 0
		}
		return (rows-1)*ld + cols
	}
	a := randSlice(r, size(ar, ac, lda))
	bm := randSlice(r, size(br, bc, ldb))
	if c.Alpha == 0 {
		// A and B must not be read: NaNs in them must not show up.
		for i := range a {
			a[i] = float32(math.NaN())
		}
		for i := range bm {
			bm[i] = float32(math.NaN())
		}
	}
	a0, b0 := slices.Clone(a), slices.Clone(bm)
	g := newGuarded(size(c.M, c.N, ldc))
	fill(r, g.data)
	for i := range c.M {
		for j := c.N; j < ldc && i*ldc+j < len(g.data); j++ {
			g.data[i*ldc+j] = guard // padding between rows must survive
		}
		if c.Beta == 0 {
			for j := range c.N {
				g.data[i*ldc+j] = float32(math.NaN()) // C must not be read
			}
		}
	}
	want := slices.Clone(g.data)
	compute.Reference().Gemm(c.TransA, c.TransB, c.M, c.N, c.K, c.Alpha, host(a), lda, host(bm), ldb, c.Beta, host(want), ldc)
	da, db, dc := m.f32(a), m.f32(bm), m.guard(g)
	m.be.Gemm(c.TransA, c.TransB, c.M, c.N, c.K, c.Alpha, da, lda, db, ldb, c.Beta, dc.ddata, ldc)
	m.fetch(dc)

	ok := true
	g.check(t, c.String())
	if !slices.EqualFunc(m.get(da), a0, sameBits) || !slices.EqualFunc(m.get(db), b0, sameBits) {
		t.Errorf("Gemm(%v) modified an input", c)
		ok = false
	}
	scale := math.Abs(float64(c.Alpha))*float64(c.K) + math.Abs(float64(c.Beta))
	for i := range c.M {
		for j := range ldc {
			p := i*ldc + j
			if p >= len(g.data) {
				break
			}
			got, w := g.data[p], want[p]
			if j >= c.N {
				if math.Float32bits(got) != guardBits {
					t.Errorf("Gemm(%v): padding C[%d][%d] overwritten with %v", c, i, j, got)
					return false
				}
				continue
			}
			if !closeTo(float64(got), float64(w), 2e-6, scale) {
				t.Errorf("Gemm(%v): C[%d][%d] = %v; want %v", c, i, j, got, w)
				return false
			}
		}
	}
	return ok && !t.Failed()
}

func sameBits(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) }
