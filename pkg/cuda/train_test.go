package cuda

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/bench"
	"github.com/picasso-ctr/picasso/pkg/classify"
	"github.com/picasso-ctr/picasso/pkg/compute"
	"github.com/picasso-ctr/picasso/pkg/config"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/gen"
	"github.com/picasso-ctr/picasso/pkg/profile"
	"github.com/picasso-ctr/picasso/pkg/train"
)

// smallLayout generates demo data, profiles and classifies it, and returns
// the layout and its test set.
func smallLayout(t *testing.T, rows int64) *bench.Prepared {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	res, err := gen.Run(ctx, gen.Options{Preset: "demo", Rows: rows, Seed: 3, OutDir: filepath.Join(dir, "data")})
	if err != nil {
		t.Fatal(err)
	}
	spec := res.Spec
	spec.Train, spec.Test = filepath.Join(dir, "data", spec.Train), filepath.Join(dir, "data", spec.Test)
	ds, err := dataset.Open(&spec, spec.Train)
	if err != nil {
		t.Fatal(err)
	}
	test, err := dataset.Open(&spec, spec.Test)
	if err != nil {
		t.Fatal(err)
	}
	po := profile.DefaultOptions()
	po.Budget, po.SmallTableBytes, po.Dim, po.Optimizer = 256<<10, 16<<10, 8, "adagrad"
	p, err := bench.Prepare(ctx, ds, bench.PrepOptions{Dir: filepath.Join(dir, "prep"), Profile: po, Test: test,
		Classify: classify.Options{BatchSize: 128, Seed: 1, EmbeddingDim: 8}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// trainWith trains mode on the prepared layout with the given device.
func trainWith(t *testing.T, p *bench.Prepared, mode train.Mode, host, dev compute.Backend) *train.Summary {
	t.Helper()
	c := config.Default()
	c.Model.EmbeddingDim, c.Model.BottomMLP, c.Model.TopMLP = 8, []int{32, 8}, []int{32, 16, 1}
	c.Train.Mode, c.Train.BatchSize, c.Train.Optimizer, c.Train.LearningRate = mode, 128, train.OptAdagrad, 0.02
	c.Train.EvalEvery = 40
	o := c.TrainerOptions()
	o.Data = train.Data{Layout: p.Layout, Test: p.Test}
	o.Host, o.Device, o.OutDir = host, dev, t.TempDir()
	tr, err := train.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	sum, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// TestTrainOnEmulatedGPU trains every mode with the CUDA backend as the
// device (its kernels on the CPU) and with the CPU's emulated device, on
// the same mini-batches: the bytes moved must be identical (the link
// counts the same copies whatever the device) and the test AUC within
// 0.003 (the GEMMs sum in another order). It also checks that the CUDA
// backend leaves no memory allocated.
func TestTrainOnEmulatedGPU(t *testing.T) {
	if testing.Short() {
		t.Skip("trains five runs")
	}
	p := smallLayout(t, 12000)
	host, err := compute.New(compute.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	for _, mode := range []train.Mode{train.ModeFAE, train.ModeHybrid, train.ModeDevice} {
		t.Run(string(mode), func(t *testing.T) {
			want := trainWith(t, p, mode, host, host.Emulate(false))
			gpuB := newBackend(newEmuGPU(t))
			defer gpuB.Close()
			got := trainWith(t, p, mode, host, gpuB)
			if got.BytesH2D != want.BytesH2D || got.BytesD2H != want.BytesD2H {
				t.Errorf("moved %d and %d bytes with the CUDA backend, %d and %d with the emulated device", got.BytesH2D, got.BytesD2H, want.BytesH2D, want.BytesD2H)
			}
			if d := math.Abs(float64(got.TestAUC - want.TestAUC)); !(d <= 0.003) {
				t.Errorf("test AUC %v with the CUDA backend, %v with the emulated device", got.TestAUC, want.TestAUC)
			}
			if got.Device != gpuB.Name() {
				t.Errorf("summary's device %q; want %q", got.Device, gpuB.Name())
			}
			if n := gpuB.InUse(); n != 0 {
				t.Errorf("%d bytes left allocated on the CUDA backend", n)
			}
			t.Logf("%s: AUC %.5f (emulated device %.5f), %d/%d bytes", mode, got.TestAUC, want.TestAUC, got.BytesH2D, got.BytesD2H)
		})
	}
}

// TestOpenWithoutDriver checks that a machine without the driver gets an
// error wrapping ErrNoDevice that says what was missing.
func TestOpenWithoutDriver(t *testing.T) {
	if _, err := Devices(); err == nil {
		t.Skip("a CUDA driver is installed")
	}
	t.Setenv(EnvLibCUDA, "/nonexistent/libcuda.so.1")
	_, err := openLibrary("the CUDA driver", EnvLibCUDA, cudaNames)
	if !errors.Is(err, ErrLibrary) || !containsAll(err.Error(), "/nonexistent/libcuda.so.1", EnvLibCUDA) {
		t.Errorf("open a missing driver: %v; want ErrLibrary naming the file and %s", err, EnvLibCUDA)
	}
	if _, err := Open(0, Options{}); !errors.Is(err, ErrNoDevice) {
		t.Errorf("Open without a driver: %v; want ErrNoDevice", err)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
