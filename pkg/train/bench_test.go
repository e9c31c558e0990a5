package train

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// rmc2Spec is FAE's RMC2 shape at benchmark scale: 13 dense features and 26
// one-hot sparse ones over tables of 100,000 rows (the reference DLRM's
// rmc2-small configuration in shared/peers).
func rmc2Spec() dataset.Spec {
	s := dataset.Spec{Label: "label"}
	for i := range 13 {
		s.Dense = append(s.Dense, fmt.Sprintf("I%d", i+1))
	}
	for i := range 26 {
		s.Sparse = append(s.Sparse, dataset.SparseFeature{Name: fmt.Sprintf("C%d", i+1), Rows: 100_000})
	}
	return s
}

func rmc2Options(mode Mode, batch int) Options {
	c := testOptions(mode, batch)
	c.Model = ModelOptions{Dim: 16, Bottom: []int{512, 256, 64, 16}, Top: []int{512, 256, 1}, Interaction: "dot"}
	c.Seed, c.Prefetch = 1, 4
	return c
}

// randomBatches draws k batches of uniformly random inputs, as the
// reference DLRM's random data generator does.
func randomBatches(spec *dataset.Spec, k, n int, seed uint64) []*dataset.Batch {
	rng := rand.New(rand.NewPCG(seed, 1))
	var out []*dataset.Batch
	for range k {
		b := &dataset.Batch{N: n, Label: make([]float32, n), Dense: make([]float32, n*len(spec.Dense)),
			Sparse: make([]dataset.SparseColumn, len(spec.Sparse))}
		for i := range b.Label {
			b.Label[i] = float32(rng.IntN(2))
		}
		for i := range b.Dense {
			b.Dense[i] = rng.Float32()
		}
		for f, sf := range spec.Sparse {
			ids := make([]int64, n)
			for i := range ids {
				ids[i] = rng.Int64N(sf.Rows)
			}
			b.Sparse[f].IDs = ids
		}
		out = append(out, b)
	}
	return out
}

// BenchmarkModelStep times one cpu-mode training step of every model on
// the RMC2 inputs (13 dense features, 26 tables of 100,000 rows, dim 16):
// DLRM with RMC2's MLPs, Wide&Deep, DCN-v2 (two cross layers) and DeepFM
// with a 256-128-1 deep MLP, with plain SGD (opt=sgd, what
// scripts/torch_models_bench.py runs) and with the default recipe
// (opt=default: row-wise Adagrad on the embeddings, Adam on the MLPs).
func BenchmarkModelStep(b *testing.B) {
	for _, arch := range Archs {
		for _, opt := range []string{"sgd", "default"} {
			for _, batch := range []int{1024, 128} {
				b.Run(fmt.Sprintf("%s/%s/batch=%d", arch, opt, batch), func(b *testing.B) {
					spec := rmc2Spec()
					be := newBackend(b, 0)
					c := rmc2Options(ModeCPU, batch)
					if arch != ArchDLRM {
						c.Model = ModelOptions{Arch: arch, Dim: 16, Top: []int{256, 128, 1}, Cross: 2}
					}
					if opt == "default" {
						c.Optimizer, c.DenseOptimizer, c.DenseLR.Base = OptAdagrad, OptAdam, 0.001
					}
					batches := randomBatches(&spec, 8, batch, 1)
					tr := mustTrainer(b, c.with(be, Data{Layout: replayLayout(b, &spec, batch, c.Seed, batches)}))
					timeSteps(b, tr, batches)
				})
			}
		}
	}
}

// BenchmarkTrainStep times one training step (embedding lookup, MLP forward
// and backward, dense and sparse SGD updates) of DLRM on the RMC2 shapes in
// cpu mode, data reading excluded, as the reference DLRM's ms/it is.
func BenchmarkTrainStep(b *testing.B) {
	for _, batch := range []int{1024, 128} {
		b.Run(fmt.Sprintf("rmc2/batch=%d", batch), func(b *testing.B) {
			spec := rmc2Spec()
			be := newBackend(b, 0)
			c := rmc2Options(ModeCPU, batch)
			batches := randomBatches(&spec, 8, batch, 1)
			tr := mustTrainer(b, c.with(be, Data{Layout: replayLayout(b, &spec, batch, c.Seed, batches)}))
			b.ReportAllocs()
			sec := timeSteps(b, tr, batches)
			b.ReportMetric(float64(batch*b.N)/sec, "samples/s")
			ph := tr.st.Phases
			per := func(s float64) float64 { return s * 1e3 / float64(b.N) }
			b.Logf("%s: ms/step: emb_forward %.2f, mlp_forward %.2f, mlp_backward %.2f, emb_update %.2f, transfer %.2f",
				be.host.Name(), per(ph.EmbForward), per(ph.MLPForward), per(ph.MLPBackward), per(ph.EmbUpdate), per(ph.Transfer))
		})
	}
}

// timeSteps trains two warm-up steps, then times b.N steps over batches in
// turn, reporting ms/step and cpu-ms/step, and returns the seconds taken.
func timeSteps(b *testing.B, tr *Trainer, batches []*dataset.Batch) float64 {
	for _, bt := range batches[:2] {
		if _, err := tr.trainStep(bt, false); err != nil {
			b.Fatal(err)
		}
	}
	tr.st.Phases = PhaseSeconds{}
	cpu0 := cpuSeconds()
	b.ResetTimer()
	for i := range b.N {
		if _, err := tr.trainStep(batches[i%len(batches)], false); err != nil {
			b.Fatal(err)
		}
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(sec*1e3/float64(b.N), "ms/step")
	// CPU time per step is what the step costs whatever else runs on the
	// machine; on an idle machine ms/step ≈ cpu-ms/step / cores.
	b.ReportMetric((cpuSeconds()-cpu0)*1e3/float64(b.N), "cpu-ms/step")
	b.ReportMetric(0, "ns/op")
	return sec
}
