package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/hybridhash"
)

// hhData writes synthetic train and test sets.
func hhData(t *testing.T, multi, shared bool, n int) (dataset.Spec, Data) {
	t.Helper()
	spec := synthSpec(multi, shared)
	dir := t.TempDir()
	tr := writeData(t, &spec, synthRows(&spec, n, 500, 1), filepath.Join(dir, "train"), 256)
	te := writeData(t, &spec, synthRows(&spec, 1000, 500, 2), filepath.Join(dir, "test"), 256)
	return spec, Data{Train: tr, Test: te}
}

func hhOptions(opt Optimizer, dev, host int64) Options {
	o := testOptions(ModeHybridHash, 64)
	o.Optimizer = opt
	o.Epochs = 2
	o.EvalEvery = 20
	o.HybridHash = HybridHashOptions{DeviceBytes: dev, HostBytes: host, WarmupIters: 5, FlushIters: 10, AdmitAfter: 1}
	return o
}

// TestHybridHashTiersAgree trains the same run with everything hot, with
// everything in the host tier and with a host tier too small for the
// tables (rows spill to disk): the model must be the same to the bit, as
// a row's value never depends on where it was kept.
func TestHybridHashTiersAgree(t *testing.T) {
	for _, tc := range []struct {
		name         string
		opt          Optimizer
		multi, share bool
		arch         string
	}{
		{"sgd", OptSGD, false, false, ""},
		{"adagrad/multi/shared", OptAdagrad, true, true, ""},
		{"wdl/adagrad", OptAdagrad, false, false, ArchWDL}, // rows of Dim+1
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, data := hhData(t, tc.multi, tc.share, 3000)
			be := newBackend(t, 2)
			width := int64(4 * 4)
			if tc.arch == ArchWDL {
				width += 4
			}
			if tc.opt == OptAdagrad {
				width += 4
				if tc.arch == ArchWDL {
					width += 4 // the first-order weight's own accumulator
				}
			}
			// The device holds a default row per table, room for one
			// mini-batch's misses (64 per feature) and 20 hot rows.
			fixed := (4 + 64*4) * width
			cases := []struct {
				name      string
				dev, host int64
			}{
				{"all-hot", 1 << 20, 1 << 20},
				{"host", fixed + 20*width, 1 << 20},
				{"disk", fixed + 20*width, 16 * (width + 64)}, // 16 host rows: most rows live on disk
			}
			var ref []float32
			var refSum *Summary
			for _, c := range cases {
				o := hhOptions(tc.opt, c.dev, c.host).with(be, data).in(t.TempDir())
				o.Model.Arch = tc.arch
				if tc.arch != "" {
					o.Model.Bottom, o.Model.Interaction = nil, ""
				}
				tr := mustTrainer(t, o)
				sum := mustRun(t, tr)
				params := fetchAll(t, tr.m.be, tr.m.params)
				if hp := tr.place.(*hhPlacement); tc.arch == ArchWDL && tc.opt == OptAdagrad && (!hp.tab.SplitLast || hp.width != 4+1+2) {
					t.Errorf("Wide&Deep with Adagrad: hot store SplitLast %v, cache rows of %d floats; want true and 7 (as the master tables)", hp.tab.SplitLast, hp.width)
				}
				h := sum.HybridHash
				t.Logf("%s: AUC %.4f, hit ratio %.3f, evictions %d, disk written %d read %d, rows hot %d host %d disk %d",
					c.name, sum.TestAUC, h.HitRatio, h.Evictions, h.DiskBytesWritten, h.DiskBytesRead, h.HotRows, h.HostRows, h.DiskOnlyRows)
				if c.name == "disk" && (h.DiskBytesWritten == 0 || h.DiskBytesRead == 0 || h.DiskOnlyRows == 0) {
					t.Errorf("disk case: wrote %d, read %d bytes, %d rows on disk only; want all > 0", h.DiskBytesWritten, h.DiskBytesRead, h.DiskOnlyRows)
				}
				if c.name == "all-hot" && h.HitRatio < 0.5 {
					t.Errorf("all-hot case: hit ratio %v; want > 0.5", h.HitRatio)
				}
				if ref == nil {
					ref, refSum = params, sum
					co := hhOptions(tc.opt, 0, 0).with(be, data)
					co.Model = o.Model
					co.Mode = ModeCPU
					cpu := mustRun(t, mustTrainer(t, co))
					t.Logf("cpu: AUC %.4f", cpu.TestAUC)
					if d := float64(sum.TestAUC - cpu.TestAUC); d < -0.02 || d > 0.02 {
						t.Errorf("test AUC %v; want within 0.02 of cpu mode's %v", sum.TestAUC, cpu.TestAUC)
					}
					continue
				}
				if err := sameFloats(params, ref); err != nil {
					t.Errorf("%s: MLP weights differ from %s: %v", c.name, cases[0].name, err)
				}
				if sum.TestAUC != refSum.TestAUC || sum.TrainLoss != refSum.TrainLoss {
					t.Errorf("%s: AUC %v, loss %v; want %v, %v", c.name, sum.TestAUC, sum.TrainLoss, refSum.TestAUC, refSum.TrainLoss)
				}
			}
		})
	}
}

// TestHybridHashDeterministic: two runs with the same seed write the same
// summary figures (times aside) and metrics lines carry the cache figures.
func TestHybridHashDeterministic(t *testing.T) {
	_, data := hhData(t, false, false, 2000)
	be := newBackend(t, 2)
	var sums []map[string]any
	for range 2 {
		dir := t.TempDir()
		o := hhOptions(OptAdagrad, 4*64*5*24, 40*88).with(be, data).in(dir).logEvery(10)
		o.HybridHash.AdmitAfter = 2
		mustRun(t, mustTrainer(t, o))
		b, err := os.ReadFile(filepath.Join(dir, SummaryFile))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"seconds", "samples_per_s", "step_ms_median", "phase_seconds", "evals"} {
			delete(m, k)
		}
		sums = append(sums, m)
		lines := readLines(t, filepath.Join(dir, MetricsFile))
		n := 0
		for _, l := range lines {
			if l["kind"] == "train" {
				if _, ok := l["cache"].(map[string]any)["hit_ratio"]; !ok {
					t.Fatalf("metrics line without cache figures: %v", l)
				}
				n++
			}
		}
		if n < 5 {
			t.Errorf("%d train lines; want ≥ 5", n)
		}
	}
	a, _ := json.Marshal(sums[0])
	b, _ := json.Marshal(sums[1])
	if string(a) != string(b) {
		t.Errorf("summaries differ:\n%s\n%s", a, b)
	}
	if h := sums[0]["hybridhash"].(map[string]any); h["refused"].(float64) == 0 || h["evictions"].(float64) == 0 {
		t.Errorf("admission refused %v lookups, evicted %v rows; want both > 0", h["refused"], h["evictions"])
	}
}

// TestHybridHashResume interrupts a run whose rows spill to disk and
// resumes it from its last checkpoint (which holds the disk tier's log
// so far): the model, the evaluations and the hit counts end as in
// the uninterrupted run.
func TestHybridHashResume(t *testing.T) {
	for _, k := range []int64{12, 33} { // 12: before the first refresh after a checkpoint; 33: later
		_, data := hhData(t, true, false, 2000)
		be := newBackend(t, 2)
		width := int64(4 * 5)
		o := hhOptions(OptAdagrad, (4+64*4)*width+20*width, 16*(width+64))
		o.HybridHash.AdmitAfter = 2
		o.CheckpointEvery = 10
		o.EvalEvery = 9
		o = o.with(be, data)
		full := mustTrainer(t, o.in(t.TempDir()))
		want := mustRun(t, full)

		dir := t.TempDir()
		tr := mustTrainer(t, o.in(dir))
		interruptAt(t, tr, k)
		tr.Close()
		res := mustTrainer(t, o.in(dir).resuming())
		if res.Step() != k {
			t.Fatalf("resumed at step %d; want %d", res.Step(), k)
		}
		got := mustRun(t, res)
		if err := sameFloats(fetchAll(t, res.m.be, res.m.params), fetchAll(t, full.m.be, full.m.params)); err != nil {
			t.Fatalf("step %d: MLP weights differ after resume: %v", k, err)
		}
		if len(got.Evals) != len(want.Evals) {
			t.Fatalf("%d evaluations after resume; %d uninterrupted", len(got.Evals), len(want.Evals))
		}
		for i := range got.Evals {
			if g, w := got.Evals[i], want.Evals[i]; g.AUC != w.AUC || g.LogLoss != w.LogLoss {
				t.Fatalf("evaluation %d: resumed %+v; uninterrupted %+v", i, g, w)
			}
		}
		g, w := got.HybridHash, want.HybridHash
		if g.Lookups != w.Lookups || g.Hits != w.Hits || g.UniqueHits != w.UniqueHits || g.Admitted != w.Admitted || g.HotRows != w.HotRows {
			t.Fatalf("cache figures after resume %+v; uninterrupted %+v", g.Stats, w.Stats)
		}
		if w.DiskBytesRead == 0 {
			t.Fatalf("the run read nothing from disk; the test needs rows there")
		}
		ents, _ := os.ReadDir(dir)
		n := 0
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), hhCkptPrefix) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d saved caches in the run directory; want 1", n)
		}
	}
}

// TestHybridHashBestKeepsItsCache trains with a validation set, so that
// best.bin and checkpoint.bin are both written, at different steps: each
// names a saved cache of its own, and writing one must not remove the
// other's (best.bin's cache was removed by the next checkpoint, and a
// new best removed checkpoint.bin's, so --resume failed after a crash).
func TestHybridHashBestKeepsItsCache(t *testing.T) {
	_, data := hhData(t, false, false, 2000)
	data.Valid = data.Test
	width := int64(4 * 4)
	dir := t.TempDir()
	o := hhOptions(OptSGD, (4+64*4)*width+20*width, 16*(width+64)).with(newBackend(t, 2), data).in(dir)
	o.CheckpointEvery = 7
	tr := mustTrainer(t, o)
	var checked int
	tr.onStep = func(int64, *dataset.Batch, bool) {
		// After every step, whichever file was written last: both must
		// open, with their caches.
		for _, f := range []string{CheckpointFile, BestFile} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				continue
			}
			if _, err := ReadModel(filepath.Join(dir, f)); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			checked++
		}
	}
	sum := mustRun(t, tr)
	if len(sum.Evals) < 2 || checked == 0 {
		t.Fatalf("%d evaluations, %d files checked; the test wants several of each", len(sum.Evals), checked)
	}
	for _, f := range []string{CheckpointFile, BestFile} {
		if _, err := ReadModel(filepath.Join(dir, f)); err != nil {
			t.Errorf("after the run, %s: %v", f, err)
		}
	}
}

// TestHybridHashNewIDs trains on data whose second half brings IDs of
// table 0 never seen in the first (in a table of a million nominal rows,
// which the placement never allocates): the run trains, and every new ID
// seen at least twice ends with a row in a tier.
func TestHybridHashNewIDs(t *testing.T) {
	spec := synthSpec(false, false)
	rows := synthRows(&spec, 3000, 500, 1)
	spec.Sparse[0].Rows = 1_000_000
	const shift = 500_000
	seen := map[int64]int{}
	for _, b := range rows[3:] { // rows 1500 on: new IDs
		for i := range b.Sparse[0].IDs {
			b.Sparse[0].IDs[i] += shift
			seen[b.Sparse[0].IDs[i]]++
		}
	}
	dir := t.TempDir()
	data := Data{Train: writeData(t, &spec, rows, filepath.Join(dir, "train"), 250)}
	be := newBackend(t, 2)
	width := int64(4 * 4)
	o := hhOptions(OptSGD, (4+64*4)*width+30*width, 24*(width+64))
	o.HybridHash.AdmitAfter = 2
	o.Epochs = 1
	tr := mustTrainer(t, o.with(be, data).in(t.TempDir()))
	sum := mustRun(t, tr)
	p := tr.place.(*hhPlacement)
	hot := map[int64]bool{}
	for _, id := range p.c.HotIDs(0) {
		hot[id] = true
	}
	row := make([]float32, p.width)
	newRows := 0
	for id, n := range seen {
		if n < 2 {
			continue
		}
		ok, err := p.c.LoadRow(hybridhash.Key{Table: 0, ID: id}, row)
		if err != nil {
			t.Fatal(err)
		}
		if !ok && !hot[id] {
			t.Errorf("new id %d seen %d times has no row in any tier", id, n)
		}
		newRows++
	}
	if newRows == 0 || sum.HybridHash.Admitted < int64(newRows) {
		t.Errorf("%d new IDs seen twice, %d rows admitted; want > 0 and at least as many", newRows, sum.HybridHash.Admitted)
	}
	t.Logf("%d new ids with rows; hot %d host %d disk only %d", newRows, sum.HybridHash.HotRows, sum.HybridHash.HostRows, sum.HybridHash.DiskOnlyRows)
}

// BenchmarkHybridHashStep times one hybridhash training step on the RMC2
// shapes (26 tables of 100,000 rows, dim 16, batch 1024) with skewed IDs
// (row = rows·u⁴), a hot store of 10% of the rows and a host tier that
// holds every row, after the first refresh.
func BenchmarkHybridHashStep(b *testing.B) {
	spec := rmc2Spec()
	const batch = 1024
	batches := randomBatches(&spec, 16, batch, 1)
	rng := rand.New(rand.NewPCG(5, 5))
	for _, bt := range batches {
		for f := range bt.Sparse {
			for i := range bt.Sparse[f].IDs {
				u := rng.Float64()
				bt.Sparse[f].IDs[i] = int64(float64(spec.Sparse[f].Rows) * u * u * u * u)
			}
		}
	}
	be := newBackend(b, 0)
	c := rmc2Options(ModeHybridHash, batch)
	c.HybridHash = HybridHashOptions{DeviceBytes: (26*100_000/10 + 26*(batch+1)) * 64, HostBytes: 1 << 30,
		WarmupIters: 4, FlushIters: 1 << 40, AdmitAfter: 1}
	tr := mustTrainer(b, c.with(be, Data{Layout: replayLayout(b, &spec, batch, c.Seed, batches)}).in(b.TempDir()))
	for _, bt := range batches[:8] {
		if _, err := tr.trainStep(bt, false); err != nil {
			b.Fatal(err)
		}
	}
	tr.st.Phases = PhaseSeconds{}
	b.ResetTimer()
	for i := range b.N {
		if _, err := tr.trainStep(batches[i%len(batches)], false); err != nil {
			b.Fatal(err)
		}
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(sec*1e3/float64(b.N), "ms/step")
	b.ReportMetric(float64(batch*b.N)/sec, "samples/s")
	b.ReportMetric(0, "ns/op")
	ph := tr.st.Phases
	per := func(s float64) float64 { return s * 1e3 / float64(b.N) }
	st := tr.place.cacheStats()
	b.Logf("ms/step: emb_forward %.2f, mlp_forward %.2f, mlp_backward %.2f, emb_update %.2f, transfer %.2f; hit ratio %.3f",
		per(ph.EmbForward), per(ph.MLPForward), per(ph.MLPBackward), per(ph.EmbUpdate), per(ph.Transfer), st.HitRatio())
}

// TestHybridHashBudgetTooSmall: a device budget below the default rows and
// one mini-batch's misses is an options error, and nothing stays allocated
// on the device (newBackend checks).
func TestHybridHashBudgetTooSmall(t *testing.T) {
	_, data := hhData(t, false, false, 500)
	be := newBackend(t, 2)
	o := hhOptions(OptSGD, 1000, 1<<20).with(be, data).in(t.TempDir())
	_, err := New(context.Background(), o)
	if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "device budget") {
		t.Fatalf("New with a 1000-byte device budget = %v; want ErrInvalidOptions naming the device budget", err)
	}
}

// TestHybridHashDiskDirSafety: a disk directory that holds other files is
// never emptied; one a run made (its marker file) is.
func TestHybridHashDiskDirSafety(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(dir, "precious.txt")
	if err := os.WriteFile(keep, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := freshDiskDir(dir); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("freshDiskDir(a directory with other files) = %v; want ErrInvalidOptions", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("the other file is gone: %v", err)
	}
	run := filepath.Join(dir, "tier")
	if err := freshDiskDir(run); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(run, "000001.sst")
	if err := os.WriteFile(old, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := freshDiskDir(run); err != nil {
		t.Fatalf("freshDiskDir(an earlier run's tier) = %v; want nil", err)
	}
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an earlier run's file survived: %v", err)
	}
}

// TestHybridHashReadModel reads a hybridhash run whose rows spill to disk
// back as a model: scoring the test set with it gives exactly the run's
// final test figures, the rows coming from the hot, host and disk tiers
// and the default rows.
func TestHybridHashReadModel(t *testing.T) {
	for _, tc := range []struct {
		opt   Optimizer
		steps int64 // 0: two epochs, rows on disk; 3: most test IDs never get a row
	}{{OptSGD, 0}, {OptAdagrad, 0}, {OptAdagrad, 3}} {
		t.Run(fmt.Sprintf("%s/%d", tc.opt, tc.steps), func(t *testing.T) {
			opt := tc.opt
			_, data := hhData(t, true, false, 2000)
			be := newBackend(t, 2)
			dir := t.TempDir()
			width := int64(4 * 5)
			o := hhOptions(opt, (4+64*4)*width+20*width, 16*(width+64)).with(be, data).in(dir)
			o.HybridHash.AdmitAfter = 2
			o.Steps = tc.steps
			sum := mustRun(t, mustTrainer(t, o))
			if tc.steps == 0 && sum.HybridHash.DiskRowsWritten == 0 {
				t.Fatalf("no rows on disk: the test needs some")
			}
			m, err := ReadModel(filepath.Join(dir, CheckpointFile))
			if err != nil {
				t.Fatal(err)
			}
			got := scoreModel(t, m, be.host, data.Test)
			if Number(got.AUC) != sum.TestAUC || Number(got.LogLoss) != sum.TestLogLoss {
				t.Errorf("predict: AUC %v log loss %v; the run's test: %v %v", got.AUC, got.LogLoss, sum.TestAUC, sum.TestLogLoss)
			}
		})
	}
}
