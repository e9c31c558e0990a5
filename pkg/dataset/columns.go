package dataset

import (
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"sync/atomic"

	"github.com/apache/arrow/go/v15/parquet/metadata"
)

// The column path: a row group's one-hot sparse columns decoded one at a
// time, straight from their chunks into a caller's slice, for callers that
// only count IDs (profile). Unlike a Reader, it builds no batches (rows of
// every column at once, a few thousand at a time), so several goroutines
// can decode the columns of one group side by side, and a column's IDs
// are counted while they are still in cache.

// sparseLeaves returns, for each sparse feature of spec, its leaf column
// in md when the column path can decode it (one-hot, and a column the
// direct paths decode: directLeaf), or -1; and which of them are INT32.
func sparseLeaves(spec *Spec, cols map[string]colType) ([]int, []bool) {
	leaves := make([]int, len(spec.Sparse))
	int32s := make([]bool, len(spec.Sparse))
	for s, f := range spec.Sparse {
		leaves[s] = -1
		if f.MultiHot {
			continue
		}
		if leaf, int32, ok := directLeaf(cols[f.Name], true); ok {
			leaves[s], int32s[s] = leaf, int32
		}
	}
	return leaves, int32s
}

// SparseGroup gives the column path's access to one row group's sparse
// columns (OpenSparseGroup). Its Column method may be called from several
// goroutines at once, each with its own ColumnBuf; Close it after the last.
type SparseGroup struct {
	g       RowGroup // Rows: the rows read
	spec    *Spec
	ccs     []*metadata.ColumnChunkMetaData
	raws    [][]byte // each column's chunk, in the mapping or read
	int32   []bool
	release func() // unmaps the chunks, or nil when they were read
	closed  atomic.Bool
}

// ColumnBuf is one goroutine's buffers for SparseGroup.Column, kept from
// call to call.
type ColumnBuf struct {
	c   plainChunk
	i32 []int32
	ids []int64
}

// OpenSparseGroup opens row group g of d for the column path. ok is false,
// with a nil error, when some sparse feature's chunk in g is not of the
// shape the path decodes (a multi-hot feature, a dictionary, a codec other
// than Snappy): read g with a Reader then. The chunks are mapped from the
// file where the system allows, as a Reader's plain path maps them, else
// read.
func (d *Dataset) OpenSparseGroup(g RowGroup) (sg *SparseGroup, ok bool, err error) {
	defer func() {
		if p := recover(); p != nil { // a corrupt footer (ColumnPathOK)
			sg, ok, err = nil, false, corruptError(g, p)
		}
	}()
	fm := d.meta[g.File]
	if fm == nil || !nativeLittle || slices.Contains(fm.sparse, -1) {
		return nil, false, nil
	}
	md, err := d.footer(g.File)
	if err != nil {
		return nil, false, err
	}
	if g.Index < 0 || g.Index >= len(md.RowGroups) {
		return nil, false, nil
	}
	rg := md.RowGroup(g.Index)
	ccs, ok := plainChunks(rg, fm.sparse)
	if !ok {
		return nil, false, nil
	}
	g.Rows = groupRows(g, rg.NumRows())
	sg = &SparseGroup{g: g, spec: d.spec, int32: fm.int32, ccs: ccs}
	f, err := os.Open(g.File)
	if err != nil {
		return nil, false, fmt.Errorf("dataset: open %s: %w", g.File, err)
	}
	defer f.Close() // a mapping outlives its file's descriptor
	if st, err := f.Stat(); err == nil && st.Size() != fm.size {
		return nil, false, changedError(g.File, st.Size(), fm.size)
	}
	bad := func(s int, err error) error { return chunkError(g, d.spec.Sparse[s].Name, err) }
	if sg.raws, sg.release, err = chunkBytes(f, fm.size, sg.ccs, make([][]byte, len(sg.ccs)), false, bad); err != nil {
		return nil, false, err
	}
	return sg, true, nil
}

// Group returns the row group, with Rows the rows Column returns.
func (s *SparseGroup) Group() RowGroup { return s.g }

// Column decodes sparse feature f's IDs of the group's rows into buf and
// returns them as table rows: hashed (IDHash) or checked to lie in the
// table. An ID out of range is a *RowError naming the file, row group,
// row and column; a corrupt page, or a file cut short under its mapping,
// is a bad-data error naming the file and row group. The slice is buf's,
// valid until its next use.
func (s *SparseGroup) Column(f int, buf *ColumnBuf) (ids []int64, err error) {
	feat := s.spec.Sparse[f]
	defer func() {
		if p := recover(); p != nil {
			ids, err = nil, fmt.Errorf("dataset: %s: row group %d, column %s: corrupt Parquet page, or the file changed while read (%v): %w",
				s.g.File, s.g.Index, feat.Name, p, ErrBadData)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	c := &buf.c
	c.use(s.raws[f], s.ccs[f])
	n := int(s.g.Rows)
	buf.ids = slices.Grow(buf.ids[:0], n)[:n]
	ids = buf.ids
	bad := func(err error) error {
		return chunkError(s.g, feat.Name, err)
	}
	var first error
	fail := func(i int, msg string) {
		if first == nil {
			first = &RowError{Pos: Position{File: s.g.File, RowGroup: s.g.Index, Row: int64(i)}, Column: feat.Name, Msg: msg}
		}
	}
	if s.int32[f] {
		buf.i32 = slices.Grow(buf.i32[:0], n)[:n]
		if err := c.read(bytesOf(buf.i32)); err != nil {
			return nil, bad(err)
		}
		mapIDs32(ids, buf.i32, feat, fail)
	} else {
		if err := c.read(bytesOf(ids)); err != nil {
			return nil, bad(err)
		}
		mapIDs(ids, feat, fail)
	}
	if first != nil {
		return nil, first
	}
	return ids, nil
}

// Close releases the group's chunks. Every Column call must be done.
func (s *SparseGroup) Close() {
	if s.closed.Swap(true) {
		return
	}
	if s.release != nil {
		s.release()
	}
	s.raws = nil
}

// ColumnPathOK reports whether every group of groups can be read by the
// column path (OpenSparseGroup), judging by the footers alone.
func (d *Dataset) ColumnPathOK(groups []RowGroup) (ok bool) {
	if !nativeLittle {
		return false
	}
	// A corrupt footer can make the Parquet library panic on a column
	// chunk's metadata: such a group is left to a Reader, which reports it
	// as bad data.
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	for _, g := range groups {
		fm := d.meta[g.File]
		if fm == nil {
			return false
		}
		md, err := d.footer(g.File)
		if err != nil || g.Index < 0 || g.Index >= len(md.RowGroups) {
			return false
		}
		if _, ok := plainChunks(md.RowGroup(g.Index), fm.sparse); !ok {
			return false
		}
	}
	return true
}
