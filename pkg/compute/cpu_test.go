package compute_test

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/picasso-ctr/picasso/pkg/compute"
	"github.com/picasso-ctr/picasso/pkg/compute/computetest"
)

func newCPU(t testing.TB, opts compute.Options) *compute.CPU {
	t.Helper()
	b, err := compute.New(opts)
	if err != nil {
		t.Fatalf("New(%+v): %v", opts, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestReferenceConformance(t *testing.T) {
	computetest.All(t, compute.Reference())
}

func TestGonumConformance(t *testing.T) {
	for _, threads := range []int{1, 3} {
		b := newCPU(t, compute.Options{BLAS: compute.BLASGonum, Threads: threads})
		if b.BLAS() != compute.BLASGonum || b.Name() != "cpu/gonum" || b.Threads() != threads {
			t.Fatalf("New(gonum, %d threads): BLAS %q, Name %q, Threads %d", threads, b.BLAS(), b.Name(), b.Threads())
		}
		computetest.All(t, b)
	}
}

// TestEmulatedDeviceConformance runs every suite on the emulated device,
// whose memory the suites reach only through its copy calls, with
// CopyOut delivered at Sync as a device queue would.
func TestEmulatedDeviceConformance(t *testing.T) {
	for _, deferred := range []bool{false, true} {
		host := newCPU(t, compute.Options{BLAS: compute.BLASAuto, Threads: 2})
		dev := host.Emulate(deferred)
		if dev.Space() == host.Space() || dev.Space().IsHost() {
			t.Fatalf("Emulate: space %s (host %v); want a space of its own", dev.Space().Name(), dev.Space().IsHost())
		}
		computetest.All(t, dev)
		lanes, err := dev.Lanes(2)
		if err != nil || len(lanes) != 2 {
			t.Fatalf("Lanes(2) = %v, %v; want 2 lanes", lanes, err)
		}
		for _, l := range lanes {
			if l.Space() != dev.Space() {
				t.Errorf("a lane computes in %s; want the device's memory", l.Space().Name())
			}
			l.Close()
		}
		dev.Close()
	}
}

// TestDeferredCopyOut checks that the deferred emulated device delivers
// CopyOut's data at Sync, taken when CopyOut was called.
func TestDeferredCopyOut(t *testing.T) {
	host := newCPU(t, compute.Options{BLAS: compute.BLASGonum, Threads: 1})
	dev := host.Emulate(true)
	x, err := dev.Alloc(compute.Float32, 2)
	if err != nil {
		t.Fatal(err)
	}
	dev.CopyIn(x, compute.Wrap([]float32{1, 2}))
	out := make([]float32, 2)
	dev.CopyOut(compute.Wrap(out), x)
	dev.Fill(x, 7) // after the copy in queue order: must not show
	if out[0] != 0 {
		t.Errorf("CopyOut wrote %v before Sync", out)
	}
	if err := dev.Sync(); err != nil {
		t.Fatal(err)
	}
	if out[0] != 1 || out[1] != 2 {
		t.Errorf("after Sync: %v; want [1 2]", out)
	}
	dev.Free(x)
	if dev.InUse() != 0 {
		t.Errorf("InUse after Free = %d", dev.InUse())
	}
}

func TestRefGemmConformance(t *testing.T) {
	b := newCPU(t, compute.Options{BLAS: compute.BLASRef, Threads: 2})
	computetest.TestGemm(t, b)
}

func TestOpenBLASConformance(t *testing.T) {
	b, err := compute.New(compute.Options{BLAS: compute.BLASOpenBLAS})
	if errors.Is(err, compute.ErrBLASUnavailable) {
		t.Skipf("OpenBLAS not installed (install libopenblas0-pthread to run): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	path, config := b.Library()
	t.Logf("loaded %s (%s)", path, config)
	if b.Name() != "cpu/openblas" || b.Fallback() != nil {
		t.Errorf("Name() = %q, Fallback() = %v; want cpu/openblas, nil", b.Name(), b.Fallback())
	}
	computetest.All(t, b)

	one := newCPU(t, compute.Options{BLAS: compute.BLASOpenBLAS, Threads: 1})
	computetest.TestGemm(t, one)
}

func TestFallback(t *testing.T) {
	missing := compute.Options{BLAS: compute.BLASAuto, Library: "/nonexistent/libopenblas.so.0"}
	b := newCPU(t, missing)
	if b.BLAS() != compute.BLASGonum || !errors.Is(b.Fallback(), compute.ErrBLASUnavailable) {
		t.Errorf("New(%+v): BLAS %q, Fallback %v; want gonum and ErrBLASUnavailable", missing, b.BLAS(), b.Fallback())
	}
	missing.BLAS = compute.BLASOpenBLAS
	if _, err := compute.New(missing); !errors.Is(err, compute.ErrBLASUnavailable) {
		t.Errorf("New(%+v) error = %v; want ErrBLASUnavailable", missing, err)
	}
	g := newCPU(t, compute.Options{BLAS: compute.BLASGonum})
	if g.Fallback() != nil {
		t.Errorf("New(gonum).Fallback() = %v; want nil (gonum was asked for)", g.Fallback())
	}
}

func TestOptionsValidate(t *testing.T) {
	if err := (compute.Options{}).Validate(); err != nil {
		t.Errorf("Options{}.Validate() = %v; want nil", err)
	}
	err := compute.Options{BLAS: "mkl", Threads: -1}.Validate()
	if !errors.Is(err, compute.ErrInvalidOptions) {
		t.Fatalf("Validate() = %v; want ErrInvalidOptions", err)
	}
	if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n != 2 {
		t.Errorf("Validate() reported %d problems; want 2: %v", n, err)
	}
	if _, err := compute.New(compute.Options{BLAS: "mkl"}); !errors.Is(err, compute.ErrInvalidOptions) {
		t.Errorf("New(blas mkl) error = %v; want ErrInvalidOptions", err)
	}
}

func TestCloseStopsWorkers(t *testing.T) {
	before := runtime.NumGoroutine()
	b, err := compute.New(compute.Options{BLAS: compute.BLASGonum, Threads: 4})
	if err != nil {
		t.Fatal(err)
	}
	if got := runtime.NumGoroutine(); got != before+3 {
		t.Errorf("goroutines after New(4 threads) = %d; want %d", got, before+3)
	}
	b.Close()
	b.Close()
	// Close waits for each worker's wg.Done, which runs just before the
	// worker's goroutine ends: on a loaded machine the runtime may still
	// count one for a moment.
	got := runtime.NumGoroutine()
	for deadline := time.Now().Add(2 * time.Second); got != before && time.Now().Before(deadline); got = runtime.NumGoroutine() {
		time.Sleep(time.Millisecond)
	}
	if got != before {
		t.Errorf("goroutines after Close = %d; want %d", got, before)
	}
	// Still usable, on the caller alone.
	out := []float32{-1, 2}
	b.BiasAct(compute.Wrap(out), 1, 2, compute.Wrap([]float32{0.5, 0.5}), true)
	if out[0] != 0 || out[1] != 2.5 {
		t.Errorf("BiasAct after Close = %v; want [0 2.5]", out)
	}
}

// TestConcurrentUse runs kernels on one backend from several goroutines at
// once (run with -race): results must match the single-goroutine ones.
func TestConcurrentUse(t *testing.T) {
	b := newCPU(t, compute.Options{BLAS: compute.BLASGonum, Threads: 2})
	const n, w = 300, 70
	grad := make([]float32, n*w)
	for i := range grad {
		grad[i] = float32(i%13) - 6
	}
	want := make([]float32, w)
	compute.Reference().BiasGrad(compute.Wrap(want), compute.Wrap(grad), n, w)
	errs := make(chan string, 8)
	done := make(chan struct{})
	for range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			db := make([]float32, w)
			c := make([]float32, n*w)
			for range 20 {
				b.BiasGrad(compute.Wrap(db), compute.Wrap(grad), n, w)
				b.Gemm(false, false, n, w, 1, 1, compute.Wrap(grad), 1, compute.Wrap(grad), w, 0, compute.Wrap(c), w)
				for j := range db {
					if db[j] != want[j] {
						errs <- "BiasGrad differs under concurrent use"
						return
					}
				}
			}
		}()
	}
	for range 8 {
		<-done
	}
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}
