package train

import (
	"fmt"

	"github.com/picasso-ctr/picasso/pkg/compute"
	"github.com/picasso-ctr/picasso/pkg/layout"
)

// hotTable is the device copy of the hot rows in fae and artifact modes:
// every table's hot rows packed into one compute.PackedTable on the device,
// in the slot order of the layout's hot set (so that the slots a hot
// mini-batch holds are its rows), with the master row each slot mirrors
// and the rows changed on either side since the last synchronisation.
//
// A sync moves only changed rows, in chunks through staging buffers: the
// side that has them gathers them (GatherRows) into a contiguous buffer,
// which crosses the link in one copy with the slots it holds, and the
// other side scatters them (ScatterRows). The slots cross as int32.
type hotTable struct {
	t      *compute.PackedTable // on the device
	master *compute.PackedTable // on the host
	rows   []int64              // packed master row of each slot
	// hostDirty holds the master rows cold mini-batches changed since the
	// last host-to-device sync; devDirty the slots hot mini-batches changed
	// since the last device-to-host sync.
	hostDirty *rowSet
	devDirty  *rowSet

	chunk int // rows per sync copy
	a, ha *allocator
	// Staging: host rows, accumulators, master rows and slots of a chunk;
	// the device's rows, accumulators and slots.
	hRows, hAcc, hMaster, hSlots compute.Buffer
	dRows, dAcc, dSlots          compute.Buffer
	slots                        []int64 // scratch: the slots being synced
}

// syncChunk bounds the rows one sync copy moves, and so the staging memory
// (on each side, chunk × (dim+1) floats and the indices).
const syncChunk = 1 << 16

// newHotTable builds the hot table on dev from the layout's hot set and
// fills it from the master (on host), as placing the model on the device
// would: that first copy is not counted.
func newHotTable(master *compute.PackedTable, hs *layout.HotSet, host, dev compute.Backend) (*hotTable, error) {
	if hs.Tables() != master.Tables() {
		return nil, fmt.Errorf("train: the hot set has %d tables; the model has %d: %w", hs.Tables(), master.Tables(), ErrInvalidOptions)
	}
	counts := make([]int64, hs.Tables())
	for t := range counts {
		counts[t] = hs.TableRows(t)
	}
	ht, err := compute.NewPackedTable(dev, master.Dim, counts)
	if err != nil {
		return nil, fmt.Errorf("train: hot table: %w", err)
	}
	h := &hotTable{t: ht, master: master, rows: make([]int64, ht.Rows()), a: newAllocator(dev), ha: newAllocator(host)}
	ok := false
	defer func() {
		if !ok {
			h.close()
		}
	}()
	seen := newRowSet(master.Rows())
	for t := range counts {
		rows := master.TableRows(t)
		for k, id := range hs.IDs(t) {
			if id < 0 || id >= rows {
				return nil, fmt.Errorf("train: hot set: table %d: hot id %d (slot %d) not in [0, %d): %w", t, id, k, rows, ErrInvalidOptions)
			}
			r := master.Start[t] + id
			if seen.has(r) {
				return nil, fmt.Errorf("train: hot set: table %d: id %d listed twice: %w", t, id, ErrInvalidOptions)
			}
			seen.add(r)
			h.rows[ht.Start[t]+int64(k)] = r
		}
	}
	ht.SplitLast = master.SplitLast
	if master.Acc.Valid() {
		if err := ht.AllocAcc(); err != nil {
			return nil, err
		}
	}
	h.hostDirty = newRowSet(master.Rows())
	h.devDirty = newRowSet(ht.Rows())
	h.chunk = int(min(ht.Rows(), syncChunk))
	d, aw := master.Dim, master.AccWidth()
	h.hRows, h.hAcc = h.ha.f32(h.chunk*d), h.ha.f32(h.chunk*aw)
	h.hMaster, h.hSlots = h.ha.i64(h.chunk), h.ha.i32(h.chunk)
	h.dRows, h.dAcc, h.dSlots = h.a.f32(h.chunk*d), h.a.f32(h.chunk*aw), h.a.i32(h.chunk)
	if err := firstErr(h.a.err, h.ha.err); err != nil {
		return nil, err
	}
	all := make([]int64, len(h.rows))
	for s := range all {
		all[s] = int64(s)
	}
	h.toDevice(all, &link{dev: dev}) // a link of its own: placing the model is not counted
	ok = true
	return h, nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (h *hotTable) close() {
	h.a.free()
	h.ha.free()
	h.t.Free()
}

// syncToDevice copies to the device the hot rows the host changed since
// the last sync, and returns how many.
func (h *hotTable) syncToDevice(l *link) int64 {
	if h.hostDirty.count() == 0 {
		return 0
	}
	slots := h.slots[:0]
	for s, r := range h.rows {
		if h.hostDirty.has(r) {
			slots = append(slots, int64(s))
		}
	}
	h.slots = slots
	h.hostDirty.clear()
	h.toDevice(slots, l)
	return int64(len(slots))
}

// toDevice copies the master rows of the given slots (increasing) to the
// hot table, chunk by chunk: the host gathers them, they cross with their
// slots, the device scatters them.
func (h *hotTable) toDevice(slots []int64, l *link) {
	host, dev, d := h.master.Backend(), h.t.Backend(), h.t.Dim
	for lo := 0; lo < len(slots); lo += h.chunk {
		k := h.stage(slots[lo:min(lo+h.chunk, len(slots))])
		hRows, mIdx := h.hRows.Head(k*d), h.hMaster.Head(k)
		host.GatherRows(hRows, h.master.W, mIdx, d)
		l.put(h.dRows.Head(k*d), hRows)
		l.put(h.dSlots.Head(k), h.hSlots.Head(k))
		dev.ScatterRows(h.t.W, h.dRows.Head(k*d), h.dSlots.Head(k), d)
		if h.t.Acc.Valid() {
			aw := h.t.AccWidth()
			host.GatherRows(h.hAcc.Head(k*aw), h.master.Acc, mIdx, aw)
			l.put(h.dAcc.Head(k*aw), h.hAcc.Head(k*aw))
			dev.ScatterRows(h.t.Acc, h.dAcc.Head(k*aw), h.dSlots.Head(k), aw)
		}
	}
}

// stage writes a chunk's slots (int32, to cross to the device) and their
// master rows (for the host's gather or scatter) into the host staging
// buffers, and returns how many.
func (h *hotTable) stage(part []int64) int {
	k := len(part)
	masters, ss := h.hMaster.Int64s()[:k], h.hSlots.Int32s()[:k]
	for i, s := range part {
		masters[i], ss[i] = h.rows[s], int32(s)
	}
	return k
}

// syncToHost copies to the master the hot rows the device changed since
// the last sync, and returns how many: the slots cross to the device, which
// gathers their rows, and the rows cross back to be scattered into the
// master.
func (h *hotTable) syncToHost(l *link) (int64, error) {
	slots := h.devDirty.appendRows(h.slots[:0])
	h.slots = slots
	if len(slots) == 0 {
		return 0, nil
	}
	host, dev, d := h.master.Backend(), h.t.Backend(), h.t.Dim
	for lo := 0; lo < len(slots); lo += h.chunk {
		k := h.stage(slots[lo:min(lo+h.chunk, len(slots))])
		l.put(h.dSlots.Head(k), h.hSlots.Head(k))
		dev.GatherRows(h.dRows.Head(k*d), h.t.W, h.dSlots.Head(k), d)
		l.get(h.hRows.Head(k*d), h.dRows.Head(k*d))
		if h.t.Acc.Valid() {
			aw := h.t.AccWidth()
			dev.GatherRows(h.dAcc.Head(k*aw), h.t.Acc, h.dSlots.Head(k), aw)
			l.get(h.hAcc.Head(k*aw), h.dAcc.Head(k*aw))
		}
		if err := l.sync(); err != nil {
			return 0, err
		}
		mIdx := h.hMaster.Head(k)
		host.ScatterRows(h.master.W, h.hRows.Head(k*d), mIdx, d)
		if h.t.Acc.Valid() {
			aw := h.t.AccWidth()
			host.ScatterRows(h.master.Acc, h.hAcc.Head(k*aw), mIdx, aw)
		}
	}
	h.devDirty.clear()
	return int64(len(slots)), nil
}

// markCold records the master rows a cold mini-batch's update changes.
func (h *hotTable) markCold(hb *hostBags) {
	for t, ids := range hb.ids {
		base := h.master.Start[t]
		for _, id := range ids {
			h.hostDirty.add(base + id)
		}
	}
}

// markHot records the slots a hot mini-batch's update changes.
func (h *hotTable) markHot(hb *hostBags) {
	for _, ids := range hb.ids {
		for _, s := range ids {
			h.devDirty.add(s)
		}
	}
}
