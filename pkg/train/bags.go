package train

import (
	"fmt"

	"github.com/picasso-ctr/picasso/pkg/compute"
	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// bagBuilder turns the sparse columns of a batch (one per feature) into the
// per-table compute.Bags of one packed lookup, reusing its buffers.
//
// Without shared tables, table t is feature t and the batch's columns are
// used as they are. When features share a table, the lookup runs on a
// virtual batch of N·lanes samples (lanes = the most features of one table):
// sample s·lanes+j of table t holds the bag of t's j-th feature (empty when t
// has fewer), so one lookup pools every feature and one update sums the
// gradients of every feature before stepping a row. gather and scatter move
// between that layout and the model's N×Features×Dim.
type bagBuilder struct {
	tables   int
	features int
	dim      int
	featOf   [][]int // features of each table, in spec order
	shared   bool
	lanes    int
	featTab  []int

	bags   compute.Bags
	ids    [][]int64
	offs   [][]int32
	offPtr [][]int32

	// hotOff[t] is the first slot of table t in the packed hot table; hot
	// batches carry global slots, lookups need slots local to the table.
	hotOff []int64

	lane []float32 // (N·lanes)×tables×dim, for shared tables
}

func newBagBuilder(s Shape) *bagBuilder {
	bb := &bagBuilder{tables: len(s.TableRows), features: s.Features, dim: s.Dim, featTab: s.FeatureTable}
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
	bb.offPtr = make([][]int32, bb.tables)
	bb.bags.IDs = make([][]int64, bb.tables)
	return bb
}

// build returns the bags of batch b. hot marks a hot mini-batch whose IDs
// are global slots of the packed hot table. The result is valid until the
// next call.
func (bb *bagBuilder) build(b *dataset.Batch, hot bool) (*compute.Bags, error) {
	if len(b.Sparse) != bb.features {
		return nil, fmt.Errorf("train: batch at %s row group %d row %d has %d sparse columns; the model has %d features: %w",
			b.Pos.File, b.Pos.RowGroup, b.Pos.Row, len(b.Sparse), bb.features, ErrInvalidOptions)
	}
	bags := &bb.bags
	if bb.shared {
		return bb.buildLanes(b, hot), nil
	}
	bags.N = b.N
	bags.Offsets = nil
	multi := false
	for t := range bb.tables {
		c := &b.Sparse[t]
		ids := c.IDs
		if hot {
			ids = bb.local(t, ids)
		}
		bags.IDs[t] = ids
		bb.offPtr[t] = c.Offsets
		multi = multi || c.Offsets != nil
	}
	if multi {
		bags.Offsets = bb.offPtr
	}
	return bags, nil
}

// local copies ids, global hot slots of table t, into table t's buffer as
// slots local to the table.
func (bb *bagBuilder) local(t int, ids []int64) []int64 {
	buf := grow(bb.ids[t], len(ids))
	bb.ids[t] = buf
	off := bb.hotOff[t]
	for i, id := range ids {
		buf[i] = id - off
	}
	return buf
}

func (bb *bagBuilder) buildLanes(b *dataset.Batch, hot bool) *compute.Bags {
	bags := &bb.bags
	n, L := b.N, bb.lanes
	bags.N = n * L
	for t, fs := range bb.featOf {
		total := 0
		for _, f := range fs {
			total += len(b.Sparse[f].IDs)
		}
		ids := grow(bb.ids[t], total)[:0]
		off := grow(bb.offs[t], n*L+1)
		var base int64
		if hot {
			base = bb.hotOff[t]
		}
		off[0] = 0
		for s := range n {
			for j := range L {
				if j < len(fs) {
					for _, id := range b.Sparse[fs[j]].Row(s) {
						ids = append(ids, id-base)
					}
				}
				off[s*L+j+1] = int32(len(ids))
			}
		}
		bb.ids[t], bb.offs[t] = ids, off
		bags.IDs[t] = ids
		bb.offPtr[t] = off
	}
	bags.Offsets = bb.offPtr
	return bags
}

// laneBuf returns the buffer a shared-table lookup writes to.
func (bb *bagBuilder) laneBuf(n int) []float32 {
	need := n * bb.lanes * bb.tables * bb.dim
	bb.lane = grow(bb.lane, need)
	return bb.lane[:need]
}

// gather moves pooled embeddings from the lane layout to out (n×F×dim).
func (bb *bagBuilder) gather(out []float32, n int) {
	T, L, F, d := bb.tables, bb.lanes, bb.features, bb.dim
	for s := range n {
		for t, fs := range bb.featOf {
			for j, f := range fs {
				src := ((s*L+j)*T + t) * d
				copy(out[(s*F+f)*d:(s*F+f)*d+d], bb.lane[src:src+d])
			}
		}
	}
}

// scatter moves embedding gradients (n×F×dim) to the lane layout, zeroing
// the empty lanes, and returns it.
func (bb *bagBuilder) scatter(grad []float32, n int) []float32 {
	T, L, F, d := bb.tables, bb.lanes, bb.features, bb.dim
	lane := bb.laneBuf(n)
	clear(lane)
	for s := range n {
		for t, fs := range bb.featOf {
			for j, f := range fs {
				dst := ((s*L+j)*T + t) * d
				copy(lane[dst:dst+d], grad[(s*F+f)*d:(s*F+f)*d+d])
			}
		}
	}
	return lane
}

// grow returns s with length n, reallocating only when its capacity is short.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}
