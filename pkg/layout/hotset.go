package layout

import (
	"fmt"
	"slices"
)

// HotSet says which rows of each table are hot and where each hot row lives
// in the packed hot table: table t's hot rows take slots
// [Offset(t), Offset(t)+len(IDs(t))) in ascending ID order.
type HotSet struct {
	ids     [][]int64 // per table, sorted hot IDs (slot order)
	offsets []int64   // per table, first slot; len = tables+1
	dense   [][]int32 // per table, slot+1 per row (0 = cold) when the table is small enough
	sparse  []map[int64]int32
}

// denseLimit bounds the rows for which a table keeps a dense ID→slot array.
const denseLimit = 1 << 28

// NewHotSet builds a hot set from per-table hot IDs (any order, no
// duplicates) and the tables' row counts.
func NewHotSet(hot [][]int64, rows []int64) (*HotSet, error) {
	if len(hot) != len(rows) {
		return nil, fmt.Errorf("layout: %d hot lists for %d tables", len(hot), len(rows))
	}
	h := &HotSet{offsets: make([]int64, len(hot)+1)}
	for t, ids := range hot {
		s := slices.Clone(ids)
		slices.Sort(s)
		for i, id := range s {
			if id < 0 || id >= rows[t] {
				return nil, fmt.Errorf("layout: table %d: hot id %d out of range [0, %d)", t, id, rows[t])
			}
			if i > 0 && s[i-1] == id {
				return nil, fmt.Errorf("layout: table %d: hot id %d listed twice", t, id)
			}
		}
		h.ids = append(h.ids, s)
		h.offsets[t+1] = h.offsets[t] + int64(len(s))
		if rows[t] <= denseLimit {
			d := make([]int32, rows[t])
			for i, id := range s {
				d[id] = int32(h.offsets[t]) + int32(i) + 1
			}
			h.dense = append(h.dense, d)
			h.sparse = append(h.sparse, nil)
		} else {
			m := make(map[int64]int32, len(s))
			for i, id := range s {
				m[id] = int32(h.offsets[t]) + int32(i)
			}
			h.dense = append(h.dense, nil)
			h.sparse = append(h.sparse, m)
		}
	}
	if h.offsets[len(hot)] > 1<<31-1 {
		return nil, fmt.Errorf("layout: %d hot rows do not fit int32 slots", h.offsets[len(hot)])
	}
	return h, nil
}

// Tables returns the number of tables.
func (h *HotSet) Tables() int { return len(h.ids) }

// Rows returns the packed hot table's total rows.
func (h *HotSet) Rows() int64 { return h.offsets[len(h.ids)] }

// TableRows returns table t's hot rows.
func (h *HotSet) TableRows(t int) int64 { return h.offsets[t+1] - h.offsets[t] }

// Offset returns table t's first slot in the packed hot table.
func (h *HotSet) Offset(t int) int64 { return h.offsets[t] }

// IDs returns table t's hot IDs in slot order (do not modify).
func (h *HotSet) IDs(t int) []int64 { return h.ids[t] }

// Slot returns the packed slot of (t, id) and whether the row is hot.
func (h *HotSet) Slot(t int, id int64) (int32, bool) {
	if d := h.dense[t]; d != nil {
		if id < 0 || id >= int64(len(d)) {
			return 0, false
		}
		s := d[id]
		return s - 1, s != 0
	}
	s, ok := h.sparse[t][id]
	return s, ok
}

// ID returns the original (table, ID) of a packed slot.
func (h *HotSet) ID(slot int64) (t int, id int64) {
	t, _ = slices.BinarySearch(h.offsets, slot+1)
	t--
	return t, h.ids[t][slot-h.offsets[t]]
}
