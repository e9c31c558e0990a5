package train

import (
	"fmt"

	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// hostBags is one batch of lookups on the host: per table, the IDs and the
// CSR bounds of each bag (nil for one ID per sample), over n samples.
type hostBags struct {
	n   int
	ids [][]int64
	off [][]int32
}

// bagBuilder turns the sparse columns of a batch (one per feature) into the
// per-table bags of one packed lookup, reusing its buffers.
//
// Without shared tables, table t is feature t and the batch's columns are
// used as they are. When features share a table, the lookup runs on a
// virtual batch of N·lanes samples (lanes = the most features of one table):
// sample s·lanes+j of table t holds the bag of t's j-th feature (empty when t
// has fewer), so one lookup pools every feature and one update sums the
// gradients of every feature before stepping a row. The pooled rows of
// that layout move to and from the model's N×Features×Dim by the row
// index laneRows.
type bagBuilder struct {
	tables   int
	features int
	dim      int
	featOf   [][]int // features of each table, in spec order
	shared   bool
	lanes    int

	hb   hostBags
	ids  [][]int64 // the virtual batch's IDs (shared tables)
	offs [][]int32 // and bounds
}

func newBagBuilder(s Shape) *bagBuilder {
	bb := &bagBuilder{tables: len(s.TableRows), features: s.Features, dim: s.RowDim()}
	bb.featOf = make([][]int, bb.tables)
	for f, t := range s.FeatureTable {
		bb.featOf[t] = append(bb.featOf[t], f)
	}
	for t, fs := range bb.featOf {
		bb.lanes = max(bb.lanes, len(fs))
		if len(fs) != 1 || fs[0] != t {
			bb.shared = true
		}
	}
	bb.ids = make([][]int64, bb.tables)
	bb.offs = make([][]int32, bb.tables)
	bb.hb.ids = make([][]int64, bb.tables)
	bb.hb.off = make([][]int32, bb.tables)
	return bb
}

// laneRows returns, for up to n samples, the row of the virtual batch's
// pooled output (N·lanes × tables rows of dim) that holds each row of the
// model's N×Features pooled embeddings: the index of GatherRows from that
// layout and of ScatterRows back. The index for fewer samples is a prefix.
func (bb *bagBuilder) laneRows(n int) []int32 {
	T, L, F := bb.tables, bb.lanes, bb.features
	idx := make([]int32, n*F)
	for s := range n {
		for t, fs := range bb.featOf {
			for j, f := range fs {
				idx[s*F+f] = int32((s*L+j)*T + t)
			}
		}
	}
	return idx
}

// build returns the host bags of batch b, valid until the next call.
func (bb *bagBuilder) build(b *dataset.Batch) (*hostBags, error) {
	if len(b.Sparse) != bb.features {
		return nil, fmt.Errorf("train: batch at %s row group %d row %d has %d sparse columns; the model has %d features: %w",
			b.Pos.File, b.Pos.RowGroup, b.Pos.Row, len(b.Sparse), bb.features, ErrInvalidOptions)
	}
	hb := &bb.hb
	if bb.shared {
		bb.buildLanes(b)
		return hb, nil
	}
	hb.n = b.N
	for t := range bb.tables {
		c := &b.Sparse[t]
		hb.ids[t], hb.off[t] = c.IDs, c.Offsets
	}
	return hb, nil
}

func (bb *bagBuilder) buildLanes(b *dataset.Batch) {
	hb := &bb.hb
	n, L := b.N, bb.lanes
	hb.n = n * L
	for t, fs := range bb.featOf {
		total := 0
		for _, f := range fs {
			total += len(b.Sparse[f].IDs)
		}
		ids := grow(bb.ids[t], total)[:0]
		off := grow(bb.offs[t], n*L+1)
		off[0] = 0
		for s := range n {
			for j := range L {
				if j < len(fs) {
					ids = append(ids, b.Sparse[fs[j]].Row(s)...)
				}
				off[s*L+j+1] = int32(len(ids))
			}
		}
		bb.ids[t], bb.offs[t] = ids, off
		hb.ids[t], hb.off[t] = ids, off
	}
}

// grow returns s with length n, reallocating only when its capacity is short.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}
