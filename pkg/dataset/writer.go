package dataset

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/metadata"

	"github.com/picasso-ctr/picasso/pkg/atomicfile"
)

// WriterOptions configures a Writer.
type WriterOptions struct {
	// RowGroupRows is the number of rows per row group (default 65536).
	// Every row group but the last of a file holds exactly this many rows.
	RowGroupRows int
	// IDs is the type sparse IDs are written with.
	IDs SlotType
	// WithPTrue writes the spec's p_true column (batches must carry PTrue).
	WithPTrue bool
	// Metadata is stored as key/value metadata in the file footer.
	Metadata map[string]string

	viaLibrary bool // tests: the Parquet library's column writers, not plainFile
}

// Writer writes batches to one Parquet file. It writes to a temporary name
// beside the target and renames on Close, so a crash never leaves a file that
// looks complete. Not safe for concurrent use.
//
// Rows are buffered column by column in the types written (groupColumns)
// and written a row group at a time: a spec without multi-hot features by
// picasso's own writer (plainFile, on little-endian machines), one with
// lists by the Parquet library's column writers, with their definition and
// repetition levels. The library gives the bytes Arrow's Parquet writer
// gives for the same rows (ArrowSchema, as ParquetSchema lays it out);
// plainFile the same schema, values and metadata in other bytes.
type Writer struct {
	path, tmp string
	f         *os.File
	pw        *file.Writer  // the library's writer
	plain     *plainFile    // or picasso's own (no lists)
	bf        *bufferedFile // plain's file
	cols      *groupColumns
	spec      *Spec
	opts      WriterOptions
	pending   int
	rows      int64
	closed    bool
}

// groupColumns buffers a row group column by column, in the types written.
type groupColumns struct {
	label, ptrue []float32
	dense        [][]float32
	ids64        [][]int64 // SlotInt64
	ids32        [][]int32 // SlotInt32
	def, rep     [][]int16 // of a multi-hot feature's list column, else nil
}

// The levels of a list column as ArrowSchema writes it (a required LIST
// group, its repeated group and an optional element): an empty list is one
// level of definition 0, an ID one of definition 2, repeated (1) after the
// first of its row.
const (
	listEmptyDef = 0
	listIDDef    = 2
)

func hasLists(spec *Spec) bool {
	for _, f := range spec.Sparse {
		if f.MultiHot {
			return true
		}
	}
	return false
}

// plainTypes is the Parquet type plainFile writes for each Arrow type of a
// schema without lists (ArrowSchema's float32, int32 and int64 columns).
var plainTypes = map[arrow.Type]int32{arrow.FLOAT32: plainFloat, arrow.INT32: plainInt32, arrow.INT64: plainInt64}

// NewWriter creates path (through a temporary file) for rows of spec.
func NewWriter(path string, spec *Spec, opts WriterOptions) (*Writer, error) {
	if opts.RowGroupRows <= 0 {
		opts.RowGroupRows = 65536
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("dataset: create %s: %w", path, err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("dataset: create %s: %w", path, err)
	}
	if err := f.Chmod(atomicfile.Mode); err != nil { // CreateTemp's 0600 would hide the data
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("dataset: create %s: %w", path, err)
	}
	schema := ArrowSchema(spec, opts.IDs, opts.WithPTrue)
	props := writerProps(opts)
	fail := func(err error) (*Writer, error) {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("dataset: create %s: %w", path, err)
	}
	keys := make([]string, 0, len(opts.Metadata))
	for k := range opts.Metadata {
		keys = append(keys, k)
	}
	sort.Strings(keys) // same options, same bytes
	w := &Writer{path: path, tmp: f.Name(), f: f, spec: spec, opts: opts}
	pqSchema, err := ParquetSchema(schema)
	if err != nil {
		return fail(err)
	}
	arrowSchema, err := ArrowSchemaMetadata(schema)
	if err != nil {
		return fail(err)
	}
	c := &groupColumns{dense: make([][]float32, len(spec.Dense)), def: make([][]int16, len(spec.Sparse)), rep: make([][]int16, len(spec.Sparse))}
	if opts.IDs == SlotInt32 {
		c.ids32 = make([][]int32, len(spec.Sparse))
	} else {
		c.ids64 = make([][]int64, len(spec.Sparse))
	}
	w.cols = c
	if nativeLittle && !opts.viaLibrary && !hasLists(spec) {
		// picasso's own writer (plainwrite.go), with the columns, types
		// and key-value metadata (the Arrow schema first) the library
		// would write.
		cols := make([]plainCol, len(schema.Fields()))
		for i, fd := range schema.Fields() {
			cols[i] = plainCol{fd.Name, plainTypes[fd.Type.ID()]}
		}
		kv := [][2]string{{ArrowSchemaKey, arrowSchema}}
		for _, k := range keys {
			kv = append(kv, [2]string{k, opts.Metadata[k]})
		}
		w.bf = newBufferedFile(f)
		w.plain = newPlainFile(w.bf, cols, kv, "picasso")
		return w, nil
	}
	meta := metadata.KeyValueMetadata{}
	if err := meta.Append(ArrowSchemaKey, arrowSchema); err != nil {
		return fail(err)
	}
	w.pw = file.NewParquetWriter(newBufferedFile(f), pqSchema.Root(), file.WithWriterProps(props), file.WithWriteMetadata(meta))
	for _, k := range keys {
		if err := w.pw.AppendKeyValueMetadata(k, opts.Metadata[k]); err != nil {
			return fail(err)
		}
	}
	return w, nil
}

// writerProps returns the Parquet writer properties of a Writer.
func writerProps(opts WriterOptions) *parquet.WriterProperties {
	return parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(int64(opts.RowGroupRows)),
		parquet.WithDictionaryDefault(false),
		// Pages of 32 KiB hold 4,096 IDs or 8,192 floats: a reader's batch
		// of 8,192 rows takes whole pages, which the plain path decodes
		// straight into the batch instead of through a page-sized buffer
		// for every column (1 MiB each at the library's default).
		parquet.WithDataPageSize(32<<10),
		parquet.WithCreatedBy("picasso"),
		parquet.WithStats(false),
	)
}

// Rows returns the number of rows written so far, those of the row group
// not yet flushed included.
func (w *Writer) Rows() int64 { return w.rows + int64(w.pending) }

// Write appends rows [lo, hi) of b, cutting row groups at RowGroupRows.
func (w *Writer) Write(b *Batch, lo, hi int) error {
	if w.opts.IDs == SlotInt32 {
		for s, f := range w.spec.Sparse {
			ids := b.Sparse[s].IDs
			if c := &b.Sparse[s]; c.Offsets != nil {
				ids = c.IDs[c.Offsets[lo]:c.Offsets[hi]]
			} else {
				ids = ids[lo:hi]
			}
			for _, v := range ids {
				if v != int64(int32(v)) {
					return fmt.Errorf("dataset: write %s: column %s: id %d does not fit the file's 32-bit IDs", w.path, f.Name, v)
				}
			}
		}
	}
	for lo < hi {
		n := min(hi-lo, w.opts.RowGroupRows-w.pending)
		w.append(b, lo, lo+n)
		lo += n
		w.pending += n
		if w.pending == w.opts.RowGroupRows {
			if err := w.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteBatch appends all of b.
func (w *Writer) WriteBatch(b *Batch) error { return w.Write(b, 0, b.N) }

// EndRowGroup writes the buffered rows as a row group now, even if it is
// short (used to make one row group per mini-batch).
func (w *Writer) EndRowGroup() error {
	if w.pending == 0 {
		return nil
	}
	return w.flush()
}

func (w *Writer) append(b *Batch, lo, hi int) {
	c := w.cols
	c.label = append(c.label, b.Label[lo:hi]...)
	nd := len(c.dense)
	for d := range c.dense {
		col := c.dense[d]
		for i := lo; i < hi; i++ {
			col = append(col, b.Dense[i*nd+d])
		}
		c.dense[d] = col
	}
	for s, feat := range w.spec.Sparse {
		sc := &b.Sparse[s]
		var ids []int64
		if !feat.MultiHot {
			ids = sc.IDs[lo:hi]
		} else {
			ids = sc.IDs[sc.Offsets[lo]:sc.Offsets[hi]]
			def, rep := c.def[s], c.rep[s]
			for i := lo; i < hi; i++ {
				n := int(sc.Offsets[i+1] - sc.Offsets[i])
				if n == 0 {
					def, rep = append(def, listEmptyDef), append(rep, 0)
					continue
				}
				def, rep = append(def, listIDDef), append(rep, 0)
				for range n - 1 {
					def, rep = append(def, listIDDef), append(rep, 1)
				}
			}
			c.def[s], c.rep[s] = def, rep
		}
		if c.ids32 == nil {
			c.ids64[s] = append(c.ids64[s], ids...)
			continue
		}
		col := c.ids32[s]
		for _, v := range ids {
			col = append(col, int32(v))
		}
		c.ids32[s] = col
	}
	if w.opts.WithPTrue && w.spec.PTrue != "" {
		c.ptrue = append(c.ptrue, b.PTrue[lo:hi]...)
	}
}

func (w *Writer) flush() error {
	if err := w.flushGroup(); err != nil {
		return fmt.Errorf("dataset: write %s: %w", w.path, err)
	}
	w.rows += int64(w.pending)
	w.pending = 0
	return nil
}

// flushGroup writes the buffered columns as one row group, in schema order.
func (w *Writer) flushGroup() error {
	c := w.cols
	if w.plain != nil {
		nd, ns := len(c.dense), len(w.spec.Sparse)
		err := w.plain.writeGroup(len(c.label), func(k int) []byte {
			switch {
			case k == 0:
				return bytesOf(c.label)
			case k <= nd:
				return bytesOf(c.dense[k-1])
			case k <= nd+ns && c.ids32 != nil:
				return bytesOf(c.ids32[k-1-nd])
			case k <= nd+ns:
				return bytesOf(c.ids64[k-1-nd])
			}
			return bytesOf(c.ptrue)
		})
		if err != nil {
			return err
		}
		c.reset()
		return nil
	}
	rg := w.pw.AppendRowGroup()
	f32 := func(v []float32) error {
		cw, err := rg.NextColumn()
		if err != nil {
			return err
		}
		_, err = cw.(*file.Float32ColumnChunkWriter).WriteBatch(v, nil, nil)
		return err
	}
	if err := f32(c.label); err != nil {
		return err
	}
	for _, d := range c.dense {
		if err := f32(d); err != nil {
			return err
		}
	}
	for s := range w.spec.Sparse {
		cw, err := rg.NextColumn()
		if err != nil {
			return err
		}
		if c.ids32 != nil {
			_, err = cw.(*file.Int32ColumnChunkWriter).WriteBatch(c.ids32[s], c.def[s], c.rep[s])
		} else {
			_, err = cw.(*file.Int64ColumnChunkWriter).WriteBatch(c.ids64[s], c.def[s], c.rep[s])
		}
		if err != nil {
			return err
		}
	}
	if w.opts.WithPTrue && w.spec.PTrue != "" {
		if err := f32(c.ptrue); err != nil {
			return err
		}
	}
	c.reset()
	return nil
}

// reset empties the buffered columns, keeping their memory.
func (c *groupColumns) reset() {
	c.label, c.ptrue = c.label[:0], c.ptrue[:0]
	for d := range c.dense {
		c.dense[d] = c.dense[d][:0]
	}
	for s := range c.ids32 {
		c.ids32[s] = c.ids32[s][:0]
	}
	for s := range c.ids64 {
		c.ids64[s] = c.ids64[s][:0]
	}
	for s := range c.def { // levels, of multi-hot columns only (nil otherwise)
		c.def[s], c.rep[s] = c.def[s][:0], c.rep[s][:0]
	}
}

// Close flushes, closes and renames the file into place.
func (w *Writer) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	if w.pending > 0 {
		if err := w.flush(); err != nil {
			w.abort()
			return err
		}
	}
	closeFile := w.pw.Close
	if w.plain != nil {
		closeFile = func() error {
			err := w.plain.close()
			if err == nil {
				if err = w.bf.Flush(); err == nil {
					atomicfile.StartWriteback(w.f, 0, 0)
				}
			}
			if cerr := w.bf.Close(); err == nil {
				err = cerr
			}
			return err
		}
	}
	if err := closeFile(); err != nil { // closes w.f too
		os.Remove(w.tmp)
		return fmt.Errorf("dataset: close %s: %w", w.path, err)
	}
	if err := os.Rename(w.tmp, w.path); err != nil {
		os.Remove(w.tmp)
		return fmt.Errorf("dataset: close %s: %w", w.path, err)
	}
	return nil
}

// Abort discards the file.
func (w *Writer) Abort() {
	if w.closed {
		return
	}
	w.closed = true
	w.abort()
}

func (w *Writer) abort() {
	w.f.Close()
	os.Remove(w.tmp)
}

// bufferedFile gathers the Parquet writer's many small writes (a page
// header, a page, per column of every row group) into large ones; Close
// flushes and closes the file.
type bufferedFile struct {
	*bufio.Writer
	f *os.File
}

func newBufferedFile(f *os.File) *bufferedFile {
	return &bufferedFile{Writer: bufio.NewWriterSize(f, 1<<20), f: f}
}

func (b *bufferedFile) Close() error {
	err := b.Flush()
	if cerr := b.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// CheckOutputSizes reports, prefixed with who, each of the row-group rows,
// file rows and worker count of an output's options that is negative (0
// stands for the default).
func CheckOutputSizes(who string, rowGroupRows int, fileRows int64, workers int) []error {
	var errs []error
	for _, v := range []struct {
		name string
		n    int64
	}{{"row group rows", int64(rowGroupRows)}, {"file rows", fileRows}, {"workers", int64(workers)}} {
		if v.n < 0 {
			errs = append(errs, fmt.Errorf("%s: %s %d is negative (0 for the default)", who, v.name, v.n))
		}
	}
	return errs
}
