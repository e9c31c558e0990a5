package dataset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/metadata"
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
	cols map[string]colType // checkSchema's result on md
	// sparse is, for each one-hot sparse feature, its leaf column when
	// the column path can decode it (SparseGroup), else -1; int32 is set
	// for INT32 columns.
	sparse []int
	int32  []bool
}

// DerivedFiles are what a dataset directory holds beside its splits and
// describes them: its data config (dataset.yaml), and the profile and FAE
// layout the other commands write there by default. A command that
// replaces the splits (gen, convert --force) removes them first: the
// splits are swapped one after the other, and a kill between two swaps
// then leaves a directory without a data config, which every command
// refuses, rather than one that pairs a new train split with the old test
// split. The new dataset.yaml is written last.
var DerivedFiles = []string{"dataset.yaml", "profile.json", "profile.counts", "fae"}

// RemoveDerived removes DerivedFiles, and the names in extra, from dir.
func RemoveDerived(dir string, extra ...string) error {
	for _, name := range append(slices.Clone(DerivedFiles), extra...) {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("remove stale %s: %w", name, err)
		}
	}
	return nil
}

// ListParquet returns path itself when it is a file, or the *.parquet files
// directly in it (sorted) when it is a directory. Subdirectories are not
// read: a copy of the data kept below train/ (a backup, a layout) must not
// be counted twice. Names starting with "." are temporary files.
func ListParquet(path string) ([]string, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		// The path comes from a data config (data.train, data.valid or
		// data.test, relative to the file that sets it) or from --data:
		// say where to look.
		return nil, fmt.Errorf("dataset: %s does not exist; check --data and the data config's data.train, data.valid and data.test (a relative path is read from the config file's directory): %w", path, ErrNoData)
	}
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
		if slices.ContainsFunc(entries, func(d fs.DirEntry) bool { return d.IsDir() && d.Name() == "train" }) {
			return nil, fmt.Errorf("dataset: %s: no .parquet files, and no dataset.yaml naming its train/ (gen and convert write it last: run the one that made it again): %w", path, ErrNoData)
		}
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
	// The footers are parsed (and their schemas checked) side by side,
	// the index built in file order after; the first file in order with
	// an error names it.
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
	pf, err := openParquet(f, fn)
	if err != nil {
		return nil, err
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
	pf, err := openParquet(f, fn)
	if err != nil {
		return nil, err
	}
	md := pf.MetaData()
	cols, err := checkSchema(fn, spec, md.Schema)
	if err != nil {
		return nil, err
	}
	fm := &fileMeta{md: md, size: st.Size(), cols: cols}
	fm.sparse, fm.int32 = sparseLeaves(spec, cols)
	return fm, nil
}

// openParquet reads the footer of f (file fn) as the Parquet library
// does. A file the library cannot read as Parquet is bad data, said in the
// user's terms: the library's ("file is smaller than indicated metadata
// size") do not say that the file is not Parquet at all, or a copy cut
// short.
func openParquet(f *os.File, fn string, opts ...file.ReadOption) (*file.Reader, error) {
	pf, err := file.NewParquetReader(f, opts...)
	if err == nil {
		return pf, nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return nil, fmt.Errorf("dataset: open %s: %w", fn, err)
	}
	size := int64(-1)
	if st, serr := f.Stat(); serr == nil {
		size = st.Size()
	}
	return nil, fmt.Errorf("dataset: %s (%d bytes) is not a Parquet file, or one cut short: %v: %w", fn, size, err, ErrBadData)
}

// checkSchema checks that file fn, of Parquet schema psc, has spec's
// columns with types picasso reads, and returns them by name (p_true only
// when the file has it).
func checkSchema(fn string, spec *Spec, psc *schema.Schema) (map[string]colType, error) {
	var errs []error
	cols := make(map[string]colType)
	need := func(col string, ok func(colType) bool, want string) {
		c, found := lookupColumn(psc, col)
		switch {
		case !found:
			errs = append(errs, fmt.Errorf("dataset: %s: column %q is missing: %w", fn, col, ErrSchema))
		case !ok(c):
			errs = append(errs, fmt.Errorf("dataset: %s: column %q has type %s, want %s: %w", fn, col, c.desc, want, ErrSchema))
		default:
			cols[col] = c
		}
	}
	need(spec.Label, colType.numeric, "an integer or float 0/1")
	for _, d := range spec.Dense {
		need(d, colType.numeric, "float32 (or another number)")
	}
	for _, f := range spec.Sparse {
		if f.MultiHot {
			need(f.Name, colType.idLists, "list<int64>")
		} else {
			need(f.Name, colType.ids, "int64 (or another integer)")
		}
	}
	if _, has := lookupColumn(psc, spec.PTrue); spec.PTrue != "" && has {
		need(spec.PTrue, colType.numeric, "float32")
	}
	return cols, errors.Join(errs...)
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
	cols    map[string]colType // the current file's columns
	rg      RowGroup
	rowInRG int64
	skipped int64
	rows    int64

	// The direct path (see direct): the columns to read in the current
	// file, or nil, and the open group's column readers; else the level
	// path's columns (levels.go).
	directCols []directCol
	ccr        []file.ColumnChunkReader
	levels     []levelCol
	inGroup    bool         // a group is open, on the direct or level path
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
	noDirect   bool         // tests: always the level path
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
	r.endGroup()
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
		if !r.inGroup {
			if r.next >= len(r.opts.RowGroups) {
				return nil, io.EOF
			}
			if err := r.openGroup(ctx, r.opts.RowGroups[r.next]); err != nil {
				return nil, err
			}
			r.next++
		}
		next := r.nextDirect
		if r.levels != nil {
			next = r.nextLevel
		}
		b, err := next()
		if err != nil {
			r.endGroup()
			return nil, err
		}
		if b == nil { // the group is done
			r.endGroup()
			continue
		}
		if b.N == 0 {
			continue
		}
		r.rows += int64(b.N)
		return b, nil
	}
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
		var cols map[string]colType // the schema Open checked, when the footer is its
		if fm := r.ds.meta[g.File]; fm != nil {
			// The groups are those Open saw: a file rewritten since has
			// others. The footer is the one Open parsed, when it kept it.
			if st.Size() != fm.size {
				osf.Close()
				return changedError(g.File, st.Size(), fm.size)
			}
			if fm.md != nil {
				ropts = append(ropts, file.WithMetadata(fm.md))
				cols = fm.cols
			}
		}
		pf, err := openParquet(osf, g.File, ropts...)
		if err != nil {
			osf.Close()
			return err
		}
		// fail closes the file (pf holds it) and returns err.
		fail := func(err error) error { pf.Close(); return err }
		r.osf, r.fileSize = osf, st.Size()
		if cols == nil {
			if cols, err = checkSchema(g.File, r.ds.spec, pf.MetaData().Schema); err != nil {
				return fail(err)
			}
		}
		if r.opts.WithPTrue {
			if _, ok := cols[r.ds.spec.PTrue]; !ok {
				return fail(fmt.Errorf("dataset: %s: column %q is missing: %w", g.File, r.ds.spec.PTrue, ErrSchema))
			}
		}
		r.pf, r.cols, r.curFile = pf, cols, g.File
		r.directCols = r.direct()
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
		r.inGroup = true // only once the group's columns are all open
		return nil
	}
	var colErr error
	r.levels = r.levels[:0]
	r.eachColumn(func(name string, role byte, i int) bool {
		cr, err := rgr.Column(r.cols[name].leaf)
		if err != nil {
			colErr = fmt.Errorf("dataset: %s: row group %d: %w", g.File, g.Index, err)
			return false
		}
		r.levels = append(r.levels, levelCol{colType: r.cols[name], name: name, role: role, i: i, cr: cr})
		return true
	})
	if colErr != nil {
		r.levels = nil
		return colErr
	}
	r.rg, r.rowInRG, r.inGroup = g, 0, true
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

// endGroup closes the open group.
func (r *Reader) endGroup() {
	r.ccr, r.levels, r.inGroup = nil, nil, false
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

// directLeaf returns the leaf of column c when the direct paths can
// decode it: required (never null), not a list, and of the type picasso
// writes, float32 (label, dense and p_true), or signed INT64 or INT32 IDs
// (with int32 set) when ids is set.
func directLeaf(c colType, ids bool) (leaf int, int32, ok bool) {
	if c.maxDef != 0 || c.maxRep != 0 || c.list {
		return 0, false, false
	}
	switch {
	case !ids && c.kind == kindFloat && c.phys == parquet.Types.Float:
		return c.leaf, false, true
	case ids && c.kind == kindInt && !c.unsigned && c.bits == 64 && c.phys == parquet.Types.Int64:
		return c.leaf, false, true
	case ids && c.kind == kindInt && !c.unsigned && c.bits == 32 && c.phys == parquet.Types.Int32:
		return c.leaf, true, true
	}
	return 0, false, false
}

// eachColumn calls fn with each column the reader reads, in spec order:
// its name, role (as directCol's) and feature or dense index, until fn
// returns false; it reports whether fn never did.
func (r *Reader) eachColumn(fn func(name string, role byte, i int) bool) bool {
	spec := r.ds.spec
	if r.readsDense() {
		if !fn(spec.Label, 'l', 0) {
			return false
		}
		for d, name := range spec.Dense {
			if !fn(name, 'd', d) {
				return false
			}
		}
	}
	if r.readsSparse() {
		for s, f := range spec.Sparse {
			if !fn(f.Name, 's', s) {
				return false
			}
		}
	}
	return !r.opts.WithPTrue || fn(spec.PTrue, 'p', 0)
}

// direct returns the columns of the current file to read when the reader
// can decode them straight from their column chunks into a batch's slices:
// every feature one ID per row, and every column required (never null)
// and of the type picasso writes (float32 label, dense and p_true; int64
// or int32 IDs). Otherwise nil: the level path.
func (r *Reader) direct() []directCol {
	if r.noDirect {
		return nil
	}
	var cols []directCol
	ok := r.eachColumn(func(name string, role byte, i int) bool {
		if role == 's' && r.ds.spec.Sparse[i].MultiHot {
			return false
		}
		leaf, int32, ok := directLeaf(r.cols[name], role == 's')
		if ok {
			cols = append(cols, directCol{leaf: leaf, role: role, i: i, int32: int32})
		}
		return ok
	})
	if !ok {
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
			if err == nil {
				err = r.ccr[k].Err() // a page the library skipped (see levelCol.fill)
			}
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

// nextLevel decodes the next batch of the open group on the level path
// and validates it as nextDirect does; nil once the group is done. A panic
// of the decoder on a corrupt page is bad data.
func (r *Reader) nextLevel() (b *Batch, err error) {
	n := int(min(r.left, int64(r.opts.BatchRows)))
	if n == 0 {
		return nil, nil
	}
	defer func() {
		if p := recover(); p != nil {
			b, err = nil, corruptError(r.rg, p)
		}
	}()
	for k := range r.levels {
		c := &r.levels[k]
		if err := c.fill(n); errors.Is(err, errShortColumn) {
			return nil, fmt.Errorf("dataset: %s: row group %d, column %s: %d rows, the group has %d: %w",
				r.rg.File, r.rg.Index, c.name, r.rowInRG+int64(c.whole()), r.rowInRG+r.left, ErrBadData)
		} else if err != nil {
			return nil, chunkError(r.rg, c.name, err)
		}
	}
	spec := r.ds.spec
	b = &Batch{N: n, Pos: Position{File: r.rg.File, RowGroup: r.rg.Index, Row: r.rowInRG}}
	rf := &rowFaults{at: b.Pos, n: n}
	nd := 0
	if r.readsDense() {
		nd = len(spec.Dense)
		b.Label, b.Dense = make([]float32, n), make([]float32, n*nd)
	}
	if r.readsSparse() {
		b.Sparse = make([]SparseColumn, len(spec.Sparse))
	}
	if r.opts.WithPTrue {
		b.PTrue = make([]float32, n)
	}
	for k := range r.levels {
		c := &r.levels[k]
		fail := func(i int, msg string) { rf.fail(i, c.name, msg) }
		switch c.role {
		case 'l':
			c.floats(n, b.Label, 0, 1, fail)
			rf.checkLabels(c.name, b.Label)
		case 'd':
			c.floats(n, b.Dense, c.i, nd, fail)
		case 'p':
			c.floats(n, b.PTrue, 0, 1, fail)
		case 's':
			b.Sparse[c.i] = c.ids(n, spec.Sparse[c.i], fail)
		}
	}
	r.rowInRG += int64(n)
	r.left -= int64(n)
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
