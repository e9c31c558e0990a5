package profile

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/dataset"
)

var runTables = []tab{{"c1", 50_000}, {"c2", 8_000}, {"c3", 300}}

// writeData writes files Parquet files of rows rows each (row groups of
// groupRows) with Zipf IDs over runTables and returns the opened dataset
// and the inputs written, in dataset order.
func writeData(tb testing.TB, dir string, files, rows, groupRows int) (*dataset.Dataset, [][]int64) {
	tb.Helper()
	spec := oneHotSpec(runTables...)
	var all [][]int64
	var parts [][][]int64
	for f := 0; f < files; f++ {
		in := zipfInputs(uint64(100+f), rows, runTables, []float64{1.05, 1.2, 1.5})
		all = append(all, in...)
		parts = append(parts, in)
	}
	return writeInputs(tb, spec, dir, parts, groupRows), all
}

// writeInputs writes each of parts (inputs: one ID a feature of spec) as
// a Parquet file in dir (row groups of groupRows rows; a zero label and
// one zero dense feature, d0) and returns the opened dataset.
func writeInputs(tb testing.TB, spec *dataset.Spec, dir string, parts [][][]int64, groupRows int) *dataset.Dataset {
	tb.Helper()
	spec.Train = dir
	spec.Dense = []string{"d0"}
	for f, in := range parts {
		w, err := dataset.NewWriter(filepath.Join(dir, fmt.Sprintf("part-%d.parquet", f)), spec, dataset.WriterOptions{RowGroupRows: groupRows})
		if err != nil {
			tb.Fatal(err)
		}
		for lo := 0; lo < len(in); lo += 8192 {
			hi := min(lo+8192, len(in))
			b := batchOf(in[lo:hi], int64(lo))
			b.Label = make([]float32, b.N)
			b.Dense = make([]float32, b.N)
			if err := w.WriteBatch(b); err != nil {
				tb.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			tb.Fatal(err)
		}
	}
	ds, err := dataset.Open(spec, dir)
	if err != nil {
		tb.Fatal(err)
	}
	return ds
}

func TestRunOnParquet(t *testing.T) {
	ds, all := writeData(t, t.TempDir(), 2, 30_000, 1000)
	ctx := context.Background()
	base := DefaultOptions()
	base.Budget = 1 << 20
	base.ChunkSize = 64
	base.Seed = 9

	// 100%: every row counted, exactly the written IDs.
	o := base
	o.SampleRate = 100
	var lastDone, lastTotal int64
	o.Progress = func(done, total int64) { lastDone, lastTotal = done, total }
	res, lg, err := Run(ctx, ds, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.RowsSampled != 60_000 || lastDone != 60_000 || lastTotal != 60_000 {
		t.Errorf("100%%: rows sampled %d, progress %d of %d; want 60000", res.RowsSampled, lastDone, lastTotal)
	}
	want := make([]map[int64]uint32, len(runTables))
	for z := range want {
		want[z] = map[int64]uint32{}
	}
	for _, in := range all {
		for z, id := range in {
			want[z][id]++
		}
	}
	for z := range runTables {
		for id, c := range want[z] {
			if got := lg.Count(z, id); got != c {
				t.Fatalf("100%%: table %d id %d count %d; want %d", z, id, got, c)
			}
		}
	}
	if res.Fingerprint != ds.Fingerprint() || res.SampleRate != 100 {
		t.Errorf("fingerprint %q, rate %v; want %q, 100", res.Fingerprint, res.SampleRate, ds.Fingerprint())
	}
	if res.HotBytes.High > float64(o.Budget) {
		t.Errorf("hot bytes high %v; want <= budget %d", res.HotBytes.High, o.Budget)
	}

	for _, c := range []struct {
		rate     float64
		sampling Sampling
	}{
		{30, SamplingRowGroups}, // 18 of 60 groups >= MinSampleGroups
		{5, SamplingRows},       // 3 groups would be too few
	} {
		var js []string
		var files [][]byte
		for _, workers := range []int{1, 3, 3} {
			o := base
			o.SampleRate = c.rate
			o.Workers = workers
			res, lg, err := Run(ctx, ds, o)
			if err != nil {
				t.Fatal(err)
			}
			if lg.KeptInputs() == 0 {
				t.Fatalf("rate %v%%: no inputs kept for the share; the counts file would not show their order", c.rate)
			}
			files = append(files, countsBytes(t, lg))
			if res.Sampling != c.sampling {
				t.Errorf("rate %v%%: sampling %q; want %q", c.rate, res.Sampling, c.sampling)
			}
			exp := c.rate / 100 * 60_000
			if c.sampling == SamplingRowGroups && (res.RowsSampled < int64(exp) || res.RowsSampled%1000 != 0) {
				t.Errorf("rate %v%%: %d rows sampled; want whole groups of 1000 holding at least %v", c.rate, res.RowsSampled, exp)
			}
			if sd := math.Sqrt(exp * (1 - c.rate/100)); math.Abs(float64(res.RowsSampled)-exp) > 5*sd {
				t.Errorf("rate %v%%: %d rows sampled; want %v ± %.0f", c.rate, res.RowsSampled, exp, 5*sd)
			}
			j, _ := json.Marshal(res)
			js = append(js, string(j))
		}
		if js[0] != js[1] || js[1] != js[2] {
			t.Errorf("rate %v%%: 1 and 3 workers differ:\n%s\n%s\n%s", c.rate, js[0], js[1], js[2])
		}
		for i := 1; i < len(files); i++ {
			if !bytes.Equal(files[0], files[i]) {
				t.Errorf("rate %v%%: counts file of run %d (%d bytes) differs from run 0's (%d bytes) with the same seed", c.rate, i, len(files[i]), len(files[0]))
			}
		}
	}
}

// BenchmarkProfile profiles 400k generated rows (400 row groups of 1000)
// at a 5% row-group sample and at 100%: the time grows with the sample.
func BenchmarkProfile(b *testing.B) {
	ds, _ := writeData(b, b.TempDir(), 4, 100_000, 1000)
	for _, rate := range []float64{5, 100} {
		b.Run(fmt.Sprintf("rate=%v", rate), func(b *testing.B) {
			o := DefaultOptions()
			o.SampleRate = rate
			o.Budget = 1 << 20
			var res *Result
			for b.Loop() {
				var err error
				res, _, err = Run(context.Background(), ds, o)
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(ds.Rows())*float64(b.N)/b.Elapsed().Seconds(), "dataset-rows/s")
			b.ReportMetric(float64(res.RowsSampled), "rows-sampled")
		})
	}
}

// TestPlanSampleShuffled: a 5% or 10% sample of 10 row groups takes one
// group, too few to stand for the rows unless the data declares itself
// shuffled, and too many rows when it overshoots the target twice.
func TestPlanSampleShuffled(t *testing.T) {
	var groups []dataset.RowGroup
	for i := range 10 {
		groups = append(groups, dataset.RowGroup{File: "f", Index: i, First: int64(i) * 1000, Rows: 1000})
	}
	opts := DefaultOptions()
	if p := PlanSample(groups, false, opts); p.Sampling != SamplingRows || p.RowsToRead != 10_000 {
		t.Errorf("unordered data: plan %s reading %d rows; want %s reading 10000", p.Sampling, p.RowsToRead, SamplingRows)
	}
	opts.SampleRate = 10
	if p := PlanSample(groups, true, opts); p.Sampling != SamplingRowGroups || p.RowsToRead != 1000 || len(p.RowGroups) != 1 {
		t.Errorf("shuffled data: plan %s reading %d rows in %d groups; want %s reading 1000 in 1", p.Sampling, p.RowsToRead, len(p.RowGroups), SamplingRowGroups)
	}
	// One group would be twice the 2% asked: rows instead.
	opts.SampleRate = 2
	if p := PlanSample(groups, true, opts); p.Sampling != SamplingRows {
		t.Errorf("shuffled data, 2%% of 10 groups: plan %s; want %s", p.Sampling, SamplingRows)
	}
	// 15% takes two groups, the second read only up to the 1,500 rows
	// asked; without the shuffle (and 16 groups or more, so row groups
	// still) both are read whole.
	opts.SampleRate = 15
	p := PlanSample(groups, true, opts)
	var sum int64
	var cut []int64
	for _, g := range p.RowGroups {
		sum += g.Rows
		if g.Rows != 1000 {
			cut = append(cut, g.Rows)
		}
	}
	if p.Sampling != SamplingRowGroups || p.RowsToRead != 1500 || sum != 1500 || len(p.RowGroups) != 2 || !slices.Equal(cut, []int64{500}) {
		t.Errorf("shuffled data, 15%%: plan %s reading %d rows in groups %+v; want 1500 rows, one group cut to 500", p.Sampling, p.RowsToRead, p.RowGroups)
	}
	many := append(slices.Clone(groups), groups...)
	opts.SampleRate = 77 // 15,400 rows: 16 groups, the last one in part
	p = PlanSample(many, false, opts)
	whole := true
	for _, g := range p.RowGroups {
		whole = whole && g.Rows == 1000
	}
	if p.Sampling != SamplingRowGroups || p.RowsToRead != 16_000 || len(p.RowGroups) != 16 || !whole {
		t.Errorf("unordered data, 77%% of 20 groups: plan %s reading %d rows in %+v; want 16 whole groups, 16000 rows", p.Sampling, p.RowsToRead, p.RowGroups)
	}
}

// countsBytes returns the bytes of lg's counts file.
func countsBytes(t *testing.T, lg *Logger) []byte {
	t.Helper()
	fn := filepath.Join(t.TempDir(), "p.counts")
	if err := lg.WriteFile(fn); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(fn)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// shuffled opens ds's files again with a spec that declares their rows
// shuffled.
func shuffled(t *testing.T, ds *dataset.Dataset) *dataset.Dataset {
	t.Helper()
	spec := *ds.Spec()
	spec.Shuffled = true
	sh, err := dataset.Open(&spec, spec.Train)
	if err != nil {
		t.Fatal(err)
	}
	return sh
}

// TestSampleCutGroup: a sample of shuffled data counts exactly the target
// rows, the cut group's first ones, and nothing after them.
func TestSampleCutGroup(t *testing.T) {
	dir := t.TempDir()
	ds, all := writeData(t, filepath.Join(dir, "data"), 1, 20_000, 2_000)
	sh := shuffled(t, ds)
	o := DefaultOptions()
	o.SampleRate, o.Seed, o.BatchRows = 15, 4, 700 // 3,000 rows: a group and a half
	plan := PlanSample(sh.RowGroups(), true, o)
	lg, err := Sample(context.Background(), sh, o)
	if err != nil {
		t.Fatal(err)
	}
	if lg.Info.RowsSampled != 3000 || plan.RowsToRead != 3000 {
		t.Fatalf("sampled %d rows (plan %d); want 3000", lg.Info.RowsSampled, plan.RowsToRead)
	}
	want := make([]map[int64]uint32, len(runTables))
	for i := range want {
		want[i] = map[int64]uint32{}
	}
	for _, g := range plan.RowGroups {
		for r := g.First; r < g.First+g.Rows; r++ {
			for f, id := range all[r] {
				want[f][id]++
			}
		}
	}
	for f := range runTables {
		got := map[int64]uint32{}
		lg.ForEach(f, func(id int64, c uint32) { got[id] = c })
		if !maps.Equal(got, want[f]) {
			t.Fatalf("table %d: counts differ from the planned rows' (%d IDs against %d)", f, len(got), len(want[f]))
		}
	}
}

// TestCountsFileDeterministic: the counts file, kept inputs included, is the
// same bytes for a seed whatever the number of workers and however their
// reads interleave.
func TestCountsFileDeterministic(t *testing.T) {
	dir := t.TempDir()
	ds, _ := writeData(t, filepath.Join(dir, "data"), 2, 20_000, 500)
	var first []byte
	for i, workers := range []int{1, 3, 4, 3} {
		o := DefaultOptions()
		o.Budget, o.ChunkSize, o.Seed, o.SampleRate, o.Workers, o.BatchRows = 1<<20, 64, 9, 100, workers, 128
		_, lg, err := Run(context.Background(), ds, o)
		if err != nil {
			t.Fatal(err)
		}
		b := countsBytes(t, lg)
		if i == 0 {
			first = b
			continue
		}
		if !bytes.Equal(b, first) {
			t.Fatalf("run %d (%d workers): counts file differs from the 1-worker run (%d vs %d bytes)", i, workers, len(b), len(first))
		}
	}
}
