package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/compute"
	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// Gradient checks: every analytic gradient of the model is compared with a
// central finite difference of the loss, computed in float64 from the
// float32 forward pass, on small shapes.

// A step of 1e-3 keeps the perturbation from crossing a ReLU kink for these
// seeds (a crossing shows as an analytic gradient of exactly 0 against a
// non-zero difference); round-off of the float32 forward stays near 1e-4.
const (
	fdStep = 1e-3
	fdTol  = 2e-4 // absolute, after scaling by max(1, |g|)
)

// fdShape is a tiny DLRM.
func fdShape(inter string) Shape {
	return Shape{Dense: 3, Features: 3, Dim: 4, Bottom: []int{5, 4}, Top: []int{6, 3, 1}, Interaction: inter,
		TableRows: []int64{7, 5, 6}, FeatureTable: []int{0, 1, 2}}
}

func randSlice(rng *rand.Rand, n int, scale float64) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(rng.NormFloat64() * scale)
	}
	return s
}

// checkGrad compares an analytic gradient g of loss with respect to x with
// finite differences, perturbing every element of x in turn.
func checkGrad(t *testing.T, what string, x, g []float32, loss func() float64) {
	t.Helper()
	worst := 0.0
	for i := range x {
		orig := x[i]
		x[i] = orig + fdStep
		lp := loss()
		x[i] = orig - fdStep
		lm := loss()
		x[i] = orig
		num := (lp - lm) / (2 * fdStep)
		err := math.Abs(num-float64(g[i])) / math.Max(1, math.Abs(num))
		worst = max(worst, err)
		if err > fdTol {
			t.Errorf("%s[%d]: analytic gradient %.6g; finite difference %.6g", what, i, g[i], num)
		}
	}
	t.Logf("%s: %d values, worst error %.2g", what, len(x), worst)
}

func TestGradientsMLPAndInteraction(t *testing.T) {
	for _, inter := range []string{"dot", "cat"} {
		t.Run(inter, func(t *testing.T) {
			be := compute.Reference()
			s := fdShape(inter)
			m, err := newModel(s, 1, false)
			if err != nil {
				t.Fatal(err)
			}
			const n = 5
			// Lift the hidden biases so that most ReLUs are active and the
			// check covers every layer.
			for _, l := range m.layers[:len(m.layers)-1] {
				for i := range m.b(l) {
					m.b(l)[i] += 0.3
				}
			}
			nt := newNet(be, m, n)
			rng := rand.New(rand.NewPCG(2, 2))
			dense := randSlice(rng, n*s.Dense, 1)
			emb := randSlice(rng, n*s.Features*s.Dim, 0.7)
			label := []float32{1, 0, 0, 1, 1}
			loss := func() float64 {
				return be.BCEWithLogits(nil, nt.forward(dense, emb, n), label)
			}
			dl := make([]float32, n)
			be.BCEWithLogits(dl, nt.forward(dense, emb, n), label)
			demb := make([]float32, len(emb))
			nt.backward(dense, emb, dl, demb, n, true)
			grads := append([]float32(nil), m.grads...)
			for i := range m.nBottom {
				l := m.layers[i]
				if allZero(grads[l.w : l.w+l.in*l.out]) {
					t.Fatalf("bottom layer %d has no gradient: the check would not cover it", i)
				}
			}
			for i, l := range m.layers {
				name := fmt.Sprintf("layer %d (%dx%d)", i, l.out, l.in)
				checkGrad(t, name+" W", m.w(l), grads[l.w:l.w+l.in*l.out], loss)
				checkGrad(t, name+" b", m.b(l), grads[l.b:l.b+l.out], loss)
			}
			checkGrad(t, "pooled embeddings", emb, demb, loss)
		})
	}
}

// TestMicroBatchAccumulation checks that gradients accumulated over
// micro-batches equal those of the whole batch.
func TestMicroBatchAccumulation(t *testing.T) {
	be := compute.Reference()
	s := fdShape("dot")
	m, _ := newModel(s, 1, false)
	const n = 9
	rng := rand.New(rand.NewPCG(3, 3))
	dense := randSlice(rng, n*s.Dense, 1)
	emb := randSlice(rng, n*s.Features*s.Dim, 0.7)
	label := make([]float32, n)
	for i := range label {
		label[i] = float32(i % 2)
	}
	whole := func() ([]float32, []float32) {
		nt := newNet(be, m, n)
		dl := make([]float32, n)
		be.BCEWithLogits(dl, nt.forward(dense, emb, n), label)
		demb := make([]float32, len(emb))
		nt.backward(dense, emb, dl, demb, n, true)
		return append([]float32(nil), m.grads...), demb
	}
	gw, ew := whole()
	nt := newNet(be, m, 4)
	demb := make([]float32, len(emb))
	fd := s.Features * s.Dim
	for k, lo := 0, 0; lo < n; k, lo = k+1, lo+4 {
		hi := min(lo+4, n)
		mb := hi - lo
		dl := make([]float32, mb)
		be.BCEWithLogits(dl, nt.forward(dense[lo*s.Dense:hi*s.Dense], emb[lo*fd:hi*fd], mb), label[lo:hi])
		for i := range dl {
			dl[i] *= float32(mb) / n
		}
		nt.backward(dense[lo*s.Dense:hi*s.Dense], emb[lo*fd:hi*fd], dl, demb[lo*fd:hi*fd], mb, k == 0)
	}
	for i := range gw {
		if d := math.Abs(float64(gw[i] - m.grads[i])); d > 1e-6 {
			t.Errorf("param grad %d: micro-batches %v; whole batch %v", i, m.grads[i], gw[i])
		}
	}
	for i := range ew {
		if d := math.Abs(float64(ew[i] - demb[i])); d > 1e-6 {
			t.Errorf("embedding grad %d: micro-batches %v; whole batch %v", i, demb[i], ew[i])
		}
	}
}

// TestGradientsEmbeddingRows checks the gradient that reaches each
// embedding row through the trainer's lookup path (packed tables, shared
// tables, multi-hot bags with empty ones) against finite differences: an
// SGD update with learning rate 1 moves a row by minus its gradient.
func TestGradientsEmbeddingRows(t *testing.T) {
	for _, tc := range []struct{ multi, shared bool }{{false, false}, {true, false}, {true, true}} {
		t.Run(fmt.Sprintf("multihot=%v/shared=%v", tc.multi, tc.shared), func(t *testing.T) {
			spec := synthSpec(tc.multi, tc.shared)
			rows := synthRows(&spec, 6, 6, 5)
			b := rows[0]
			c := testConfig(ModeCPU, 6)
			tr := mustTrainer(t, Options{Config: c, Backend: compute.Reference(), Data: Data{Layout: replayLayout(t, &spec, 6, c.Train.Seed, rows)}})
			n := b.N
			nt := newNet(tr.be, tr.m, n)
			loss := func() float64 {
				bags, err := tr.bb.build(b, false)
				if err != nil {
					t.Fatal(err)
				}
				pooled := tr.pooledDev[:n*tr.fd]
				if err := tr.lookup(tr.m.emb, bags, pooled, n); err != nil {
					t.Fatal(err)
				}
				return tr.be.BCEWithLogits(nil, nt.forward(b.Dense, pooled, n), b.Label)
			}
			// Analytic: run the forward and backward, then an SGD step of
			// rate 1 on a copy of the table.
			loss()
			dl := make([]float32, n)
			pooled := tr.pooledDev[:n*tr.fd]
			tr.be.BCEWithLogits(dl, nt.forward(b.Dense, pooled, n), b.Label)
			demb := make([]float32, n*tr.fd)
			nt.backward(b.Dense, pooled, dl, demb, n, true)
			if tr.bb.shared {
				demb = tr.bb.scatter(demb, n)
			}
			before := append([]float32(nil), tr.m.emb.W...)
			bags, _ := tr.bb.build(b, false)
			if err := tr.be.EmbeddingBagUpdate(tr.m.emb, bags, demb, compute.SparseStep{Opt: compute.OptSGD, LR: 1}, nil); err != nil {
				t.Fatal(err)
			}
			g := make([]float32, len(before))
			for i := range g {
				g[i] = before[i] - tr.m.emb.W[i]
			}
			copy(tr.m.emb.W, before)
			checkGrad(t, "embedding rows", tr.m.emb.W, g, loss)
		})
	}
}

// TestInitDistribution checks DLRM's initialisation scales and that the
// seed decides it.
func TestInitDistribution(t *testing.T) {
	s := Shape{Dense: 13, Features: 2, Dim: 16, Bottom: []int{512, 16}, Top: []int{64, 1}, Interaction: "dot",
		TableRows: []int64{100000, 400}, FeatureTable: []int{0, 1}}
	m, err := newModel(s, 7, false)
	if err != nil {
		t.Fatal(err)
	}
	l := m.layers[0]
	w := m.w(l)
	var ss float64
	for _, v := range w {
		ss += float64(v) * float64(v)
	}
	std, want := math.Sqrt(ss/float64(len(w))), math.Sqrt(2/float64(l.in+l.out))
	if math.Abs(std-want)/want > 0.05 {
		t.Errorf("bottom layer 0 weight std %.4f; want %.4f", std, want)
	}
	for ti := range s.TableRows {
		bound := float32(math.Sqrt(1 / float64(s.TableRows[ti])))
		lo, hi := m.emb.Start[ti]*16, m.emb.Start[ti+1]*16
		var maxAbs float32
		for _, v := range m.emb.W[lo:hi] {
			maxAbs = max(maxAbs, float32(math.Abs(float64(v))))
		}
		if maxAbs > bound || maxAbs < 0.9*bound {
			t.Errorf("table %d: max |w| %v; want just under %v", ti, maxAbs, bound)
		}
	}
	m2, _ := newModel(s, 7, false)
	if err := sameFloats(m.params, m2.params); err != nil {
		t.Errorf("same seed, different MLP init: %v", err)
	}
	if err := sameFloats(m.emb.W, m2.emb.W); err != nil {
		t.Errorf("same seed, different embedding init: %v", err)
	}
	m3, _ := newModel(s, 8, false)
	if sameFloats(m.params, m3.params) == nil {
		t.Error("seeds 7 and 8 give the same MLP init")
	}
}

func allZero(s []float32) bool {
	for _, v := range s {
		if v != 0 {
			return false
		}
	}
	return true
}

var _ = dataset.Batch{}
