package train

import (
	"fmt"

	"github.com/picasso-ctr/picasso/pkg/compute"
)

// Placement modes.
const (
	ModeFAE      = "fae"
	ModeHybrid   = "hybrid"
	ModeDevice   = "device"
	ModeCPU      = "cpu"
	ModeArtifact = "artifact"
)

// link counts the bytes that cross the emulated host/device link. Copies
// that the emulation makes (the device holds its own buffers) go through it.
type link struct {
	h2d, d2h int64
}

// toDevice copies src into a device buffer dst and counts it.
func (l *link) toDevice(dst, src []float32) {
	copy(dst, src)
	l.h2d += 4 * int64(len(src))
}

// toHost copies src into a host buffer dst and counts it.
func (l *link) toHost(dst, src []float32) {
	copy(dst, src)
	l.d2h += 4 * int64(len(src))
}

// hotTable is the device copy of the hot rows in fae and artifact modes:
// every table's hot rows packed into one compute.PackedTable, with the
// master row each slot mirrors and the rows changed on either side since
// the last synchronisation.
type hotTable struct {
	t      *compute.PackedTable
	master []int64 // packed master row of each slot
	// hostDirty holds the master rows cold mini-batches changed since the
	// last host-to-device sync; devDirty the slots hot mini-batches changed
	// since the last device-to-host sync.
	hostDirty *compute.RowSet
	devDirty  *compute.RowSet
	rows      []int64
}

// newHotTable builds the hot table from hotmap (per table, hot IDs in slot
// order) and fills it from the master, as placing the model on the device
// would.
func newHotTable(master *compute.PackedTable, hotmap [][]int64) (*hotTable, error) {
	if len(hotmap) != master.Tables() {
		return nil, fmt.Errorf("train: hot map has %d tables; the model has %d: %w", len(hotmap), master.Tables(), ErrInvalidOptions)
	}
	counts := make([]int64, len(hotmap))
	for t, ids := range hotmap {
		counts[t] = int64(len(ids))
	}
	ht, err := compute.NewPackedTable(master.Dim, counts)
	if err != nil {
		return nil, fmt.Errorf("train: hot table: %w", err)
	}
	h := &hotTable{t: ht, master: make([]int64, ht.Rows())}
	seen := compute.NewRowSet(master.Rows())
	for t, ids := range hotmap {
		rows := master.TableRows(t)
		for k, id := range ids {
			if id < 0 || id >= rows {
				return nil, fmt.Errorf("train: hot map: table %d: hot id %d (slot %d) not in [0, %d): %w", t, id, k, rows, ErrInvalidOptions)
			}
			r := master.Start[t] + id
			if seen.Has(r) {
				return nil, fmt.Errorf("train: hot map: table %d: id %d listed twice: %w", t, id, ErrInvalidOptions)
			}
			seen.Add(r)
			h.master[ht.Start[t]+int64(k)] = r
		}
	}
	if master.Acc != nil {
		ht.Acc = make([]float32, ht.Rows())
	}
	d := int64(master.Dim)
	for s, r := range h.master {
		copy(ht.W[int64(s)*d:(int64(s)+1)*d], master.W[r*d:(r+1)*d])
		if ht.Acc != nil {
			ht.Acc[s] = master.Acc[r]
		}
	}
	h.hostDirty = compute.NewRowSet(master.Rows())
	h.devDirty = compute.NewRowSet(ht.Rows())
	return h, nil
}

// rowBytes is what one row and its optimizer state occupy on the link.
func (h *hotTable) rowBytes() int64 {
	b := 4 * int64(h.t.Dim)
	if h.t.Acc != nil {
		b += 4
	}
	return b
}

// toDevice copies to the device the hot rows the host changed since the
// last sync, and returns how many.
func (h *hotTable) toDevice(master *compute.PackedTable, l *link) int64 {
	if h.hostDirty.Count() == 0 {
		return 0
	}
	d := int64(master.Dim)
	var n int64
	for s, r := range h.master {
		if !h.hostDirty.Has(r) {
			continue
		}
		copy(h.t.W[int64(s)*d:(int64(s)+1)*d], master.W[r*d:(r+1)*d])
		if h.t.Acc != nil {
			h.t.Acc[s] = master.Acc[r]
		}
		n++
	}
	h.hostDirty.Clear()
	l.h2d += n * h.rowBytes()
	return n
}

// toHost copies to the master the hot rows the device changed since the
// last sync, and returns how many.
func (h *hotTable) toHost(master *compute.PackedTable, l *link) int64 {
	h.rows = h.devDirty.AppendRows(h.rows[:0])
	if len(h.rows) == 0 {
		return 0
	}
	d := int64(master.Dim)
	for _, s := range h.rows {
		r := h.master[s]
		copy(master.W[r*d:(r+1)*d], h.t.W[s*d:(s+1)*d])
		if master.Acc != nil {
			master.Acc[r] = h.t.Acc[s]
		}
	}
	h.devDirty.Clear()
	n := int64(len(h.rows))
	l.d2h += n * h.rowBytes()
	return n
}

// hotOffsets returns the first slot of each table in the packed hot table.
func hotOffsets(hotmap [][]int64) []int64 {
	off := make([]int64, len(hotmap)+1)
	for t, ids := range hotmap {
		off[t+1] = off[t] + int64(len(ids))
	}
	return off
}
