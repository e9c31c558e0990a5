package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/compute"
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

// refNet returns a net of capacity n on the reference backend, whose
// buffers are Go slices, over m, writing its gradients into a buffer of
// its own.
func refNet(t *testing.T, m *model, n int) (*net, []float32) {
	t.Helper()
	a := newAllocator(m.be)
	grads := a.f32(m.n)
	nt := newNet(m.be, a, m, n, grads)
	if a.err != nil {
		t.Fatal(a.err)
	}
	return nt, grads.Float32s()
}

// bceLoss returns the mean loss of logits against label on be (host
// memory) and writes the gradient into dl when it is not nil.
func bceLoss(be compute.Backend, dl []float32, logits compute.Buffer, label []float32) float64 {
	loss := make([]float32, 1)
	var d compute.Buffer
	if dl != nil {
		d = compute.Wrap(dl)
	}
	be.BCEWithLogits(compute.Wrap(loss), d, logits, compute.Wrap(label), 1)
	return float64(loss[0]) / float64(logits.Len())
}

var w32 = compute.Wrap[float32]

func TestGradientsMLPAndInteraction(t *testing.T) {
	for _, inter := range []string{"dot", "cat"} {
		t.Run(inter, func(t *testing.T) {
			be := compute.Reference()
			s := fdShape(inter)
			m, err := newModel(s, 1, OptSGD, be)
			if err != nil {
				t.Fatal(err)
			}
			const n = 5
			params := m.params.Float32s()
			// Lift the hidden biases so that most ReLUs are active and the
			// check covers every layer.
			for _, l := range m.layers[:len(m.layers)-1] {
				for i := range l.out {
					params[l.b+i] += 0.3
				}
			}
			nt, grads := refNet(t, m, n)
			rng := rand.New(rand.NewPCG(2, 2))
			dense := randSlice(rng, n*s.Dense, 1)
			emb := randSlice(rng, n*s.Features*s.Dim, 0.7)
			label := []float32{1, 0, 0, 1, 1}
			loss := func() float64 {
				return bceLoss(be, nil, nt.forward(w32(dense), w32(emb), n), label)
			}
			dl := make([]float32, n)
			bceLoss(be, dl, nt.forward(w32(dense), w32(emb), n), label)
			demb := make([]float32, len(emb))
			nt.backward(w32(dense), w32(emb), w32(dl), w32(demb), n, true)
			g := append([]float32(nil), grads...)
			for i := range m.nBottom {
				l := m.layers[i]
				if allZero(g[l.w : l.w+l.in*l.out]) {
					t.Fatalf("bottom layer %d has no gradient: the check would not cover it", i)
				}
			}
			for i, l := range m.layers {
				name := fmt.Sprintf("layer %d (%dx%d)", i, l.out, l.in)
				checkGrad(t, name+" W", params[l.w:l.w+l.in*l.out], g[l.w:l.w+l.in*l.out], loss)
				checkGrad(t, name+" b", params[l.b:l.b+l.out], g[l.b:l.b+l.out], loss)
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
	m, _ := newModel(s, 1, OptSGD, be)
	const n = 9
	rng := rand.New(rand.NewPCG(3, 3))
	dense := randSlice(rng, n*s.Dense, 1)
	emb := randSlice(rng, n*s.Features*s.Dim, 0.7)
	label := make([]float32, n)
	for i := range label {
		label[i] = float32(i % 2)
	}
	whole := func() ([]float32, []float32) {
		nt, grads := refNet(t, m, n)
		dl := make([]float32, n)
		bceLoss(be, dl, nt.forward(w32(dense), w32(emb), n), label)
		demb := make([]float32, len(emb))
		nt.backward(w32(dense), w32(emb), w32(dl), w32(demb), n, true)
		return append([]float32(nil), grads...), demb
	}
	gw, ew := whole()
	nt, grads := refNet(t, m, 4)
	demb := make([]float32, len(emb))
	fd := s.Features * s.Dim
	for k, lo := 0, 0; lo < n; k, lo = k+1, lo+4 {
		hi := min(lo+4, n)
		mb := hi - lo
		dl := make([]float32, mb)
		d, e := w32(dense[lo*s.Dense:hi*s.Dense]), w32(emb[lo*fd:hi*fd])
		bceLoss(be, dl, nt.forward(d, e, mb), label[lo:hi])
		for i := range dl {
			dl[i] *= float32(mb) / n
		}
		nt.backward(d, e, w32(dl), w32(demb[lo*fd:hi*fd]), mb, k == 0)
	}
	for i := range gw {
		if d := math.Abs(float64(gw[i] - grads[i])); d > 1e-6 {
			t.Errorf("param grad %d: micro-batches %v; whole batch %v", i, grads[i], gw[i])
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
			c := testOptions(ModeCPU, 6)
			ref := compute.Reference()
			tr := mustTrainer(t, c.with(testBE{host: ref}, Data{Layout: replayLayout(t, &spec, 6, c.Seed, rows)}))
			n := b.N
			nt, _ := refNet(t, tr.m, n)
			master := tr.place.state().master
			w := master.W.Float32s()
			loss := func() float64 {
				in, err := tr.place.evalLookup(b)
				if err != nil {
					t.Fatal(err)
				}
				return bceLoss(ref, nil, nt.forward(in.dense, in.emb, n), b.Label)
			}
			// Analytic: run the forward and backward, then an SGD step of
			// rate 1 through the placement.
			in, err := tr.place.lookup(b, false)
			if err != nil {
				t.Fatal(err)
			}
			dl := make([]float32, n)
			bceLoss(ref, dl, nt.forward(in.dense, in.emb, n), b.Label)
			nt.backward(in.dense, in.emb, w32(dl), in.demb, n, true)
			before := append([]float32(nil), w...)
			tr.place.backward(in.demb)
			if err := tr.place.update(compute.Step{Opt: compute.OptSGD, LR: 1}); err != nil {
				t.Fatal(err)
			}
			g := make([]float32, len(before))
			for i := range g {
				g[i] = before[i] - w[i]
			}
			copy(w, before)
			checkGrad(t, "embedding rows", w, g, loss)
		})
	}
}

// TestInitDistribution checks DLRM's initialisation scales and that the
// seed decides it, for tables in host memory and on a device.
func TestInitDistribution(t *testing.T) {
	s := Shape{Dense: 13, Features: 2, Dim: 16, Bottom: []int{512, 16}, Top: []int{64, 1}, Interaction: "dot",
		TableRows: []int64{100000, 400}, FeatureTable: []int{0, 1}}
	be := newBackend(t, 2)
	m, err := newModel(s, 7, OptSGD, be.dev)
	if err != nil {
		t.Fatal(err)
	}
	defer m.free()
	params := fetchAll(t, be.dev, m.params)
	l := m.layers[0]
	w := params[l.w : l.w+l.in*l.out]
	var ss float64
	for _, v := range w {
		ss += float64(v) * float64(v)
	}
	std, want := math.Sqrt(ss/float64(len(w))), math.Sqrt(2/float64(l.in+l.out))
	if math.Abs(std-want)/want > 0.05 {
		t.Errorf("bottom layer 0 weight std %.4f; want %.4f", std, want)
	}
	emb, err := newEmbeddings(s, 7, false, be.host)
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Free()
	ew := emb.W.Float32s()
	for ti := range s.TableRows {
		bound := float32(math.Sqrt(1 / float64(s.TableRows[ti])))
		lo, hi := emb.Start[ti]*16, emb.Start[ti+1]*16
		var maxAbs float32
		for _, v := range ew[lo:hi] {
			maxAbs = max(maxAbs, float32(math.Abs(float64(v))))
		}
		if maxAbs > bound || maxAbs < 0.9*bound {
			t.Errorf("table %d: max |w| %v; want just under %v", ti, maxAbs, bound)
		}
	}
	m2, _ := newModel(s, 7, OptSGD, be.host)
	defer m2.free()
	if err := sameFloats(params, m2.params.Float32s()); err != nil {
		t.Errorf("same seed, different MLP init (device and host): %v", err)
	}
	emb2, _ := newEmbeddings(s, 7, false, be.dev)
	defer emb2.Free()
	if err := sameFloats(ew, fetchAll(t, be.dev, emb2.W)); err != nil {
		t.Errorf("same seed, different embedding init (host and device): %v", err)
	}
	m3, _ := newModel(s, 8, OptSGD, be.host)
	defer m3.free()
	if sameFloats(params, m3.params.Float32s()) == nil {
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
