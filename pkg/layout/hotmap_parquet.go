package layout

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/metadata"
	"github.com/apache/arrow/go/v15/parquet/schema"

	"github.com/picasso-ctr/picasso/pkg/atomicfile"
	"github.com/picasso-ctr/picasso/pkg/dataset"
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

const (
	// hotmapRowGroup is the rows of a row group of HotmapParquetFile.
	hotmapRowGroup = 1 << 20
	// hotmapBatch is the rows that WriteHotmapParquet hands the column
	// writers at a time and ReadHotmapParquet decodes at a time.
	hotmapBatch = 1 << 16
)

// WriteHotmapParquet writes h as HotmapParquetFile at path (through a
// temporary name); names holds each table's name.
//
// The file is written with the Parquet library's column writers, in the
// schema and with the Arrow schema metadata that Arrow's record writer
// gave it (dataset.ParquetSchema), so Arrow readers see the same file;
// Arrow's writer package costs every picasso command its start-up.
func WriteHotmapParquet(path string, h *HotSet, names []string) error {
	if len(names) != h.Tables() {
		return fmt.Errorf("layout: hotmap %s: %d table names for %d tables", path, len(names), h.Tables())
	}
	sc, err := dataset.ParquetSchema(hotmapSchema)
	if err != nil {
		return fmt.Errorf("layout: hotmap %s: %w", path, err)
	}
	arrowMeta, err := dataset.ArrowSchemaMetadata(hotmapSchema)
	if err != nil {
		return fmt.Errorf("layout: hotmap %s: %w", path, err)
	}
	err = atomicfile.Write(path, func(w io.Writer) (err error) {
		// The library panics where its sink fails at some steps (the
		// magic number); that is an I/O error, not a bug of ours.
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("parquet writer: %v", p)
			}
		}()
		// slot and id are unique, so a dictionary only overflows into
		// plain pages; a chunk with both encodings lists them in map
		// order, which would make two writes of one hot set differ.
		props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithCreatedBy("picasso"),
			parquet.WithMaxRowGroupLength(hotmapRowGroup), parquet.WithDictionaryFor("slot", false), parquet.WithDictionaryFor("id", false))
		meta := metadata.NewKeyValueMetadata()
		if err := meta.Append(dataset.ArrowSchemaKey, arrowMeta); err != nil {
			return err
		}
		fw := file.NewParquetWriter(nopCloser{w}, sc.Root(), file.WithWriterProps(props), file.WithWriteMetadata(meta))
		bw := hotmapBatchWriter{h: h, names: make([]parquet.ByteArray, len(names))}
		for t, name := range names {
			bw.names[t] = parquet.ByteArray(name)
		}
		// An empty hot set gets no row group: the library's empty column
		// chunk would give its data page the file's first byte as offset.
		for lo := int64(0); lo < h.Rows(); lo += hotmapRowGroup {
			rgw := fw.AppendRowGroup()
			for c := range hotmapSchema.NumFields() {
				cw, err := rgw.NextColumn()
				if err != nil {
					return err
				}
				for s := lo; s < min(lo+hotmapRowGroup, h.Rows()); s += hotmapBatch {
					if err := bw.write(cw, c, s, min(s+hotmapBatch, lo+hotmapRowGroup, h.Rows())); err != nil {
						return err
					}
				}
			}
			// The file writer drops the error of a row group it closes.
			if err := rgw.Close(); err != nil {
				return err
			}
		}
		return fw.Close()
	})
	if err != nil {
		return fmt.Errorf("layout: hotmap %s: %w", path, err)
	}
	return nil
}

// hotmapBatchWriter writes HotmapParquetFile's columns straight from the
// hot set, a batch of rows at a time: a row group's column is complete
// before the next column starts, so buffering rows would hold a whole row
// group of every column.
type hotmapBatchWriter struct {
	h     *HotSet
	names []parquet.ByteArray
	i32   []int32
	i64   []int64
	str   []parquet.ByteArray
}

// write writes column c of the packed hot table's rows [lo, hi) to cw.
func (b *hotmapBatchWriter) write(cw file.ColumnChunkWriter, c int, lo, hi int64) error {
	b.i32, b.i64, b.str = b.i32[:0], b.i64[:0], b.str[:0]
	for t := range b.h.Tables() {
		ids := b.h.IDs(t)
		off := b.h.Offset(t)
		for s := max(lo, off); s < min(hi, off+int64(len(ids))); s++ {
			switch c {
			case 0:
				b.i32 = append(b.i32, int32(t))
			case 1:
				b.str = append(b.str, b.names[t])
			case 2:
				b.i32 = append(b.i32, int32(s))
			case 3:
				b.i64 = append(b.i64, ids[s-off])
			}
		}
	}
	var err error
	switch c {
	case 0, 2:
		_, err = cw.(*file.Int32ColumnChunkWriter).WriteBatch(b.i32, nil, nil)
	case 1:
		_, err = cw.(*file.ByteArrayColumnChunkWriter).WriteBatch(b.str, nil, nil)
	case 3:
		_, err = cw.(*file.Int64ColumnChunkWriter).WriteBatch(b.i64, nil, nil)
	}
	return err
}

// nopCloser keeps the Parquet writer from closing atomicfile's file.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// ReadHotmapParquet reads a HotmapParquetFile back into a HotSet, given
// the tables' row counts; it checks that the slots are the packed slots of
// the IDs (table by table, ascending IDs), as hotmap.bin's are. It reads
// files of any row groups, Arrow's writer's included (the hot maps of
// earlier picasso versions), and returns an error, never panics, on a
// file of another shape or a corrupt one.
func ReadHotmapParquet(path string, rows []int64) (h *HotSet, err error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("layout: %s: %s: %w", path, fmt.Sprintf(format, a...), ErrInvalid)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("layout: %w", err)
	}
	defer f.Close()
	// The Parquet decoder panics on some corrupt footers and pages (a
	// bit-flipped Snappy block); that is bad data, not a bug.
	defer func() {
		if p := recover(); p != nil {
			h, err = nil, bad("corrupt Parquet file (%v)", p)
		}
	}()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		return nil, bad("%v", err)
	}
	defer pf.Close()
	root := pf.MetaData().Schema.Root()
	if root.NumFields() != hotmapSchema.NumFields() {
		return nil, bad("columns are not table, table_name, slot, id")
	}
	for i := range root.NumFields() {
		if root.Field(i).Name() != hotmapSchema.Field(i).Name {
			return nil, bad("columns are not table, table_name, slot, id")
		}
	}
	for i := range root.NumFields() {
		if !hotmapType(root.Field(i), hotmapSchema.Field(i).Type) {
			return nil, bad("column types are not int32, string, int32, int64")
		}
	}
	hot := make([][]int64, len(rows))
	var tabs, slots []int32 // of each row
	// table_name is not read: a HotSet has no names.
	hotmapRead := [3]int{0, 2, 3}
	var tab, slot []int32
	var id []int64
	var def []int16
	for g := range pf.NumRowGroups() {
		rg := pf.RowGroup(g)
		var readers [3]file.ColumnChunkReader
		for k, c := range hotmapRead {
			if readers[k], err = rg.Column(c); err != nil {
				return nil, bad("row group %d, column %s: %v", g, hotmapSchema.Field(c).Name, err)
			}
		}
		for left := rg.NumRows(); left > 0; {
			n := int(min(left, hotmapBatch))
			tab, slot = slices.Grow(tab[:0], n)[:n], slices.Grow(slot[:0], n)[:n]
			id, def = slices.Grow(id[:0], n)[:n], slices.Grow(def[:0], n)[:n]
			// The readers are of the types that hotmapType checked.
			for k, err := range []error{
				readColumn(readers[0].(*file.Int32ColumnChunkReader), tab, def),
				readColumn(readers[1].(*file.Int32ColumnChunkReader), slot, def),
				readColumn(readers[2].(*file.Int64ColumnChunkReader), id, def),
			} {
				if err != nil {
					return nil, bad("row group %d, column %s: %v", g, hotmapSchema.Field(hotmapRead[k]).Name, err)
				}
			}
			for i := range n {
				t := int(tab[i])
				if t < 0 || t >= len(rows) {
					return nil, bad("row %d: table %d of %d", len(slots), t, len(rows))
				}
				hot[t] = append(hot[t], id[i])
				tabs = append(tabs, tab[i])
				slots = append(slots, slot[i])
			}
			left -= int64(n)
		}
	}
	h, err = NewHotSet(hot, rows)
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
	// The slots run 0, 1, ... in row order; each must also be the packed
	// slot of its row's own ID, which rows out of ID order are not.
	next := make([]int, len(rows)) // each table's rows seen
	for k, s := range slots {
		t := int(tabs[k])
		id := hot[t][next[t]]
		next[t]++
		if want, _ := h.Slot(t, id); s != want {
			return nil, bad("row %d: slot %d; the packed slot of table %d's ID %d is %d", k, s, t, id, want)
		}
	}
	return h, nil
}

// hotmapType reports whether Parquet field n reads as Arrow type want, as
// Arrow's reader reads it, for hotmapSchema's types: a top-level column,
// required or optional (as pyarrow writes it), of the physical type and
// the logical type (an integer's width and sign) that Arrow maps to want.
func hotmapType(n schema.Node, want arrow.DataType) bool {
	p, ok := n.(*schema.PrimitiveNode)
	if !ok || p.RepetitionType() == parquet.Repetitions.Repeated {
		return false
	}
	intOf := func(phys parquet.Type, bits int8) bool {
		if p.PhysicalType() != phys {
			return false
		}
		switch lt := p.LogicalType().(type) {
		case nil, schema.NoLogicalType: // a plain integer
			return true
		case *schema.IntLogicalType:
			return lt.BitWidth() == bits && lt.IsSigned()
		}
		return false
	}
	switch want.ID() {
	case arrow.INT32:
		return intOf(parquet.Types.Int32, 32)
	case arrow.INT64:
		return intOf(parquet.Types.Int64, 64)
	case arrow.STRING:
		return p.PhysicalType() == parquet.Types.ByteArray && p.LogicalType().Equals(schema.StringLogicalType{})
	}
	return false
}

// columnReader is a typed column chunk reader of the Parquet library.
type columnReader[T any] interface {
	ReadBatch(batchSize int64, values []T, defLvls, repLvls []int16) (total int64, valuesRead int, err error)
	Err() error
}

// readColumn reads the next len(vals) values of a column that is not
// repeated into vals; def, at least as long, takes an optional column's
// definition levels. A null or a column that ends early is an error.
func readColumn[T any](r columnReader[T], vals []T, def []int16) error {
	for got := 0; got < len(vals); {
		total, n, err := r.ReadBatch(int64(len(vals)-got), vals[got:], def[got:], nil)
		if err == nil {
			// A page that did not decode: the library records it and
			// goes on with the next, which would shift the rows after it.
			err = r.Err()
		}
		if err != nil {
			return err
		}
		if total == 0 {
			return fmt.Errorf("the column ends %d values short of its row group's rows", len(vals)-got)
		}
		if int64(n) != total {
			return errors.New("a null value")
		}
		got += n
	}
	return nil
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
