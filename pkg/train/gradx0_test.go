package train

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/compute"
)

// fdShapeArch is a tiny model of each architecture built on x0.
func fdShapeArch(arch string) Shape {
	s := Shape{Arch: arch, Dense: 3, Features: 3, Dim: 4, Top: []int{6, 3, 1},
		TableRows: []int64{7, 5, 6}, FeatureTable: []int{0, 1, 2}}
	if arch == ArchDCN {
		s.Cross = 2
	}
	return s
}

// TestGradientsModels checks every analytic gradient of Wide&Deep, DCN-v2
// (stacked cross layers) and DeepFM, MLP weights, cross layers, pooled
// embeddings and first-order weights, against finite differences; with
// two micro-batches it also checks that accumulated gradients are the
// whole batch's.
func TestGradientsModels(t *testing.T) {
	for _, arch := range []string{ArchWDL, ArchDCN, ArchDeepFM, ArchWDL + "+dense", ArchDeepFM + "+dense"} {
		t.Run(arch, func(t *testing.T) {
			be := compute.Reference()
			arch, plus, _ := strings.Cut(arch, "+")
			s := fdShapeArch(arch)
			s.DenseWide = plus != "" // the dense features in the wide part (and DeepFM's FM)
			m, err := newModel(s, 1, OptSGD, be)
			if err != nil {
				t.Fatal(err)
			}
			const n = 5
			params := m.params.Float32s()
			rng := rand.New(rand.NewPCG(3, 3))
			for _, l := range m.layers {
				if l.cross {
					// Cross biases start at 0; make them matter.
					copy(params[l.b:l.b+l.out], randSlice(rng, l.out, 0.3))
				} else if l.relu {
					for i := range l.out {
						params[l.b+i] += 0.3
					}
				}
			}
			nt, grads := refNet(t, m, n)
			// A pass on other inputs first leaves every scratch buffer
			// dirty, as in training.
			warm := randSlice(rng, n*s.Features*s.RowDim(), 1)
			wl := nt.forward(w32(randSlice(rng, n*s.Dense, 1)), w32(warm), n)
			wdl := make([]float32, n)
			bceLoss(be, wdl, wl, []float32{0, 1, 1, 0, 1})
			nt.backward(w32(randSlice(rng, n*s.Dense, 1)), w32(warm), w32(wdl), w32(make([]float32, len(warm))), n, true)
			dense := randSlice(rng, n*s.Dense, 1)
			emb := randSlice(rng, n*s.Features*s.RowDim(), 0.7)
			label := []float32{1, 0, 0, 1, 1}
			loss := func() float64 {
				return bceLoss(be, nil, nt.forward(w32(dense), w32(emb), n), label)
			}
			dl := make([]float32, n)
			bceLoss(be, dl, nt.forward(w32(dense), w32(emb), n), label)
			demb := make([]float32, len(emb))
			for i := range demb {
				demb[i] = 99 // must be overwritten
			}
			nt.backward(w32(dense), w32(emb), w32(dl), w32(demb), n, true)
			g := append([]float32(nil), grads...)
			for i, l := range m.layers {
				name := fmt.Sprintf("layer %d (%dx%d, cross %v)", i, l.out, l.in, l.cross)
				if allZero(g[l.w : l.w+l.in*l.out]) {
					t.Fatalf("%s has no gradient: the check would not cover it", name)
				}
				checkGrad(t, name+" W", params[l.w:l.w+l.in*l.out], g[l.w:l.w+l.in*l.out], loss)
				checkGrad(t, name+" b", params[l.b:l.b+l.out], g[l.b:l.b+l.out], loss)
			}
			checkGrad(t, "pooled embeddings", emb, demb, loss)
			if s.DenseWide {
				b := params[m.dw : m.dw+denseWideLen(s)] // Wide&Deep: first-order weights only
				gb := g[len(g)-len(b):]
				if allZero(gb) || allZero(gb[:s.Dense]) {
					t.Fatal("the dense features' wide block has no gradient: the check would not cover it")
				}
				checkGrad(t, "dense wide block", b, gb, loss)
			}
			if s.wide() {
				for f := range s.Features {
					if demb[f*s.RowDim()+s.Dim] != dl[0] {
						t.Errorf("first-order weight of feature %d: gradient %v; want the logit's %v", f, demb[f*s.RowDim()+s.Dim], dl[0])
					}
				}
			}

			// Two micro-batches of 2 and 3 samples, the loss scaled to the
			// whole batch, add up to the whole batch's gradients.
			nt2, grads2 := refNet(t, m, n)
			for k, r := range [][2]int{{0, 2}, {2, 5}} {
				lo, hi := r[0], r[1]
				rows := hi - lo
				dn := w32(dense[lo*s.Dense : hi*s.Dense])
				de := w32(emb[lo*s.Features*s.RowDim() : hi*s.Features*s.RowDim()])
				logits := nt2.forward(dn, de, rows)
				dlm := make([]float32, rows)
				lossBuf := make([]float32, 1)
				be.BCEWithLogits(w32(lossBuf), w32(dlm), logits, w32(label[lo:hi]), float32(rows)/n)
				nt2.backward(dn, de, w32(dlm), w32(make([]float32, rows*s.Features*s.RowDim())), rows, k == 0)
			}
			for i := range g {
				if d := g[i] - grads2[i]; d > 1e-6 || d < -1e-6 {
					t.Fatalf("parameter %d: micro-batch gradient %v; whole batch %v", i, grads2[i], g[i])
				}
			}
		})
	}
}
