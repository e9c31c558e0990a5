package cuda

import (
	"errors"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/compute/computetest"
)

// TestEmulatedGPUConformance runs every conformance suite on the CUDA
// backend with the kernels' CUDA C running on the CPU: the backend's
// launches, argument blocks, scratch and error reporting, and the kernels'
// logic, checked on machines without a GPU.
func TestEmulatedGPUConformance(t *testing.T) {
	b := newBackend(newEmuGPU(t))
	defer b.Close()
	computetest.All(t, b)
}

// TestGPUConformance runs every conformance suite on GPU 0. Without one it
// skips, saying why.
func TestGPUConformance(t *testing.T) {
	b, err := Open(0, Options{})
	if errors.Is(err, ErrNoDevice) {
		t.Skipf("no CUDA device: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	t.Logf("%s", b.Name())
	computetest.All(t, b)
}
