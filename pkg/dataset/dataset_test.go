package dataset

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"

	"github.com/picasso-ctr/picasso/internal/pqtest"
)

func testSpec() *Spec {
	return &Spec{
		Train: "x", Label: "label", Dense: []string{"d0", "d1"},
		Sparse: []SparseFeature{
			{Name: "a", Rows: 100},
			{Name: "b", Rows: 50, MultiHot: true},
			{Name: "c", Rows: 7, IDs: IDHash},
		},
		PTrue: "p_true",
	}
}

func testBatch(n int) *Batch {
	b := &Batch{N: n, Label: make([]float32, n), Dense: make([]float32, 2*n), PTrue: make([]float32, n)}
	b.Sparse = make([]SparseColumn, 3)
	b.Sparse[1].Offsets = []int32{0}
	for i := 0; i < n; i++ {
		b.Label[i] = float32(i % 2)
		b.Dense[2*i] = float32(i) * 0.5
		b.Dense[2*i+1] = -float32(i)
		b.PTrue[i] = float32(i) / float32(n)
		b.Sparse[0].IDs = append(b.Sparse[0].IDs, int64(i%100))
		for j := 0; j < i%4; j++ {
			b.Sparse[1].IDs = append(b.Sparse[1].IDs, int64((i+j)%50))
		}
		b.Sparse[1].Offsets = append(b.Sparse[1].Offsets, int32(len(b.Sparse[1].IDs)))
		b.Sparse[2].IDs = append(b.Sparse[2].IDs, int64(i)*1_000_003)
	}
	return b
}

func TestWriteReadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	spec := testSpec()
	in := testBatch(1000)
	w, err := NewWriter(filepath.Join(dir, "part-0.parquet"), spec, WriterOptions{RowGroupRows: 300, WithPTrue: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(in, 0, 450); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(in, 450, 1000); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ds, err := Open(spec, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := ds.Rows(); got != 1000 {
		t.Fatalf("Rows() = %d; want 1000", got)
	}
	var sizes []int64
	for _, g := range ds.RowGroups() {
		sizes = append(sizes, g.Rows)
	}
	if want := []int64{300, 300, 300, 100}; !equalInts(sizes, want) {
		t.Fatalf("row groups = %v; want %v", sizes, want)
	}
	r, err := ds.NewReader(ReaderOptions{BatchRows: 128, WithPTrue: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	row := 0
	for _, b := range readBatches(t, r) {
		if b.N > 128 {
			t.Fatalf("batch of %d rows; want <= 128", b.N)
		}
		for i := 0; i < b.N; i++ {
			g := row + i
			if b.Label[i] != in.Label[g] || b.Dense[2*i] != in.Dense[2*g] || b.Dense[2*i+1] != in.Dense[2*g+1] || b.PTrue[i] != in.PTrue[g] {
				t.Fatalf("row %d: dense/label/p_true differ", g)
			}
			if got, want := b.Sparse[0].Row(i)[0], in.Sparse[0].IDs[g]; got != want {
				t.Fatalf("row %d: a = %d; want %d", g, got, want)
			}
			if got, want := b.Sparse[1].Row(i), in.Sparse[1].Row(g); !equalInts(got, want) {
				t.Fatalf("row %d: b = %v; want %v", g, got, want)
			}
			if got, want := b.Sparse[2].IDs[i], HashID(in.Sparse[2].IDs[g], 7); got != want {
				t.Fatalf("row %d: c = %d; want hashed %d", g, got, want)
			}
		}
		row += b.N
	}
	if row != 1000 {
		t.Fatalf("read %d rows; want 1000", row)
	}
}

func equalInts[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// writeRaw writes one record with the given schema through pqarrow directly,
// to make files picasso's own writer would never produce.
func writeRaw(t *testing.T, path string, rec arrow.Record) {
	t.Helper()
	writeRawProps(t, path, rec, parquet.WithMaxRowGroupLength(4))
}

// writeRawProps is writeRaw with the writer's properties.
func writeRawProps(t *testing.T, path string, rec arrow.Record, props ...parquet.WriterProperty) {
	t.Helper()
	pqtest.WriteRecord(t, path, rec, props...)
}

func TestBadInputNamesLocation(t *testing.T) {
	spec := &Spec{Train: "x", Label: "y", Dense: []string{"d"}, Sparse: []SparseFeature{{Name: "s", Rows: 10}}}
	mem := memory.DefaultAllocator
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "y", Type: arrow.PrimitiveTypes.Int32},
		{Name: "d", Type: arrow.PrimitiveTypes.Float64},
		{Name: "s", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	cases := []struct {
		name    string
		label   []int32
		dense   []float64
		ids     []int64
		wantRG  int
		wantRow int64
		wantCol string
	}{
		{"label 2", []int32{0, 1, 0, 1, 0, 2}, []float64{0, 0, 0, 0, 0, 0}, []int64{1, 2, 3, 4, 5, 6}, 1, 1, "y"},
		{"id out of range", []int32{0, 1, 0, 1, 0, 1}, []float64{0, 0, 0, 0, 0, 0}, []int64{1, 2, 10, 4, 5, 6}, 0, 2, "s"},
		{"nan dense", []int32{0, 1, 0, 1, 0, 1}, []float64{0, 0, 0, 0, 0, 0}, []int64{1, 2, 3, 4, 5, 6}, -1, 0, ""},
	}
	cases[2].dense[4] = math.NaN()
	cases[2].wantRG, cases[2].wantRow, cases[2].wantCol = 1, 0, "d"
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			bld := array.NewRecordBuilder(mem, sc)
			defer bld.Release()
			bld.Field(0).(*array.Int32Builder).AppendValues(c.label, nil)
			bld.Field(1).(*array.Float64Builder).AppendValues(c.dense, nil)
			bld.Field(2).(*array.Int64Builder).AppendValues(c.ids, nil)
			rec := bld.NewRecord()
			defer rec.Release()
			path := filepath.Join(dir, "bad.parquet")
			writeRaw(t, path, rec)
			ds, err := Open(spec, path)
			if err != nil {
				t.Fatal(err)
			}
			r, _ := ds.NewReader(ReaderOptions{})
			defer r.Close()
			var rerr error
			for rerr == nil {
				_, rerr = r.Next(context.Background())
			}
			var re *RowError
			if !errors.As(rerr, &re) {
				t.Fatalf("error = %v; want a RowError", rerr)
			}
			if re.Pos.RowGroup != c.wantRG || re.Pos.Row != c.wantRow || re.Column != c.wantCol {
				t.Fatalf("error at group %d row %d column %q; want group %d row %d column %q (%v)", re.Pos.RowGroup, re.Pos.Row, re.Column, c.wantRG, c.wantRow, c.wantCol, re)
			}
			if !errors.Is(rerr, ErrBadData) {
				t.Fatalf("error %v is not ErrBadData", rerr)
			}
			// With SkipBad the row is counted and dropped.
			checkSkipBad(t, ds, 5, 1)
		})
	}
}

// writeAndOpen writes rows [0, n) of b to path and opens open (path or
// its directory) as a dataset.
func writeAndOpen(t *testing.T, spec *Spec, path string, opts WriterOptions, b *Batch, n int, open string) *Dataset {
	t.Helper()
	w, err := NewWriter(path, spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(b, 0, n); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ds, err := Open(spec, open)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// eachBatch calls fn with every batch r reads, failing t on an error.
func eachBatch(t *testing.T, r *Reader, fn func(*Batch)) {
	t.Helper()
	for {
		b, err := r.Next(context.Background())
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		fn(b)
	}
}

// checkSkipBad reads ds with SkipBad and checks the rows read and skipped.
func checkSkipBad(t *testing.T, ds *Dataset, rows, skipped int64) {
	t.Helper()
	r, err := ds.NewReader(ReaderOptions{SkipBad: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var n int64
	eachBatch(t, r, func(b *Batch) { n += int64(b.N) })
	if n != rows || r.Skipped() != skipped {
		t.Fatalf("SkipBad read %d rows, skipped %d; want %d and %d", n, r.Skipped(), rows, skipped)
	}
}

func TestMissingColumn(t *testing.T) {
	dir := t.TempDir()
	spec := testSpec()
	w, _ := NewWriter(filepath.Join(dir, "p.parquet"), spec, WriterOptions{})
	w.WriteBatch(testBatch(10))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	other := *spec
	other.Dense = append([]string{"nope"}, spec.Dense...)
	_, err := Open(&other, dir)
	if !errors.Is(err, ErrSchema) {
		t.Fatalf("Open with a missing column: %v; want ErrSchema", err)
	}
}

func TestAbortLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(filepath.Join(dir, "p.parquet"), testSpec(), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.WriteBatch(testBatch(10))
	w.Abort()
	ents, _ := os.ReadDir(dir)
	if len(ents) != 0 {
		t.Fatalf("after Abort the directory holds %d entries; want 0", len(ents))
	}
}

// TestCorruptPageIsBadData flips bytes across the data pages of a Snappy
// Parquet file: reading it must never panic, and every failure must be a
// bad-data error that names the file and the row group.
func TestCorruptPageIsBadData(t *testing.T) {
	// With a list column the record reader path reads the file; without,
	// the direct path.
	t.Run("lists", func(t *testing.T) { testCorruptPage(t, testSpec(), testBatch(1000)) })
	flat, b := testSpec(), testBatch(1000)
	flat.Sparse = []SparseFeature{flat.Sparse[0], flat.Sparse[2]}
	b.Sparse = []SparseColumn{b.Sparse[0], b.Sparse[2]}
	t.Run("flat", func(t *testing.T) { testCorruptPage(t, flat, b) })
}

func testCorruptPage(t *testing.T, spec *Spec, in *Batch) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.parquet")
	w, err := NewWriter(src, spec, WriterOptions{RowGroupRows: 300, WithPTrue: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(in, 0, in.N); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	clean, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	// Data pages lie between the 4-byte magic and the footer; the footer's
	// length is the 4 bytes before the trailing magic.
	n := len(clean)
	footer := int(clean[n-8]) | int(clean[n-7])<<8 | int(clean[n-6])<<16 | int(clean[n-5])<<24
	end := n - 8 - footer
	failures := 0
	for off := 4; off < end; off += 11 {
		bad := append([]byte(nil), clean...)
		bad[off] ^= 0x5a
		fn := filepath.Join(dir, "part-0.parquet")
		if err := os.WriteFile(fn, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		err := readAll(spec, fn)
		if err == nil {
			continue
		}
		failures++
		if !errors.Is(err, ErrBadData) || !strings.Contains(err.Error(), fn) || !strings.Contains(err.Error(), "row group") {
			t.Fatalf("byte %d flipped: read error %q; want %v naming %s and its row group", off, err, ErrBadData, fn)
		}
	}
	if failures == 0 {
		t.Fatalf("no flipped byte in [4, %d) made reading fail; the test corrupts nothing", end)
	}
}

// readAll opens fn and reads every batch, returning the first error.
func readAll(spec *Spec, fn string) error {
	ds, err := Open(spec, fn)
	if err != nil {
		return err
	}
	r, err := ds.NewReader(ReaderOptions{BatchRows: 128, WithPTrue: true})
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		_, err := r.Next(context.Background())
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// TestListParquetIgnoresSubdirectories: only the directory's own Parquet
// files are data; a copy in a subdirectory (a backup, a nested split) must
// not be read a second time.
func TestListParquetIgnoresSubdirectories(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"part-00000.parquet", "part-00001.parquet", "old/part-00000.parquet", "fae/hot/part-00000.parquet", ".part-tmp.parquet"} {
		fn := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(fn), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(fn, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ListParquet(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "part-00000.parquet"), filepath.Join(dir, "part-00001.parquet")}
	if !equalInts(got, want) {
		t.Fatalf("ListParquet(%s) = %v; want %v", dir, got, want)
	}
}

// TestListParquetNamesTrainDir: a dataset directory whose splits are there
// but whose dataset.yaml is not (gen and convert write it last) is named as
// such; an empty one is only empty.
func TestListParquetNamesTrainDir(t *testing.T) {
	dir := t.TempDir()
	if _, err := ListParquet(dir); !errors.Is(err, ErrNoData) || strings.Contains(err.Error(), "train/") {
		t.Errorf("ListParquet(empty) = %v; want ErrNoData without the train/ hint", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "train"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := ListParquet(dir); !errors.Is(err, ErrNoData) || !strings.Contains(err.Error(), "no dataset.yaml naming its train/") {
		t.Errorf("ListParquet(dir with train/) = %v; want ErrNoData naming train/", err)
	}
}

// TestSparseOnly: a sparse-only reader gives the same IDs as a full one and
// leaves Label and Dense nil.
func TestSparseOnly(t *testing.T) {
	dir := t.TempDir()
	spec := testSpec()
	in := testBatch(500)
	ds := writeAndOpen(t, spec, filepath.Join(dir, "part-0.parquet"), WriterOptions{RowGroupRows: 200}, in, 500, dir)
	r, err := ds.NewReader(ReaderOptions{BatchRows: 128, SparseOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	row := 0
	for _, b := range readBatches(t, r) {
		if b.Label != nil || b.Dense != nil {
			t.Fatalf("batch at row %d: label %d and dense %d values; want none", row, len(b.Label), len(b.Dense))
		}
		for i := 0; i < b.N; i++ {
			g := row + i
			if got, want := b.Sparse[0].Row(i)[0], in.Sparse[0].IDs[g]; got != want {
				t.Fatalf("row %d: a = %d; want %d", g, got, want)
			}
			if got, want := b.Sparse[1].Row(i), in.Sparse[1].Row(g); !equalInts(got, want) {
				t.Fatalf("row %d: b = %v; want %v", g, got, want)
			}
			if got, want := b.Sparse[2].IDs[i], HashID(in.Sparse[2].IDs[g], 7); got != want {
				t.Fatalf("row %d: c = %d; want hashed %d", g, got, want)
			}
		}
		row += b.N
	}
	if row != 500 {
		t.Fatalf("read %d rows; want 500", row)
	}
}

// TestDenseOnlySkipBad: a dense-only reader with SkipBad drops the rows
// whose dense value is not finite and still leaves Sparse nil; without
// SkipBad the row is an error naming its column. testSpec has a multi-hot
// feature, so this is the record reader's path.
func TestDenseOnlySkipBad(t *testing.T) {
	dir := t.TempDir()
	spec := testSpec()
	in := testBatch(300)
	in.Dense[2*17+1] = float32(math.NaN())
	ds := writeAndOpen(t, spec, filepath.Join(dir, "part-0.parquet"), WriterOptions{RowGroupRows: 100}, in, 300, dir)
	r, err := ds.NewReader(ReaderOptions{DenseOnly: true, SkipBad: true})
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, b := range readBatches(t, r) {
		if b.Sparse != nil || len(b.Dense) != 2*b.N {
			t.Fatalf("batch at %+v: %d sparse columns, %d dense values for %d rows; want none and %d", b.Pos, len(b.Sparse), len(b.Dense), b.N, 2*b.N)
		}
		rows += b.N
	}
	r.Close()
	if rows != 299 || r.Skipped() != 1 {
		t.Fatalf("read %d rows, skipped %d; want 299 and 1", rows, r.Skipped())
	}
	r, _ = ds.NewReader(ReaderOptions{DenseOnly: true})
	defer r.Close()
	var rerr *RowError
	if _, err := r.Next(context.Background()); !errors.As(err, &rerr) || rerr.Column != "d1" || rerr.Pos.Row != 17 {
		t.Fatalf("error %v; want a RowError at row 17, column d1", err)
	}
	if _, err := ds.NewReader(ReaderOptions{DenseOnly: true, SparseOnly: true}); err == nil {
		t.Fatal("DenseOnly and SparseOnly together accepted")
	}
}

// TestDirect: with one ID per row and required columns, a reader decodes
// the column chunks itself; its batches hold the rows, positions and
// values the record reader path gives, full and sparse-only, with int64
// and int32 IDs.
func TestDirect(t *testing.T) {
	spec := &Spec{Train: "x", Label: "label", Dense: []string{"d0", "d1"}, PTrue: "p",
		Sparse: []SparseFeature{{Name: "a", Rows: 100}, {Name: "c", Rows: 7, IDs: IDHash}}}
	// Row groups, batches and the writer's pages (4,096 INT64 or 8,192
	// INT32 and FLOAT values) of several sizes: pages larger than a batch,
	// pages wholly inside one, and pages across two.
	for _, sz := range []struct{ n, group, batch int }{{500, 200, 128}, {20000, 9000, 5000}, {20000, 20000, 8192}} {
		n := sz.n
		in := &Batch{N: n, Sparse: make([]SparseColumn, 2)}
		for i := range n {
			in.Label = append(in.Label, float32(i%2))
			in.Dense = append(in.Dense, float32(i)/3, -float32(i))
			in.PTrue = append(in.PTrue, float32(i)/float32(n))
			in.Sparse[0].IDs = append(in.Sparse[0].IDs, int64(i*37%100))
			in.Sparse[1].IDs = append(in.Sparse[1].IDs, int64(i)*1_000_003%(1<<20))
		}
		for _, ids := range []SlotType{SlotInt64, SlotInt32} {
			dir := t.TempDir()
			ds := writeAndOpen(t, spec, filepath.Join(dir, "part-0.parquet"), WriterOptions{RowGroupRows: sz.group, IDs: ids, WithPTrue: true}, in, n, dir)
			// read reads every batch by the record reader, the library's
			// column readers or the plain path; with release, it hands each
			// back to the reader (Release) after copying it, so later batches
			// refill it.
			const record, library, plain, plainRead = 0, 1, 2, 3
			read := func(o ReaderOptions, path int, release bool) []*Batch {
				o.BatchRows = sz.batch
				r, err := ds.NewReader(o)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				r.noDirect, r.noPlain, r.noMap = path == record, path != plain && path != plainRead, path == plainRead
				var out []*Batch
				reused, mapped := false, false
				var prev *int64
				for {
					b, err := r.Next(context.Background())
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					mapped = mapped || r.unmap != nil
					if o.DenseOnly {
						if b.Sparse != nil {
							t.Fatalf("dense-only batch with %d sparse columns", len(b.Sparse))
						}
						out = append(out, cloneBatch(b))
						continue
					}
					if prev != nil && len(b.Sparse[0].IDs) > 0 && &b.Sparse[0].IDs[0] == prev {
						reused = true
					}
					if !release {
						out = append(out, b)
						continue
					}
					out = append(out, cloneBatch(b))
					prev = &b.Sparse[0].IDs[0]
					r.Release(b)
				}
				if (r.directCols != nil) != (path != record) || r.usePlain != (path == plain || path == plainRead) ||
					mapped != (path == plain && runtime.GOOS == "linux") {
					t.Fatalf("ids %d %+v: direct columns %v, plain %v, mapped %v; want path %d", ids, o, r.directCols, r.usePlain, mapped, path)
				}
				if release && path != record && len(out) > 1 && !reused && !o.DenseOnly {
					t.Fatalf("ids %d %+v: no released batch was filled again", ids, o)
				}
				return out
			}
			full := read(ReaderOptions{}, record, false)
			for _, o := range []ReaderOptions{{}, {SparseOnly: true}, {WithPTrue: true}, {DenseOnly: true}} {
				want := read(o, record, false)
				for _, path := range []int{library, plain, plainRead} {
					for _, got := range [][]*Batch{read(o, path, false), read(o, path, true)} {
						compareBatches(t, fmt.Sprintf("%+v ids %d %+v path %d", sz, ids, o, path), got, want, n)
					}
				}
				if o.DenseOnly {
					// The same labels and dense values as a full read.
					for k := range want {
						want[k].Sparse = full[k].Sparse
					}
					compareBatches(t, fmt.Sprintf("%+v ids %d dense-only against full", sz, ids), want, full, n)
				}
			}
		}
	}
}

// TestPlainShapes: files of shapes other than the writer's, written by the
// Parquet library: v2 data pages, page statistics (a struct in the page
// header the plain path skips), no compression, dictionaries and other
// codecs. The plain path reads the shapes it knows and leaves the rest to
// the library; either way the values are the ones written.
func TestPlainShapes(t *testing.T) {
	spec := &Spec{Train: "x", Label: "y", Dense: []string{"d"}, Sparse: []SparseFeature{{Name: "s", Rows: 1000}, {Name: "u", Rows: 50}}}
	const n = 10000
	mem := memory.DefaultAllocator
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "y", Type: arrow.PrimitiveTypes.Float32},
		{Name: "d", Type: arrow.PrimitiveTypes.Float32},
		{Name: "s", Type: arrow.PrimitiveTypes.Int64},
		{Name: "u", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
	bld := array.NewRecordBuilder(mem, sc)
	defer bld.Release()
	for i := range n {
		bld.Field(0).(*array.Float32Builder).Append(float32(i % 2))
		bld.Field(1).(*array.Float32Builder).Append(float32(i) * 0.25)
		bld.Field(2).(*array.Int64Builder).Append(int64(i * 7919 % 1000))
		bld.Field(3).(*array.Int32Builder).Append(int32(i % 50))
	}
	rec := bld.NewRecord()
	defer rec.Release()
	for _, c := range []struct {
		name  string
		plain bool
		props []parquet.WriterProperty
	}{
		{"v1 snappy stats", true, []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Snappy), parquet.WithStats(true)}},
		{"v2 snappy stats", true, []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Snappy), parquet.WithStats(true), parquet.WithDataPageVersion(parquet.DataPageV2)}},
		{"v2 uncompressed", true, []parquet.WriterProperty{parquet.WithDataPageVersion(parquet.DataPageV2)}},
		{"v1 uncompressed small pages", true, []parquet.WriterProperty{parquet.WithDataPageSize(1000)}},
		{"dictionary", false, []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Snappy)}},
		{"gzip", false, []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Gzip)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			props := append([]parquet.WriterProperty{parquet.WithMaxRowGroupLength(3000), parquet.WithDictionaryDefault(c.name == "dictionary")}, c.props...)
			fn := filepath.Join(t.TempDir(), "part-0.parquet")
			writeRawProps(t, fn, rec, props...)
			ds, err := Open(spec, fn)
			if err != nil {
				t.Fatal(err)
			}
			r, err := ds.NewReader(ReaderOptions{BatchRows: 1024})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			row := 0
			for _, b := range readBatches(t, r) {
				for i := range b.N {
					k := row + i
					if b.Label[i] != float32(k%2) || b.Dense[i] != float32(k)*0.25 ||
						b.Sparse[0].IDs[i] != int64(k*7919%1000) || b.Sparse[1].IDs[i] != int64(k%50) {
						t.Fatalf("row %d: label %v dense %v ids %d %d; want %v %v %d %d", k, b.Label[i], b.Dense[i],
							b.Sparse[0].IDs[i], b.Sparse[1].IDs[i], float32(k%2), float32(k)*0.25, k*7919%1000, k%50)
					}
				}
				row += b.N
			}
			if row != n {
				t.Fatalf("read %d rows; want %d", row, n)
			}
			if r.usePlain != c.plain { // every group has the same shape
				t.Fatalf("plain path %v; want %v", r.usePlain, c.plain)
			}
		})
	}
}

// readBatches returns every batch r gives (none handed back), failing the
// test on an error.
func readBatches(t *testing.T, r *Reader) []*Batch {
	t.Helper()
	var out []*Batch
	for {
		b, err := r.Next(context.Background())
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
}

// cloneBatch copies b's slices.
func cloneBatch(b *Batch) *Batch {
	c := *b
	c.Label, c.Dense, c.PTrue = slices.Clone(b.Label), slices.Clone(b.Dense), slices.Clone(b.PTrue)
	c.Sparse = make([]SparseColumn, len(b.Sparse))
	for i, sc := range b.Sparse {
		c.Sparse[i] = SparseColumn{IDs: slices.Clone(sc.IDs), Offsets: slices.Clone(sc.Offsets)}
	}
	return &c
}

// compareBatches checks that got holds the batches of want, n rows in all.
func compareBatches(t *testing.T, what string, got, want []*Batch, n int) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: direct reader gave %d batches; want %d", what, len(got), len(want))
	}
	rows := 0
	for k := range want {
		g, w := got[k], want[k]
		if g.N != w.N || g.Pos != w.Pos || !equalInts(g.Label, w.Label) || !equalInts(g.Dense, w.Dense) || !equalInts(g.PTrue, w.PTrue) {
			t.Fatalf("%s batch %d: %d rows at %+v; want %d at %+v, or label, dense or p_true differ", what, k, g.N, g.Pos, w.N, w.Pos)
		}
		for f := range w.Sparse {
			if !equalInts(g.Sparse[f].IDs, w.Sparse[f].IDs) {
				t.Fatalf("%s batch %d feature %d: IDs %v; want %v", what, k, f, g.Sparse[f].IDs, w.Sparse[f].IDs)
			}
		}
		rows += g.N
	}
	if rows != n {
		t.Fatalf("%s: read %d rows; want %d", what, rows, n)
	}
}

// TestSparseOnlyDirectBadID: an out-of-range ID read on the direct path is
// a RowError naming its row group, row and column; SkipBad drops the row.
func TestSparseOnlyDirectBadID(t *testing.T) {
	spec := &Spec{Train: "x", Label: "y", Sparse: []SparseFeature{{Name: "s", Rows: 10}, {Name: "u", Rows: 10}}}
	path := filepath.Join(t.TempDir(), "bad.parquet")
	w, err := NewWriter(path, spec, WriterOptions{RowGroupRows: 3})
	if err != nil {
		t.Fatal(err)
	}
	b := &Batch{N: 6, Label: []float32{0, 1, 0, 1, 0, 1}, Sparse: []SparseColumn{
		{IDs: []int64{1, 2, 3, 4, 5, 6}}, {IDs: []int64{1, 2, 3, 4, 12, 6}}}}
	if err := w.Write(b, 0, 6); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ds, err := Open(spec, path)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := ds.NewReader(ReaderOptions{SparseOnly: true})
	defer r.Close()
	var rerr error
	for rerr == nil {
		_, rerr = r.Next(context.Background())
	}
	var re *RowError
	if !errors.As(rerr, &re) || !errors.Is(rerr, ErrBadData) {
		t.Fatalf("error = %v; want a RowError that is ErrBadData", rerr)
	}
	if r.directCols == nil {
		t.Fatal("the reader did not take the direct path")
	}
	if re.Pos.RowGroup != 1 || re.Pos.Row != 1 || re.Column != "u" {
		t.Fatalf("error at group %d row %d column %q; want group 1 row 1 column \"u\" (%v)", re.Pos.RowGroup, re.Pos.Row, re.Column, re)
	}
	r2, _ := ds.NewReader(ReaderOptions{SparseOnly: true, SkipBad: true})
	defer r2.Close()
	got := 0
	for {
		b, err := r2.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got += b.N
	}
	if got != 5 || r2.Skipped() != 1 {
		t.Fatalf("SkipBad read %d rows, skipped %d; want 5 and 1", got, r2.Skipped())
	}
}

// TestDirectBadValues: on the direct path a label that is not 0 or 1, a
// dense value that is not finite and an ID out of range are RowErrors
// naming their row group, row and column, as on the record path; SkipBad
// drops the row.
func TestDirectBadValues(t *testing.T) {
	spec := &Spec{Train: "x", Label: "y", Dense: []string{"d"}, Sparse: []SparseFeature{{Name: "s", Rows: 10}}}
	cases := []struct {
		name    string
		label   []float32
		dense   []float32
		ids     []int64
		wantRG  int
		wantRow int64
		wantCol string
	}{
		{"label 2", []float32{0, 1, 0, 1, 2, 1}, []float32{0, 0, 0, 0, 0, 0}, []int64{1, 2, 3, 4, 5, 6}, 1, 1, "y"},
		{"nan dense", []float32{0, 1, 0, 1, 0, 1}, []float32{0, 0, float32(math.NaN()), 0, 0, 0}, []int64{1, 2, 3, 4, 5, 6}, 0, 2, "d"},
		{"id out of range", []float32{0, 1, 0, 1, 0, 1}, []float32{0, 0, 0, 0, 0, 0}, []int64{1, 2, 3, 4, 5, 10}, 1, 2, "s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.parquet")
			w, err := NewWriter(path, spec, WriterOptions{RowGroupRows: 3})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Write(&Batch{N: 6, Label: c.label, Dense: c.dense, Sparse: []SparseColumn{{IDs: c.ids}}}, 0, 6); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			ds, err := Open(spec, path)
			if err != nil {
				t.Fatal(err)
			}
			r, _ := ds.NewReader(ReaderOptions{})
			defer r.Close()
			var rerr error
			for rerr == nil {
				_, rerr = r.Next(context.Background())
			}
			if r.directCols == nil {
				t.Fatal("the reader did not take the direct path")
			}
			var re *RowError
			if !errors.As(rerr, &re) || !errors.Is(rerr, ErrBadData) {
				t.Fatalf("error = %v; want a RowError that is ErrBadData", rerr)
			}
			if re.Pos.RowGroup != c.wantRG || re.Pos.Row != c.wantRow || re.Column != c.wantCol {
				t.Fatalf("error at group %d row %d column %q; want group %d row %d column %q (%v)", re.Pos.RowGroup, re.Pos.Row, re.Column, c.wantRG, c.wantRow, c.wantCol, re)
			}
			checkSkipBad(t, ds, 5, 1)
		})
	}
}

// writeArrowRef writes rows [0, 300) of in as one row group and the rest
// in groups of opts.RowGroupRows, as Arrow's Parquet writer writes them from
// Arrow records: the reference the Writer's files are compared with.
func writeArrowRef(t *testing.T, path string, spec *Spec, opts WriterOptions, in *Batch) {
	t.Helper()
	sc := ArrowSchema(spec, opts.IDs, opts.WithPTrue)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	fw, err := pqarrow.NewFileWriter(sc, f, writerProps(opts), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	keys := slices.Sorted(maps.Keys(opts.Metadata))
	for _, k := range keys {
		fw.AppendKeyValueMetadata(k, opts.Metadata[k])
	}
	appendIDs := func(bld array.Builder, ids []int64) {
		for _, v := range ids {
			if opts.IDs == SlotInt32 {
				bld.(*array.Int32Builder).Append(int32(v))
			} else {
				bld.(*array.Int64Builder).Append(v)
			}
		}
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer rb.Release()
	for _, r := range [][2]int{{0, 300}, {300, in.N}} {
		rb.Field(0).(*array.Float32Builder).AppendValues(in.Label[r[0]:r[1]], nil)
		nd := len(spec.Dense)
		for d := range nd {
			for i := r[0]; i < r[1]; i++ {
				rb.Field(1 + d).(*array.Float32Builder).Append(in.Dense[i*nd+d])
			}
		}
		for s, feat := range spec.Sparse {
			bld := rb.Field(1 + nd + s)
			for i := r[0]; i < r[1]; i++ {
				if feat.MultiHot {
					bld.(*array.ListBuilder).Append(true)
					appendIDs(bld.(*array.ListBuilder).ValueBuilder(), in.Sparse[s].Row(i))
				} else {
					appendIDs(bld, in.Sparse[s].IDs[i:i+1])
				}
			}
		}
		if opts.WithPTrue {
			rb.Field(1+nd+len(spec.Sparse)).(*array.Float32Builder).AppendValues(in.PTrue[r[0]:r[1]], nil)
		}
		rec := rb.NewRecord()
		if err := fw.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestWriterTypedColumnsSameBytes: rows are written from typed columns.
// Through the library's column writers the file is byte for byte the one
// Arrow's Parquet writer gives from Arrow records, lists included;
// picasso's own writer (plainwrite.go, no lists) gives a file with other
// bytes whose every row, read by the level path and by picasso's other
// paths, and whose footer metadata are the same; with int64 and int32
// IDs, p_true, footer metadata, a short row group and one of several
// pages.
func TestWriterTypedColumnsSameBytes(t *testing.T) {
	t.Run("lists", func(t *testing.T) {
		spec := testSpec()
		in := testBatch(9000)
		for i, v := range in.Sparse[2].IDs { // raw values, within 32 bits
			in.Sparse[2].IDs[i] = v % (1 << 30)
		}
		testWriterSameBytes(t, spec, in, []string{"library", "arrow"})
	})
	t.Run("flat", func(t *testing.T) {
		spec := testSpec()
		spec.Sparse = []SparseFeature{spec.Sparse[0], spec.Sparse[2]}
		in := testBatch(9000)
		in.Sparse = []SparseColumn{in.Sparse[0], in.Sparse[2]}
		for i, v := range in.Sparse[1].IDs {
			in.Sparse[1].IDs[i] = v % (1 << 30)
		}
		testWriterSameBytes(t, spec, in, []string{"library", "arrow", "plain"})
	})
}

func testWriterSameBytes(t *testing.T, spec *Spec, in *Batch, hows []string) {
	spec.PTrue = "p_true"
	n := in.N
	dir := t.TempDir()
	for _, ids := range []SlotType{SlotInt64, SlotInt32} {
		files := make([][]byte, len(hows))
		paths := make([]string, len(hows))
		for k, how := range hows {
			paths[k] = filepath.Join(dir, fmt.Sprintf("ids%d-%s.parquet", ids, how))
			opts := WriterOptions{RowGroupRows: 5000, IDs: ids, WithPTrue: true,
				Metadata: map[string]string{"b": "2", "a": "1"}, viaLibrary: how == "library"}
			if how == "arrow" {
				writeArrowRef(t, paths[k], spec, opts, in)
			} else {
				w, err := NewWriter(paths[k], spec, opts)
				if err != nil {
					t.Fatal(err)
				}
				if (w.plain != nil) != (how == "plain") || (w.pw != nil) != (how == "library") {
					t.Fatalf("%s: plain writer %v, library writer %v", how, w.plain != nil, w.pw != nil)
				}
				for _, r := range [][2]int{{0, 300}, {300, n}} { // a short group, then full ones
					if err := w.Write(in, r[0], r[1]); err != nil {
						t.Fatal(err)
					}
					if err := w.EndRowGroup(); err != nil {
						t.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
			}
			var err error
			if files[k], err = os.ReadFile(paths[k]); err != nil {
				t.Fatal(err)
			}
		}
		if len(files[0]) == 0 || !bytes.Equal(files[0], files[1]) {
			t.Fatalf("ids %d: the library's column writers wrote %d bytes, Arrow's writer %d, not the same bytes", ids, len(files[0]), len(files[1]))
		}
		if len(hows) < 3 {
			continue
		}
		read := func(path string, record bool) []*Batch {
			ds, err := Open(spec, path)
			if err != nil {
				t.Fatal(err)
			}
			r, err := ds.NewReader(ReaderOptions{BatchRows: 1000, WithPTrue: true})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			r.noDirect = record
			return readBatches(t, r)
		}
		want := read(paths[0], true) // the library's file, by the level path
		for _, record := range []bool{true, false} {
			got := read(paths[2], record) // the file of picasso's own writer
			for i := range got {          // the files' names differ
				got[i].Pos.File = want[min(i, len(want)-1)].Pos.File
			}
			compareBatches(t, fmt.Sprintf("ids %d, level path %v", ids, record), got, want, n)
		}
		for _, k := range []int{0, 2} {
			pf, err := file.OpenParquetFile(paths[k], false)
			if err != nil {
				t.Fatal(err)
			}
			kv := pf.MetaData().KeyValueMetadata()
			if kv.FindValue("a") == nil || *kv.FindValue("a") != "1" || *kv.FindValue("b") != "2" || kv.FindValue("ARROW:schema") == nil ||
				pf.NumRowGroups() != 3 || pf.MetaData().NumRows != int64(n) {
				t.Fatalf("file %d: metadata %v, %d row groups, %d rows; want a, b and the Arrow schema, 3 groups, %d rows",
					k, kv.Keys(), pf.NumRowGroups(), pf.MetaData().NumRows, n)
			}
			pf.Close()
		}
	}
}

// TestNarrowIDs: row indices of tables that fit 32 bits are written as
// INT32, raw values to hash or wider tables as INT64, and a writer of
// 32-bit IDs refuses a value that does not fit rather than wrapping it.
func TestNarrowIDs(t *testing.T) {
	small := &Spec{Sparse: []SparseFeature{{Name: "a", Rows: 10}, {Name: "b", Rows: math.MaxInt32}}}
	if got := NarrowIDs(small); got != SlotInt32 {
		t.Fatalf("tables of at most 2^31-1 rows: %v; want SlotInt32", got)
	}
	for _, f := range []SparseFeature{{Name: "c", Rows: math.MaxInt32 + 1}, {Name: "c", Rows: 10, IDs: IDHash}} {
		wide := &Spec{Sparse: append(slices.Clone(small.Sparse), f)}
		if got := NarrowIDs(wide); got != SlotInt64 {
			t.Fatalf("feature %+v: %v; want SlotInt64", f, got)
		}
	}
	spec := &Spec{Train: "x", Label: "y", Sparse: []SparseFeature{{Name: "s", Rows: 1 << 40}}}
	w, err := NewWriter(filepath.Join(t.TempDir(), "p.parquet"), spec, WriterOptions{IDs: SlotInt32})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	b := &Batch{N: 2, Label: []float32{0, 1}, Sparse: []SparseColumn{{IDs: []int64{5, 1 << 33}}}}
	if err := w.Write(b, 0, 2); err == nil || !strings.Contains(err.Error(), "column s") {
		t.Fatalf("writing id 2^33 as INT32: %v; want an error naming column s", err)
	}
}

// TestGroupPrefix reads row groups given with fewer rows than they hold:
// the reader must return exactly the first rows of each, the same values
// as a whole read, on every path (the record reader for multi-hot
// features, the library's column readers and the plain pages for one-hot
// ones), with parts that end inside a batch, on a page's end and past one.
func TestGroupPrefix(t *testing.T) {
	oneHot := &Spec{Train: "x", Label: "label", Dense: []string{"d0", "d1"},
		Sparse: []SparseFeature{{Name: "a", Rows: 100}, {Name: "c", Rows: 7, IDs: IDHash}}}
	const n, group = 20000, 9000
	in := &Batch{N: n, Sparse: make([]SparseColumn, 2)}
	for i := range n {
		in.Label = append(in.Label, float32(i%2))
		in.Dense = append(in.Dense, float32(i)/3, -float32(i))
		in.Sparse[0].IDs = append(in.Sparse[0].IDs, int64(i*37%100))
		in.Sparse[1].IDs = append(in.Sparse[1].IDs, int64(i)*1_000_003%(1<<20))
	}
	const record, library, plain, plainRead = 0, 1, 2, 3
	for _, tc := range []struct {
		name  string
		spec  *Spec
		b     *Batch
		paths []int
	}{{"one-hot", oneHot, in, []int{record, library, plain, plainRead}}, {"multi-hot", testSpec(), testBatch(n), []int{record}}} {
		dir := t.TempDir()
		ds := writeAndOpen(t, tc.spec, filepath.Join(dir, "part-0.parquet"), WriterOptions{RowGroupRows: group}, tc.b, n, dir)
		// rows reads the groups and returns each row's values by its
		// (group, row) position.
		rows := func(groups []RowGroup, path int) map[[2]int]string {
			r, err := ds.NewReader(ReaderOptions{RowGroups: groups, BatchRows: 5000})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			r.noDirect, r.noPlain, r.noMap = path == record, path != plain && path != plainRead, path == plainRead
			out := map[[2]int]string{}
			eachBatch(t, r, func(b *Batch) {
				for i := range b.N {
					v := fmt.Sprint(b.Label[i], b.Dense[2*i:2*i+2])
					for f := range b.Sparse {
						v += fmt.Sprint(b.Sparse[f].Row(i))
					}
					out[[2]int{b.Pos.RowGroup, int(b.Pos.Row) + i}] = v
				}
			})
			return out
		}
		all := ds.RowGroups()
		if len(all) != 3 {
			t.Fatalf("%d row groups; want 3", len(all))
		}
		whole := rows(all, record)
		parts := slices.Clone(all)
		parts[0].Rows, parts[1].Rows = 1, 8193 // one row; a page (8,192 INT32 values) and one more
		for _, path := range tc.paths {
			got := rows(parts, path)
			want := 0
			for _, g := range parts {
				want += int(g.Rows)
				for i := range int(g.Rows) {
					k := [2]int{g.Index, i}
					if v, ok := got[k]; !ok || v != whole[k] {
						t.Fatalf("%s path %d: group %d row %d: %q; want %q", tc.name, path, g.Index, i, v, whole[k])
					}
				}
			}
			if len(got) != want {
				t.Fatalf("%s path %d: %d rows read; want the %d of the groups' parts", tc.name, path, len(got), want)
			}
		}
	}
}

// TestMappedFileShrinks: a file cut short while the plain path reads its
// mapped chunks makes the read fail with bad data, naming the file, where
// touching a page past the file's new end would otherwise kill the
// process (SIGBUS).
func TestMappedFileShrinks(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("chunks are mapped on Linux only")
	}
	ds, path, _ := bigTwoColumns(t, 1)
	r, err := ds.NewReader(ReaderOptions{BatchRows: 1000, SparseOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r.unmap == nil {
		t.Fatal("the group's chunks are not mapped")
	}
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	for {
		_, err = r.Next(context.Background())
		if err != nil {
			break
		}
	}
	if err == io.EOF || !errors.Is(err, ErrBadData) || !strings.Contains(err.Error(), path) {
		t.Fatalf("reading a mapped file cut to 4 KiB: %v; want bad data naming %s", err, path)
	}
}

// TestSparseGroupFaults: the column path turns a file cut short under its
// mapping into bad data naming the file and column, and a footer whose row
// group lists too few column chunks into "not this path" (ColumnPathOK)
// or an error (OpenSparseGroup), never a crash.
func TestSparseGroupFaults(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("chunks are mapped on Linux only")
	}
	ds, path, in := bigTwoColumns(t, 2)
	const n = 200_000
	groups := ds.RowGroups()
	if !ds.ColumnPathOK(groups) {
		t.Fatal("the column path refuses picasso's own file")
	}
	sg, ok, err := ds.OpenSparseGroup(groups[0])
	if !ok || err != nil {
		t.Fatalf("open group 0: %v, %v", ok, err)
	}
	var buf ColumnBuf
	if ids, err := sg.Column(0, &buf); err != nil || len(ids) != n/2 || ids[1] != in.Sparse[0].IDs[1] {
		t.Fatalf("column a of group 0: %d IDs, %v", len(ids), err)
	}
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	_, err = sg.Column(1, &buf)
	sg.Close()
	if !errors.Is(err, ErrBadData) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "column b") {
		t.Fatalf("column b of a file cut to 4 KiB: %v; want bad data naming %s and column b", err, path)
	}
	md := ds.meta[path].md
	md.RowGroups[1].Columns = md.RowGroups[1].Columns[:1]
	if ds.ColumnPathOK(groups) {
		t.Error("ColumnPathOK accepts a row group with one column chunk of three")
	}
	if sg, ok, err := ds.OpenSparseGroup(groups[1]); ok || sg != nil {
		t.Errorf("OpenSparseGroup on a row group with one column chunk of three: ok %v, %v", ok, err)
	}
}

// TestFileChangedSinceOpen: a file rewritten with other rows after the
// dataset was opened is an error for a Reader and for the column path,
// not a read of its new bytes at the old footer's offsets.
func TestFileChangedSinceOpen(t *testing.T) {
	spec := &Spec{Train: "x", Label: "label", Sparse: []SparseFeature{{Name: "a", Rows: 1000}}}
	write := func(n int) *Batch {
		b := &Batch{N: n, Sparse: make([]SparseColumn, 1)}
		for i := range n {
			b.Label = append(b.Label, float32(i%2))
			b.Sparse[0].IDs = append(b.Sparse[0].IDs, int64(i*7%1000))
		}
		return b
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "part-0.parquet")
	ds := writeAndOpen(t, spec, path, WriterOptions{RowGroupRows: 5000}, write(20_000), 20_000, dir)
	writeAndOpen(t, spec, path, WriterOptions{RowGroupRows: 3000}, write(9_000), 9_000, dir)
	r, err := ds.NewReader(ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Next(context.Background()); !errors.Is(err, ErrBadData) || !strings.Contains(err.Error(), "changed since") {
		t.Errorf("reader: %v; want the file named as changed", err)
	}
	if _, _, err := ds.OpenSparseGroup(ds.RowGroups()[0]); !errors.Is(err, ErrBadData) || !strings.Contains(err.Error(), "changed since") {
		t.Errorf("column path: %v; want the file named as changed", err)
	}
}

// bigTwoColumns writes 200,000 rows with two sparse columns of widely
// spread IDs (pages of every chunk past the file's first 4 KiB) in groups
// row groups, and returns the dataset, its file and the rows.
func bigTwoColumns(t *testing.T, groups int) (*Dataset, string, *Batch) {
	t.Helper()
	spec := &Spec{Train: "x", Label: "label", Dense: []string{"d0"},
		Sparse: []SparseFeature{{Name: "a", Rows: 1 << 30}, {Name: "b", Rows: 1 << 30}}}
	const n = 200_000
	in := &Batch{N: n, Sparse: make([]SparseColumn, 2)}
	for i := range n {
		in.Label = append(in.Label, float32(i%2))
		in.Dense = append(in.Dense, float32(i))
		in.Sparse[0].IDs = append(in.Sparse[0].IDs, int64(i)*2_654_435_761%(1<<30))
		in.Sparse[1].IDs = append(in.Sparse[1].IDs, int64(i)*40_503%(1<<30))
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "part-0.parquet")
	return writeAndOpen(t, spec, path, WriterOptions{RowGroupRows: n / groups}, in, n, dir), path, in
}

// TestDroppedFooters: past keptChunks column chunks, Open keeps no footer;
// readers and the column path parse them again and read the same values,
// and a file changed since Open is still an error.
func TestDroppedFooters(t *testing.T) {
	defer func(k int) { keptChunks = k }(keptChunks)
	keptChunks = 1
	ds, path, in := bigTwoColumns(t, 4)
	if ds.meta[path].md != nil {
		t.Fatal("Open kept the footer of a dataset over keptChunks")
	}
	groups := ds.RowGroups()
	if !ds.ColumnPathOK(groups) {
		t.Fatal("the column path refuses a dataset without kept footers")
	}
	var buf ColumnBuf
	for _, g := range groups {
		sg, ok, err := ds.OpenSparseGroup(g)
		if !ok || err != nil {
			t.Fatalf("group %d: %v, %v", g.Index, ok, err)
		}
		for f := range 2 {
			ids, err := sg.Column(f, &buf)
			if err != nil || !slices.Equal(ids, in.Sparse[f].IDs[g.First:g.First+g.Rows]) {
				t.Fatalf("group %d column %d: %v; the IDs differ from those written", g.Index, f, err)
			}
		}
		sg.Close()
	}
	r, err := ds.NewReader(ReaderOptions{SparseOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	eachBatch(t, r, func(b *Batch) { got = append(got, b.Sparse[1].IDs...) })
	r.Close()
	if !slices.Equal(got, in.Sparse[1].IDs) {
		t.Fatalf("a reader read %d IDs of column b, not the %d written", len(got), len(in.Sparse[1].IDs))
	}
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	ds.recent = nil
	if _, _, err := ds.OpenSparseGroup(groups[1]); !errors.Is(err, ErrBadData) || !strings.Contains(err.Error(), "changed since") {
		t.Errorf("column path on a file cut since Open: %v; want it named as changed", err)
	}
}

// TestDroppedFootersManyFiles: with the footers dropped, the column path
// reads groups of six files of different group sizes, visited out of
// order, through its cache of four re-parsed footers, each with its own
// file's footer.
func TestDroppedFootersManyFiles(t *testing.T) {
	defer func(k int) { keptChunks = k }(keptChunks)
	keptChunks = 1
	spec := &Spec{Train: "x", Label: "label", Sparse: []SparseFeature{{Name: "a", Rows: 1 << 20}}}
	dir := t.TempDir()
	var all []int64 // every file's IDs, in file order
	var ds *Dataset
	for f := range 6 {
		n := 3000 + 1000*f
		b := &Batch{N: n, Sparse: make([]SparseColumn, 1)}
		for i := range n {
			b.Label = append(b.Label, float32(i%2))
			b.Sparse[0].IDs = append(b.Sparse[0].IDs, int64(f*100_000+i*7))
		}
		all = append(all, b.Sparse[0].IDs...)
		ds = writeAndOpen(t, spec, filepath.Join(dir, fmt.Sprintf("part-%d.parquet", f)), WriterOptions{RowGroupRows: 700 + 300*f}, b, n, dir)
	}
	groups := ds.RowGroups()
	if len(ds.Files()) != 6 || ds.meta[ds.Files()[0]].md != nil {
		t.Fatalf("%d files, footers kept %v; want 6 files and none kept", len(ds.Files()), ds.meta[ds.Files()[0]].md != nil)
	}
	order := rand.New(rand.NewPCG(1, 2)).Perm(len(groups))
	var buf ColumnBuf
	for _, k := range order {
		g := groups[k]
		sg, ok, err := ds.OpenSparseGroup(g)
		if !ok || err != nil {
			t.Fatalf("%s group %d: %v, %v", g.File, g.Index, ok, err)
		}
		ids, err := sg.Column(0, &buf)
		sg.Close()
		if err != nil || !slices.Equal(ids, all[g.First:g.First+g.Rows]) {
			t.Fatalf("%s group %d: %v; the IDs differ from those written", g.File, g.Index, err)
		}
	}
	if len(ds.recent) != 4 {
		t.Errorf("%d footers cached; want the last 4", len(ds.recent))
	}
}

// TestHashedINT32 reads an INT32 ID column (as another tool may write it)
// for a hashed feature: each value is hashed into the table, by the
// Reader's direct path and by the column path alike.
func TestHashedINT32(t *testing.T) {
	raw := &Spec{Train: "x", Label: "label", Sparse: []SparseFeature{{Name: "c", Rows: 1 << 20}}}
	b := &Batch{N: 5, Label: make([]float32, 5), Sparse: []SparseColumn{{IDs: []int64{0, 1, 77, 1<<20 - 1, 5000}}}}
	path := filepath.Join(t.TempDir(), "p.parquet")
	writeAndOpen(t, raw, path, WriterOptions{IDs: SlotInt32}, b, 5, path)
	hashed := &Spec{Train: "x", Label: "label", Sparse: []SparseFeature{{Name: "c", Rows: 7, IDs: IDHash}}}
	ds, err := Open(hashed, path)
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for _, v := range b.Sparse[0].IDs {
		want = append(want, HashID(v, 7))
	}
	rd, err := ds.NewReader(ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	got, err := rd.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Sparse[0].IDs, want) {
		t.Errorf("Reader: IDs %v; want %v", got.Sparse[0].IDs, want)
	}
	sg, ok, err := ds.OpenSparseGroup(ds.RowGroups()[0])
	if err != nil || !ok {
		t.Fatalf("OpenSparseGroup: %v, %v", ok, err)
	}
	defer sg.Close()
	var buf ColumnBuf
	ids, err := sg.Column(0, &buf)
	if err != nil || !slices.Equal(ids, want) {
		t.Errorf("column path: IDs %v, %v; want %v", ids, err, want)
	}
}

// TestNotParquetIsBadData: a file that is not Parquet (text saved under a
// .parquet name), or a Parquet file cut short, is bad data, and the error
// says so in those words, naming the file.
func TestNotParquetIsBadData(t *testing.T) {
	spec := testSpec()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.parquet")
	writeAndOpen(t, spec, good, WriterOptions{}, testBatch(100), 100, good)
	raw, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"text":  []byte("0\t1\t2\tab12cd\n1\t3\t4\tef56ab\n"),
		"cut":   raw[:len(raw)/2],
		"empty": nil,
	} {
		path := filepath.Join(dir, name, "part-00000.parquet")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(spec, filepath.Dir(path))
		if !errors.Is(err, ErrBadData) || !strings.Contains(err.Error(), "is not a Parquet file, or one cut short") || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: Open = %v; want bad data naming %s as not Parquet", name, err, path)
		}
	}
}

// TestOpenMissingPath: a data path that is not there is ErrNoData, and
// the error says where such a path comes from.
func TestOpenMissingPath(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "trian")
	_, err := Open(testSpec(), missing)
	if !errors.Is(err, ErrNoData) || !strings.Contains(err.Error(), missing+" does not exist") || !strings.Contains(err.Error(), "data.train") {
		t.Errorf("Open(%s) = %v; want ErrNoData naming the path and data.train", missing, err)
	}
}
