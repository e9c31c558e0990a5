package train

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/compute"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/metrics"
)

// TestPredictReproducesEval trains in every mode, reads the model back
// from the checkpoint and checks that scoring the test set with a
// Predictor gives exactly the run's final test AUC, log loss and accuracy.
func TestPredictReproducesEval(t *testing.T) {
	for _, tc := range []struct {
		mode Mode
		opt  Optimizer
		arch string
	}{{ModeFAE, OptSGD, ""}, {ModeCPU, OptAdagrad, ""}, {ModeHybrid, OptSGD, ""}, {ModeDevice, OptSGD, ""},
		{ModeFAE, OptAdagrad, ArchWDL}, {ModeCPU, OptSGD, ArchDCN}, {ModeHybrid, OptAdagrad, ArchDeepFM}} {
		t.Run(string(tc.mode)+"/"+tc.arch, func(t *testing.T) {
			d := newFAEData(t, true, false, 1500, 64)
			c := testOptions(tc.mode, 64)
			c.Optimizer = tc.opt
			if tc.arch != "" {
				c.Model = ModelOptions{Arch: tc.arch, Dim: 4, Top: []int{8, 1}, Cross: 2, DenseNorm: DenseNormStandardize}
			}
			if tc.mode == ModeCPU {
				c.Model.DenseNorm = DenseNormStandardize
			}
			c.Model.DenseWide = tc.arch == ArchWDL
			if tc.arch == ArchDCN {
				c.DenseOptimizer = OptAdam // optimizer state twice the parameters
			}
			c.Epochs = 2
			be := newBackend(t, 2)
			dir := t.TempDir()
			sum := mustRun(t, mustTrainer(t, c.with(be, Data{Layout: d.layout, Test: d.test}).in(dir)))

			m, err := ReadModel(filepath.Join(dir, CheckpointFile))
			if err != nil {
				t.Fatal(err)
			}
			if m.Step != sum.Steps || m.BatchSize != 64 {
				t.Errorf("ReadModel: step %d batch %d; want %d and 64", m.Step, m.BatchSize, sum.Steps)
			}
			got := scoreModel(t, m, be.host, d.test)
			if got.N != 600 {
				t.Fatalf("scored %d rows; want 600", got.N)
			}
			if Number(got.AUC) != sum.TestAUC || Number(got.LogLoss) != sum.TestLogLoss || Number(got.Accuracy) != sum.TestAccuracy {
				t.Errorf("predict: AUC %v log loss %v accuracy %v; train's test: %v %v %v",
					got.AUC, got.LogLoss, got.Accuracy, sum.TestAUC, sum.TestLogLoss, sum.TestAccuracy)
			}
		})
	}
}

// scoreModel scores ds with a Predictor of m on be and evaluates the
// scores.
func scoreModel(t *testing.T, m *Model, be compute.Backend, ds *dataset.Dataset) metrics.Summary {
	t.Helper()
	p, err := NewPredictor(m, be)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var probs, labels []float32
	err = p.PredictDataset(context.Background(), ds, func(b *dataset.Batch, pr []float32) error {
		probs = append(probs, pr...)
		labels = append(labels, b.Label...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return metrics.Evaluate(probs, labels)
}

// TestReadModelRejectsDamage checks that a truncated or bit-flipped
// checkpoint is refused with ErrCheckpoint.
func TestReadModelRejectsDamage(t *testing.T) {
	d := newFAEData(t, false, false, 600, 64)
	be := newBackend(t, 1)
	dir := t.TempDir()
	mustRun(t, mustTrainer(t, testOptions(ModeCPU, 64).with(be, Data{Layout: d.layout, Test: d.test}).in(dir)))
	path := filepath.Join(dir, CheckpointFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), raw...)
	flipped[20] ^= 1
	for name, b := range map[string][]byte{"truncated": raw[:len(raw)/2], "flipped": flipped} {
		bad := filepath.Join(t.TempDir(), "checkpoint.bin")
		if err := os.WriteFile(bad, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadModel(bad); !errors.Is(err, ErrCheckpoint) {
			t.Errorf("%s: ReadModel = %v; want ErrCheckpoint", name, err)
		}
	}
}
