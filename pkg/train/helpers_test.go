package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/compute"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/layout"
	"github.com/picasso-ctr/picasso/pkg/layout/layouttest"
)

// synthSpec is a small spec: 3 dense features, 4 sparse ones (the last
// multi-hot when multiHot; the last two sharing a table when shared).
func synthSpec(multiHot, shared bool) dataset.Spec {
	s := dataset.Spec{
		Label: "label", Dense: []string{"d0", "d1", "d2"}, PTrue: "p_true",
		Sparse: []dataset.SparseFeature{{Name: "c0", Rows: 60}, {Name: "c1", Rows: 30}, {Name: "c2", Rows: 45}, {Name: "c3", Rows: 25}},
	}
	if multiHot {
		s.Sparse[3].MultiHot = true
	}
	if shared {
		s.Sparse[2].Table, s.Sparse[3].Table = "shared", "shared"
	}
	return s
}

// synthRows draws n rows with skewed IDs (low IDs popular) and labels from
// a planted logistic model (the same for every seed), in batches of up to
// chunk rows.
func synthRows(spec *dataset.Spec, n, chunk int, seed uint64) []*dataset.Batch {
	mrng := rand.New(rand.NewPCG(99, 99)) // the planted model is the same for every seed
	rng := rand.New(rand.NewPCG(seed, 99))
	tables := spec.Tables()
	ft := spec.FeatureTable()
	effect := make([][]float64, len(tables))
	for t, tb := range tables {
		effect[t] = make([]float64, tb.Rows)
		for i := range effect[t] {
			effect[t][i] = mrng.NormFloat64() * 0.8
		}
	}
	nd := len(spec.Dense)
	var out []*dataset.Batch
	for lo := 0; lo < n; lo += chunk {
		m := min(chunk, n-lo)
		b := &dataset.Batch{N: m, Label: make([]float32, m), Dense: make([]float32, m*nd), PTrue: make([]float32, m),
			Sparse: make([]dataset.SparseColumn, len(spec.Sparse))}
		for f, sf := range spec.Sparse {
			if sf.MultiHot {
				b.Sparse[f].Offsets = make([]int32, 1, m+1)
			}
		}
		for i := range m {
			z := -1.0
			for k := range nd {
				v := float32(rng.NormFloat64())
				b.Dense[i*nd+k] = v
				z += 0.4 * float64(v) * float64(k-1)
			}
			for f, sf := range spec.Sparse {
				rows := float64(sf.Rows)
				draw := func() int64 { u := rng.Float64(); return int64(rows * u * u * u) }
				c := &b.Sparse[f]
				if !sf.MultiHot {
					id := draw()
					c.IDs = append(c.IDs, id)
					z += effect[ft[f]][id]
					continue
				}
				k := rng.IntN(3) // 0 to 2 IDs: empty bags happen
				for range k {
					id := draw()
					c.IDs = append(c.IDs, id)
					z += 0.5 * effect[ft[f]][id]
				}
				c.Offsets = append(c.Offsets, int32(len(c.IDs)))
			}
			p := 1 / (1 + math.Exp(-z))
			b.PTrue[i] = float32(p)
			if rng.Float64() < p {
				b.Label[i] = 1
			}
		}
		out = append(out, b)
	}
	return out
}

// writeData writes batches to dir/part-0.parquet with row groups of rg rows
// and opens the result.
func writeData(t testing.TB, spec *dataset.Spec, batches []*dataset.Batch, dir string, rg int) *dataset.Dataset {
	t.Helper()
	path := filepath.Join(dir, "part-0.parquet")
	w, err := dataset.NewWriter(path, spec, dataset.WriterOptions{RowGroupRows: rg, WithPTrue: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		if err := w.WriteBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ds, err := dataset.Open(spec, dir)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// writeLayout writes a FAE layout of rows: an input is hot when every ID
// is below hotK of its table. Each class is shuffled with the seed and cut
// into mini-batches of batch rows.
func writeLayout(t testing.TB, spec *dataset.Spec, rows []*dataset.Batch, batch int, hotK []int64, seed uint64) *layout.Layout {
	t.Helper()
	tables := spec.Tables()
	ft := spec.FeatureTable()
	hot := make([][]int64, len(tables))
	for tb := range tables {
		for id := range hotK[tb] {
			hot[tb] = append(hot[tb], id)
		}
	}
	type row struct {
		b *dataset.Batch
		i int
	}
	var cls [2][]row
	for _, b := range rows {
		for i := range b.N {
			c := layout.Hot
			for f := range spec.Sparse {
				for _, id := range b.Sparse[f].Row(i) {
					if id >= hotK[ft[f]] {
						c = layout.Cold
					}
				}
			}
			cls[c] = append(cls[c], row{b, i})
		}
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	nd := len(spec.Dense)
	var batches [2][]*dataset.Batch
	for c := range cls {
		rs := cls[c]
		rng.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
		for lo := 0; lo < len(rs); lo += batch {
			part := rs[lo:min(lo+batch, len(rs))]
			var parts []*dataset.Batch
			var a, e []int
			for _, r := range part {
				parts, a, e = append(parts, r.b), append(a, r.i), append(e, r.i+1)
			}
			batches[c] = append(batches[c], concatRows(parts, a, e, nd))
		}
	}
	return layouttest.Write(t, t.TempDir(), spec, batch, hot, batches)
}

// replayLayout writes a layout of cold mini-batches only, placed so that
// the first epoch of a run with the seed in a mode without phases reads
// them in the order of seq: it replays another run's sequence.
func replayLayout(t testing.TB, spec *dataset.Spec, batch int, seed uint64, seq []*dataset.Batch) *layout.Layout {
	t.Helper()
	var batches [2][]*dataset.Batch
	batches[layout.Cold] = make([]*dataset.Batch, len(seq))
	for i, k := range epochOrder(seed, layout.Cold, 0, len(seq)) {
		batches[layout.Cold][k] = seq[i]
	}
	return layouttest.Write(t, t.TempDir(), spec, batch, make([][]int64, len(spec.Tables())), batches)
}

// readClass reads every mini-batch of class c in stored order, hot ones
// with table IDs when tableIDs is set.
func readClass(t testing.TB, l *layout.Layout, c layout.Class, tableIDs bool) []*dataset.Batch {
	t.Helper()
	idx := make([]int, l.NumBatches(c))
	for i := range idx {
		idx[i] = i
	}
	s, err := l.Stream(c, idx, layout.StreamOptions{TableIDs: tableIDs})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := make([]*dataset.Batch, len(idx))
	for i := range out {
		if out[i], err = s.Next(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// testOptions are a small DLRM's run settings for the synthetic data.
func testOptions(mode Mode, batch int) Options {
	return Options{
		Mode:      mode,
		Model:     ModelOptions{Dim: 4, Bottom: []int{8, 4}, Top: []int{8, 1}, Interaction: "dot"},
		Optimizer: OptSGD, LR: LRSchedule{Base: 0.1},
		BatchSize: batch, Epochs: 1, Seed: 3, MicroBatches: 1, Prefetch: 2,
		Scheduler:         SchedulerOptions{InitialRate: 50, MinRate: 1, MaxRate: 100, Patience: 4},
		SchedulerEvalRows: 200,
	}
}

// testBE is a host backend and a device for tests.
type testBE struct {
	host, dev compute.Backend
}

// newBackend returns a CPU backend of the given threads and the device it
// emulates, with CopyOut delivered at Sync so that a read that does not
// wait for it trains on stale data and fails the comparisons.
func newBackend(t testing.TB, threads int) testBE {
	t.Helper()
	be, err := compute.New(compute.Options{Threads: threads})
	if err != nil {
		t.Fatal(err)
	}
	dev := be.Emulate(true)
	t.Cleanup(func() {
		if n := dev.InUse(); n != 0 {
			t.Errorf("%d bytes left on the device after the test", n)
		}
		dev.Close()
		be.Close()
	})
	return testBE{host: be, dev: dev}
}

// with returns o training on data with the backends of be.
func (o Options) with(be testBE, data Data) Options {
	o.Host, o.Device, o.Data = be.host, be.dev, data
	return o
}

// in returns o writing to the run directory dir.
func (o Options) in(dir string) Options { o.OutDir = dir; return o }

// resuming returns o resuming the run of its directory.
func (o Options) resuming() Options { o.Resume = true; return o }

// logEvery returns o writing a metrics line every n steps.
func (o Options) logEvery(n int64) Options { o.LogEvery = n; return o }

// weights returns copies of a trainer's MLP parameters, master embedding
// table and its Adagrad state (nil for SGD), wherever they live.
func weights(t testing.TB, tr *Trainer) (params, emb, acc []float32) {
	t.Helper()
	if _, err := tr.place.syncMaster(); err != nil {
		t.Fatal(err)
	}
	master := tr.place.state().master
	params = fetchAll(t, tr.m.be, tr.m.params)
	emb = fetchAll(t, master.Backend(), master.W)
	if master.Acc.Valid() {
		acc = fetchAll(t, master.Backend(), master.Acc)
	}
	return params, emb, acc
}

func fetchAll(t testing.TB, be compute.Backend, b compute.Buffer) []float32 {
	t.Helper()
	out := make([]float32, b.Len())
	if err := fetch(be, compute.Wrap(out), b); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustTrainer(t testing.TB, opts Options) *Trainer {
	t.Helper()
	tr, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

func mustRun(t testing.TB, tr *Trainer) *Summary {
	t.Helper()
	s, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sameFloats reports the first index where a and b differ bitwise.
func sameFloats(a, b []float32) error {
	if len(a) != len(b) {
		return fmt.Errorf("lengths %d and %d", len(a), len(b))
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return fmt.Errorf("index %d: %v != %v", i, a[i], b[i])
		}
	}
	return nil
}

// interruptAt runs tr, cancelling it once step is done, and returns the
// summary of the interrupted run.
func interruptAt(t testing.TB, tr *Trainer, step int64) *Summary {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr.onStep = func(s int64, _ *dataset.Batch, _ bool) {
		if s == step {
			cancel()
		}
	}
	sum, err := tr.Run(ctx)
	if !errors.Is(err, ErrInterrupted) || !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run returned %v; want ErrInterrupted and context.Canceled", err)
	}
	return sum
}
