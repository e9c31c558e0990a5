package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/compute"
)

// guarded returns a slice of n values inside a larger buffer whose margins
// hold a sentinel, and a check that the margins are intact.
func guarded(n int, fill func(i int) float32) ([]float32, func() bool) {
	const margin = 7
	buf := make([]float32, n+2*margin)
	for i := range buf {
		buf[i] = 1234.5
	}
	s := buf[margin : margin+n : margin+n]
	for i := range s {
		s[i] = fill(i)
	}
	return s, func() bool {
		for i := range margin {
			if buf[i] != 1234.5 || buf[len(buf)-1-i] != 1234.5 {
				return false
			}
		}
		return true
	}
}

func TestEpiloguesMatchReference(t *testing.T) {
	ref := compute.Reference()
	rng := rand.New(rand.NewPCG(4, 4))
	val := func(int) float32 {
		switch rng.IntN(10) {
		case 0:
			return 0
		case 1:
			return float32(math.Copysign(0, -1))
		}
		return float32(rng.NormFloat64())
	}
	for _, sh := range [][2]int{{1, 1}, {3, 5}, {7, 16}, {13, 33}, {64, 9}} {
		n, w := sh[0], sh[1]
		t.Run(fmt.Sprintf("%dx%d", n, w), func(t *testing.T) {
			x, _ := guarded(n*w, val)
			bias, _ := guarded(w, val)
			want := append([]float32(nil), x...)
			ref.BiasAct(want, n, w, bias, true)
			got, ok := guarded(n*w, func(i int) float32 { return x[i] })
			biasReLU(got, n, w, bias)
			if err := sameFloats(got, want); err != nil || !ok() {
				t.Fatalf("biasReLU differs from BiasAct: %v (guards intact: %v)", err, ok())
			}

			act, _ := guarded(n*w, func(i int) float32 { return want[i] })
			g0, _ := guarded(n*w, val)
			for _, add := range []bool{false, true} {
				wantG := append([]float32(nil), g0...)
				ref.ReLUBackward(wantG, act)
				wantDB := make([]float32, w)
				ref.BiasGrad(wantDB, wantG, n, w)
				db, dbOK := guarded(w, func(int) float32 { return 0.25 })
				if add {
					for j := range wantDB {
						wantDB[j] += 0.25
					}
				}
				g, gOK := guarded(n*w, func(i int) float32 { return g0[i] })
				reluBackwardBiasGrad(g, act, n, w, db, make([]float32, w), add)
				if err := sameFloats(g, wantG); err != nil || !gOK() {
					t.Fatalf("add=%v: gradient differs from ReLUBackward: %v", add, err)
				}
				if add {
					// db += colsum: compare with the reference's colsum added.
					for j := range db {
						if math.Abs(float64(db[j]-wantDB[j])) > 1e-6 {
							t.Fatalf("add=%v: db[%d] = %v; want %v", add, j, db[j], wantDB[j])
						}
					}
				} else if err := sameFloats(db, wantDB); err != nil {
					t.Fatalf("bias gradient differs from BiasGrad: %v", err)
				}
				if !dbOK() {
					t.Fatal("bias gradient written outside its slice")
				}
			}
		})
	}
}

func BenchmarkEpilogue(b *testing.B) {
	be, err := compute.New(compute.Options{Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	n, w := 1024, 512
	rng := rand.New(rand.NewPCG(1, 1))
	x := make([]float32, n*w)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	bias := make([]float32, w)
	y := make([]float32, n*w)
	db, tmp := make([]float32, w), make([]float32, w)
	b.Run("backend/bias-relu", func(b *testing.B) {
		for range b.N {
			copy(y, x)
			be.BiasAct(y, n, w, bias, true)
		}
	})
	b.Run("train/bias-relu", func(b *testing.B) {
		for range b.N {
			copy(y, x)
			biasReLU(y, n, w, bias)
		}
	})
	b.Run("backend/relu-backward+bias-grad", func(b *testing.B) {
		for range b.N {
			copy(y, x)
			be.ReLUBackward(y, x)
			be.BiasGrad(db, y, n, w)
		}
	})
	b.Run("train/relu-backward+bias-grad", func(b *testing.B) {
		for range b.N {
			copy(y, x)
			reluBackwardBiasGrad(y, x, n, w, db, tmp, false)
		}
	})
}
