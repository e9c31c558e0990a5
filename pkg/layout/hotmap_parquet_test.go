package layout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"

	"github.com/picasso-ctr/picasso/internal/pqtest"
	"github.com/picasso-ctr/picasso/pkg/atomicfile"
)

func TestHotmapParquetRoundTrip(t *testing.T) {
	rows := []int64{10, 1 << 20, 3}
	h, err := NewHotSet([][]int64{{7, 2, 9}, {1 << 19, 5}, {}}, rows)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), HotmapParquetFile)
	if err := WriteHotmapParquet(path, h, []string{"a", "b", "c"}); err != nil {
		t.Fatal(err)
	}
	got, err := ReadHotmapParquet(path, rows)
	if err != nil {
		t.Fatal(err)
	}
	for tb := range h.Tables() {
		if !slices.Equal(got.IDs(tb), h.IDs(tb)) {
			t.Errorf("table %d: read IDs %v; wrote %v", tb, got.IDs(tb), h.IDs(tb))
		}
	}
	if _, err := ReadHotmapParquet(path, []int64{10, 100, 3}); !errors.Is(err, ErrInvalid) {
		t.Errorf("ReadHotmapParquet with a table too small for its IDs = %v; want ErrInvalid", err)
	}
	if err := WriteHotmapParquet(path, h, []string{"a"}); err == nil {
		t.Error("WriteHotmapParquet with one name for three tables succeeded")
	}
}

// TestHotmapParquetSameBytes: writing one hot set again gives the same
// file, also when it has more hot rows than a dictionary page holds.
func TestHotmapParquetSameBytes(t *testing.T) {
	const n = 400_000
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64(i)
	}
	h, err := NewHotSet([][]int64{ids, {1, 2}}, []int64{n, 5})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var first []byte
	for i := range 4 {
		path := filepath.Join(dir, fmt.Sprintf("hotmap-%d.parquet", i))
		if err := WriteHotmapParquet(path, h, []string{"big", "small"}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = b
		} else if !bytes.Equal(b, first) {
			t.Fatalf("write %d of the same hot set differs from the first", i)
		}
	}
}

// bigHotSet returns a hot set of more rows than a row group of
// HotmapParquetFile holds, in three tables, one of them without hot rows,
// and the tables' row counts.
func bigHotSet(t *testing.T) (*HotSet, []int64) {
	t.Helper()
	const n = hotmapRowGroup + 70_001
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64(3*i + i%2)
	}
	rows := []int64{3 * n, 5, 100}
	h, err := NewHotSet([][]int64{ids, {}, {99, 0, 42}}, rows)
	if err != nil {
		t.Fatal(err)
	}
	return h, rows
}

// writeHotmapArrow writes h as earlier picasso versions did, through Arrow's
// record writer: the hot maps on users' disks.
func writeHotmapArrow(t *testing.T, path string, h *HotSet, names []string) {
	t.Helper()
	err := atomicfile.Write(path, func(w io.Writer) error {
		props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithCreatedBy("picasso"),
			parquet.WithMaxRowGroupLength(1<<20), parquet.WithDictionaryFor("slot", false), parquet.WithDictionaryFor("id", false))
		fw, err := pqarrow.NewFileWriter(hotmapSchema, nopCloser{w}, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
		if err != nil {
			return err
		}
		rb := array.NewRecordBuilder(memory.DefaultAllocator, hotmapSchema)
		defer rb.Release()
		flush := func() error {
			rec := rb.NewRecord()
			defer rec.Release()
			return fw.WriteBuffered(rec)
		}
		n := 0
		for t := range h.Tables() {
			for i, id := range h.IDs(t) {
				rb.Field(0).(*array.Int32Builder).Append(int32(t))
				rb.Field(1).(*array.StringBuilder).Append(names[t])
				rb.Field(2).(*array.Int32Builder).Append(int32(h.Offset(t) + int64(i)))
				rb.Field(3).(*array.Int64Builder).Append(id)
				if n++; n%(1<<16) == 0 {
					if err := flush(); err != nil {
						return err
					}
				}
			}
		}
		if err := flush(); err != nil {
			return err
		}
		return fw.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestHotmapParquetAsArrow reads the file WriteHotmapParquet writes with
// Arrow's reader, as pyarrow and DuckDB users do: the Parquet schema is
// the one Arrow's writer gives hotmapSchema, the Arrow schema is stored in
// the footer, the row groups hold at most hotmapRowGroup rows, and every
// value is the hot set's. The file is also byte for byte the one Arrow's
// writer wrote for the same hot set.
func TestHotmapParquetAsArrow(t *testing.T) {
	h, _ := bigHotSet(t)
	names := []string{"big", "none", "small"}
	dir := t.TempDir()
	path := filepath.Join(dir, HotmapParquetFile)
	if err := WriteHotmapParquet(path, h, names); err != nil {
		t.Fatal(err)
	}
	pf, fr := pqtest.OpenAsArrow(t, path, hotmapSchema, 50_000)
	if n := pf.NumRowGroups(); n != 2 || pf.RowGroup(0).NumRows() != hotmapRowGroup {
		t.Errorf("%d row groups, the first of %d rows; want 2, %d", n, pf.RowGroup(0).NumRows(), hotmapRowGroup)
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	var slot int64
	for rr.Next() {
		rec := rr.Record()
		tab, name := rec.Column(0).(*array.Int32), rec.Column(1).(*array.String)
		slots, ids := rec.Column(2).(*array.Int32), rec.Column(3).(*array.Int64)
		for i := range int(rec.NumRows()) {
			wt, wid := h.ID(slot)
			if int(tab.Value(i)) != wt || name.Value(i) != names[wt] || int64(slots.Value(i)) != slot || ids.Value(i) != wid {
				t.Fatalf("row %d: table %d %q, slot %d, ID %d; want %d %q, %d, %d",
					slot, tab.Value(i), name.Value(i), slots.Value(i), ids.Value(i), wt, names[wt], slot, wid)
			}
			slot++
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if slot != h.Rows() {
		t.Errorf("read %d rows; want %d", slot, h.Rows())
	}

	arrowPath := filepath.Join(dir, "arrow.parquet")
	writeHotmapArrow(t, arrowPath, h, names)
	pqtest.SameFile(t, arrowPath, path)
}

// TestHotmapParquetEmpty: a hot set without hot rows gives a file that
// Arrow's reader and ReadHotmapParquet read as empty.
func TestHotmapParquetEmpty(t *testing.T) {
	rows := []int64{4, 5}
	h, err := NewHotSet([][]int64{{}, {}}, rows)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), HotmapParquetFile)
	if err := WriteHotmapParquet(path, h, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	got, err := ReadHotmapParquet(path, rows)
	if err != nil {
		t.Fatal(err)
	}
	if got.Rows() != 0 {
		t.Errorf("ReadHotmapParquet of an empty hot map: %d rows", got.Rows())
	}
	_, fr := pqtest.OpenAsArrow(t, path, hotmapSchema, 0)
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	if tbl.NumRows() != 0 {
		t.Errorf("Arrow reads %d rows; want 0", tbl.NumRows())
	}
}

// TestReadHotmapParquetArrowFile reads a hot map that Arrow's record
// writer wrote, in two row groups, as earlier picasso versions wrote them.
func TestReadHotmapParquetArrowFile(t *testing.T) {
	h, rows := bigHotSet(t)
	path := filepath.Join(t.TempDir(), HotmapParquetFile)
	writeHotmapArrow(t, path, h, []string{"big", "none", "small"})
	got, err := ReadHotmapParquet(path, rows)
	if err != nil {
		t.Fatal(err)
	}
	for tb := range h.Tables() {
		if !slices.Equal(got.IDs(tb), h.IDs(tb)) {
			t.Errorf("table %d: read %d IDs; wrote %d, or others", tb, len(got.IDs(tb)), len(h.IDs(tb)))
		}
	}
}

// writeArrowJSON writes rows (JSON) of schema sc with Arrow's writer, in
// row groups of two rows.
func writeArrowJSON(t *testing.T, path string, sc *arrow.Schema, rows string) {
	t.Helper()
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	pqtest.WriteRecord(t, path, rec, parquet.WithMaxRowGroupLength(2))
}

// TestReadHotmapParquetRejects gives ReadHotmapParquet files of other
// shapes: each is an ErrInvalid error that says what is wrong.
func TestReadHotmapParquetRejects(t *testing.T) {
	field := func(name string, typ arrow.DataType) arrow.Field { return arrow.Field{Name: name, Type: typ} }
	i32, i64, str := arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String
	good := hotmapSchema.Fields()
	with := func(i int, f arrow.Field) *arrow.Schema {
		fs := slices.Clone(good)
		fs[i] = f
		return arrow.NewSchema(fs, nil)
	}
	nullable := func(i int) *arrow.Schema {
		f := good[i]
		f.Nullable = true
		return with(i, f)
	}
	const rows3 = `[{"table":0,"table_name":"a","slot":0,"id":2},{"table":0,"table_name":"a","slot":1,"id":7},{"table":1,"table_name":"b","slot":2,"id":1}]`
	for _, tc := range []struct {
		name string
		sc   *arrow.Schema
		rows string
		want string // in the error; "" for none
	}{
		{"good", hotmapSchema, rows3, ""},
		{"nullable without nulls", nullable(3), rows3, ""},
		{"three columns", arrow.NewSchema(good[:3], nil), `[]`, "columns are not table, table_name, slot, id"},
		{"renamed", with(3, field("row", i64)), `[]`, "columns are not table, table_name, slot, id"},
		{"reordered", arrow.NewSchema([]arrow.Field{good[1], good[0], good[2], good[3]}, nil), `[]`, "columns are not table, table_name, slot, id"},
		{"int64 table", with(0, field("table", i64)), `[]`, "column types are not int32, string, int32, int64"},
		{"int16 table", with(0, field("table", arrow.PrimitiveTypes.Int16)), `[]`, "column types are not int32, string, int32, int64"},
		{"binary name", with(1, field("table_name", arrow.BinaryTypes.Binary)), `[]`, "column types are not int32, string, int32, int64"},
		{"int32 name", with(1, field("table_name", i32)), `[]`, "column types are not int32, string, int32, int64"},
		{"uint32 slot", with(2, field("slot", arrow.PrimitiveTypes.Uint32)), `[]`, "column types are not int32, string, int32, int64"},
		{"float slot", with(2, field("slot", arrow.PrimitiveTypes.Float32)), `[]`, "column types are not int32, string, int32, int64"},
		{"int32 id", with(3, field("id", i32)), `[]`, "column types are not int32, string, int32, int64"},
		{"uint64 id", with(3, field("id", arrow.PrimitiveTypes.Uint64)), `[]`, "column types are not int32, string, int32, int64"},
		{"timestamp id", with(3, field("id", arrow.FixedWidthTypes.Timestamp_us)), `[]`, "column types are not int32, string, int32, int64"},
		{"list id", with(3, field("id", arrow.ListOf(i64))), `[]`, "column types are not int32, string, int32, int64"},
		{"string id", with(3, field("id", str)), `[]`, "column types are not int32, string, int32, int64"},
		{"table out of range", hotmapSchema, `[{"table":0,"table_name":"a","slot":0,"id":2},{"table":0,"table_name":"a","slot":1,"id":7},{"table":2,"table_name":"c","slot":2,"id":1}]`, "row 2: table 2 of 2"},
		{"negative table", hotmapSchema, `[{"table":-1,"table_name":"a","slot":0,"id":2}]`, "row 0: table -1 of 2"},
		{"ID out of range", hotmapSchema, `[{"table":0,"table_name":"a","slot":0,"id":10}]`, "hot id 10 out of range"},
		{"slots swapped", hotmapSchema, `[{"table":0,"table_name":"a","slot":1,"id":2},{"table":0,"table_name":"a","slot":0,"id":7},{"table":1,"table_name":"b","slot":2,"id":1}]`, "row 0: slot 1; the packed slot of table 0's ID 2 is 0"},
		{"IDs descending", hotmapSchema, `[{"table":0,"table_name":"a","slot":0,"id":7},{"table":0,"table_name":"a","slot":1,"id":2}]`, "row 0: slot 0; the packed slot of table 0's ID 7 is 1"},
		{"null id", nullable(3), `[{"table":0,"table_name":"a","slot":0,"id":2},{"table":0,"table_name":"a","slot":1,"id":null}]`, "row group 0, column id: a null value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), HotmapParquetFile)
			writeArrowJSON(t, path, tc.sc, tc.rows)
			h, err := ReadHotmapParquet(path, []int64{10, 3})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("ReadHotmapParquet = %v; want no error", err)
				}
				if !slices.Equal(h.IDs(0), []int64{2, 7}) || !slices.Equal(h.IDs(1), []int64{1}) {
					t.Fatalf("ReadHotmapParquet: IDs %v, %v; want [2 7], [1]", h.IDs(0), h.IDs(1))
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("ReadHotmapParquet = %v; want ErrInvalid naming %s, with %q", err, path, tc.want)
			}
		})
	}
}

// TestReadHotmapParquetCorrupt: a hot map with any byte flipped, or cut
// short, reads as an ErrInvalid error or as a hot set, never as a panic.
func TestReadHotmapParquetCorrupt(t *testing.T) {
	rows := []int64{1000, 50}
	var ids []int64
	for i := range int64(150) {
		ids = append(ids, 2*i+1)
	}
	h, err := NewHotSet([][]int64{ids, {3, 4, 49}}, rows)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, HotmapParquetFile)
	if err := WriteHotmapParquet(path, h, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.parquet")
	read := func(what string, b []byte) int {
		t.Helper()
		if err := os.WriteFile(bad, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadHotmapParquet(bad, rows)
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("%s: ReadHotmapParquet = %v; want ErrInvalid", what, err)
		}
		if err != nil {
			return 1
		}
		return 0
	}
	failed := 0
	for i := range orig {
		mask := []byte{0x01, 0x80, 0xff}[i%3]
		b := slices.Clone(orig)
		b[i] ^= mask
		failed += read(fmt.Sprintf("byte %d ^ %#x", i, mask), b)
	}
	for n := 0; n < len(orig); n += 7 {
		failed += read(fmt.Sprintf("first %d bytes", n), orig[:n])
	}
	if failed == 0 {
		t.Fatal("no corrupt file was rejected")
	}
}

// FuzzReadHotmapParquet: ReadHotmapParquet returns a hot set or an
// ErrInvalid error for any file, never panics.
func FuzzReadHotmapParquet(f *testing.F) {
	h, err := NewHotSet([][]int64{{1, 5, 8}, {0}}, []int64{10, 2})
	if err != nil {
		f.Fatal(err)
	}
	seed := filepath.Join(f.TempDir(), HotmapParquetFile)
	if err := WriteHotmapParquet(seed, h, []string{"a", "b"}); err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(seed)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:len(b)/2])
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), HotmapParquetFile)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadHotmapParquet(path, []int64{10, 2}); err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("ReadHotmapParquet = %v; want ErrInvalid", err)
		}
	})
}
