package onnx

import (
	"fmt"

	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/train"
)

// The models built on x0 (the dense features followed by the factors of
// the pooled embeddings): Wide&Deep, DCN-v2 and DeepFM. Each row of their
// tables holds Dim factors and, for Wide&Deep and DeepFM, a first-order
// weight last.

// exportWDL writes Wide&Deep: the deep MLP over x0 plus the first-order
// weights of the sample's IDs.
func exportWDL(m *train.Model, spec *dataset.Spec, g *Graph) error {
	return exportX0(m, spec, g, "Wide&Deep")
}

// exportDCN writes DCN-v2: cross layers x_{l+1} = x0⊙(x_l·Wᵀ + b) + x_l,
// then the deep MLP.
func exportDCN(m *train.Model, spec *dataset.Spec, g *Graph) error {
	return exportX0(m, spec, g, "DCN-v2")
}

// exportDeepFM writes DeepFM: the deep MLP over x0 plus the factorization
// machine, the first-order weights and ½(‖Σ_f v_f‖² − Σ_f ‖v_f‖²).
func exportDeepFM(m *train.Model, spec *dataset.Spec, g *Graph) error {
	return exportX0(m, spec, g, "DeepFM")
}

// exportX0 writes the graph of a model built on x0; the shape says which
// parts it has (cross layers, first-order weights, the FM term).
func exportX0(m *train.Model, spec *dataset.Spec, g *Graph, name string) error {
	s := m.Shape
	dense, pooled, oneHot, err := inputs(m, spec, g)
	if err != nil {
		return err
	}
	d, e := int64(s.Dim), int64(s.RowDim())
	axis1 := g.Int64s("axis_1", []int64{1}, 1)
	factors, first := pooled, []string(nil)
	if e > d {
		factors = make([]string, len(pooled))
		s0, sd, se := g.Int64s("", []int64{0}, 1), g.Int64s("", []int64{d}, 1), g.Int64s("", []int64{e}, 1)
		for f, p := range pooled {
			factors[f] = g.Node("Slice", "", []string{p, s0, sd, axis1})           // batch×d
			first = append(first, g.Node("Slice", "", []string{p, sd, se, axis1})) // batch×1
		}
	}
	x0 := g.Node("Concat", "x0", append([]string{dense}, factors...), IntAttr("axis", 1))
	x := x0
	for i, l := range m.Layers() {
		if l.Cross {
			w := g.Floats(fmt.Sprintf("cross_%d_w", i), l.W, int64(l.Out), int64(l.In))
			b := g.Floats(fmt.Sprintf("cross_%d_b", i), l.B, int64(l.Out))
			u := g.Node("Gemm", "", []string{x, w, b}, IntAttr("transB", 1))
			x = g.Node("Add", fmt.Sprintf("cross_%d", i), []string{x, g.Node("Mul", "", []string{x0, u})})
			continue
		}
		x = gemm(g, x, l, fmt.Sprintf("deep_%d", i))
	}
	logit := x
	if first != nil {
		logit = g.Node("Add", "", []string{logit, g.Node("Sum", "first_order", first)})
	}
	denseV, denseW := m.DenseWide()
	if denseW != nil {
		// The dense features' first-order weights.
		w := g.Floats("dense_first_order", denseW, 1, int64(s.Dense))
		logit = g.Node("Add", "", []string{logit, g.Node("Gemm", "", []string{dense, w}, IntAttr("transB", 1))})
	}
	if s.Arch == train.ArchDeepFM {
		axis2 := g.Int64s("axis_2", []int64{2}, 1)
		parts := make([]string, len(factors))
		for f, v := range factors {
			parts[f] = g.Node("Unsqueeze", "", []string{v, axis1})
		}
		if denseV != nil {
			// One FM field per dense feature: its value times its factors,
			// before the pooled embeddings' fields.
			nd := s.Dense
			vt := make([]float32, nd*s.Dim) // 1×Dense×Dim
			for k := range s.Dim {
				for j := range nd {
					vt[j*s.Dim+k] = denseV[k*nd+j]
				}
			}
			fields := g.Node("Mul", "dense_fields", []string{g.Node("Unsqueeze", "", []string{dense, axis2}), g.Floats("dense_factors", vt, 1, int64(nd), d)})
			parts = append([]string{fields}, parts...)
		}
		v := g.Node("Concat", "", parts, IntAttr("axis", 1))                                                      // batch×F×d
		sum := g.Node("ReduceSum", "", []string{v, axis1}, IntAttr("keepdims", 0))                                // batch×d
		tot := g.Node("ReduceSum", "", []string{g.Node("Mul", "", []string{sum, sum}), axis1})                    // batch×1
		sq := g.Node("ReduceSum", "", []string{g.Node("Mul", "", []string{v, v}), axis2}, IntAttr("keepdims", 0)) // batch×F
		sq = g.Node("ReduceSum", "", []string{sq, axis1})                                                         // batch×1
		half := g.Floats("", []float32{0.5}, 1)
		fm := g.Node("Mul", "second_order", []string{g.Node("Sub", "", []string{tot, sq}), half})
		logit = g.Node("Add", "", []string{logit, fm})
	}
	output(g, logit)
	g.Doc(fmt.Sprintf("picasso %s: dense %d (in the wide part: %v), %d sparse features, dim %d, %d cross layers, deep MLP %v. %s",
		name, s.Dense, s.DenseWide, s.Features, s.Dim, s.Cross, s.Top, inputsDoc(s, oneHot)))
	return nil
}
