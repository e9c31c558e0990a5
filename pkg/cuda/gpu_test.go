package cuda

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/compute"
	"github.com/picasso-ctr/picasso/pkg/config"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/train"
)

// openGPU returns the CUDA backend on GPU 0, skipping tb without one.
func openGPU(tb testing.TB) *Backend {
	tb.Helper()
	b, err := Open(0, Options{})
	if errors.Is(err, ErrNoDevice) {
		tb.Skipf("no CUDA device: %s", Reason(err))
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { b.Close() })
	return b
}

// TestTrainOnGPU trains every mode with GPU 0 as the device and with the
// CPU's emulated device on the same mini-batches: the bytes moved must be
// identical and the test AUC within 0.003. Without a GPU it skips.
func TestTrainOnGPU(t *testing.T) {
	gpuB := openGPU(t)
	p := smallLayout(t, 40000)
	host, err := compute.New(compute.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	for _, mode := range []train.Mode{train.ModeFAE, train.ModeHybrid, train.ModeDevice} {
		t.Run(string(mode), func(t *testing.T) {
			want := trainWith(t, p, mode, host, host.Emulate(false))
			got := trainWith(t, p, mode, host, gpuB)
			if got.BytesH2D != want.BytesH2D || got.BytesD2H != want.BytesD2H {
				t.Errorf("moved %d and %d bytes on the GPU, %d and %d with the emulated device", got.BytesH2D, got.BytesD2H, want.BytesH2D, want.BytesD2H)
			}
			if d := math.Abs(float64(got.TestAUC - want.TestAUC)); !(d <= 0.003) {
				t.Errorf("test AUC %v on the GPU, %v with the emulated device", got.TestAUC, want.TestAUC)
			}
			t.Logf("%s on %s: AUC %.5f (emulated device %.5f), step %.3f ms (emulated %.3f ms), %.0f samples/s",
				mode, gpuB.Name(), got.TestAUC, want.TestAUC, got.StepMsMedian, want.StepMsMedian, got.SamplesPerS)
		})
	}
	if n := gpuB.InUse(); n != 0 {
		t.Errorf("%d bytes left allocated on the GPU", n)
	}
}

// rmc2Data writes n rows of uniformly random inputs of FAE's RMC2 shape
// (13 dense features, 26 one-hot sparse ones over tables of 100,000 rows),
// as the reference DLRM's random data generator makes them.
func rmc2Data(tb testing.TB, n int) *dataset.Dataset {
	tb.Helper()
	spec := dataset.Spec{Label: "label"}
	for i := range 13 {
		spec.Dense = append(spec.Dense, fmt.Sprintf("I%d", i+1))
	}
	for i := range 26 {
		spec.Sparse = append(spec.Sparse, dataset.SparseFeature{Name: fmt.Sprintf("C%d", i+1), Rows: 100_000})
	}
	dir := tb.TempDir()
	w, err := dataset.NewWriter(filepath.Join(dir, "part-0.parquet"), &spec, dataset.WriterOptions{RowGroupRows: 65536})
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	const chunk = 8192
	for lo := 0; lo < n; lo += chunk {
		m := min(chunk, n-lo)
		b := &dataset.Batch{N: m, Label: make([]float32, m), Dense: make([]float32, m*13), Sparse: make([]dataset.SparseColumn, 26)}
		for i := range b.Label {
			b.Label[i] = float32(rng.IntN(2))
		}
		for i := range b.Dense {
			b.Dense[i] = rng.Float32()
		}
		for f := range b.Sparse {
			ids := make([]int64, m)
			for i := range ids {
				ids[i] = rng.Int64N(100_000)
			}
			b.Sparse[f].IDs = ids
		}
		if err := w.WriteBatch(b); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	ds, err := dataset.Open(&spec, dir)
	if err != nil {
		tb.Fatal(err)
	}
	return ds
}

// BenchmarkGPUTrainStep reports the median time of one training step of
// DLRM on the RMC2 shapes (dim 16, bottom 13-512-256-64-16, top 512-256-1,
// SGD 0.1), everything on GPU 0 (mode device) and with the embeddings in
// host memory (hybrid), at batch 1024 and 128: the figure the reference
// DLRM's ms/it on the same GPU compares with. Without a GPU it skips.
func BenchmarkGPUTrainStep(b *testing.B) {
	gpuB := openGPU(b)
	host, err := compute.New(compute.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer host.Close()
	ds := rmc2Data(b, 1<<18)
	for _, mode := range []train.Mode{train.ModeDevice, train.ModeHybrid} {
		for _, batch := range []int{1024, 128} {
			b.Run(fmt.Sprintf("%s/batch=%d", mode, batch), func(b *testing.B) {
				c := config.Default()
				c.Model.EmbeddingDim, c.Model.BottomMLP, c.Model.TopMLP = 16, []int{512, 256, 64, 16}, []int{512, 256, 1}
				c.Train.Mode, c.Train.BatchSize, c.Train.Optimizer, c.Train.LearningRate = mode, batch, train.OptSGD, 0.1
				c.Train.Steps = int64(max(b.N, 50))
				o := c.TrainerOptions()
				o.Data, o.Host, o.Device = train.Data{Train: ds}, host, gpuB
				tr, err := train.New(context.Background(), o)
				if err != nil {
					b.Fatal(err)
				}
				defer tr.Close()
				b.ResetTimer()
				sum, err := tr.Run(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(sum.StepMsMedian), "ms/step")
				b.ReportMetric(float64(batch)/float64(sum.StepMsMedian)*1e3, "samples/s")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}
