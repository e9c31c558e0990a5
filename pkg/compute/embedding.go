package compute

import (
	"fmt"
	"math/bits"
	"sync/atomic"
)

// PackedTable holds the rows of several embedding tables of one dimension in
// one slice (PICASSO's D-packing): table t owns packed rows
// [Start[t], Start[t+1]), and row id of table t is packed row Start[t]+id.
// One lookup or update call covers all its tables.
type PackedTable struct {
	Dim   int
	Start []int64   // len Tables()+1; Start[0] = 0, Start[Tables()] = Rows()
	W     []float32 // Rows()×Dim weights, row-major
	// Acc holds one row-wise Adagrad accumulator per packed row. It is nil
	// until the first OptRowWiseAdagrad update allocates it (zeros); set it
	// when restoring optimizer state.
	Acc []float32

	plan []Shard
	// A view made by Table: its rows are rows base.. of root's, and its
	// table 0 is root's table first (in error messages).
	root  *PackedTable
	base  int64
	first int
}

// NewPackedTable returns a zeroed packed table for tables with the given row
// counts, all of dimension dim, with the default plan of one shard per table.
func NewPackedTable(dim int, rows []int64) (*PackedTable, error) {
	if dim <= 0 {
		return nil, fmt.Errorf("compute: packed table: dim %d not positive: %w", dim, ErrInvalidOptions)
	}
	start := make([]int64, len(rows)+1)
	for t, r := range rows {
		if r < 0 {
			return nil, fmt.Errorf("compute: packed table: table %d has %d rows: %w", t, r, ErrInvalidOptions)
		}
		start[t+1] = start[t] + r
	}
	total := start[len(rows)]
	if hi, lo := bits.Mul64(uint64(total), uint64(dim)); hi != 0 || lo > uint64(maxInt) {
		return nil, fmt.Errorf("compute: packed table: %d rows of dim %d do not fit in memory: %w", total, dim, ErrInvalidOptions)
	}
	t := &PackedTable{Dim: dim, Start: start, W: make([]float32, total*int64(dim))}
	adviseHugePages(t.W)
	t.plan = defaultPlan(len(rows))
	return t, nil
}

const maxInt = int(^uint(0) >> 1)

// Tables returns the number of tables packed in t.
func (t *PackedTable) Tables() int { return len(t.Start) - 1 }

// Rows returns the number of packed rows.
func (t *PackedTable) Rows() int64 { return t.Start[len(t.Start)-1] }

// TableRows returns the number of rows of table i.
func (t *PackedTable) TableRows(i int) int64 { return t.Start[i+1] - t.Start[i] }

// Row returns the weights of row id of table i (a view into W).
func (t *PackedTable) Row(i int, id int64) []float32 {
	o := (t.Start[i] + id) * int64(t.Dim)
	return t.W[o : o+int64(t.Dim)]
}

// Table returns a view of table i alone, a PackedTable of one table that
// shares t's weights and Adagrad state, and t's shards of table i. Kernels
// called on the view read and write table i's rows of t, and record in a
// touched set the rows' packed indices in t, so that running a kernel once
// per table gives the results of one packed call, bit for bit. The view
// follows t's W and Acc as they are when it is made, except that an Acc
// allocated by an update of the view is allocated in t.
func (t *PackedTable) Table(i int) *PackedTable {
	lo, hi := t.Start[i], t.Start[i+1]
	d := int64(t.Dim)
	root := t
	if t.root != nil {
		root = t.root
	}
	v := &PackedTable{Dim: t.Dim, Start: []int64{0, hi - lo}, W: t.W[lo*d : hi*d : hi*d], root: root, base: t.base + lo, first: t.first + i}
	if t.Acc != nil {
		v.Acc = t.Acc[lo:hi:hi]
	}
	for _, sh := range t.plan {
		if sh.Table == i {
			sh.Table = 0
			v.plan = append(v.plan, sh)
		}
	}
	return v
}

// ensureAcc allocates the row-wise Adagrad state (zeros) if t has none; a
// view's state is allocated in the table it views.
func (t *PackedTable) ensureAcc() {
	if t.Acc != nil {
		return
	}
	if r := t.root; r != nil {
		r.ensureAcc()
		t.Acc = r.Acc[t.base : t.base+t.Rows() : t.base+t.Rows()]
		return
	}
	t.Acc = make([]float32, t.Rows())
}

// touchCap is the number of rows a touched set must cover: the rows of the
// table a view views, or t's own.
func (t *PackedTable) touchCap() int64 { return t.base + t.Rows() }

// Plan returns the shards that lookups and updates are split into.
func (t *PackedTable) Plan() []Shard { return t.plan }

// SetPlan replaces the shard plan (see PlanShards). Every table must be
// covered by parts 0..Parts-1 of one Parts value, each exactly once.
func (t *PackedTable) SetPlan(plan []Shard) error {
	nt := t.Tables()
	parts := make([]int, nt)
	seen := make(map[[2]int]bool, len(plan))
	for _, s := range plan {
		if s.Table < 0 || s.Table >= nt {
			return fmt.Errorf("compute: shard plan: table %d not in [0, %d): %w", s.Table, nt, ErrBadPlan)
		}
		if s.Parts < 1 || s.Part < 0 || s.Part >= s.Parts {
			return fmt.Errorf("compute: shard plan: table %d: part %d of %d: %w", s.Table, s.Part, s.Parts, ErrBadPlan)
		}
		if parts[s.Table] != 0 && parts[s.Table] != s.Parts {
			return fmt.Errorf("compute: shard plan: table %d split both %d and %d ways: %w", s.Table, parts[s.Table], s.Parts, ErrBadPlan)
		}
		parts[s.Table] = s.Parts
		k := [2]int{s.Table, s.Part}
		if seen[k] {
			return fmt.Errorf("compute: shard plan: table %d part %d listed twice: %w", s.Table, s.Part, ErrBadPlan)
		}
		seen[k] = true
	}
	for i, p := range parts {
		if p == 0 {
			return fmt.Errorf("compute: shard plan: table %d not covered: %w", i, ErrBadPlan)
		}
	}
	if len(seen) != len(plan) {
		return fmt.Errorf("compute: shard plan: duplicate shards: %w", ErrBadPlan)
	}
	for i, p := range parts {
		for q := range p {
			if !seen[[2]int{i, q}] {
				return fmt.Errorf("compute: shard plan: table %d part %d of %d missing: %w", i, q, p, ErrBadPlan)
			}
		}
	}
	t.plan = append([]Shard(nil), plan...)
	return nil
}

// Bags is one batch of lookups into the tables of a PackedTable, stored
// CSR-style per table. Bag (s, t) holds IDs[t][Offsets[t][s]:Offsets[t][s+1]];
// when Offsets[t] (or Offsets itself) is nil, table t has exactly one ID per
// sample and IDs[t][s] is that ID. IDs are local to their table.
type Bags struct {
	N       int       // samples in the batch
	IDs     [][]int64 // one slice per table
	Offsets [][]int32 // one slice of N+1 bounds per table, or nil
}

func (b *Bags) offsets(t int) []int32 {
	if b.Offsets == nil {
		return nil
	}
	return b.Offsets[t]
}

// bag returns the bounds of bag (s, t) in b.IDs[t].
func (b *Bags) bag(t, s int) (lo, hi int) {
	if off := b.offsets(t); off != nil {
		return int(off[s]), int(off[s+1])
	}
	return s, s + 1
}

// checkBags panics on shape errors and returns an error for bad offsets.
func checkBags(kernel string, t *PackedTable, b *Bags, buf []float32, bufName string) error {
	nt := t.Tables()
	if b.N < 0 {
		shapePanic(kernel, "negative batch size %d", b.N)
	}
	if len(b.IDs) != nt {
		shapePanic(kernel, "bags for %d tables; table has %d", len(b.IDs), nt)
	}
	if b.Offsets != nil && len(b.Offsets) != nt {
		shapePanic(kernel, "offsets for %d tables; table has %d", len(b.Offsets), nt)
	}
	needLen(kernel, bufName, buf, b.N*nt*t.Dim)
	for i := range nt {
		off := b.offsets(i)
		if off == nil {
			if len(b.IDs[i]) != b.N {
				return fmt.Errorf("compute: table %d: %d ids for %d samples without offsets: %w", t.first+i, len(b.IDs[i]), b.N, ErrBadOffsets)
			}
			continue
		}
		if len(off) != b.N+1 {
			return fmt.Errorf("compute: table %d: %d offsets for %d samples; want %d: %w", t.first+i, len(off), b.N, b.N+1, ErrBadOffsets)
		}
		if off[0] != 0 || int(off[b.N]) != len(b.IDs[i]) {
			return fmt.Errorf("compute: table %d: offsets span [%d, %d) for %d ids: %w", t.first+i, off[0], off[b.N], len(b.IDs[i]), ErrBadOffsets)
		}
		for s := range b.N {
			if off[s+1] < off[s] {
				return fmt.Errorf("compute: table %d: sample %d: offsets decrease (%d > %d): %w", t.first+i, s, off[s], off[s+1], ErrBadOffsets)
			}
		}
	}
	return nil
}

func idError(table, sample int, id, rows int64) error {
	return fmt.Errorf("compute: table %d: sample %d: id %d not in [0, %d): %w", table, sample, id, rows, ErrIDOutOfRange)
}

// checkIDs returns an error for the first out-of-range ID of table i among
// samples [s0, s1).
func checkIDs(t *PackedTable, b *Bags, i, s0, s1 int) error {
	if s1 <= s0 {
		return nil
	}
	rows := t.TableRows(i)
	ids := b.IDs[i]
	lo, _ := b.bag(i, s0)
	_, hi := b.bag(i, s1-1)
	for p := lo; p < hi; p++ {
		if id := ids[p]; uint64(id) >= uint64(rows) {
			s := s0 // find the sample, for the message
			for _, h := b.bag(i, s); h <= p; _, h = b.bag(i, s) {
				s++
			}
			return idError(t.first+i, s, id, rows)
		}
	}
	return nil
}

// RowSet is a set of packed row indices, one bit per row, used to record
// which rows an update changed so that a later sync copies only those.
// Add is safe for concurrent use; the other methods are not.
type RowSet struct {
	words []uint64
	n     int64
}

// NewRowSet returns an empty set for rows [0, n).
func NewRowSet(n int64) *RowSet {
	return &RowSet{words: make([]uint64, (n+63)/64), n: n}
}

// Cap returns the number of rows the set covers.
func (r *RowSet) Cap() int64 { return r.n }

// Add inserts row; it is safe to call concurrently.
func (r *RowSet) Add(row int64) {
	if uint64(row) >= uint64(r.n) {
		panic(fmt.Sprintf("compute: RowSet.Add(%d) outside [0, %d)", row, r.n))
	}
	w := &r.words[row>>6]
	bit := uint64(1) << (row & 63)
	if atomic.LoadUint64(w)&bit == 0 {
		atomic.OrUint64(w, bit)
	}
}

// Has reports whether row is in the set.
func (r *RowSet) Has(row int64) bool {
	if uint64(row) >= uint64(r.n) {
		return false
	}
	return r.words[row>>6]&(1<<(row&63)) != 0
}

// Count returns the number of rows in the set.
func (r *RowSet) Count() int64 {
	var c int
	for _, w := range r.words {
		c += bits.OnesCount64(w)
	}
	return int64(c)
}

// Clear empties the set.
func (r *RowSet) Clear() { clear(r.words) }

// AppendRows appends the rows in the set to dst in increasing order.
func (r *RowSet) AppendRows(dst []int64) []int64 {
	for i, w := range r.words {
		for w != 0 {
			b := bits.TrailingZeros64(w)
			dst = append(dst, int64(i)*64+int64(b))
			w &= w - 1
		}
	}
	return dst
}
