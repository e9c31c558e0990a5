package profile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// TestColumnPathMatchesBatches: the column path (a task per row group and
// feature) gives the same result and the same counts file, byte for byte,
// as reading the plan in batches, for whole row groups at 100% and 30%
// and for shuffled data whose last group is cut, with 1 to 3 workers.
func TestColumnPathMatchesBatches(t *testing.T) {
	dir := t.TempDir()
	ds, _ := writeData(t, filepath.Join(dir, "data"), 2, 30_000, 1000)
	sh := shuffled(t, ds)
	run := func(d *dataset.Dataset, o Options, batches bool) (string, []byte) {
		t.Helper()
		noColumns = batches
		defer func() { noColumns = false }()
		res, lg, err := Run(context.Background(), d, o)
		if err != nil {
			t.Fatal(err)
		}
		j, _ := json.Marshal(res)
		return string(j), countsBytes(t, lg)
	}
	for _, c := range []struct {
		ds   *dataset.Dataset
		rate float64
	}{{ds, 100}, {ds, 30}, {sh, 4.5}} {
		o := DefaultOptions()
		o.Budget, o.ChunkSize, o.Seed, o.SampleRate, o.BatchRows = 1<<20, 64, 3, c.rate, 700
		lg, err := NewLogger(c.ds.Spec(), LoggerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		plan := PlanSample(c.ds.RowGroups(), c.ds.Spec().Shuffled, o)
		if !useColumns(c.ds, plan, lg, o) {
			t.Fatalf("rate %v%%: plan %s is not read by the column path", c.rate, plan.Sampling)
		}
		wantJSON, wantFile := run(c.ds, o, true)
		for _, workers := range []int{1, 2, 3} {
			o.Workers = workers
			gotJSON, gotFile := run(c.ds, o, false)
			if gotJSON != wantJSON {
				t.Errorf("rate %v%%, %d workers: result differs from the batch path's:\n%s\n%s", c.rate, workers, gotJSON, wantJSON)
			}
			if !bytes.Equal(gotFile, wantFile) {
				t.Errorf("rate %v%%, %d workers: counts file (%d bytes) differs from the batch path's (%d bytes)", c.rate, workers, len(gotFile), len(wantFile))
			}
		}
	}
}

// TestColumnPathBadID: an ID outside its table stops the column path with
// an error naming the file, row group, row and column, as the batch path's
// does; so does a cancelled context, with the context's error.
func TestColumnPathBadID(t *testing.T) {
	dir := t.TempDir()
	ds, all := writeData(t, filepath.Join(dir, "data"), 1, 5_000, 1000)
	spec := *ds.Spec()
	spec.Sparse = append([]dataset.SparseFeature(nil), spec.Sparse...)
	spec.Sparse[2].Rows = 10 // c3's IDs run to 300
	small, err := dataset.Open(&spec, filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	row := -1
	for i, in := range all {
		if in[2] >= 10 {
			row = i
			break
		}
	}
	o := DefaultOptions()
	o.SampleRate = 100
	o.Workers = 1 // with more, another worker's bad row may come first
	for _, batches := range []bool{false, true} {
		noColumns = batches
		_, _, err := Run(context.Background(), small, o)
		noColumns = false
		if !errors.Is(err, dataset.ErrBadData) {
			t.Fatalf("batches %v: %v; want bad data", batches, err)
		}
		for _, want := range []string{"part-0.parquet", "row group 0", "c3", "out of range"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("batches %v: %q does not name %q", batches, err, want)
			}
		}
		if want := "row " + strconv.Itoa(row) + " of the group,"; !strings.Contains(err.Error(), want) {
			t.Errorf("batches %v: %q does not name the first bad row (%q)", batches, err, want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Sample(ctx, ds, o); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled sample: %v; want context.Canceled", err)
	}
}

// TestColumnPathPlannedRows: a plan whose group holds more rows than the
// file's is bad data, not an index out of range; a cut group (fewer) reads
// as planned; a cancelled context stops the sample.
func TestColumnPathPlannedRows(t *testing.T) {
	ds, _ := writeData(t, filepath.Join(t.TempDir(), "data"), 2, 30_000, 1000)
	o := DefaultOptions()
	o.SampleRate = 100
	for _, workers := range []int{1, 3} {
		o.Workers = workers
		for _, delta := range []int64{+1, -1} {
			plan := PlanSample(ds.RowGroups(), false, o)
			plan.RowGroups[len(plan.RowGroups)-1].Rows += delta
			lg, err := NewLogger(ds.Spec(), LoggerOptions{KeepInputs: 0.5, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			err = sampleColumns(context.Background(), ds, plan, lg, o)
			if delta > 0 && !errors.Is(err, dataset.ErrBadData) {
				t.Errorf("workers %d, a group planned one row longer: error %v; want bad data", workers, err)
			}
			if delta < 0 && err != nil {
				t.Errorf("workers %d, a cut group: %v", workers, err)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		lg, _ := NewLogger(ds.Spec(), LoggerOptions{KeepInputs: 0.5, Seed: 1})
		if err := sampleColumns(ctx, ds, PlanSample(ds.RowGroups(), false, o), lg, o); !errors.Is(err, context.Canceled) {
			t.Errorf("workers %d, cancelled: error %v; want context.Canceled", workers, err)
		}
	}
}

// TestColumnPathKeepsFew: groups that keep no input (none kept at all, a
// few over many groups, a tail group of one row at the default rate) read
// as the batch path reads them.
func TestColumnPathKeepsFew(t *testing.T) {
	dir := t.TempDir()
	ds, _ := writeData(t, filepath.Join(dir, "many"), 2, 30_000, 1000)
	tail, _ := writeData(t, filepath.Join(dir, "tail"), 1, 100_001, 1000) // the last group holds one row
	for _, c := range []struct {
		ds    *dataset.Dataset
		share int64
		seed  uint64
	}{{ds, -1, 1}, {ds, 10, 1}, {tail, 0, 1}, {tail, 0, 2}, {tail, 0, 3}} {
		o := DefaultOptions()
		o.SampleRate, o.ShareInputs, o.Seed = 100, c.share, c.seed
		_, lc, err := Run(context.Background(), c.ds, o)
		if err != nil {
			t.Fatalf("share inputs %d, seed %d: %v", c.share, c.seed, err)
		}
		noColumns = true
		_, lb, err := Run(context.Background(), c.ds, o)
		noColumns = false
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(countsBytes(t, lc), countsBytes(t, lb)) {
			t.Errorf("share inputs %d, seed %d: the column path's counts file differs from the batch path's", c.share, c.seed)
		}
	}
}

// TestColumnPathWidths: kept IDs of every packed width and its boundaries
// (tables of 1 to 2^32-1 rows; IDs 0, the last row, and between), written
// by the column path, give the batch path's counts file, kept inputs and
// hot-input share, with 1 and 3 workers.
func TestColumnPathWidths(t *testing.T) {
	for _, rowsList := range [][]int64{
		{1, 2, 255, 256, 257, 65535, 65536, 65537, 1<<24 - 1, 1 << 24, 1<<24 + 1},
		{300, 1<<24 + 1, 1<<32 - 1, 7, 1 << 29}, // map-counted tables: the share's general path
	} {
		var tabs []tab
		for i, r := range rowsList {
			tabs = append(tabs, tab{"c" + strconv.Itoa(i), r})
		}
		r := rand.New(rand.NewPCG(1, 2))
		in := make([][]int64, 12_000)
		for i := range in {
			in[i] = make([]int64, len(tabs))
			for f, tb := range tabs {
				in[i][f] = []int64{0, tb.rows - 1, r.Int64N(tb.rows)}[r.IntN(3)]
			}
		}
		ds := writeInputs(t, oneHotSpec(tabs...), filepath.Join(t.TempDir(), "data"), [][][]int64{in[:6000], in[6000:]}, 1000)
		o := DefaultOptions()
		o.SampleRate, o.Seed, o.ShareInputs = 100, 3, 5000
		var files [][]byte
		var lgs []*Logger
		for _, batches := range []bool{true, false} {
			for _, workers := range []int{1, 3} {
				o.Workers = workers
				noColumns = batches
				lg, err := Sample(context.Background(), ds, o)
				noColumns = false
				if err != nil {
					t.Fatal(err)
				}
				files, lgs = append(files, countsBytes(t, lg)), append(lgs, lg)
			}
		}
		mins := make([]uint32, len(tabs))
		for z := range mins {
			mins[z] = uint32(1 + z%3)
		}
		for i := 1; i < len(lgs); i++ {
			if !bytes.Equal(files[i], files[0]) || !reflect.DeepEqual(keptOf(lgs[i]), keptOf(lgs[0])) {
				t.Errorf("tables %v, run %d: counts file or kept inputs differ from the batch path's", rowsList, i)
			}
			for _, m := range [][]uint32{mins, make([]uint32, len(tabs))} {
				a, b, k, _ := hotInputShare(context.Background(), lgs[0], m)
				x, y, n, _ := hotInputShare(context.Background(), lgs[i], m)
				if a != x || b != y || k != n {
					t.Errorf("tables %v, run %d, cutoffs %v: share %v %v %d; want %v %v %d", rowsList, i, m, x, y, n, a, b, k)
				}
			}
		}
	}
}
