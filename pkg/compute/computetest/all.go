package computetest

import (
	"testing"

	"github.com/picasso-ctr/picasso/pkg/compute"
)

// All runs every conformance suite on b as subtests.
func All(t *testing.T, b compute.Backend) {
	for _, s := range []struct {
		name string
		fn   func(*testing.T, compute.Backend)
	}{
		{"Memory", TestMemory},
		{"ForeignBuffers", TestForeignBuffers},
		{"Gemm", TestGemm},
		{"BiasAct", TestBiasAct},
		{"ReLUBackward", TestReLUBackward},
		{"BiasGrad", TestBiasGrad},
		{"ReLUBackwardBiasGrad", TestReLUBackwardBiasGrad},
		{"BiasReLUGrad", TestBiasReLUGrad},
		{"DenseUpdate", TestDenseUpdate},
		{"AxpyFill", TestAxpyFill},
		{"Copy2D", TestCopy2D},
		{"Rows", TestRows},
		{"Interact", TestInteract},
		{"InteractGrad", TestInteractGrad},
		{"BCE", TestBCE},
		{"EmbeddingBag", TestEmbeddingBag},
		{"EmbeddingBagHand", TestEmbeddingBagHand},
		{"EmbeddingBagPerTable", TestEmbeddingBagPerTable},
		{"EmbeddingBagGrad", TestEmbeddingBagGrad},
		{"EmbeddingBagErrors", TestEmbeddingBagErrors},
		{"EmbeddingWeightDecay", TestEmbeddingWeightDecay},
		{"Mul", TestMul},
		{"FM", TestFM},
		{"Adam", TestAdam},
		{"EmbeddingSplitLast", TestEmbeddingSplitLast},
	} {
		t.Run(s.name, func(t *testing.T) { s.fn(t, b) })
	}
}
