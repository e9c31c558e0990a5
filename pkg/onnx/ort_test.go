package onnx_test

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/compute"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/onnx"
	"github.com/picasso-ctr/picasso/pkg/onnx/onnxtest"
	"github.com/picasso-ctr/picasso/pkg/train"
)

// TestORTMultiHot exports a model with one-hot, multi-hot (some bags
// empty) and shared-table features and random weights, runs it in ONNX
// Runtime and compares every score with the Predictor's to 1e-5.
func TestORTMultiHot(t *testing.T) {
	modules := os.Getenv(onnxtest.ORTNodeEnv)
	if modules == "" {
		t.Skipf("%s not set (scripts/onnx-check.sh runs this test with onnxruntime-node)", onnxtest.ORTNodeEnv)
	}
	spec := &dataset.Spec{Label: "label", Dense: []string{"d0", "d1", "d2"}, Sparse: []dataset.SparseFeature{
		{Name: "a", Rows: 50}, {Name: "b", Rows: 70, MultiHot: true}, {Name: "c", Rows: 30, Table: "shared"}, {Name: "d", Rows: 30, Table: "shared"}}}
	for _, mo := range []train.ModelOptions{
		{Dim: 8, Bottom: []int{16, 8}, Top: []int{12, 1}, Interaction: "dot"},
		{Dim: 8, Bottom: []int{16, 8}, Top: []int{12, 1}, Interaction: "cat"},
		{Arch: train.ArchWDL, Dim: 8, Top: []int{12, 1}},
		{Arch: train.ArchDCN, Dim: 8, Top: []int{12, 1}, Cross: 2},
		{Arch: train.ArchDeepFM, Dim: 8, Top: []int{12, 1}},
	} {
		t.Run(mo.Arch+mo.Interaction, func(t *testing.T) {
			s := train.ShapeOf(mo, spec)
			s.DenseWide = mo.Arch == train.ArchWDL || mo.Arch == train.ArchDeepFM // dense features in the wide part and the FM
			if mo.Arch == train.ArchWDL || mo.Interaction == "cat" {
				// Standardized dense inputs: Sub and Mul before the model.
				s.DenseShift, s.DenseScale = []float32{0.5, -1, 2}, []float32{1.5, 0.25, 3}
			}
			m := &train.Model{Mode: train.ModeCPU, BatchSize: 64, Shape: s, Seed: 1}
			rng := rand.New(rand.NewPCG(1, 2))
			var np int
			for _, l := range (&train.Model{Shape: s, Params: make([]float32, 1<<16)}).Layers() {
				np += l.In*l.Out + l.Out
			}
			if s.DenseWide {
				np += s.Dense // the dense features' first-order weights, after the layers
				if mo.Arch == train.ArchDeepFM {
					np += s.Dim * s.Dense // and DeepFM's factors before them
				}
			}
			m.Params = make([]float32, np)
			for i := range m.Params {
				m.Params[i] = float32(rng.NormFloat64() * 0.3)
			}
			var rows int64
			for _, r := range s.TableRows {
				rows += r
			}
			m.Emb = make([]float32, rows*int64(s.RowDim()))
			for i := range m.Emb {
				m.Emb[i] = float32(rng.NormFloat64() * 0.5)
			}
			model := filepath.Join(t.TempDir(), "model.onnx")
			b, err := onnx.Export(m, spec, "test")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(model, b, 0o644); err != nil {
				t.Fatal(err)
			}

			n, maxL := 50, 4
			batch := &dataset.Batch{N: n, Label: make([]float32, n), Dense: make([]float32, n*3), Sparse: make([]dataset.SparseColumn, 4)}
			for i := range batch.Dense {
				batch.Dense[i] = float32(rng.NormFloat64())
			}
			oneHot := []int64{}
			multi := make([]int64, 0, n*maxL)
			batch.Sparse[1].Offsets = []int32{0}
			for i := range n {
				for _, f := range []int{0, 2, 3} {
					id := rng.Int64N(spec.Sparse[f].Rows)
					batch.Sparse[f].IDs = append(batch.Sparse[f].IDs, id)
				}
				oneHot = append(oneHot, batch.Sparse[0].IDs[i], batch.Sparse[2].IDs[i], batch.Sparse[3].IDs[i])
				k := i % (maxL + 1) // 0 to maxL IDs, some bags empty
				for j := range maxL {
					if j < k {
						id := rng.Int64N(70)
						batch.Sparse[1].IDs = append(batch.Sparse[1].IDs, id)
						multi = append(multi, id)
					} else {
						multi = append(multi, 70) // the padding row
					}
				}
				batch.Sparse[1].Offsets = append(batch.Sparse[1].Offsets, int32(len(batch.Sparse[1].IDs)))
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
			want := make([]float32, n)
			if err := p.Predict(batch, want); err != nil {
				t.Fatal(err)
			}
			got, err := onnxtest.Run(modules, "../../scripts/onnx-score.js", model, t.TempDir(), map[string]onnxtest.Feed{
				"dense":  {Type: "float32", Dims: []int{n, 3}, F32: batch.Dense},
				"sparse": {Type: "int64", Dims: []int{n, 3}, Data: oneHot},
				"b":      {Type: "int64", Dims: []int{n, maxL}, Data: multi},
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != n {
				t.Fatalf("ONNX Runtime gave %d scores; want %d", len(got), n)
			}
			worst, mid := 0.0, 0
			for i := range want {
				worst = max(worst, math.Abs(got[i]-float64(want[i])))
				if want[i] > 0.05 && want[i] < 0.95 {
					mid++
				}
			}
			if mid < n/4 {
				t.Fatalf("only %d of %d scores in (0.05, 0.95): saturated scores would hide differences", mid, n)
			}
			t.Logf("largest |onnx - predict| over %d rows: %.3g", n, worst)
			if worst > 1e-5 {
				t.Errorf("ONNX Runtime and the Predictor differ by %.3g > 1e-5", worst)
			}
		})
	}
}
