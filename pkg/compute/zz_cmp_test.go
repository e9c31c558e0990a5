package compute_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/picasso-ctr/picasso/pkg/compute"
)

func TestZZCompare(t *testing.T) {
	if os.Getenv("ZZ") == "" {
		t.Skip()
	}
	p := runtime.GOMAXPROCS(0)
	mk := func(opts compute.Options, split bool, lt int) *compute.CPU {
		c, _ := compute.New(opts)
		compute.SetGemmSplit(c, split)
		return c
	}
	type v struct {
		name string
		c    *compute.CPU
		lt   int
	}
	vs := []v{
		{"split", mk(compute.Options{BLAS: "openblas"}, true, 1), 1},
		{"lib", mk(compute.Options{BLAS: "openblas"}, false, p), p},
		{"one", mk(compute.Options{BLAS: "openblas", Threads: 1}, false, 1), 1},
		{"gonum", mk(compute.Options{BLAS: "gonum"}, true, 1), 1},
		{"gonum-ns", mk(compute.Options{BLAS: "gonum"}, false, 1), 1},
	}
	for _, batch := range []int{1024, 128} {
		for _, l := range benchLayers {
			r := rand.New(rand.NewPCG(1, 2))
			x, w := randF32(r, batch*l.in), randF32(r, l.out*l.in)
			y, dy := randF32(r, batch*l.out), randF32(r, batch*l.out)
			dx, dw := randF32(r, batch*l.in), randF32(r, l.out*l.in)
			ops := []func(k compute.Backend){
				func(k compute.Backend) { k.Gemm(false, true, batch, l.out, l.in, 1, x, l.in, w, l.in, 0, y, l.out) },
				func(k compute.Backend) { k.Gemm(false, false, batch, l.in, l.out, 1, dy, l.out, w, l.in, 0, dx, l.in) },
				func(k compute.Backend) { k.Gemm(true, false, l.out, l.in, batch, 1, dy, l.out, x, l.in, 0, dw, l.in) },
			}
			flops := 2 * float64(batch) * float64(l.in) * float64(l.out)
			for oi, op := range ops {
				best := make([]time.Duration, len(vs))
				for i := range best {
					best[i] = time.Hour
				}
				for rep := 0; rep < 15; rep++ {
					for i, vv := range vs {
						compute.SetLibraryThreads(vv.c, vv.lt)
						op(vv.c)
						st := time.Now()
						n := 0
						for time.Since(st) < 5*time.Millisecond || n < 2 {
							t0 := time.Now()
							op(vv.c)
							if d := time.Since(t0); d < best[i] {
								best[i] = d
							}
							n++
						}
					}
				}
				s := fmt.Sprintf("b%-5d %-14s %-10s", batch, l.name, []string{"fwd", "bwd_data", "bwd_weight"}[oi])
				for i, vv := range vs {
					s += fmt.Sprintf(" %s=%6.1f", vv.name, flops/best[i].Seconds()/1e9)
				}
				fmt.Println(s)
			}
		}
	}
}
