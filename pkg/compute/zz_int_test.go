package compute

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

func minTime(f func()) time.Duration {
	best := time.Hour
	for rep := 0; rep < 200; rep++ {
		t0 := time.Now()
		f()
		if d := time.Since(t0); d < best {
			best = d
		}
	}
	return best
}

func TestZZInteract(t *testing.T) {
	if os.Getenv("ZZ") == "" {
		t.Skip()
	}
	const n, f, d = 64, 26, 16
	w := InteractWidth(f, d)
	r := rand.New(rand.NewPCG(1, 2))
	rs := func(k int) []float32 {
		s := make([]float32, k)
		for i := range s {
			s[i] = r.Float32()
		}
		return s
	}
	x, emb, out, dOut := rs(n*d), rs(n*f*d), rs(n*w), rs(n*w)
	dx, demb := rs(n*d), rs(n*f*d)
	c, _ := New(Options{BLAS: "gonum", Threads: 1})
	fmt.Println("fwd us/1024 samples:", minTime(func() { c.InteractForward(out, x, emb, n, f, d) }).Seconds()*1e6*1024/n)
	fmt.Println("bwd us/1024 samples:", minTime(func() { c.InteractBackward(dx, demb, dOut, x, emb, n, f, d) }).Seconds()*1e6*1024/n)
	fmt.Println("ref fwd us/1024 samples:", minTime(func() { interactForwardRef(out, x, emb, n, f, d) }).Seconds()*1e6*1024/n)
}

func TestZZInteractBLAS(t *testing.T) {
	if os.Getenv("ZZ") == "" {
		t.Skip()
	}
	const n, f, d = 64, 26, 16
	m := f + 1
	r := rand.New(rand.NewPCG(1, 2))
	rs := func(k int) []float32 {
		s := make([]float32, k)
		for i := range s {
			s[i] = r.Float32()
		}
		return s
	}
	tt, z, sym, dt := rs(m*d), rs(m*m), rs(m*m), rs(m*d)
	lib, err := loadBLAS("")
	if err != nil {
		t.Skip(err)
	}
	lib.setThreads(1)
	fmt.Println("blas fwd us/1024:", minTime(func() {
		for range n {
			lib.gemm(false, true, m, m, d, 1, tt, d, tt, d, 0, z, m)
		}
	}).Seconds()*1e6*1024/n)
	fmt.Println("blas bwd us/1024:", minTime(func() {
		for range n {
			lib.gemm(false, false, m, d, m, 1, sym, m, tt, d, 0, dt, d)
		}
	}).Seconds()*1e6*1024/n)
	fmt.Println("go gemm fwd us/1024:", minTime(func() {
		for range n {
			gemmRef(false, true, m, m, d, 1, tt, d, tt, d, 0, z, m)
		}
	}).Seconds()*1e6*1024/n)
}
