package classify

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/layout"
)

// makeData writes n rows with Zipf-like IDs over three features (one
// multi-hot, two sharing a table) and returns the opened dataset.
func makeData(t *testing.T, n int) (*dataset.Dataset, *dataset.Spec) {
	t.Helper()
	return makeDataRows(t, n, 1000, true)
}

// makeDataRows is makeData with table a declared to have aRows rows (its
// IDs stay below 1000): over 2^31 rows, cold rows keep 64-bit IDs. Without
// multi, feature b is one-hot like the others.
func makeDataRows(t *testing.T, n int, aRows int64, multi bool) (*dataset.Dataset, *dataset.Spec) {
	t.Helper()
	dir := t.TempDir()
	spec := &dataset.Spec{
		Train: filepath.Join(dir, "train"), Label: "label", Dense: []string{"d0", "d1"},
		Sparse: []dataset.SparseFeature{
			{Name: "a", Rows: aRows},
			{Name: "b", Rows: 200, MultiHot: multi},
			{Name: "c", Rows: 300, Table: "shared"},
			{Name: "e", Rows: 300, Table: "shared"},
		},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := func(rows int64) int64 {
		return int64(float64(rows) * rng.Float64() * rng.Float64() * rng.Float64())
	}
	b := &dataset.Batch{N: n, Label: make([]float32, n), Dense: make([]float32, 2*n), Sparse: make([]dataset.SparseColumn, 4)}
	if multi {
		b.Sparse[1].Offsets = []int32{0}
	}
	for i := 0; i < n; i++ {
		b.Label[i] = float32(rng.IntN(2))
		b.Dense[2*i], b.Dense[2*i+1] = rng.Float32(), float32(i)
		b.Sparse[0].IDs = append(b.Sparse[0].IDs, zipf(1000))
		if !multi {
			b.Sparse[1].IDs = append(b.Sparse[1].IDs, zipf(200))
		}
		for j := 0; multi && j < rng.IntN(3); j++ {
			b.Sparse[1].IDs = append(b.Sparse[1].IDs, zipf(200))
		}
		if multi {
			b.Sparse[1].Offsets = append(b.Sparse[1].Offsets, int32(len(b.Sparse[1].IDs)))
		}
		b.Sparse[2].IDs = append(b.Sparse[2].IDs, zipf(300))
		b.Sparse[3].IDs = append(b.Sparse[3].IDs, zipf(300))
	}
	for p := 0; p < 2; p++ {
		w, err := dataset.NewWriter(filepath.Join(spec.Train, "part-"+string(rune('0'+p))+".parquet"), spec, dataset.WriterOptions{RowGroupRows: 700})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(b, p*n/2, (p+1)*n/2); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := dataset.Open(spec, spec.Train)
	if err != nil {
		t.Fatal(err)
	}
	return ds, spec
}

// hotSet marks IDs below a per-table bound hot.
func hotSet(t *testing.T, spec *dataset.Spec) *layout.HotSet {
	t.Helper()
	bounds := map[string]int64{"a": 200, "b": 60, "shared": 120}
	var hot [][]int64
	var rows []int64
	for _, tb := range spec.Tables() {
		var ids []int64
		for id := bounds[tb.Name] - 1; id >= 0; id-- { // any order is accepted
			ids = append(ids, id)
		}
		hot = append(hot, ids)
		rows = append(rows, tb.Rows)
	}
	h, err := layout.NewHotSet(hot, rows)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestRunAndVerify classifies data whose tables fit 32 bits (cold IDs
// narrow, INT32) and data with a table that does not (INT64), with a
// multi-hot feature and without (every row one ID a feature).
func TestRunAndVerify(t *testing.T) {
	for _, c := range []struct {
		aRows int64
		multi bool
	}{{1000, true}, {1 << 32, true}, {1000, false}, {1 << 32, false}} {
		t.Run(fmt.Sprint(c.aRows, c.multi), func(t *testing.T) { testRunAndVerify(t, c.aRows, c.multi) })
	}
}

func testRunAndVerify(t *testing.T, aRows int64, multi bool) {
	ds, spec := makeDataRows(t, 5000, aRows, multi)
	hot := hotSet(t, spec)
	out := filepath.Join(t.TempDir(), "fae")
	m, err := Run(context.Background(), ds, hot, out, Options{BatchSize: 64, Seed: 3, Workers: 2, BucketBytes: 8 << 10, FileBatches: 10})
	if err != nil {
		t.Fatal(err)
	}
	if m.HotRows+m.ColdRows != 5000 {
		t.Fatalf("hot %d + cold %d = %d; want 5000", m.HotRows, m.ColdRows, m.HotRows+m.ColdRows)
	}
	if m.HotRows == 0 || m.ColdRows == 0 {
		t.Fatalf("hot %d, cold %d rows; want both classes present", m.HotRows, m.ColdRows)
	}
	if want := int((m.HotRows + 63) / 64); m.HotBatches != want {
		t.Fatalf("HotBatches = %d; want %d", m.HotBatches, want)
	}
	// Hot rows are exactly the rows whose IDs are all below the bounds.
	var wantHot int64
	r, _ := ds.NewReader(dataset.ReaderOptions{})
	ctx := context.Background()
	ft := spec.FeatureTable()
	for {
		b, err := r.Next(ctx)
		if err != nil {
			break
		}
		for i := 0; i < b.N; i++ {
			ok := true
			for f := range b.Sparse {
				for _, id := range b.Sparse[f].Row(i) {
					if _, h := hot.Slot(ft[f], id); !h {
						ok = false
					}
				}
			}
			if ok {
				wantHot++
			}
		}
	}
	r.Close()
	if m.HotRows != wantHot {
		t.Fatalf("HotRows = %d; want %d", m.HotRows, wantHot)
	}
	if err := Verify(ctx, out, ds); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	// The layout round-trips through Open with slots mapping back to IDs.
	l, err := layout.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.NumBatches(layout.Hot) + l.NumBatches(layout.Cold); got != m.HotBatches+m.ColdBatches {
		t.Fatalf("Open found %d batches; want %d", got, m.HotBatches+m.ColdBatches)
	}
	// Cold files carry IDs as narrow as the tables allow.
	wantType := arrow.INT32
	if aRows > math.MaxInt32 {
		wantType = arrow.INT64
	}
	cold, err := filepath.Glob(filepath.Join(out, "cold", "*.parquet"))
	if err != nil || len(cold) == 0 {
		t.Fatalf("no cold files in %s (%v)", out, err)
	}
	pf, err := file.OpenParquetFile(cold[0], false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := fr.Schema()
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.Field(sc.FieldIndices("a")[0]).Type.ID(); got != wantType {
		t.Fatalf("cold column a is %v; want %v", got, wantType)
	}
}

func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Base(p) != "manifest.json" {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			out[rel] = b
		}
		return nil
	})
	return out
}

func TestDeterministic(t *testing.T) {
	ds, spec := makeData(t, 3000)
	hot := hotSet(t, spec)
	base := t.TempDir()
	run := func(name string, seed uint64, workers int, shuffleMemory int64) map[string][]byte {
		out := filepath.Join(base, name)
		if _, err := Run(context.Background(), ds, hot, out, Options{BatchSize: 50, Seed: seed, Workers: workers, BucketBytes: 4 << 10, ShuffleMemory: shuffleMemory}); err != nil {
			t.Fatal(err)
		}
		return readTree(t, out)
	}
	// a and b shuffle in memory, d through bucket files.
	a, b, c, d := run("a", 9, 1, 0), run("b", 9, 2, 0), run("c", 10, 2, 0), run("d", 9, 2, 1)
	if len(a) == 0 || len(a) != len(b) || len(a) != len(d) {
		t.Fatalf("runs wrote %d, %d and %d files", len(a), len(b), len(d))
	}
	for k := range a {
		if !bytes.Equal(a[k], b[k]) {
			t.Fatalf("%s differs between 1 and 2 workers with the same seed", k)
		}
		if !bytes.Equal(a[k], d[k]) {
			t.Fatalf("%s differs between the in-memory shuffle and bucket files with the same seed", k)
		}
	}
	same := true
	for k := range a {
		if !bytes.Equal(a[k], c[k]) && k != "hotmap.bin" {
			same = false
		}
	}
	if same {
		t.Fatal("a different seed gave the same batches")
	}
}

func TestRefusesExistingAndCancelLeavesNothing(t *testing.T) {
	ds, spec := makeData(t, 2000)
	hot := hotSet(t, spec)
	base := t.TempDir()
	out := filepath.Join(base, "fae")
	if _, err := Run(context.Background(), ds, hot, out, Options{BatchSize: 64}); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), ds, hot, out, Options{BatchSize: 64}); !errors.Is(err, ErrExists) {
		t.Fatalf("second Run without Force: %v; want ErrExists", err)
	}
	if _, err := Run(context.Background(), ds, hot, out, Options{BatchSize: 32, Force: true}); err != nil {
		t.Fatalf("Run with Force: %v", err)
	}
	if m, err := layout.ReadManifest(out); err != nil || m.BatchSize != 32 {
		t.Fatalf("after Run with Force: manifest %+v, %v; want the new run's batch size 32", m, err)
	}
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != 0o755 {
		t.Errorf("mode of the layout directory %s = %v; want 0755", out, got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	out2 := filepath.Join(base, "killed")
	_, err = Run(ctx, ds, hot, out2, Options{BatchSize: 64, Workers: 1, Progress: func(done, total int64) {
		if n++; n == 1 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Run: %v; want context.Canceled", err)
	}
	if err := Verify(context.Background(), out2, nil); err == nil {
		t.Fatal("Verify accepted the output of a cancelled run")
	}
	ents, _ := os.ReadDir(base)
	for _, e := range ents {
		if e.Name() != "fae" {
			t.Fatalf("cancelled run left %s behind", e.Name())
		}
	}
}

func TestVerifyDetectsTampering(t *testing.T) {
	ds, spec := makeData(t, 2000)
	hot := hotSet(t, spec)
	out := filepath.Join(t.TempDir(), "fae")
	if _, err := Run(context.Background(), ds, hot, out, Options{BatchSize: 64}); err != nil {
		t.Fatal(err)
	}
	// Drop one cold part: counts and digest no longer match.
	m, _ := layout.ReadManifest(out)
	if len(m.ColdFiles) == 0 {
		t.Fatal("no cold files")
	}
	if err := os.Remove(filepath.Join(out, m.ColdFiles[len(m.ColdFiles)-1].Name)); err != nil {
		t.Fatal(err)
	}
	if err := Verify(context.Background(), out, nil); !errors.Is(err, layout.ErrInvalid) {
		t.Fatalf("Verify after removing a part: %v; want layout.ErrInvalid", err)
	}
}

// TestVerifyDetectsTableRows: a manifest whose tables claim other sizes than
// the input's spec (spec and table list edited alike, so Open accepts it)
// fails verify against the input.
func TestVerifyDetectsTableRows(t *testing.T) {
	ds, spec := makeData(t, 1000)
	out := filepath.Join(t.TempDir(), "fae")
	if _, err := Run(context.Background(), ds, hotSet(t, spec), out, Options{BatchSize: 64}); err != nil {
		t.Fatal(err)
	}
	if err := Verify(context.Background(), out, ds); err != nil {
		t.Fatalf("Verify of the intact layout: %v", err)
	}
	m, err := layout.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	m.Tables[0].Rows, m.Spec.Sparse[0].Rows = 1e12, 1e12
	if err := layout.WriteManifest(out, m); err != nil {
		t.Fatal(err)
	}
	if err := Verify(context.Background(), out, ds); !errors.Is(err, layout.ErrInvalid) {
		t.Fatalf("Verify with 1e12-row table = %v; want layout.ErrInvalid", err)
	}
}

// TestRowDigest4 checks the four-row digest against rowDigest, row by row,
// on a batch without multi-hot features and an odd number of rows.
func TestRowDigest4(t *testing.T) {
	const n = 11
	b := &dataset.Batch{N: n, Label: make([]float32, n), Dense: make([]float32, 3*n), Sparse: make([]dataset.SparseColumn, 2)}
	for i := range n {
		b.Label[i] = float32(i % 2)
		for d := range 3 {
			b.Dense[3*i+d] = float32(i*7+d) / 3
		}
		b.Sparse[0].IDs = append(b.Sparse[0].IDs, int64(i*i))
		b.Sparse[1].IDs = append(b.Sparse[1].IDs, int64(1000-i))
	}
	p := &partitioner{}
	p.digests(b)
	for i := range n {
		if want := rowDigest(b, i); p.hash[i] != want {
			t.Fatalf("digest of row %d = %x; want %x", i, p.hash[i], want)
		}
	}
	if p.hash[0] == p.hash[1] {
		t.Fatalf("rows 0 and 1 have the same digest %x", p.hash[0])
	}
}

// TestSortByKey: the bucket sort gives a comparison sort's order on a
// bucket's keys (a shared top-bit prefix, uniform below), on keys crowded
// into one run, on short buckets, and when the buffers are reused.
func TestSortByKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var tmp []decoded
	var counts []int32
	for _, c := range []struct {
		n     int
		skip  uint
		crowd bool
	}{{0, 0, false}, {1, 5, false}, {255, 3, false}, {256, 3, false}, {1000, 0, false}, {30_000, 12, false},
		{5000, 12, true}, {70_000, 7, false}, {3000, 47, false}, {3000, 48, false}, {2, 63, false}} {
		// The bucket's top skip bits, and the bits below them: uniform, or
		// for crowd only the low 20 (every key in the first run).
		top, low := uint64(0), ^uint64(0)
		if c.skip > 0 {
			top = rng.Uint64() >> (64 - c.skip) << (64 - c.skip)
			low >>= c.skip
		}
		if c.crowd {
			low = 1<<20 - 1
		}
		rows := make([]decoded, 0, c.n)
		seen := map[uint64]bool{}
		for len(rows) < c.n {
			k := top | rng.Uint64()&low
			if seen[k] {
				continue
			}
			seen[k] = true
			rows = append(rows, decoded{key: k, chunk: int32(len(rows) % 7), off: len(rows)})
		}
		want := slices.Clone(rows)
		slices.SortFunc(want, func(a, b decoded) int { return cmp.Compare(a.key, b.key) })
		var got []decoded
		got, tmp = sortByKey(rows, c.skip, tmp, &counts)
		if !slices.Equal(got, want) {
			t.Errorf("n=%d skip=%d crowd=%v: order differs from a comparison sort", c.n, c.skip, c.crowd)
		}
	}
}
