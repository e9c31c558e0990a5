package train

import (
	"github.com/picasso-ctr/picasso/pkg/compute"
)

// tableSplit runs the embedding kernels one table at a time, for the
// packing ablation (Options.Unpacked). Each call works on a one-table view
// of the packed table (compute.PackedTable.Table) with that table's bags
// and a contiguous N×Dim buffer, which is then moved to (or, for the
// update, from) the interleaved N×Tables×Dim layout of a packed call, as an
// unpacked implementation concatenates per-table outputs. The results are
// those of the packed calls, bit for bit.
type tableSplit struct {
	views []*compute.PackedTable
	bags  []compute.Bags
	buf   compute.Buffer // N×Dim, in the table's memory
}

// newTableSplit prepares the views of t and a buffer for up to n samples.
func newTableSplit(t *compute.PackedTable, a *allocator, n int) *tableSplit {
	ts := &tableSplit{views: make([]*compute.PackedTable, t.Tables()), bags: make([]compute.Bags, t.Tables())}
	for i := range ts.views {
		ts.views[i] = t.Table(i)
		ts.bags[i].IDs = make([]compute.Buffer, 1)
		ts.bags[i].Offsets = make([]compute.Buffer, 1)
	}
	ts.buf = a.f32(n * t.Dim)
	return ts
}

// tableBags returns the bags of table i of b as a one-table batch.
func (ts *tableSplit) tableBags(b *compute.Bags, i int) *compute.Bags {
	tb := &ts.bags[i]
	tb.N, tb.Packed = b.N, b.Packed
	tb.IDs[0] = b.IDs[i]
	tb.Offsets[0] = compute.Buffer{}
	if b.Offsets != nil {
		tb.Offsets[0] = b.Offsets[i]
	}
	return tb
}

// forward pools the bags of b into out (b.N×Tables×Dim), one table at a time.
func (ts *tableSplit) forward(be compute.Backend, t *compute.PackedTable, b *compute.Bags, out compute.Buffer) error {
	nt, d, n := t.Tables(), t.Dim, b.N
	if n == 0 {
		return nil
	}
	buf := ts.buf.Head(n * d)
	for i, v := range ts.views {
		if err := be.EmbeddingBagForward(v, ts.tableBags(b, i), buf); err != nil {
			return err
		}
		be.Copy2D(out.From(i*d), nt*d, buf, d, n, d)
	}
	return nil
}

// update applies step to the rows b looks up, given dOut (b.N×Tables×Dim),
// one table at a time. Unlike a packed call, which checks every table's IDs
// before changing any row, it stops at the first table with a bad ID, the
// earlier tables already updated; the trainer stops on such an error anyway.
func (ts *tableSplit) update(be compute.Backend, t *compute.PackedTable, b *compute.Bags, dOut compute.Buffer, step compute.Step) error {
	nt, d, n := t.Tables(), t.Dim, b.N
	if n == 0 {
		return nil
	}
	buf := ts.buf.Head(n * d)
	for i, v := range ts.views {
		be.Copy2D(buf, d, dOut.From(i*d), nt*d, n, d)
		if err := be.EmbeddingBagUpdate(v, ts.tableBags(b, i), buf, step); err != nil {
			return err
		}
	}
	return nil
}
