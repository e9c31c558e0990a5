package train

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/compute"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/layout"
)

// faeData is a layout and a test set over the synthetic data.
type faeData struct {
	spec   dataset.Spec
	rows   []*dataset.Batch
	layout *layout.Layout
	test   *dataset.Dataset
}

func newFAEData(t testing.TB, multi, shared bool, n, batch int) *faeData {
	spec := synthSpec(multi, shared)
	rows := synthRows(&spec, n, 256, 11)
	test := synthRows(&spec, 600, 256, 12)
	hotK := []int64{25, 12, 18, 10}
	if shared {
		hotK = []int64{25, 12, 18}
	}
	return &faeData{spec: spec, rows: rows, layout: writeLayout(t, &spec, rows, batch, hotK, 5),
		test: writeData(t, &spec, test, t.TempDir(), 256)}
}

type stepRec struct {
	b   *dataset.Batch
	hot bool
}

// toTable returns the mini-batch with table IDs that hot mini-batch b
// stands for. tables holds the layout's hot mini-batches read with table
// IDs; the layout is a layouttest one, with one part file per class, so a
// mini-batch's row group is its index.
func toTable(t testing.TB, tables []*dataset.Batch, b *dataset.Batch) *dataset.Batch {
	out := tables[b.Pos.RowGroup]
	if out.Pos != b.Pos || out.N != b.N {
		t.Fatalf("hot mini-batch at %+v (%d rows) read with table IDs at %+v (%d rows)", b.Pos, b.N, out.Pos, out.N)
	}
	return out
}

// TestFAEMatchesCPU trains fae and artifact runs, then trains the same
// sequence of mini-batches in cpu mode, and checks that the weights agree
// bit for bit: the emulated device holds exact copies of the hot rows.
func TestFAEMatchesCPU(t *testing.T) {
	for _, tc := range []struct {
		mode         Mode
		opt          string
		multi, share bool
		micro        int
		arch         string
	}{
		{ModeFAE, "sgd", false, false, 1, ""},
		{ModeFAE, "adagrad", true, true, 2, ""},
		{ModeArtifact, "sgd", false, false, 1, ""},
		{ModeFAE, "adagrad", false, false, 1, ArchWDL},
		{ModeFAE, "adagrad", true, false, 2, ArchDCN},
		{ModeFAE, "sgd", false, true, 1, ArchDeepFM},
	} {
		t.Run(string(tc.mode)+"/"+tc.opt+"/"+cmp.Or(tc.arch, ArchDLRM), func(t *testing.T) {
			d := newFAEData(t, tc.multi, tc.share, 1500, 64)
			c := testOptions(tc.mode, 64)
			c.Optimizer = Optimizer(tc.opt)
			if tc.arch != "" {
				// Adam on the MLPs and weight decay on both sides.
				c.Model = ModelOptions{Arch: tc.arch, Dim: 4, Top: []int{8, 1}, Cross: 2}
				c.DenseOptimizer, c.DenseLR.Base = OptAdam, 0.01
				c.WeightDecay, c.DenseWeightDecay = 1e-3, 1e-4
				c.Model.DenseWide = tc.arch == ArchDeepFM // the dense features as FM fields too
			}
			if tc.micro == 2 || tc.arch == ArchWDL {
				// Statistics from the layout's classes here and from the
				// replayed copy (every row twice) below: exact sums give
				// both the same.
				c.Model.DenseNorm = DenseNormStandardize
			}
			c.Epochs = 2
			c.MicroBatches = tc.micro
			c.EvalEvery = 7
			c.LR.WarmupSteps = 5
			be := newBackend(t, 2)
			tr := mustTrainer(t, c.with(be, Data{Layout: d.layout, Test: d.test}))
			var seq []stepRec
			tr.onStep = func(_ int64, b *dataset.Batch, hot bool) { seq = append(seq, stepRec{b, hot}) }
			sum := mustRun(t, tr)
			if sum.Steps != int64(2*(d.layout.NumBatches(layout.Hot)+d.layout.NumBatches(layout.Cold))) {
				t.Fatalf("trained %d steps; want two epochs of %d", sum.Steps, d.layout.NumBatches(layout.Hot)+d.layout.NumBatches(layout.Cold))
			}
			if sum.Swaps < 3 {
				t.Fatalf("%d swaps; want several", sum.Swaps)
			}
			if sum.HotInputShare <= 0.2 || sum.HotInputShare >= 0.9 {
				t.Errorf("hot input share %v", sum.HotInputShare)
			}
			if tc.mode == ModeArtifact {
				// Each epoch: all cold, then all hot.
				for i := 1; i < len(seq); i++ {
					epochStart := i%(len(seq)/2) == 0
					if seq[i-1].hot && !seq[i].hot && !epochStart {
						t.Fatalf("artifact order: cold mini-batch %d after a hot one within an epoch", i)
					}
				}
			}
			tables := readClass(t, d.layout, layout.Hot, true)
			var replay []*dataset.Batch
			for _, r := range seq {
				b := r.b
				if r.hot {
					b = toTable(t, tables, b)
				}
				replay = append(replay, b)
			}
			cc := c
			cc.Mode = ModeCPU
			cc.Epochs = 1
			ref := mustTrainer(t, cc.with(be, Data{Layout: replayLayout(t, &d.spec, 64, cc.Seed, replay)}))
			mustRun(t, ref)
			tp, te, ta := weights(t, tr)
			rp, re, ra := weights(t, ref)
			if err := sameFloats(tp, rp); err != nil {
				t.Fatalf("MLP weights differ from cpu mode: %v", err)
			}
			if err := sameFloats(te, re); err != nil {
				t.Fatalf("embedding tables differ from cpu mode: %v", err)
			}
			if err := sameFloats(ta, ra); err != nil {
				t.Fatalf("embedding accumulators differ from cpu mode: %v", err)
			}
		})
	}
}

// TestBytesPerMode checks the link accounting of every mode on the same
// mini-batches against the sizes the modes must move.
func TestBytesPerMode(t *testing.T) {
	d := newFAEData(t, false, false, 900, 64)
	be := newBackend(t, 1)
	F, dim, nd := 4, 4, 3
	var rowsCold, rowsHot int64
	for _, b := range readClass(t, d.layout, layout.Cold, false) {
		rowsCold += int64(b.N)
	}
	for _, b := range readClass(t, d.layout, layout.Hot, false) {
		rowsHot += int64(b.N)
	}
	rows := rowsCold + rowsHot
	steps := int64(d.layout.NumBatches(layout.Cold) + d.layout.NumBatches(layout.Hot))
	per := int64(nd+1) * 4 // dense values and the label
	want := map[Mode][2]int64{
		ModeCPU:    {0, 0},
		ModeHybrid: {rows * (per + int64(F*dim)*4), rows*int64(F*dim)*4 + 4*steps},
		ModeDevice: {rows * (per + int64(F)*8), 4 * steps},
	}
	sums := map[Mode]*Summary{}
	for _, mode := range []Mode{ModeCPU, ModeHybrid, ModeDevice, ModeFAE} {
		c := testOptions(mode, 64)
		tr := mustTrainer(t, c.with(be, Data{Layout: d.layout, Test: d.test}))
		sums[mode] = mustRun(t, tr)
		if w, ok := want[mode]; ok {
			if sums[mode].BytesH2D != w[0] || sums[mode].BytesD2H != w[1] {
				t.Errorf("%s: moved %d bytes to the device and %d back; want %d and %d", mode, sums[mode].BytesH2D, sums[mode].BytesD2H, w[0], w[1])
			}
		}
	}
	// fae: cold batches move like hybrid, hot ones like device with int32
	// slots, plus the synchronised rows (dim floats each) and, to the
	// device, the int32 slot of every row synchronised either way.
	s := sums[ModeFAE]
	rowBytes := int64(dim) * 4
	wantH2D := rowsCold*(per+int64(F*dim)*4) + rowsHot*(per+int64(F)*4) + s.SyncRowsH2D*rowBytes + 4*(s.SyncRowsH2D+s.SyncRowsD2H)
	wantD2H := rowsCold*int64(F*dim)*4 + 4*steps + s.SyncRowsD2H*rowBytes
	if s.BytesH2D != wantH2D || s.BytesD2H != wantD2H {
		t.Errorf("fae: moved %d and %d bytes; want %d and %d", s.BytesH2D, s.BytesD2H, wantH2D, wantD2H)
	}
	if s.SyncRowsD2H == 0 || s.SyncRowsH2D == 0 {
		t.Errorf("fae synchronised %d rows to the device and %d back; want some each way", s.SyncRowsH2D, s.SyncRowsD2H)
	}
	if s.BytesH2D >= sums[ModeHybrid].BytesH2D {
		t.Errorf("fae moved %d bytes to the device, hybrid %d: fae should move less", s.BytesH2D, sums[ModeHybrid].BytesH2D)
	}
	// Same data, seed and model: the modes without phases train the same
	// sequence and reach the same weights.
	if math.Float64bits(float64(sums[ModeCPU].TestAUC)) != math.Float64bits(float64(sums[ModeHybrid].TestAUC)) ||
		math.Float64bits(float64(sums[ModeCPU].TestAUC)) != math.Float64bits(float64(sums[ModeDevice].TestAUC)) {
		t.Errorf("test AUC cpu %v, hybrid %v, device %v; want equal", sums[ModeCPU].TestAUC, sums[ModeHybrid].TestAUC, sums[ModeDevice].TestAUC)
	}
}

// TestSyncCopiesOnlyChangedRows checks the hot-row synchronisation and
// what it moves: each row's values and, to the device, its int32 slot.
func TestSyncCopiesOnlyChangedRows(t *testing.T) {
	be := newBackend(t, 1)
	master, err := compute.NewPackedTable(be.host, 2, []int64{5, 4})
	if err != nil {
		t.Fatal(err)
	}
	defer master.Free()
	mw := master.W.Float32s()
	for i := range mw {
		mw[i] = float32(i)
	}
	hs, err := layout.NewHotSet([][]int64{{3, 1}, {0}}, []int64{5, 4})
	if err != nil {
		t.Fatal(err)
	}
	h, err := newHotTable(master, hs, be.host, be.dev)
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	hot := func() []float32 { return fetchAll(t, be.dev, h.t.W) }
	// The hot set orders a table's IDs: table 0's slots are ids 1 and 3.
	if got := hot(); got[0] != 2 || got[2] != 6 || got[4] != 10 {
		t.Fatalf("hot table %v; want master rows 1, 3 and 5 (table 1 id 0)", got)
	}
	l := &link{dev: be.dev}
	mw[2*3] = 100 // table 0 id 3 (hot slot 1)
	h.hostDirty.add(3)
	mw[2*2] = 200 // table 0 id 2, not hot
	h.hostDirty.add(2)
	if n := h.syncToDevice(l); n != 1 || l.h2d != 8+4 {
		t.Fatalf("syncToDevice copied %d rows, %d bytes; want 1 row, 12 bytes (the row and its slot)", n, l.h2d)
	}
	if got := hot(); got[2] != 100 {
		t.Fatalf("hot slot 1 = %v after sync; want 100", got[2:4])
	}
	dw := hot()
	dw[5] = -5 // slot 2: table 1 id 0
	be.dev.CopyIn(h.t.W, compute.Wrap(dw))
	h.devDirty.add(2)
	if n, err := h.syncToHost(l); err != nil || n != 1 || l.d2h != 8 || l.h2d != 12+4 {
		t.Fatalf("syncToHost copied %d rows (%v), %d bytes back and %d to the device; want 1 row, 8 bytes back and one more slot", n, err, l.d2h, l.h2d)
	}
	if got := master.Row(1, 0).Float32s(); got[1] != -5 {
		t.Fatalf("master table 1 id 0 = %v; want [.. -5]", got)
	}
	if n, _ := h.syncToHost(l); n != 0 {
		t.Fatalf("second syncToHost copied %d rows; want 0", n)
	}
	for _, bad := range [][][]int64{{{5}, {}}, {{1}}} {
		if hs, err := layout.NewHotSet(bad, []int64{5, 4}); err == nil {
			if _, err := newHotTable(master, hs, be.host, be.dev); err == nil {
				t.Errorf("newHotTable(%v) succeeded; want an error", bad)
			}
		}
	}
}

// TestResumeBitExact interrupts a run after k steps (through its context),
// resumes it from the checkpoint and compares with an uninterrupted run.
func TestResumeBitExact(t *testing.T) {
	for _, tc := range []struct {
		mode  Mode
		k     int64
		raw   bool
		adagr bool
		arch  string
	}{
		{ModeFAE, 9, false, true, ""}, // 9 is an eval step: the eval is pending at the interrupt
		{ModeFAE, 13, false, false, ""},
		{ModeCPU, 11, true, false, ""},
		{ModeFAE, 12, false, true, ArchDCN}, // Adam's moments and step count resume too, inside a decay_fraction decay
	} {
		t.Run(string(tc.mode)+"/"+tc.arch, func(t *testing.T) {
			d := newFAEData(t, true, false, 1200, 64)
			c := testOptions(tc.mode, 64)
			c.Epochs = 2
			c.EvalEvery = 9
			c.CheckpointEvery = 5
			if tc.adagr {
				c.Optimizer = OptAdagrad
			}
			if tc.arch != "" {
				c.Model = ModelOptions{Arch: tc.arch, Dim: 4, Top: []int{8, 1}, Cross: 1}
				c.DenseOptimizer, c.DenseLR.Base = OptAdam, 0.01
				c.DecayFraction = 0.8 // both rates decay over the last 80% of the steps
			}
			if tc.raw || tc.arch != "" {
				c.Model.DenseNorm = DenseNormStandardize // the resumed run takes the checkpoint's statistics
			}
			data := Data{Layout: d.layout, Test: d.test}
			if tc.raw {
				data = Data{Train: writeData(t, &d.spec, d.rows, t.TempDir(), 100), Test: d.test}
			}
			be := newBackend(t, 2)
			full := mustTrainer(t, c.with(be, data).in(t.TempDir()))
			want := mustRun(t, full)

			dir := t.TempDir()
			part := interruptAt(t, mustTrainer(t, c.with(be, data).in(dir)), tc.k)
			if part == nil || !part.Interrupted || part.Steps != tc.k {
				t.Fatalf("interrupted summary %+v; want %d steps, interrupted", part, tc.k)
			}
			res := mustTrainer(t, c.with(be, data).in(dir).resuming())
			if res.Step() != tc.k {
				t.Fatalf("resumed at step %d; want %d", res.Step(), tc.k)
			}
			got := mustRun(t, res)
			rp, re, _ := weights(t, res)
			fp, fe, _ := weights(t, full)
			if err := sameFloats(rp, fp); err != nil {
				t.Fatalf("MLP weights differ after resume: %v", err)
			}
			if err := sameFloats(re, fe); err != nil {
				t.Fatalf("embeddings differ after resume: %v", err)
			}
			if got.Steps != want.Steps || got.Samples != want.Samples || got.BytesH2D != want.BytesH2D || got.BytesD2H != want.BytesD2H ||
				got.Swaps != want.Swaps || got.HotInputShare != want.HotInputShare {
				t.Fatalf("resumed summary %+v\nuninterrupted %+v", got, want)
			}
			if len(got.Evals) != len(want.Evals) {
				t.Fatalf("resumed run has %d evaluations; uninterrupted %d", len(got.Evals), len(want.Evals))
			}
			for i := range got.Evals {
				g, w := got.Evals[i], want.Evals[i]
				if g.Step != w.Step || g.AUC != w.AUC || g.LogLoss != w.LogLoss || g.Accuracy != w.Accuracy {
					t.Fatalf("evaluation %d: resumed %+v; uninterrupted %+v", i, g, w)
				}
			}
			if (got.FinalRate == nil) != (want.FinalRate == nil) || got.FinalRate != nil && *got.FinalRate != *want.FinalRate {
				t.Fatalf("final scheduler rate differs")
			}
			// The metrics log holds each step's line once.
			lines := readLines(t, filepath.Join(dir, MetricsFile))
			fullLines := readLines(t, filepath.Join(full.opts.OutDir, MetricsFile))
			if len(lines) != len(fullLines) {
				t.Fatalf("metrics.jsonl has %d lines after resume; %d without interruption", len(lines), len(fullLines))
			}
		})
	}
}

// TestResumeBeforeFirstValidation interrupts a run with a validation set
// and early stopping at a checkpoint taken before the first validation:
// the resumed run keeps the best model and stops where the uninterrupted
// one does (it kept no best model and stopped at once: the best loss's
// +Inf start came back from the checkpoint as NaN).
func TestResumeBeforeFirstValidation(t *testing.T) {
	d := newFAEData(t, true, false, 1200, 64)
	c := testOptions(ModeFAE, 64)
	c.Epochs = 3
	c.CheckpointEvery = 3
	c.EvalEvery = 8
	c.EarlyStop = 2
	data := Data{Layout: d.layout, Test: d.test, Valid: d.test}
	be := newBackend(t, 2)
	want := mustRun(t, mustTrainer(t, c.with(be, data).in(t.TempDir())))
	dir := t.TempDir()
	interruptAt(t, mustTrainer(t, c.with(be, data).in(dir)), 4) // after the checkpoint at 3, before the validation at 8
	got := mustRun(t, mustTrainer(t, c.with(be, data).in(dir).resuming()))
	if got.BestStep == 0 || got.BestStep != want.BestStep || got.Steps != want.Steps || got.StoppedEarly != want.StoppedEarly {
		t.Errorf("resumed: best step %d, %d steps, stopped early %v; uninterrupted: %d, %d, %v",
			got.BestStep, got.Steps, got.StoppedEarly, want.BestStep, want.Steps, want.StoppedEarly)
	}
	if _, err := os.Stat(filepath.Join(dir, BestFile)); err != nil {
		t.Errorf("resumed run left no %s: %v", BestFile, err)
	}
}

// TestResumeSaysLostLogLines: a metrics log shorter than the checkpoint
// recorded (lines lost in a crash, as before the log was synced with each
// checkpoint) is resumed after what is there, with a warning, not
// silently.
func TestResumeSaysLostLogLines(t *testing.T) {
	d := newFAEData(t, true, false, 1200, 64)
	c := testOptions(ModeFAE, 64)
	c.CheckpointEvery = 5
	data := Data{Layout: d.layout, Test: d.test}
	be := newBackend(t, 2)
	dir := t.TempDir()
	interruptAt(t, mustTrainer(t, c.with(be, data).in(dir)), 13)
	log := filepath.Join(dir, MetricsFile)
	st, err := os.Stat(log)
	if err != nil || st.Size() < 2 {
		t.Fatalf("metrics log after the interrupt: %v, %v; the test wants lines in it", st, err)
	}
	if err := os.Truncate(log, st.Size()/2); err != nil {
		t.Fatal(err)
	}
	var logs []string
	rc := c.with(be, data).in(dir).resuming()
	rc.Logf = func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) }
	mustRun(t, mustTrainer(t, rc))
	said := false
	for _, l := range logs {
		said = said || strings.Contains(l, "were lost")
	}
	if !said {
		t.Errorf("resuming with a log cut short logged %q; want a warning that lines were lost", logs)
	}
}

func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, m)
	}
	return out
}

// TestRunDirectory checks the files a run writes and that the model learns.
func TestRunDirectory(t *testing.T) {
	d := newFAEData(t, false, false, 3000, 64)
	c := testOptions(ModeFAE, 64)
	c.Epochs = 3
	c.EvalEvery = 20
	c.Optimizer = OptAdagrad
	c.LR.Base = 0.05
	dir := t.TempDir()
	be := newBackend(t, 2)
	tr := mustTrainer(t, c.with(be, Data{Layout: d.layout, Test: d.test}).in(dir).logEvery(10))
	sum := mustRun(t, tr)
	if float64(sum.TestAUC) < 0.70 {
		t.Errorf("test AUC %v; want above 0.70 (oracle %v)", sum.TestAUC, sum.OracleAUC)
	}
	if !(float64(sum.OracleAUC) > float64(sum.TestAUC)-0.02) {
		t.Errorf("oracle AUC %v not near or above the model's %v", sum.OracleAUC, sum.TestAUC)
	}
	var onDisk map[string]any
	b, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &onDisk); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"mode", "steps", "samples", "samples_per_s", "step_ms_median", "test_auc", "test_logloss",
		"test_accuracy", "oracle_auc", "bytes_h2d", "bytes_d2h", "phase_seconds", "seed", "hot_input_share"} {
		if _, ok := onDisk[k]; !ok {
			t.Errorf("summary.json has no %q", k)
		}
	}
	ps := onDisk["phase_seconds"].(map[string]any)
	for _, k := range []string{"read", "emb_forward", "mlp_forward", "mlp_backward", "emb_update", "sync", "transfer", "eval"} {
		if _, ok := ps[k]; !ok {
			t.Errorf("phase_seconds has no %q", k)
		}
	}
	kinds := map[string]int{}
	var evalSteps []float64
	for _, l := range readLines(t, filepath.Join(dir, MetricsFile)) {
		kinds[l["kind"].(string)]++
		if l["kind"] == "eval" {
			evalSteps = append(evalSteps, l["step"].(float64))
		}
		if l["kind"] == "swap" && l["decision"] == nil {
			t.Errorf("swap line without a scheduler decision: %v", l)
		}
	}
	if kinds["train"] < int(sum.Steps/10) || kinds["swap"] != int(sum.Swaps) {
		t.Errorf("metrics.jsonl: %v lines; want >= %d train lines and %d swap lines", kinds, sum.Steps/10, sum.Swaps)
	}
	for i, s := range evalSteps[:len(evalSteps)-1] {
		if s != float64(20*(i+1)) {
			t.Errorf("evaluation %d at step %v; want %d", i, s, 20*(i+1))
		}
	}
	if evalSteps[len(evalSteps)-1] != float64(sum.Steps) {
		t.Errorf("last evaluation at step %v; want the end, %d", evalSteps[len(evalSteps)-1], sum.Steps)
	}
	if _, err := os.Stat(filepath.Join(dir, CheckpointFile)); err != nil {
		t.Errorf("no final checkpoint: %v", err)
	}
}

// TestCheckpointRejectsMismatch checks that a checkpoint from another run
// shape, or a damaged one, is refused.
func TestCheckpointRejectsMismatch(t *testing.T) {
	d := newFAEData(t, false, false, 600, 64)
	c := testOptions(ModeCPU, 64)
	c.Steps = 3
	dir := t.TempDir()
	be := newBackend(t, 1)
	mustRun(t, mustTrainer(t, c.with(be, Data{Layout: d.layout}).in(dir)))
	other := c
	other.Model.Top = []int{16, 1}
	if _, err := New(context.Background(), other.with(be, Data{Layout: d.layout}).in(dir).resuming()); !errors.Is(err, ErrCheckpoint) {
		t.Errorf("resume with another model: %v; want ErrCheckpoint", err)
	}
	path := filepath.Join(dir, CheckpointFile)
	raw, _ := os.ReadFile(path)
	raw[100] ^= 0xff
	os.WriteFile(path, raw, 0o644)
	if _, err := New(context.Background(), c.with(be, Data{Layout: d.layout}).in(dir).resuming()); !errors.Is(err, ErrCheckpoint) {
		t.Errorf("resume from a damaged checkpoint: %v; want ErrCheckpoint", err)
	}
}

// TestStepAllocations checks that a training step allocates nothing that
// grows with the batch: every buffer is allocated once. The compute
// backend's kernels allocate a few small values per call (closures handed
// to its worker pool); a memory profile of this test shows none from this
// package. The backend is gonum's, so the test runs where OpenBLAS is
// absent; BenchmarkTrainStep reports the allocations with OpenBLAS.
func TestStepAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	d := newFAEData(t, true, false, 600, 128)
	for _, mode := range []Mode{ModeCPU, ModeHybrid, ModeFAE} {
		c := testOptions(mode, 128)
		c.MicroBatches = 2
		host, err := compute.New(compute.Options{Threads: 1, BLAS: compute.BLASGonum})
		if err != nil {
			t.Fatal(err)
		}
		defer host.Close()
		be := testBE{host: host, dev: host.Emulate(false)}
		tr := mustTrainer(t, c.with(be, Data{Layout: d.layout, Test: d.test}))
		for _, hot := range []bool{false, true} {
			if hot && mode != ModeFAE {
				continue
			}
			big := readClass(t, d.layout, layout.Cold, false)[0]
			if hot {
				big = readClass(t, d.layout, layout.Hot, false)[0]
			}
			small := headRows(big, 16)
			var allocs [2]float64
			for i, b := range []*dataset.Batch{big, small} {
				if _, err := tr.trainStep(b, hot); err != nil {
					t.Fatal(err)
				}
				allocs[i] = testing.AllocsPerRun(20, func() {
					if _, err := tr.trainStep(b, hot); err != nil {
						t.Fatal(err)
					}
				})
			}
			if allocs[0] != allocs[1] || allocs[0] > maxStepAllocs {
				t.Errorf("%s (hot %v): %v allocations per step of 128 rows, %v of 16; want equal, at most %d", mode, hot, allocs[0], allocs[1], maxStepAllocs)
			}
			t.Logf("%s (hot %v): %v allocations per step", mode, hot, allocs[0])
		}
	}
}

// maxStepAllocs bounds the compute backend's per-call allocations in a step.
const maxStepAllocs = 128

// TestBackendsAgree trains the same steps with the reference backend (the
// backend's own kernels throughout) and the CPU backend (with the trainer's
// host epilogues and fused optimizer step) and compares the weights: with
// Adagrad over two micro-batches, and with SGD over one, where the lanes
// fold the weight gradients into the update (laneSet.fuse).
func TestBackendsAgree(t *testing.T) {
	d := newFAEData(t, true, false, 600, 64)
	for _, tc := range []struct {
		opt   string
		micro int
		arch  string
	}{{"adagrad", 2, ""}, {"sgd", 1, ""}, {"adagrad", 2, ArchDeepFM}} {
		gonum, err := compute.New(compute.Options{Threads: 2, BLAS: compute.BLASGonum})
		if err != nil {
			t.Fatal(err)
		}
		defer gonum.Close()
		var params [3][]float32
		ref := compute.Reference()
		for i, be := range []testBE{{ref, ref}, newBackend(t, 2), {gonum, gonum.Emulate(false)}} {
			c := testOptions(ModeHybrid, 64)
			c.Optimizer = Optimizer(tc.opt)
			c.Steps = 6
			c.MicroBatches = tc.micro
			if tc.arch != "" {
				// Standardized dense features, also as FM fields.
				c.Model = ModelOptions{Arch: tc.arch, Dim: 4, Top: []int{8, 1}, DenseNorm: DenseNormStandardize, DenseWide: true}
			}
			tr := mustTrainer(t, c.with(be, Data{Layout: d.layout}))
			if want := tc.opt == "sgd" && tc.arch == ""; tr.lanes.fuse != want {
				t.Fatalf("%s, %d micro-batches, backend %s: fused update %v; want %v", tc.opt, tc.micro, be.dev.Name(), tr.lanes.fuse, want)
			}
			mustRun(t, tr)
			p, e, _ := weights(t, tr)
			params[i] = append(p, e...)
		}
		for k := 1; k < len(params); k++ {
			for i := range params[0] {
				if d := math.Abs(float64(params[0][i] - params[k][i])); d > 1e-4 {
					t.Fatalf("%s, %d micro-batches: value %d: reference backend %v, cpu backend %d %v", tc.opt, tc.micro, i, params[0][i], k, params[k][i])
				}
			}
		}
	}
}

// TestThreadsBitExact checks that the numbers a run computes do not depend
// on the backend's thread count (lanes run one after the other with one
// thread, at once with more), with the fused SGD update and without it, and
// for odd batch sizes that split unevenly over the lanes.
func TestThreadsBitExact(t *testing.T) {
	for _, tc := range []struct {
		opt          string
		micro, batch int
	}{{"sgd", 1, 64}, {"sgd", 1, 37}, {"sgd", 2, 37}, {"adagrad", 1, 37}} {
		d := newFAEData(t, true, false, 300, tc.batch)
		var params [][]float32
		for _, threads := range []int{1, 2, 4} {
			c := testOptions(ModeCPU, tc.batch)
			c.Optimizer = Optimizer(tc.opt)
			c.Steps = 5
			c.MicroBatches = tc.micro
			tr := mustTrainer(t, c.with(newBackend(t, threads), Data{Layout: d.layout}))
			mustRun(t, tr)
			p, e, _ := weights(t, tr)
			params = append(params, append(p, e...))
		}
		for k := 1; k < len(params); k++ {
			for i := range params[0] {
				if math.Float32bits(params[k][i]) != math.Float32bits(params[0][i]) {
					t.Fatalf("%+v: value %d: %v with run %d; want %v as with one thread", tc, i, params[k][i], k, params[0][i])
				}
			}
		}
	}
}

// TestShortRunProportional: a fae run of a third of an epoch trains hot and
// cold mini-batches in the layout's proportion, with swaps, instead of only
// the class of its first phase.
func TestShortRunProportional(t *testing.T) {
	d := newFAEData(t, false, false, 1500, 64)
	hot, cold := d.layout.NumBatches(layout.Hot), d.layout.NumBatches(layout.Cold)
	c := testOptions(ModeFAE, 64)
	c.Steps = int64(hot+cold) / 3
	tr := mustTrainer(t, c.with(newBackend(t, 2), Data{Layout: d.layout, Test: d.test}))
	var nHot int64
	tr.onStep = func(_ int64, _ *dataset.Batch, h bool) {
		if h {
			nHot++
		}
	}
	sum := mustRun(t, tr)
	want := proportionalEpoch([2]int{cold, hot}, c.Steps)
	if sum.Steps != c.Steps || nHot != int64(want[1]) || sum.Swaps < 1 {
		t.Errorf("%d steps, %d hot, %d swaps; want %d steps, %d hot (of %d hot and %d cold), at least one swap",
			sum.Steps, nHot, sum.Swaps, c.Steps, want[1], hot, cold)
	}
}
