package train

import (
	"fmt"

	"github.com/picasso-ctr/picasso/pkg/compute"
	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// embStore is a packed embedding table on one backend and the lookups into
// it: it turns a batch into bags in the table's memory (copying the IDs
// across the link when the table is on the device), pools them, and
// applies the sparse update of the same batch.
type embStore struct {
	t     *compute.PackedTable
	be    compute.Backend
	bb    *bagBuilder
	split *tableSplit // one kernel call per table (packing off); nil when packed
	a     *allocator

	// upload: the table is in device memory, and the bags are copied
	// there. slots: the batch's IDs are rows of the packed table (the hot
	// table's slots, which a FAE layout stores), sent as int32.
	upload, slots bool

	hb   *hostBags    // the last batch's host bags
	bags compute.Bags // the last batch's bags, in the table's memory

	// Host staging and device buffers of the uploaded bags: the IDs of
	// every table one after another, then every multi-hot table's bounds.
	stageIDs  []int64
	stageSlot []int32
	stageOff  []int32
	devIDs    compute.Buffer
	devOff    compute.Buffer

	// Shared tables: the pooled output of the virtual batch, and the row
	// index from the model's layout into it (laneRows).
	lane     compute.Buffer
	laneIdx  compute.Buffer
	features int
}

// newEmbStore returns a store for table t (on its backend) serving batches
// of up to batch samples of a model of shape s.
func newEmbStore(t *compute.PackedTable, s Shape, batch int, unpacked, slots bool) (*embStore, error) {
	be := t.Backend()
	e := &embStore{t: t, be: be, bb: newBagBuilder(s), a: newAllocator(be), upload: !be.Space().IsHost(), slots: slots,
		features: s.Features}
	e.bags.IDs = make([]compute.Buffer, t.Tables())
	e.bags.Offsets = make([]compute.Buffer, t.Tables())
	e.bags.Packed = slots
	if e.bb.shared {
		e.lane = e.a.f32(batch * e.bb.lanes * t.Tables() * t.Dim)
		idx := e.bb.laneRows(batch)
		e.laneIdx = e.a.i32(len(idx))
		place(be, e.laneIdx, compute.Wrap(idx))
	}
	if unpacked {
		e.split = newTableSplit(t, e.a, batch*e.bb.lanes)
	}
	if e.a.err != nil {
		e.close()
		return nil, e.a.err
	}
	return e, nil
}

func (e *embStore) close() {
	e.a.free()
	e.be.Free(e.devIDs)
	e.be.Free(e.devOff)
	e.devIDs, e.devOff = compute.Buffer{}, compute.Buffer{}
}

// prepare builds the bags of b in the table's memory, copying them over l
// when the table is on the device (l counts the bytes; nil copies them
// uncounted, for evaluations).
func (e *embStore) prepare(b *dataset.Batch, l *link) error {
	hb, err := e.bb.build(b)
	if err != nil {
		return err
	}
	e.hb = hb
	e.bags.N = hb.n
	if !e.upload {
		for t := range hb.ids {
			e.bags.IDs[t] = compute.Wrap(hb.ids[t])
			e.bags.Offsets[t] = compute.Buffer{}
			if hb.off[t] != nil {
				e.bags.Offsets[t] = compute.Wrap(hb.off[t])
			}
		}
		return nil
	}
	return e.send(b, hb, l)
}

// send checks the bags on the host (a device kernel cannot report bad
// data), gathers them into staging buffers and copies them to the device
// in two copies, IDs and bounds.
func (e *embStore) send(b *dataset.Batch, hb *hostBags, l *link) error {
	nIDs, nOff := 0, 0
	for t := range hb.ids {
		nIDs += len(hb.ids[t])
		if hb.off[t] != nil {
			nOff += len(hb.off[t])
		}
	}
	if e.slots {
		e.stageSlot = grow(e.stageSlot, nIDs)[:0]
	} else {
		e.stageIDs = grow(e.stageIDs, nIDs)[:0]
	}
	e.stageOff = grow(e.stageOff, nOff)[:0]
	type span struct{ ids, off [2]int }
	var spans [64]span
	sp := spans[:0]
	if len(hb.ids) > len(spans) {
		sp = make([]span, 0, len(hb.ids))
	}
	for t, ids := range hb.ids {
		lo, rows := int64(0), e.t.TableRows(t)
		if e.slots {
			lo = e.t.Start[t]
		}
		if err := checkBag(hb, t, ids, lo, rows); err != nil {
			return fmt.Errorf("train: mini-batch from %s row group %d row %d: %w: %w", b.Pos.File, b.Pos.RowGroup, b.Pos.Row, err, dataset.ErrBadData)
		}
		var s span
		if e.slots {
			s.ids[0] = len(e.stageSlot)
			for _, id := range ids {
				e.stageSlot = append(e.stageSlot, int32(id))
			}
			s.ids[1] = len(e.stageSlot)
		} else {
			s.ids[0] = len(e.stageIDs)
			e.stageIDs = append(e.stageIDs, ids...)
			s.ids[1] = len(e.stageIDs)
		}
		s.off = [2]int{len(e.stageOff), len(e.stageOff)}
		if hb.off[t] != nil {
			e.stageOff = append(e.stageOff, hb.off[t]...)
			s.off[1] = len(e.stageOff)
		}
		sp = append(sp, s)
	}
	kind, src := compute.Int64, compute.Wrap(e.stageIDs)
	if e.slots {
		kind, src = compute.Int32, compute.Wrap(e.stageSlot)
	}
	if err := e.ensure(&e.devIDs, kind, nIDs); err != nil {
		return err
	}
	if err := e.ensure(&e.devOff, compute.Int32, nOff); err != nil {
		return err
	}
	ids, off := e.devIDs.Head(nIDs), e.devOff.Head(nOff)
	e.copyIn(l, ids, src)
	if nOff > 0 {
		e.copyIn(l, off, compute.Wrap(e.stageOff))
	}
	for t, s := range sp {
		e.bags.IDs[t] = ids.Slice(s.ids[0], s.ids[1])
		e.bags.Offsets[t] = compute.Buffer{}
		if s.off[1] > s.off[0] {
			e.bags.Offsets[t] = off.Slice(s.off[0], s.off[1])
		}
	}
	return nil
}

// copyIn copies host data to the device over l, or uncounted when l is nil.
func (e *embStore) copyIn(l *link, dst, src compute.Buffer) {
	if l != nil {
		l.put(dst, src)
		return
	}
	place(e.be, dst, src)
}

// ensure makes *b a device buffer of kind with room for n elements.
func (e *embStore) ensure(b *compute.Buffer, kind compute.Kind, n int) error {
	if b.Valid() && b.Len() >= n {
		return nil
	}
	if b.Valid() {
		// A queued copy may still read the old buffer: wait first.
		if err := e.be.Sync(); err != nil {
			return err
		}
		e.be.Free(*b)
	}
	nb, err := e.be.Alloc(kind, max(n+n/4, 1))
	if err != nil {
		*b = compute.Buffer{}
		return fmt.Errorf("train: room for %d %v IDs on %s: %w", n, kind, e.be.Name(), err)
	}
	*b = nb
	return nil
}

// checkBag reports the first ID of table t outside [lo, lo+rows), or bad
// bounds, naming the sample.
func checkBag(hb *hostBags, t int, ids []int64, lo, rows int64) error {
	off := hb.off[t]
	if off != nil {
		if len(off) != hb.n+1 || off[0] != 0 || int(off[hb.n]) != len(ids) {
			return fmt.Errorf("table %d: %d bounds over %d ids for %d samples: %w", t, len(off), len(ids), hb.n, compute.ErrBadOffsets)
		}
		for s := range hb.n {
			if off[s+1] < off[s] {
				return fmt.Errorf("table %d: sample %d: bounds decrease: %w", t, s, compute.ErrBadOffsets)
			}
		}
	} else if len(ids) != hb.n {
		return fmt.Errorf("table %d: %d ids for %d samples: %w", t, len(ids), hb.n, compute.ErrBadOffsets)
	}
	for p, id := range ids {
		if uint64(id-lo) >= uint64(rows) {
			s := p
			if off != nil {
				for s = 0; int(off[s+1]) <= p; s++ {
				}
			}
			return fmt.Errorf("table %d: sample %d: id %d not in [%d, %d): %w", t, s, id, lo, lo+rows, compute.ErrIDOutOfRange)
		}
	}
	return nil
}

// lookup pools the prepared bags into out (N×Features×Dim, in the table's
// memory).
func (e *embStore) lookup(out compute.Buffer) error {
	if !e.bb.shared {
		return e.forward(out)
	}
	n := e.bags.N / e.bb.lanes
	lane := e.lane.Head(e.bags.N * e.t.Tables() * e.t.Dim)
	if err := e.forward(lane); err != nil {
		return err
	}
	e.be.GatherRows(out, lane, e.laneIdx.Head(n*e.features), e.t.Dim)
	return nil
}

func (e *embStore) forward(out compute.Buffer) error {
	if e.split != nil {
		return e.split.forward(e.be, e.t, &e.bags, out)
	}
	return e.be.EmbeddingBagForward(e.t, &e.bags, out)
}

// update applies step to the rows the prepared bags look up, given dOut,
// the gradient of the pooled output (N×Features×Dim, in the table's
// memory).
func (e *embStore) update(dOut compute.Buffer, step compute.Step) error {
	if e.bb.shared {
		n := e.bags.N / e.bb.lanes
		lane := e.lane.Head(e.bags.N * e.t.Tables() * e.t.Dim)
		e.be.Fill(lane, 0)
		e.be.ScatterRows(lane, dOut, e.laneIdx.Head(n*e.features), e.t.Dim)
		dOut = lane
	}
	if e.split != nil {
		return e.split.update(e.be, e.t, &e.bags, dOut, step)
	}
	return e.be.EmbeddingBagUpdate(e.t, &e.bags, dOut, step)
}
