package dataset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/metadata"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
	"github.com/apache/arrow/go/v15/parquet/schema"

	"github.com/picasso-ctr/picasso/internal/par"
)

// RowGroup names one row group of one file of a dataset.
type RowGroup struct {
	File  string
	Index int
	// Rows is the group's row count (Dataset.RowGroups). A Reader given
	// fewer rows than the group holds reads only that many, from its
	// start: the direct paths decompress and decode no page past them,
	// the record path at most one batch past them.
	Rows int64
	// First is the dataset-wide index of the group's first row.
	First int64
}

// Dataset is a set of Parquet files read with one Spec. Opening reads only
// the footers; rows are streamed by Readers.
type Dataset struct {
	spec   *Spec
	files  []string
	groups []RowGroup
	rows   int64
	fp     string
	meta   map[string]*fileMeta // by file name

	// Footers parsed again after Open dropped them (keptChunks), the
	// last few parsed, for the column path.
	footMu sync.Mutex
	recent []recentFooter
}

// recentFooter is a footer parsed again, for Dataset.footer.
type recentFooter struct {
	file string
	md   *metadata.FileMetaData
}

// keptChunks bounds the column chunks whose footer metadata Open keeps
// for the readers (about 330 bytes each in memory, so about 5 MB): a
// layout has a row group a mini-batch, and keeping every footer of a
// billion rows' layout would take gigabytes. Past it, readers parse each
// file's footer as they open it, as they did before Open kept them.
var keptChunks = 1 << 14

// fileMeta is what Open learnt of one file: its footer, parsed once for
// every reader (nil when the dataset has more than keptChunks column
// chunks), and its size.
type fileMeta struct {
	md   *metadata.FileMetaData
	size int64
	// sparse is, for each one-hot sparse feature, its leaf column when
	// the column path can decode it (SparseGroup), else -1; int32 is set
	// for INT32 columns.
	sparse []int
	int32  []bool
}

// ListParquet returns path itself when it is a file, or the *.parquet files
// directly in it (sorted) when it is a directory. Subdirectories are not
// read: a copy of the data kept below train/ (a backup, a layout) must not
// be counted twice. Names starting with "." are temporary files.
func ListParquet(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: list %s: %w", path, err)
	}
	var files []string
	for _, d := range entries {
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".parquet") && !strings.HasPrefix(d.Name(), ".") {
			files = append(files, filepath.Join(path, d.Name()))
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("dataset: %s: no .parquet files: %w", path, ErrNoData)
	}
	sort.Strings(files)
	return files, nil
}

// Open lists the Parquet files at path (a file or a directory), checks that
// each has the spec's columns with usable types, and indexes their row groups.
func Open(spec *Spec, path string) (*Dataset, error) {
	files, err := ListParquet(path)
	if err != nil {
		return nil, err
	}
	ds := &Dataset{spec: spec, files: files, meta: make(map[string]*fileMeta, len(files))}
	// The footers are parsed side by side (a file's schema is converted
	// and checked too, about half a millisecond each), the index built in
	// file order after; the first file in order with an error names it.
	metas := make([]*fileMeta, len(files))
	errs := make([]error, len(files))
	par.Each(len(files), runtime.GOMAXPROCS(0), func(i int) { metas[i], errs[i] = openMeta(spec, files[i]) })
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	h := sha256.New()
	for i, fn := range files {
		fm := metas[i]
		md := fm.md
		ds.meta[fn] = fm
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00", filepath.Base(fn), fm.size, md.NumRows)
		for g := range md.RowGroups {
			n := md.RowGroup(g).NumRows()
			fmt.Fprintf(h, "%d,", n)
			ds.groups = append(ds.groups, RowGroup{File: fn, Index: g, Rows: n, First: ds.rows})
			ds.rows += n
		}
	}
	for _, c := range spec.Columns(true) {
		fmt.Fprintf(h, "%s\x00", c)
	}
	ds.fp = hex.EncodeToString(h.Sum(nil))[:16]
	chunks := 0
	for _, fm := range metas {
		chunks += len(fm.md.RowGroups) * fm.md.Schema.NumColumns()
	}
	if chunks > keptChunks {
		for _, fm := range metas {
			fm.md = nil
		}
	}
	return ds, nil
}

// footer returns the footer of file fn of the dataset: the one Open kept,
// or else one parsed again (the last four parsed are kept). A file whose
// size changed since Open is an error.
func (d *Dataset) footer(fn string) (*metadata.FileMetaData, error) {
	fm := d.meta[fn]
	if fm == nil {
		return nil, fmt.Errorf("dataset: %s is not a file of the dataset", fn)
	}
	if fm.md != nil {
		return fm.md, nil
	}
	d.footMu.Lock()
	for _, r := range d.recent {
		if r.file == fn {
			d.footMu.Unlock()
			return r.md, nil
		}
	}
	d.footMu.Unlock()
	f, err := os.Open(fn)
	if err != nil {
		return nil, fmt.Errorf("dataset: open %s: %w", fn, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() != fm.size {
		return nil, changedError(fn, st.Size(), fm.size)
	}
	pf, err := file.NewParquetReader(f)
	if err != nil {
		return nil, fmt.Errorf("dataset: open %s: %w", fn, err)
	}
	md := pf.MetaData()
	d.footMu.Lock()
	defer d.footMu.Unlock()
	for _, r := range d.recent { // parsed meanwhile by another caller
		if r.file == fn {
			return r.md, nil
		}
	}
	if len(d.recent) == 4 {
		d.recent = d.recent[1:]
	}
	d.recent = append(d.recent, recentFooter{fn, md})
	return md, nil
}

// changedError says that file fn has size bytes, where Open saw was.
func changedError(fn string, size, was int64) error {
	return fmt.Errorf("dataset: %s: the file changed since the dataset was opened (%d bytes, then %d): %w", fn, size, was, ErrBadData)
}

// openMeta reads file fn's footer and checks its schema against spec.
func openMeta(spec *Spec, fn string) (*fileMeta, error) {
	f, err := os.Open(fn)
	if err != nil {
		return nil, fmt.Errorf("dataset: open %s: %w", fn, err)
	}
	defer f.Close()
	st, err := f.Stat() // of the file whose footer is read, even if fn is replaced meanwhile
	if err != nil {
		return nil, fmt.Errorf("dataset: open %s: %w", fn, err)
	}
	pf, err := file.NewParquetReader(f)
	if err != nil {
		return nil, fmt.Errorf("dataset: open %s: %w", fn, err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("dataset: open %s: %w", fn, err)
	}
	sc, err := fr.Schema()
	if err == nil {
		err = checkSchema(fn, spec, sc)
	}
	if err != nil {
		return nil, err
	}
	md := pf.MetaData()
	fm := &fileMeta{md: md, size: st.Size()}
	fm.sparse, fm.int32 = sparseLeaves(spec, md, sc)
	return fm, nil
}

func checkSchema(fn string, spec *Spec, sc *arrow.Schema) error {
	var errs []error
	need := func(col string, ok func(arrow.DataType) bool, want string) {
		idx := sc.FieldIndices(col)
		if len(idx) == 0 {
			errs = append(errs, fmt.Errorf("dataset: %s: column %q is missing: %w", fn, col, ErrSchema))
			return
		}
		if t := sc.Field(idx[0]).Type; !ok(t) {
			errs = append(errs, fmt.Errorf("dataset: %s: column %q has type %s, want %s: %w", fn, col, t, want, ErrSchema))
		}
	}
	need(spec.Label, isNumeric, "an integer or float 0/1")
	for _, d := range spec.Dense {
		need(d, isNumeric, "float32 (or another number)")
	}
	for _, f := range spec.Sparse {
		if f.MultiHot {
			need(f.Name, func(t arrow.DataType) bool {
				l, ok := t.(*arrow.ListType)
				return ok && isInteger(l.Elem())
			}, "list<int64>")
		} else {
			need(f.Name, isInteger, "int64 (or another integer)")
		}
	}
	if spec.PTrue != "" && len(sc.FieldIndices(spec.PTrue)) > 0 {
		need(spec.PTrue, isNumeric, "float32")
	}
	return errors.Join(errs...)
}

func isInteger(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

func isNumeric(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.FLOAT32, arrow.FLOAT64, arrow.BOOL:
		return true
	}
	return isInteger(t)
}

// Spec returns the spec the dataset was opened with.
func (d *Dataset) Spec() *Spec { return d.spec }

// Files returns the dataset's files in reading order.
func (d *Dataset) Files() []string { return d.files }

// RowGroups returns every row group in reading order.
func (d *Dataset) RowGroups() []RowGroup { return d.groups }

// Rows returns the total number of rows.
func (d *Dataset) Rows() int64 { return d.rows }

// Fingerprint identifies the dataset's files and the columns read from them:
// names, sizes and row-group row counts. It changes when a file is rewritten
// with other rows; it is not a content hash.
func (d *Dataset) Fingerprint() string { return d.fp }

// HasPTrue reports whether every file has the spec's p_true column.
func (d *Dataset) HasPTrue() bool {
	if d.spec.PTrue == "" {
		return false
	}
	for _, fn := range d.files {
		pf, err := file.OpenParquetFile(fn, false)
		if err != nil {
			return false
		}
		ok := pf.MetaData().Schema.ColumnIndexByName(d.spec.PTrue) >= 0
		pf.Close()
		if !ok {
			return false
		}
	}
	return true
}

// ReaderOptions configures a Reader.
type ReaderOptions struct {
	// RowGroups to read, in order; nil means all of the dataset's.
	RowGroups []RowGroup
	// BatchRows bounds the rows per Batch (default 8192). A batch never spans
	// two row groups.
	BatchRows int
	// WithPTrue also reads the p_true column (an error if a file lacks it).
	WithPTrue bool
	// SkipBad drops rows with bad values and counts them instead of failing.
	SkipBad bool
	// SparseOnly reads only the sparse columns: the batches' Label and
	// Dense stay nil, and the label and dense column chunks are neither
	// read nor decompressed (profile counts IDs and needs nothing else).
	// With SkipBad, only bad sparse values make a row bad.
	SparseOnly bool
	// DenseOnly reads only the label and dense columns (and p_true with
	// WithPTrue): the batches' Sparse stays nil and the sparse column
	// chunks are neither read nor decompressed (the trainer's dense
	// statistics need nothing else). It excludes SparseOnly.
	DenseOnly bool
}

// Reader streams batches from a dataset, one file and row group at a time,
// reading only the spec's columns. Not safe for concurrent use; open one
// Reader per worker over disjoint row groups.
type Reader struct {
	ds      *Dataset
	opts    ReaderOptions
	next    int // index into opts.RowGroups
	curFile string
	pf      *file.Reader
	fr      *pqarrow.FileReader
	cols    []int // leaf column indices of the current file
	rr      pqarrow.RecordReader
	rg      RowGroup
	rowInRG int64
	skipped int64
	rows    int64

	// The direct path (see direct): the columns to read in the current
	// file, or nil, and the open group's column readers.
	directCols []directCol
	ccr        []file.ColumnChunkReader
	inDirect   bool         // a group is open on the direct path
	osf        *os.File     // the current file, for the plain path's reads
	fileSize   int64        // its size
	plain      []plainChunk // the open group's columns when usePlain
	usePlain   bool         // the open group is read by the plain path (plain.go)
	noPlain    bool         // tests: never the plain path
	noMap      bool         // tests: the plain path reads chunks, never maps them
	unmap      func()       // releases the open group's mapped chunks, or nil
	left       int64        // rows of the open group still to read
	i32        []int32      // scratch: an INT32 column's values
	f32        []float32    // scratch: a dense column's values
	noDirect   bool         // tests: always the record reader path
	free       chan *Batch  // batches handed back (Release), refilled by the direct path
}

// directCol is one column the direct path reads: its leaf index, its role
// (label, dense, sparse or p_true) with the index of the feature, and
// whether its values are INT32 (sparse) rather than INT64 or FLOAT.
type directCol struct {
	leaf  int
	role  byte // 'l', 'd', 's' or 'p'
	i     int
	int32 bool
}

// NewReader returns a Reader over opts.RowGroups.
func (d *Dataset) NewReader(opts ReaderOptions) (*Reader, error) {
	if opts.RowGroups == nil {
		opts.RowGroups = d.groups
	}
	if opts.BatchRows <= 0 {
		opts.BatchRows = 8192
	}
	if opts.WithPTrue && d.spec.PTrue == "" {
		return nil, fmt.Errorf("dataset: p_true requested but the data config names no p_true column: %w", ErrSchema)
	}
	if opts.SparseOnly && opts.DenseOnly {
		return nil, errors.New("dataset: a reader takes SparseOnly or DenseOnly, not both")
	}
	return &Reader{ds: d, opts: opts, free: make(chan *Batch, 16)}, nil
}

// Release hands back a batch that Next returned and that the caller no
// longer uses (nor any slice of it): a later Next may fill it again instead
// of allocating, which saves the page faults of fresh memory when batches
// are many and short-lived. It may be called from another goroutine than
// Next's; a batch beyond the few the reader keeps is left to the GC.
func (r *Reader) Release(b *Batch) {
	if b == nil {
		return
	}
	select {
	case r.free <- b:
	default:
	}
}

// readsDense reports whether the reader reads the label and dense columns
// (all but SparseOnly), readsSparse the sparse ones (all but DenseOnly).
func (r *Reader) readsDense() bool  { return !r.opts.SparseOnly }
func (r *Reader) readsSparse() bool { return !r.opts.DenseOnly }

// columns returns the names of the columns the reader reads, in spec
// order.
func (r *Reader) columns() []string {
	s := r.ds.spec
	var names []string
	if r.readsDense() {
		names = append(append(names, s.Label), s.Dense...)
	}
	if r.readsSparse() {
		for _, f := range s.Sparse {
			names = append(names, f.Name)
		}
	}
	if r.opts.WithPTrue && s.PTrue != "" {
		names = append(names, s.PTrue)
	}
	return names
}

// reuse returns a released batch resized for n rows (label and nd dense
// values a row when dense, p_true when ptrue), or a new one. Every value is
// to be overwritten by the caller.
func (r *Reader) reuse(n, nd int, dense, ptrue bool) *Batch {
	old := &Batch{}
	select {
	case old = <-r.free:
	default:
	}
	f32 := func(v []float32, k int) []float32 {
		if cap(v) < k {
			return make([]float32, k)
		}
		return v[:k]
	}
	b := &Batch{N: n, Pos: Position{File: r.rg.File, RowGroup: r.rg.Index, Row: r.rowInRG}, Sparse: old.Sparse}
	if !r.readsSparse() {
		b.Sparse = nil
	} else if len(b.Sparse) != len(r.ds.spec.Sparse) {
		b.Sparse = make([]SparseColumn, len(r.ds.spec.Sparse))
	}
	for i := range b.Sparse {
		ids := b.Sparse[i].IDs
		if cap(ids) < n {
			ids = make([]int64, n)
		}
		b.Sparse[i] = SparseColumn{IDs: ids[:n]}
	}
	if dense {
		b.Label, b.Dense = f32(old.Label, n), f32(old.Dense, n*nd)
	}
	if ptrue {
		b.PTrue = f32(old.PTrue, n)
	}
	return b
}

// Skipped returns the number of bad rows dropped (SkipBad only).
func (r *Reader) Skipped() int64 { return r.skipped }

// Rows returns the number of rows returned so far.
func (r *Reader) Rows() int64 { return r.rows }

// Close releases the open file.
func (r *Reader) Close() error {
	r.endDirect()
	if r.rr != nil {
		r.rr.Release()
		r.rr = nil
	}
	if r.pf != nil {
		err := r.pf.Close() // closes r.osf
		r.pf, r.osf = nil, nil
		return err
	}
	return nil
}

// Next returns the next batch, or io.EOF after the last one.
func (r *Reader) Next(ctx context.Context) (*Batch, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if r.rr == nil && !r.inDirect {
			if r.next >= len(r.opts.RowGroups) {
				return nil, io.EOF
			}
			if err := r.openGroup(ctx, r.opts.RowGroups[r.next]); err != nil {
				return nil, err
			}
			r.next++
		}
		if r.inDirect {
			b, err := r.nextDirect()
			if err != nil {
				r.endDirect()
				return nil, err
			}
			if b == nil { // the group is done
				r.endDirect()
				continue
			}
			if b.N == 0 {
				continue
			}
			r.rows += int64(b.N)
			return b, nil
		}
		more, err := r.advance()
		if err != nil {
			return nil, err
		}
		if !more {
			err := r.rr.Err()
			r.rr.Release()
			r.rr = nil
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("dataset: %s: row group %d: %w: %w", r.rg.File, r.rg.Index, err, ErrBadData)
			}
			continue
		}
		rec := r.rr.Record()
		last := rec.NumRows() >= r.left // the group is read only in part
		if last {
			rec = rec.NewSlice(0, r.left) // its rows up to the part's end
		}
		b, err := r.decodeGuarded(rec)
		n := rec.NumRows()
		if last {
			rec.Release()
			r.rr.Release()
			r.rr = nil
		}
		if err != nil {
			return nil, err
		}
		r.rowInRG += n
		r.left -= n
		if b.N == 0 {
			continue
		}
		r.rows += int64(b.N)
		return b, nil
	}
}

// advance moves the record reader to its next record. The Parquet decoder
// panics on some corrupt pages (a bit-flipped Snappy block); that is bad
// data, so it becomes an error naming the file and row group, and the
// broken record reader is dropped.
func (r *Reader) advance() (more bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.rr = nil
			more, err = false, corruptError(r.rg, p)
		}
	}()
	return r.rr.Next(), nil
}

// corruptError describes a panic of the Parquet decoder in row group g.
func corruptError(g RowGroup, p any) error {
	return fmt.Errorf("dataset: %s: row group %d: corrupt Parquet page (%v): %w", g.File, g.Index, p, ErrBadData)
}

func (r *Reader) openGroup(ctx context.Context, g RowGroup) (err error) {
	r.release()
	defer func() {
		if p := recover(); p != nil {
			err = corruptError(g, p)
		}
	}()
	if g.File != r.curFile {
		if r.pf != nil {
			r.pf.Close()
			r.pf = nil
		}
		osf, err := os.Open(g.File)
		if err != nil {
			return fmt.Errorf("dataset: open %s: %w", g.File, err)
		}
		st, err := osf.Stat()
		if err != nil {
			osf.Close()
			return fmt.Errorf("dataset: open %s: %w", g.File, err)
		}
		var ropts []file.ReadOption
		if fm := r.ds.meta[g.File]; fm != nil {
			// The groups are those Open saw: a file rewritten since has
			// others. The footer is the one Open parsed, when it kept it.
			if st.Size() != fm.size {
				osf.Close()
				return changedError(g.File, st.Size(), fm.size)
			}
			if fm.md != nil {
				ropts = append(ropts, file.WithMetadata(fm.md))
			}
		}
		pf, err := file.NewParquetReader(osf, ropts...)
		if err != nil {
			osf.Close()
			return fmt.Errorf("dataset: open %s: %w", g.File, err)
		}
		// fail closes the file (pf holds it) and returns err; openErr
		// wraps err as an open error first.
		fail := func(err error) error { pf.Close(); return err }
		openErr := func(err error) error { return fail(fmt.Errorf("dataset: open %s: %w", g.File, err)) }
		r.osf, r.fileSize = osf, st.Size()
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(r.opts.BatchRows)}, memory.DefaultAllocator)
		if err != nil {
			return openErr(err)
		}
		sc, err := fr.Schema()
		if err != nil {
			return openErr(err)
		}
		if err := checkSchema(g.File, r.ds.spec, sc); err != nil {
			return fail(err)
		}
		var fields []int
		for _, c := range r.columns() {
			idx := sc.FieldIndices(c)
			if len(idx) == 0 {
				return fail(fmt.Errorf("dataset: %s: column %q is missing: %w", g.File, c, ErrSchema))
			}
			fields = append(fields, idx[0])
		}
		leaves, err := fr.Manifest.GetFieldIndices(fields)
		if err != nil {
			return openErr(err)
		}
		r.pf, r.fr, r.cols, r.curFile = pf, fr, leaves, g.File
		r.directCols = r.direct(pf, sc)
	}
	rgr := r.pf.RowGroup(g.Index)
	r.left = groupRows(g, rgr.NumRows())
	if r.directCols != nil {
		r.rg, r.rowInRG = g, 0
		var err error
		if r.usePlain, err = r.openPlain(rgr.MetaData()); err != nil {
			return err
		}
		if !r.usePlain {
			r.ccr = r.ccr[:0]
			for _, c := range r.directCols {
				cr, err := rgr.Column(c.leaf)
				if err != nil {
					return fmt.Errorf("dataset: %s: row group %d: %w", g.File, g.Index, err)
				}
				r.ccr = append(r.ccr, cr)
			}
		}
		r.inDirect = true // only once the group's columns are all open
		return nil
	}
	rr, err := r.fr.GetRecordReader(ctx, r.cols, []int{g.Index})
	if err != nil {
		return fmt.Errorf("dataset: %s: row group %d: %w", g.File, g.Index, err)
	}
	r.rr, r.rg, r.rowInRG = rr, g, 0
	return nil
}

// groupRows is the number of rows to read of group g, which holds n: all
// of them, or the first g.Rows when that is fewer.
func groupRows(g RowGroup, n int64) int64 {
	if g.Rows > 0 && g.Rows < n {
		return g.Rows
	}
	return n
}

// openPlain reads the open group's chunks for the plain path when every
// one of them has the shape it decodes, and reports whether they had.
func (r *Reader) openPlain(md *metadata.RowGroupMetaData) (bool, error) {
	if !nativeLittle || r.noPlain {
		return false, nil
	}
	leaves := make([]int, len(r.directCols))
	for k, c := range r.directCols {
		leaves[k] = c.leaf
	}
	ccs, ok := plainChunks(md, leaves)
	if !ok {
		return false, nil
	}
	if len(r.plain) < len(r.directCols) {
		r.plain = make([]plainChunk, len(r.directCols))
	}
	bad := func(k int, err error) error {
		return chunkError(r.rg, r.pf.MetaData().Schema.Column(r.directCols[k].leaf).Name(), err)
	}
	bufs := make([][]byte, len(ccs))
	for k := range ccs {
		bufs[k] = r.plain[k].buf
	}
	raws, release, err := chunkBytes(r.osf, r.fileSize, ccs, bufs, r.noMap, bad)
	if err != nil {
		return false, err
	}
	r.unmap = release
	for k, cc := range ccs {
		if release == nil {
			r.plain[k].buf = raws[k] // read: kept for the next group
		}
		r.plain[k].use(raws[k], cc)
	}
	return true, nil
}

// endDirect closes the group open on the direct path.
func (r *Reader) endDirect() {
	r.ccr, r.inDirect = nil, false
	r.release()
}

// release unmaps the open group's mapped chunks, if any, and drops every
// view of them.
func (r *Reader) release() {
	if r.unmap == nil {
		return
	}
	for k := range r.plain {
		r.plain[k].raw, r.plain[k].page = nil, nil
	}
	r.unmap()
	r.unmap = nil
}

// directLeaf returns the leaf column named name in psc when the direct
// paths can decode it: required (never null), and of the type picasso
// writes, float32 (label, dense and p_true), or INT64 or INT32 holding
// signed integers (IDs, with int32 set) when ids is set.
func directLeaf(psc *schema.Schema, sc *arrow.Schema, name string, ids bool) (leaf int, int32, ok bool) {
	fi := sc.FieldIndices(name)
	c := psc.ColumnIndexByName(name)
	if len(fi) == 0 || c < 0 {
		return 0, false, false
	}
	d := psc.Column(c)
	if d.MaxDefinitionLevel() != 0 || d.MaxRepetitionLevel() != 0 {
		return 0, false, false
	}
	switch t := sc.Field(fi[0]).Type.ID(); {
	case !ids && t == arrow.FLOAT32 && d.PhysicalType() == parquet.Types.Float:
		return c, false, true
	case ids && t == arrow.INT64 && d.PhysicalType() == parquet.Types.Int64:
		return c, false, true
	case ids && t == arrow.INT32 && d.PhysicalType() == parquet.Types.Int32:
		return c, true, true
	}
	return 0, false, false
}

// direct returns the columns of pf to read when the reader can decode
// them straight from their column chunks into a batch's slices, skipping
// Arrow arrays: every feature one ID per row, and every column required
// (never null) and of the type picasso writes (float32 label, dense and
// p_true; int64 or int32 IDs). Otherwise nil: the record reader path.
func (r *Reader) direct(pf *file.Reader, sc *arrow.Schema) []directCol {
	if r.noDirect {
		return nil
	}
	spec := r.ds.spec
	psc := pf.MetaData().Schema
	var cols []directCol
	add := func(name string, role byte, i int) bool {
		leaf, int32, ok := directLeaf(psc, sc, name, role == 's')
		if ok {
			cols = append(cols, directCol{leaf: leaf, role: role, i: i, int32: int32})
		}
		return ok
	}
	if r.readsDense() {
		if !add(spec.Label, 'l', 0) {
			return nil
		}
		for d, name := range spec.Dense {
			if !add(name, 'd', d) {
				return nil
			}
		}
	}
	if r.readsSparse() {
		for s, f := range spec.Sparse {
			if f.MultiHot || !add(f.Name, 's', s) {
				return nil
			}
		}
	}
	if r.opts.WithPTrue && !add(spec.PTrue, 'p', 0) {
		return nil
	}
	return cols
}

// nextDirect decodes the next batch of the open group column by column
// into its slices and validates it as decode does; nil once the group is
// done. A panic of the decoder on a corrupt page is bad data.
func (r *Reader) nextDirect() (b *Batch, err error) {
	n := int(min(r.left, int64(r.opts.BatchRows)))
	if n == 0 {
		return nil, nil
	}
	defer func() {
		if p := recover(); p != nil {
			b, err = nil, corruptError(r.rg, p)
		}
	}()
	// A mapped chunk whose file shrank since it was opened faults; that
	// too is a panic here, and so an error, not a crash.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	spec := r.ds.spec
	nd := 0
	if r.readsDense() {
		nd = len(spec.Dense)
	}
	b = r.reuse(n, nd, r.readsDense(), r.opts.WithPTrue)
	rf := &rowFaults{at: b.Pos, n: n}
	// read fills n values of column k: dst, their memory, on the plain
	// path, else through the library's batch(values from, count).
	read := func(k int, name string, dst []byte, batch func(from, count int) (int64, error)) error {
		if r.usePlain {
			if err := r.plain[k].read(dst); err != nil {
				return chunkError(r.rg, name, err)
			}
			return nil
		}
		for got := 0; got < n; {
			c, err := batch(got, n-got)
			if err != nil {
				return chunkError(r.rg, name, err)
			}
			if c == 0 {
				return fmt.Errorf("dataset: %s: row group %d, column %s: %d values, the group has %d rows: %w",
					r.rg.File, r.rg.Index, name, r.rowInRG+int64(got), r.rowInRG+r.left, ErrBadData)
			}
			got += int(c)
		}
		return nil
	}
	floats := func(k int, name string, dst []float32) error {
		if err := read(k, name, bytesOf(dst), func(from, count int) (int64, error) {
			c, _, err := r.ccr[k].(*file.Float32ColumnChunkReader).ReadBatch(int64(count), dst[from:], nil, nil)
			return c, err
		}); err != nil {
			return err
		}
		for i, v := range dst {
			if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
				rf.fail(i, name, fmt.Sprintf("value %v is not finite", f))
				dst[i] = 0
			}
		}
		return nil
	}
	for k, c := range r.directCols {
		switch c.role {
		case 'l':
			if err := floats(k, spec.Label, b.Label); err != nil {
				return nil, err
			}
			rf.checkLabels(spec.Label, b.Label)
		case 'd':
			r.f32 = slices.Grow(r.f32[:0], n)[:n]
			if err := floats(k, spec.Dense[c.i], r.f32); err != nil {
				return nil, err
			}
			for i, v := range r.f32 {
				b.Dense[i*nd+c.i] = v
			}
		case 'p':
			if err := floats(k, spec.PTrue, b.PTrue); err != nil {
				return nil, err
			}
		case 's':
			f := spec.Sparse[c.i]
			ids := b.Sparse[c.i].IDs // n values, all overwritten below
			var err error
			if c.int32 {
				r.i32 = slices.Grow(r.i32[:0], n)[:n]
				err = read(k, f.Name, bytesOf(r.i32), func(from, count int) (int64, error) {
					c, _, err := r.ccr[k].(*file.Int32ColumnChunkReader).ReadBatch(int64(count), r.i32[from:], nil, nil)
					return c, err
				})
				if err != nil {
					return nil, err
				}
				mapIDs32(ids, r.i32, f, func(i int, msg string) { rf.fail(i, f.Name, msg) })
				continue
			}
			err = read(k, f.Name, bytesOf(ids), func(from, count int) (int64, error) {
				c, _, err := r.ccr[k].(*file.Int64ColumnChunkReader).ReadBatch(int64(count), ids[from:], nil, nil)
				return c, err
			})
			if err != nil {
				return nil, err
			}
			mapIDs(ids, f, func(i int, msg string) { rf.fail(i, f.Name, msg) })
		}
	}
	r.rowInRG += int64(n)
	r.left -= int64(n)
	return r.dropBad(b, rf, nd)
}

// decodeGuarded runs decode, turning a panic on arrays that a corrupt page
// left inconsistent (list offsets past their values, a short validity
// bitmap) into a bad-data error naming the file and row group.
func (r *Reader) decodeGuarded(rec arrow.Record) (b *Batch, err error) {
	defer func() {
		if p := recover(); p != nil {
			b, err = nil, corruptError(r.rg, p)
		}
	}()
	return r.decode(rec)
}

// decode converts one record into a Batch, validating every value.
func (r *Reader) decode(rec arrow.Record) (*Batch, error) {
	spec := r.ds.spec
	n := int(rec.NumRows())
	sc := rec.Schema()
	col := func(name string) arrow.Array { return rec.Column(sc.FieldIndices(name)[0]) }
	b := &Batch{N: n, Pos: Position{File: r.rg.File, RowGroup: r.rg.Index, Row: r.rowInRG}}
	rf := &rowFaults{at: b.Pos, n: n}
	fail := rf.fail
	nd := 0
	if r.readsDense() {
		b.Label = make([]float32, n)
		readFloats(col(spec.Label), b.Label, 0, 1, func(i int, msg string) { fail(i, spec.Label, msg) })
		rf.checkLabels(spec.Label, b.Label)
		nd = len(spec.Dense)
		b.Dense = make([]float32, n*nd)
		for d, name := range spec.Dense {
			readFloats(col(name), b.Dense, d, nd, func(i int, msg string) { fail(i, name, msg) })
		}
	}
	if r.readsSparse() {
		b.Sparse = make([]SparseColumn, len(spec.Sparse))
		for s, f := range spec.Sparse {
			b.Sparse[s] = readIDs(col(f.Name), f, func(i int, msg string) { fail(i, f.Name, msg) })
		}
	}
	if r.opts.WithPTrue {
		b.PTrue = make([]float32, n)
		readFloats(col(spec.PTrue), b.PTrue, 0, 1, func(i int, msg string) { fail(i, spec.PTrue, msg) })
	}
	return r.dropBad(b, rf, nd)
}

// rowFaults collects the bad rows of one batch of n rows, the first
// at Pos at: which rows, how many, and the first error.
type rowFaults struct {
	at    Position
	n     int
	bad   []bool // nil until a row is bad
	nbad  int
	first error
}

// fail marks row i bad, keeping the first error (naming column).
func (f *rowFaults) fail(i int, column, msg string) {
	if f.bad == nil {
		f.bad = make([]bool, f.n)
	}
	if !f.bad[i] {
		f.bad[i] = true
		f.nbad++
	}
	if f.first == nil {
		pos := f.at
		pos.Row += int64(i)
		f.first = &RowError{Pos: pos, Column: column, Msg: msg}
	}
}

// checkLabels marks the rows whose label (column) is not 0 or 1, except
// rows already bad.
func (f *rowFaults) checkLabels(column string, labels []float32) {
	for i, v := range labels {
		if (f.bad == nil || !f.bad[i]) && v != 0 && v != 1 {
			f.fail(i, column, fmt.Sprintf("label %v is not 0 or 1", v))
		}
	}
}

// dropBad returns b when no row is bad; otherwise the first error, or,
// with SkipBad, b without its bad rows (counted as skipped).
func (r *Reader) dropBad(b *Batch, f *rowFaults, nd int) (*Batch, error) {
	if f.nbad == 0 {
		return b, nil
	}
	if !r.opts.SkipBad {
		return nil, f.first
	}
	r.skipped += int64(f.nbad)
	return b.compact(f.bad, nd), nil
}

// compact drops the rows marked bad.
func (b *Batch) compact(bad []bool, nd int) *Batch {
	keep := make([]int, 0, b.N)
	for i := 0; i < b.N; i++ {
		if !bad[i] {
			keep = append(keep, i)
		}
	}
	out := &Batch{N: len(keep), Pos: b.Pos}
	if b.Label != nil {
		out.Label = make([]float32, len(keep))
		out.Dense = make([]float32, len(keep)*nd)
		for j, i := range keep {
			out.Label[j] = b.Label[i]
			copy(out.Dense[j*nd:(j+1)*nd], b.Dense[i*nd:(i+1)*nd])
		}
	}
	if b.PTrue != nil {
		out.PTrue = make([]float32, len(keep))
		for j, i := range keep {
			out.PTrue[j] = b.PTrue[i]
		}
	}
	if b.Sparse != nil { // nil from a DenseOnly reader
		out.Sparse = make([]SparseColumn, len(b.Sparse))
		for s := range b.Sparse {
			out.Sparse[s] = b.Sparse[s].Select(keep)
		}
	}
	return out
}

// readFloats writes arr's values to dst[i*stride+off], reporting nulls and
// non-finite values.
func readFloats(arr arrow.Array, dst []float32, off, stride int, fail func(int, string)) {
	n := arr.Len()
	set := func(i int, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			fail(i, fmt.Sprintf("value %v is not finite", v))
			return
		}
		dst[i*stride+off] = float32(v)
	}
	for i := 0; i < n; i++ {
		if arr.IsNull(i) {
			fail(i, "null value")
		}
	}
	switch a := arr.(type) {
	case *array.Float32:
		for i, v := range a.Float32Values() {
			if !a.IsNull(i) {
				set(i, float64(v))
			}
		}
	case *array.Float64:
		for i, v := range a.Float64Values() {
			if !a.IsNull(i) {
				set(i, v)
			}
		}
	case *array.Boolean:
		for i := 0; i < n; i++ {
			if !a.IsNull(i) && a.Value(i) {
				set(i, 1)
			}
		}
	default:
		for i := 0; i < n; i++ {
			if !arr.IsNull(i) {
				v, _ := intAt(arr, i)
				set(i, float64(v))
			}
		}
	}
}

// mapIDOf returns the table row of value v of row i of feature f: its
// hash bucket (IDHash), or v itself after a range check (0 and a call of
// fail when out of range).
func mapIDOf(f SparseFeature, i int, v int64, fail func(int, string)) int64 {
	if f.IDs == IDHash {
		return HashID(v, f.Rows)
	}
	if v < 0 || v >= f.Rows {
		fail(i, fmt.Sprintf("id %d out of range [0, %d)", v, f.Rows))
		return 0
	}
	return v
}

// mapIDs32 is mapIDs for values read as INT32 (src), written widened into
// ids (of the same length), in one pass: hashed, or widened and
// range-checked (mapIDs runs only when some value is out of range, to fix
// and report it).
func mapIDs32(ids []int64, src []int32, f SparseFeature, fail func(int, string)) {
	ids = ids[:len(src)]
	if f.IDs == IDHash { // hashed as they are widened
		for i, v := range src {
			ids[i] = HashID(int64(v), f.Rows)
		}
		return
	}
	var top uint64 // the largest value, a negative one as huge
	for i, v := range src {
		ids[i] = int64(v)
		top = max(top, uint64(int64(v)))
	}
	if top >= uint64(f.Rows) {
		mapIDs(ids, f, fail)
	}
}

// mapIDs maps one value per row of feature f to table rows in place, as
// mapIDOf does.
func mapIDs(ids []int64, f SparseFeature, fail func(int, string)) {
	if f.IDs == IDHash {
		for i, v := range ids {
			ids[i] = HashID(v, f.Rows)
		}
		return
	}
	for i, v := range ids {
		if uint64(v) >= uint64(f.Rows) {
			ids[i] = mapIDOf(f, i, v, fail)
		}
	}
}

// intAt returns the integer at i of an integer array.
func intAt(arr arrow.Array, i int) (int64, bool) {
	switch a := arr.(type) {
	case *array.Int64:
		return a.Value(i), true
	case *array.Int32:
		return int64(a.Value(i)), true
	case *array.Int16:
		return int64(a.Value(i)), true
	case *array.Int8:
		return int64(a.Value(i)), true
	case *array.Uint64:
		return int64(a.Value(i)), true
	case *array.Uint32:
		return int64(a.Value(i)), true
	case *array.Uint16:
		return int64(a.Value(i)), true
	case *array.Uint8:
		return int64(a.Value(i)), true
	}
	return 0, false
}

// readIDs decodes a sparse column, mapping values to rows of the feature's table.
func readIDs(arr arrow.Array, f SparseFeature, fail func(int, string)) SparseColumn {
	mapID := func(i int, v int64) int64 { return mapIDOf(f, i, v, fail) }
	if !f.MultiHot {
		n := arr.Len()
		ids := make([]int64, n)
		if a, ok := arr.(*array.Int64); ok && a.NullN() == 0 {
			copy(ids, a.Int64Values())
			mapIDs(ids, f, fail)
			return SparseColumn{IDs: ids}
		}
		for i := 0; i < n; i++ {
			if arr.IsNull(i) {
				fail(i, "null id")
				continue
			}
			v, _ := intAt(arr, i)
			ids[i] = mapID(i, v)
		}
		return SparseColumn{IDs: ids}
	}
	l := arr.(*array.List)
	vals := l.ListValues()
	n := l.Len()
	c := SparseColumn{Offsets: make([]int32, n+1)}
	offs := l.Offsets()
	for i := 0; i < n; i++ {
		if l.IsNull(i) {
			fail(i, "null list")
		} else {
			for j := offs[i]; j < offs[i+1]; j++ {
				if vals.IsNull(int(j)) {
					fail(i, "null id in list")
					continue
				}
				v, _ := intAt(vals, int(j))
				c.IDs = append(c.IDs, mapID(i, v))
			}
		}
		c.Offsets[i+1] = int32(len(c.IDs))
	}
	return c
}
