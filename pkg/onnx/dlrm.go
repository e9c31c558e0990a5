package onnx

import (
	"cmp"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/train"
)

// ErrUnsupported reports a model the exporter cannot express.
var ErrUnsupported = errors.New("onnx: unsupported model")

// An Exporter adds the graph of one model architecture to g: its inputs,
// its weights as initializers, its nodes and its output "score" (the
// click probability, batch×1). spec names the data's columns.
type Exporter func(m *train.Model, spec *dataset.Spec, g *Graph) error

// Exporters holds the exporter of each architecture (train.Archs).
var Exporters = map[string]Exporter{
	train.ArchDLRM:   exportDLRM,
	train.ArchWDL:    exportWDL,
	train.ArchDCN:    exportDCN,
	train.ArchDeepFM: exportDeepFM,
}

// Archs lists the architectures Export supports.
func Archs() []string {
	out := make([]string, 0, len(Exporters))
	for a := range Exporters {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// Export returns the ONNX model (ModelProto bytes) of m, trained on data
// described by spec, with the exporter of its architecture.
func Export(m *train.Model, spec *dataset.Spec, producerVersion string) ([]byte, error) {
	arch := cmp.Or(m.Shape.Arch, train.ArchDLRM)
	ex, ok := Exporters[arch]
	if !ok {
		return nil, fmt.Errorf("onnx: architecture %q (exportable: %s): %w", arch, strings.Join(Archs(), ", "), ErrUnsupported)
	}
	g := NewGraph("picasso_" + arch)
	g.Meta("picasso.arch", arch)
	g.Meta("picasso.mode", string(m.Mode))
	g.Meta("picasso.step", fmt.Sprint(m.Step))
	if err := ex(m, spec, g); err != nil {
		return nil, err
	}
	return g.Model(producerVersion), nil
}

// SparseInput names the graph input that carries one-hot features.
const SparseInput = "sparse"

// inputs declares every model's inputs and returns "dense" and each
// feature's pooled embedding (batch×RowDim): "dense" (float32, batch×D,
// the dense features in spec order), "sparse" (int64, batch×F1: the row
// index of each one-hot feature, in spec order), and one int64 input per
// multi-hot feature named after it (batch×L, padded with the table's row
// count, which looks up an added row of zeros). A feature's rows are
// gathered from its table and summed (ReduceSum) over its IDs.
func inputs(m *train.Model, spec *dataset.Spec, g *Graph) (dense string, pooled []string, oneHot int64, err error) {
	s := m.Shape
	if len(spec.Dense) != s.Dense || len(spec.Sparse) != s.Features {
		return "", nil, 0, fmt.Errorf("onnx: the data has %d dense and %d sparse columns; the model %d and %d: %w",
			len(spec.Dense), len(spec.Sparse), s.Dense, s.Features, ErrUnsupported)
	}
	batch := Dim{Param: "batch"}
	dense = g.Input("dense", Float, batch, Dim{Value: int64(s.Dense)})
	if s.DenseShift != nil {
		// The model standardizes its dense inputs: (x - shift) * scale in
		// float32, as the trainer and Predictor compute it.
		d := int64(s.Dense)
		dense = g.Node("Sub", "dense_centered", []string{dense, g.Floats("dense_shift", s.DenseShift, 1, d)})
		dense = g.Node("Mul", "dense_standardized", []string{dense, g.Floats("dense_scale", s.DenseScale, 1, d)})
	}
	for _, f := range spec.Sparse {
		if !f.MultiHot {
			oneHot++
		}
	}
	var sparse string
	if oneHot > 0 {
		sparse = g.Input(SparseInput, Int64, batch, Dim{Value: oneHot})
	}

	// Embedding tables; one with a multi-hot feature gets a zero row at
	// index rows, the padding ID.
	padded := make([]bool, len(s.TableRows))
	for f, feat := range spec.Sparse {
		if feat.MultiHot {
			padded[s.FeatureTable[f]] = true
		}
	}
	e := int64(s.RowDim())
	start := m.TableStart()
	tables := make([]string, len(s.TableRows))
	for t, rows := range s.TableRows {
		w := m.Emb[start[t]*e : start[t+1]*e]
		if padded[t] {
			w = append(append(make([]float32, 0, len(w)+int(e)), w...), make([]float32, e)...)
			rows++
		}
		tables[t] = g.Floats(fmt.Sprintf("emb_%d", t), w, rows, e)
	}

	axis1 := g.Int64s("axis_1", []int64{1}, 1)
	pooled = make([]string, s.Features)
	col := int64(0)
	for f, feat := range spec.Sparse {
		var ids string
		if feat.MultiHot {
			ids = g.Input(feat.Name, Int64, batch, Dim{Param: feat.Name + "_ids"})
		} else {
			k := g.Int64s("", []int64{col}, 1)
			ids = g.Node("Gather", "", []string{sparse, k}, IntAttr("axis", 1)) // batch×1
			col++
		}
		rows := g.Node("Gather", "", []string{tables[s.FeatureTable[f]], ids}) // batch×L×RowDim
		pooled[f] = g.Node("ReduceSum", fmt.Sprintf("pooled_%d", f), []string{rows, axis1}, IntAttr("keepdims", 0))
	}
	return dense, pooled, oneHot, nil
}

// output adds the Sigmoid of the logit as the graph's output "score".
func output(g *Graph, logit string) {
	g.Node("Sigmoid", "score", []string{logit})
	g.Output("score", Float, Dim{Param: "batch"}, Dim{Value: 1})
}

// inputsDoc describes the inputs for the model's doc string.
func inputsDoc(s train.Shape, oneHot int64) string {
	return fmt.Sprintf("Inputs: dense (float32, batch x %d); sparse (int64, batch x %d: each one-hot feature's row index, in the training data's column order); "+
		"one int64 input per multi-hot feature (batch x L, padded with the table's row count). Output: score (click probability, batch x 1).", s.Dense, oneHot)
}

// exportDLRM writes DLRM's graph: the bottom MLP over the dense features,
// the interaction with the pooled embeddings, the top MLP.
func exportDLRM(m *train.Model, spec *dataset.Spec, g *Graph) error {
	s := m.Shape
	dense, pooled, oneHot, err := inputs(m, spec, g)
	if err != nil {
		return err
	}
	axis1 := g.Int64s("axis_1", []int64{1}, 1)
	layers := m.Layers()
	nb := len(s.Bottom)
	x := dense
	for i, l := range layers[:nb] {
		x = gemm(g, x, l, fmt.Sprintf("bottom_%d", i))
	}

	var z string
	switch s.Interaction {
	case "dot":
		parts := []string{g.Node("Unsqueeze", "", []string{x, axis1})}
		for _, p := range pooled {
			parts = append(parts, g.Node("Unsqueeze", "", []string{p, axis1}))
		}
		t := g.Node("Concat", "interaction_t", parts, IntAttr("axis", 1))     // batch×(F+1)×d
		tt := g.Node("Transpose", "", []string{t}, IntsAttr("perm", 0, 2, 1)) // batch×d×(F+1)
		zz := g.Node("MatMul", "", []string{t, tt})                           // batch×(F+1)×(F+1)
		n := int64(s.Features + 1)
		flat := g.Node("Reshape", "", []string{zz, g.Int64s("", []int64{0, n * n}, 2)})
		// The strictly lower triangle, row by row, as train's interaction.
		var idx []int64
		for i := int64(1); i < n; i++ {
			for j := int64(0); j < i; j++ {
				idx = append(idx, i*n+j)
			}
		}
		tri := g.Node("Gather", "", []string{flat, g.Int64s("", idx, int64(len(idx)))}, IntAttr("axis", 1))
		z = g.Node("Concat", "interaction", []string{x, tri}, IntAttr("axis", 1))
	case "cat":
		z = g.Node("Concat", "interaction", append([]string{x}, pooled...), IntAttr("axis", 1))
	default:
		return fmt.Errorf("onnx: interaction %q: %w", s.Interaction, ErrUnsupported)
	}

	for i, l := range layers[nb:] {
		z = gemm(g, z, l, fmt.Sprintf("top_%d", i))
	}
	output(g, z)
	g.Doc(fmt.Sprintf("picasso DLRM: dense %d, %d sparse features, dim %d, bottom %v, top %v, interaction %s. %s",
		s.Dense, s.Features, s.Dim, s.Bottom, s.Top, s.Interaction, inputsDoc(s, oneHot)))
	return nil
}

// gemm adds y = x·Wᵀ + b and, for a hidden layer, a ReLU.
func gemm(g *Graph, x string, l train.Layer, name string) string {
	w := g.Floats(name+"_w", l.W, int64(l.Out), int64(l.In))
	b := g.Floats(name+"_b", l.B, int64(l.Out))
	y := g.Node("Gemm", name, []string{x, w, b}, IntAttr("transB", 1))
	if l.ReLU {
		y = g.Node("Relu", name+"_relu", []string{y})
	}
	return y
}
