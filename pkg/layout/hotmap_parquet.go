package layout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"

	"github.com/picasso-ctr/picasso/pkg/atomicfile"
)

// HotmapParquetFile is the hot map as Parquet, for tools other than
// picasso (DuckDB, pyarrow): one row per hot row, in slot order, with the
// columns table (int32, the table's index in the data's table order),
// table_name (string), slot (int32, the packed slot that the hot
// mini-batches' sparse columns hold) and id (int64, the row's ID in its
// table, as the input and the cold mini-batches hold it). It says the same
// as hotmap.bin, which picasso reads.
const HotmapParquetFile = "hotmap.parquet"

var hotmapSchema = arrow.NewSchema([]arrow.Field{
	{Name: "table", Type: arrow.PrimitiveTypes.Int32},
	{Name: "table_name", Type: arrow.BinaryTypes.String},
	{Name: "slot", Type: arrow.PrimitiveTypes.Int32},
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// WriteHotmapParquet writes h as HotmapParquetFile at path (through a
// temporary name); names holds each table's name.
func WriteHotmapParquet(path string, h *HotSet, names []string) error {
	if len(names) != h.Tables() {
		return fmt.Errorf("layout: hotmap %s: %d table names for %d tables", path, len(names), h.Tables())
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		// slot and id are unique, so a dictionary only overflows into
		// plain pages; a chunk with both encodings lists them in map
		// order, which would make two writes of one hot set differ.
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
}

// nopCloser keeps the Parquet writer from closing atomicfile's file.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// ReadHotmapParquet reads a HotmapParquetFile back into a HotSet, given
// the tables' row counts; it checks that the slots are the packed slots of
// the IDs (table by table, ascending IDs), as hotmap.bin's are.
func ReadHotmapParquet(path string, rows []int64) (*HotSet, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("layout: %s: %s: %w", path, fmt.Sprintf(format, a...), ErrInvalid)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("layout: %w", err)
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		return nil, bad("%v", err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		return nil, bad("%v", err)
	}
	if len(fr.Manifest.Fields) != 4 {
		return nil, bad("columns are not table, table_name, slot, id")
	}
	for i, f := range fr.Manifest.Fields {
		if f.Field.Name != hotmapSchema.Field(i).Name {
			return nil, bad("columns are not table, table_name, slot, id")
		}
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		return nil, bad("%v", err)
	}
	defer rr.Release()
	hot := make([][]int64, len(rows))
	var slots []int32
	for rr.Next() {
		rec := rr.Record()
		tab, ok1 := rec.Column(0).(*array.Int32)
		slot, ok2 := rec.Column(2).(*array.Int32)
		id, ok3 := rec.Column(3).(*array.Int64)
		if !ok1 || !ok2 || !ok3 {
			return nil, bad("column types are not int32, string, int32, int64")
		}
		for i := range int(rec.NumRows()) {
			t := int(tab.Value(i))
			if t < 0 || t >= len(rows) {
				return nil, bad("row %d: table %d of %d", len(slots), t, len(rows))
			}
			hot[t] = append(hot[t], id.Value(i))
			slots = append(slots, slot.Value(i))
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return nil, bad("%v", err)
	}
	h, err := NewHotSet(hot, rows)
	if err != nil {
		return nil, bad("%v", err)
	}
	k := 0
	for t := range h.Tables() {
		for i := range h.IDs(t) {
			if want := int32(h.Offset(t) + int64(i)); slots[k] != want {
				return nil, bad("row %d: slot %d; the packed slot of table %d's ID %d is %d", k, slots[k], t, h.IDs(t)[i], want)
			}
			k++
		}
	}
	return h, nil
}

// CheckHotmapParquet checks that the layout's hotmap.parquet, when it has
// one, says what hotmap.bin says.
func (l *Layout) CheckHotmapParquet() error {
	path := filepath.Join(l.Dir, HotmapParquetFile)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var rows []int64
	for _, t := range l.Manifest.Spec.Tables() {
		rows = append(rows, t.Rows)
	}
	h, err := ReadHotmapParquet(path, rows)
	if err != nil {
		return err
	}
	for t := range h.Tables() {
		a, b := h.IDs(t), l.hot.IDs(t)
		if len(a) != len(b) {
			return fmt.Errorf("layout: %s: table %d has %d hot rows; %s has %d: %w", path, t, len(a), HotmapFile, len(b), ErrInvalid)
		}
		for i := range a {
			if a[i] != b[i] {
				return fmt.Errorf("layout: %s: table %d slot %d is ID %d; %s says %d: %w", path, t, i, a[i], HotmapFile, b[i], ErrInvalid)
			}
		}
	}
	return nil
}
