package train

import (
	"github.com/picasso-ctr/picasso/pkg/compute"
)

// tableSplit runs the embedding kernels one table at a time, for
// train.packing: false, the ablation of PICASSO's D-packing. Each call works
// on a one-table view of the packed table (compute.PackedTable.Table) with
// that table's bags and a contiguous N×Dim buffer, which is then moved to
// (or, for the update, from) the interleaved N×Tables×Dim layout of a packed
// call, as an unpacked implementation concatenates per-table outputs. The
// results are those of the packed calls, bit for bit.
type tableSplit struct {
	views map[*compute.PackedTable][]*compute.PackedTable
	bags  []compute.Bags
	ids   [][][]int64 // the one-table IDs slice of each bags entry
	offs  [][][]int32 // and its offsets slice
	buf   []float32
}

func newTableSplit() *tableSplit {
	return &tableSplit{views: map[*compute.PackedTable][]*compute.PackedTable{}}
}

// viewsOf returns (and caches) the one-table views of t.
func (ts *tableSplit) viewsOf(t *compute.PackedTable) []*compute.PackedTable {
	v, ok := ts.views[t]
	if !ok {
		v = make([]*compute.PackedTable, t.Tables())
		for i := range v {
			v[i] = t.Table(i)
		}
		ts.views[t] = v
	}
	return v
}

// tableBags returns the bags of table i of b as a one-table batch, in
// buffers reused by the next call for table i.
func (ts *tableSplit) tableBags(b *compute.Bags, i int) *compute.Bags {
	for len(ts.bags) <= i {
		ts.bags = append(ts.bags, compute.Bags{})
		ts.ids = append(ts.ids, make([][]int64, 1))
		ts.offs = append(ts.offs, make([][]int32, 1))
	}
	tb := &ts.bags[i]
	tb.N = b.N
	tb.IDs = ts.ids[i]
	tb.IDs[0] = b.IDs[i]
	tb.Offsets = nil
	if b.Offsets != nil && b.Offsets[i] != nil {
		tb.Offsets = ts.offs[i]
		tb.Offsets[0] = b.Offsets[i]
	}
	return tb
}

// forward pools the bags of b into out (b.N×Tables×Dim), one table at a time.
func (ts *tableSplit) forward(be compute.Backend, t *compute.PackedTable, b *compute.Bags, out []float32) error {
	nt, d, n := t.Tables(), t.Dim, b.N
	ts.buf = grow(ts.buf, n*d)
	buf := ts.buf[:n*d]
	for i, v := range ts.viewsOf(t) {
		if err := be.EmbeddingBagForward(v, ts.tableBags(b, i), buf); err != nil {
			return err
		}
		for s := range n {
			copy(out[(s*nt+i)*d:(s*nt+i+1)*d], buf[s*d:(s+1)*d])
		}
	}
	return nil
}

// update applies step to the rows b looks up, given dOut (b.N×Tables×Dim),
// one table at a time. Unlike a packed call, which checks every table's IDs
// before changing any row, it stops at the first table with a bad ID, the
// earlier tables already updated; the trainer stops on such an error anyway.
func (ts *tableSplit) update(be compute.Backend, t *compute.PackedTable, b *compute.Bags, dOut []float32, step compute.SparseStep, touched *compute.RowSet) error {
	nt, d, n := t.Tables(), t.Dim, b.N
	ts.buf = grow(ts.buf, n*d)
	buf := ts.buf[:n*d]
	for i, v := range ts.viewsOf(t) {
		for s := range n {
			copy(buf[s*d:(s+1)*d], dOut[(s*nt+i)*d:(s*nt+i+1)*d])
		}
		if err := be.EmbeddingBagUpdate(v, ts.tableBags(b, i), buf, step, touched); err != nil {
			return err
		}
	}
	return nil
}
