package cli

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/compute"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/onnx/onnxtest"
	"github.com/picasso-ctr/picasso/pkg/train"
)

// TestONNXMatchesPredict trains a DLRM, exports it as ONNX, runs the model
// in ONNX Runtime on the test split and compares every score with the
// predictor's (what 'picasso predict' writes) to 1e-5.
func TestONNXMatchesPredict(t *testing.T) {
	modules := os.Getenv(onnxtest.ORTNodeEnv)
	if modules == "" {
		t.Skipf("%s not set (scripts/onnx-check.sh runs this test with onnxruntime-node)", onnxtest.ORTNodeEnv)
	}
	data := filepath.Join(t.TempDir(), "data")
	if code, _, errs := run(t, "gen", "--preset", "demo", "--rows", "8000", "--out", data, "--seed", "9", "-q"); code != 0 {
		t.Fatalf("gen: %d %s", code, errs)
	}
	// configs/demo.yaml trains DLRM; the defaults DCN-v2.
	for name, args := range map[string][]string{"dlrm": {"--config", "../../configs/demo.yaml"}, "default": nil} {
		t.Run(name, func(t *testing.T) { checkONNX(t, modules, data, args) })
	}
}

func checkONNX(t *testing.T, modules, data string, trainArgs []string) {
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	args := append([]string{"train", "--data", data, "--mode", "cpu", "--out", runDir, "-q"}, trainArgs...)
	if code, _, errs := run(t, args...); code != 0 {
		t.Fatalf("train: %d %s", code, errs)
	}
	model := filepath.Join(dir, "model.onnx")
	if code, _, errs := run(t, "export", "--run", runDir, "--format", "onnx", "--out", model); code != 0 {
		t.Fatalf("export: %d %s", code, errs)
	}

	m, err := train.ReadModel(filepath.Join(runDir, train.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	be, err := compute.New(compute.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	p, err := train.NewPredictor(m, be)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	spec, err := readSpec(filepath.Join(data, datasetFile))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := dataset.Open(spec, spec.Test)
	if err != nil {
		t.Fatal(err)
	}
	var dense []float32
	var sparse []int64
	var want []float32
	err = p.PredictDataset(context.Background(), ds, func(b *dataset.Batch, probs []float32) error {
		dense = append(dense, b.Dense...)
		for i := range b.N {
			for f := range b.Sparse {
				sparse = append(sparse, b.Sparse[f].IDs[i])
			}
		}
		want = append(want, probs...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n := len(want)
	scores, err := onnxtest.Run(modules, "../../scripts/onnx-score.js", model, dir, map[string]onnxtest.Feed{
		"dense":  {Type: "float32", Dims: []int{n, len(spec.Dense)}, F32: dense},
		"sparse": {Type: "int64", Dims: []int{n, len(spec.Sparse)}, Data: sparse},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := struct{ Scores []float64 }{scores}
	if len(got.Scores) != len(want) || len(want) != 800 {
		t.Fatalf("ONNX Runtime scored %d rows, predict %d; want 800", len(got.Scores), len(want))
	}
	worst, at := 0.0, 0
	for i := range want {
		if d := math.Abs(got.Scores[i] - float64(want[i])); d > worst {
			worst, at = d, i
		}
	}
	t.Logf("largest |onnx - predict| over %d rows: %.3g (row %d)", len(want), worst, at)
	if worst > 1e-5 {
		t.Errorf("row %d: ONNX Runtime %v, predict %v: differ by %.3g > 1e-5", at, got.Scores[at], want[at], worst)
	}
}
