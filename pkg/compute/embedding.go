package compute

import (
	"fmt"
	"math/bits"
)

// PackedTable holds the rows of several embedding tables of one dimension in
// one buffer (PICASSO's D-packing): table t owns packed rows
// [Start[t], Start[t+1]), and row id of table t is packed row Start[t]+id.
// One lookup or update call covers all its tables. The buffers live in the
// memory of the backend that made the table, and only its kernels use them.
type PackedTable struct {
	Dim   int
	Start []int64 // len Tables()+1; Start[0] = 0, Start[Tables()] = Rows()
	W     Buffer  // Rows()×Dim float32 weights, row-major
	// Acc holds one row-wise Adagrad accumulator per packed row (two with
	// SplitLast). It is the zero Buffer until the first OptAdagrad update
	// allocates it (zeros), or AllocAcc does.
	Acc Buffer
	// SplitLast gives the last value of every row an Adagrad accumulator of
	// its own: each row's first Dim-1 values share one, the last has the
	// other (Acc[2r], Acc[2r+1]). Wide&Deep's and DeepFM's first-order
	// weight is that last value; its gradient's scale differs from the
	// factors'. Set it before the state is allocated.
	SplitLast bool

	be   Backend // allocates Acc, frees both
	plan []Shard
	// A view made by Table: its rows are rows base.. of root's, and its
	// table 0 is root's table first (in error messages).
	root  *PackedTable
	base  int64
	first int
}

// NewPackedTable returns a zeroed packed table in be's memory for tables
// with the given row counts, all of dimension dim, with the default plan
// of one shard per table. Free releases its memory.
func NewPackedTable(be Backend, dim int, rows []int64) (*PackedTable, error) {
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
	w, err := be.Alloc(Float32, int(total)*dim)
	if err != nil {
		return nil, fmt.Errorf("compute: packed table of %d rows × %d: %w", total, dim, err)
	}
	return &PackedTable{Dim: dim, Start: start, W: w, be: be, plan: defaultPlan(len(rows))}, nil
}

const maxInt = int(^uint(0) >> 1)

// Backend returns the backend whose memory holds the table.
func (t *PackedTable) Backend() Backend { return t.be }

// Free releases the table's buffers. Views (Table) must not be used after.
func (t *PackedTable) Free() {
	if t.root != nil {
		return
	}
	t.be.Free(t.W)
	t.be.Free(t.Acc)
	t.W, t.Acc = Buffer{}, Buffer{}
}

// Tables returns the number of tables packed in t.
func (t *PackedTable) Tables() int { return len(t.Start) - 1 }

// Rows returns the number of packed rows.
func (t *PackedTable) Rows() int64 { return t.Start[len(t.Start)-1] }

// TableRows returns the number of rows of table i.
func (t *PackedTable) TableRows(i int) int64 { return t.Start[i+1] - t.Start[i] }

// Row returns the weights of row id of table i (a view into W).
func (t *PackedTable) Row(i int, id int64) Buffer {
	o := int((t.Start[i] + id) * int64(t.Dim))
	return t.W.Slice(o, o+t.Dim)
}

// Table returns a view of table i alone, a PackedTable of one table that
// shares t's weights and Adagrad state, and t's shards of table i. Kernels
// called on the view read and write table i's rows of t, so that running a
// kernel once per table gives the results of one packed call, bit for bit.
// The view follows t's W and Acc as they are when it is made, except that
// an Acc allocated by an update of the view is allocated in t.
func (t *PackedTable) Table(i int) *PackedTable {
	lo, hi := t.Start[i], t.Start[i+1]
	d := t.Dim
	root := t
	if t.root != nil {
		root = t.root
	}
	v := &PackedTable{Dim: t.Dim, Start: []int64{0, hi - lo}, W: t.W.Slice(int(lo)*d, int(hi)*d), be: t.be,
		root: root, base: t.base + lo, first: t.first + i, SplitLast: t.SplitLast}
	if t.Acc.Valid() {
		aw := t.AccWidth()
		v.Acc = t.Acc.Slice(int(lo)*aw, int(hi)*aw)
	}
	for _, sh := range t.plan {
		if sh.Table == i {
			sh.Table = 0
			v.plan = append(v.plan, sh)
		}
	}
	return v
}

// stepState returns the host views of t's weights and, for Adagrad, its
// row-wise state (allocated on first use), for an update kernel.
func (t *PackedTable) stepState(step Step) (w, acc []float32, err error) {
	if step.Opt == OptAdagrad {
		if err := t.AllocAcc(); err != nil {
			return nil, nil, err
		}
		acc = f32s(t.Acc)
	}
	return f32s(t.W), acc, nil
}

// AllocAcc allocates the row-wise Adagrad state (zeros) if t has none; a
// view's state is allocated in the table it views.
func (t *PackedTable) AllocAcc() error {
	if t.Acc.Valid() {
		return nil
	}
	if r := t.root; r != nil {
		if err := r.AllocAcc(); err != nil {
			return err
		}
		aw := t.AccWidth()
		t.Acc = r.Acc.Slice(int(t.base)*aw, int(t.base+t.Rows())*aw)
		return nil
	}
	acc, err := t.be.Alloc(Float32, int(t.Rows())*t.AccWidth())
	if err != nil {
		return fmt.Errorf("compute: Adagrad state of %d rows: %w", t.Rows(), err)
	}
	t.Acc = acc
	return nil
}

// AccWidth returns the Adagrad accumulators per row: 2 with SplitLast,
// else 1.
func (t *PackedTable) AccWidth() int {
	if t.SplitLast {
		return 2
	}
	return 1
}

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
// CSR-style per table, in the memory of the backend that runs the lookup.
// Bag (s, t) holds IDs[t][Offsets[t][s]:Offsets[t][s+1]]; when Offsets[t]
// is the zero Buffer (or Offsets is nil), table t has exactly one ID per
// sample and IDs[t][s] is that ID. IDs are int64 or int32 (the kernels
// read either); offsets are int32.
//
// IDs are local to their table (row id of table t), unless Packed is set:
// then they are rows of the packed table, table t's lying in
// [Start[t], Start[t+1]). The packed hot table is looked up that way with
// the slots a FAE layout stores, without translating them per table.
type Bags struct {
	N       int      // samples in the batch
	IDs     []Buffer // one buffer per table
	Offsets []Buffer // one buffer of N+1 bounds per table, or nil
	Packed  bool
}

// offsets returns the host view of table i's offsets (nil for one ID per
// sample).
func (b *Bags) offsets(i int) []int32 {
	if b.Offsets == nil || !b.Offsets[i].Valid() {
		return nil
	}
	return i32s(b.Offsets[i])
}

// bounds returns the bounds of bag (s, t) given t's offsets.
func bounds(off []int32, s int) (lo, hi int) {
	if off != nil {
		return int(off[s]), int(off[s+1])
	}
	return s, s + 1
}

// idRange returns, for table i of t and the bags' ID convention, the first
// valid ID and the number of valid IDs, and what to add to an ID to get its
// packed row in t.
func idRange(t *PackedTable, b *Bags, i int) (lo, rows, toRow int64) {
	return t.IDRange(i, b.Packed)
}

// IDRange returns, for table i of t, the first valid ID of a lookup and the
// number of valid IDs, and what to add to an ID to get its packed row of
// t: for IDs local to the table (packed false) or for rows of the packed
// table t is a view of (packed true, see Bags.Packed). Backends outside
// this package read bags with it.
func (t *PackedTable) IDRange(i int, packed bool) (lo, rows, toRow int64) {
	rows = t.TableRows(i)
	if packed {
		lo = t.base + t.Start[i]
		return lo, rows, -t.base
	}
	return 0, rows, t.Start[i]
}

// TableIndex returns the index of table i of a view (Table) in the table
// it views, as error messages name it.
func (t *PackedTable) TableIndex(i int) int { return t.first + i }

// checkBags panics on shape errors (and buffers the backend does not own)
// and returns an error for bad offsets.
func checkBags(m *hostMem, kernel string, t *PackedTable, b *Bags, buf []float32, bufName string) error {
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
	m.check(kernel, "table", t.W, Float32)
	for i := range nt {
		ids := b.IDs[i]
		if ids.kind == Int32 {
			m.check(kernel, "ids", ids, Int32)
		} else {
			m.check(kernel, "ids", ids, Int64)
		}
		if b.Offsets != nil && b.Offsets[i].Valid() {
			m.check(kernel, "offsets", b.Offsets[i], Int32)
		}
		off := b.offsets(i)
		if off == nil {
			if ids.n != b.N {
				return fmt.Errorf("compute: table %d: %d ids for %d samples without offsets: %w", t.first+i, ids.n, b.N, ErrBadOffsets)
			}
			continue
		}
		if len(off) != b.N+1 {
			return fmt.Errorf("compute: table %d: %d offsets for %d samples; want %d: %w", t.first+i, len(off), b.N, b.N+1, ErrBadOffsets)
		}
		if off[0] != 0 || int(off[b.N]) != ids.n {
			return fmt.Errorf("compute: table %d: offsets span [%d, %d) for %d ids: %w", t.first+i, off[0], off[b.N], ids.n, ErrBadOffsets)
		}
		for s := range b.N {
			if off[s+1] < off[s] {
				return fmt.Errorf("compute: table %d: sample %d: offsets decrease (%d > %d): %w", t.first+i, s, off[s], off[s+1], ErrBadOffsets)
			}
		}
	}
	return nil
}

func idError(table, sample int, id, lo, rows int64) error {
	return fmt.Errorf("compute: table %d: sample %d: id %d not in [%d, %d): %w", table, sample, id, lo, lo+rows, ErrIDOutOfRange)
}

// index is an ID type the kernels read.
type index interface{ int32 | int64 }

// checkIDs returns an error for the first out-of-range ID of table i among
// samples [s0, s1).
func checkIDs(t *PackedTable, b *Bags, i, s0, s1 int) error {
	if b.IDs[i].kind == Int32 {
		return checkIDsOf(t, b, i32s(b.IDs[i]), i, s0, s1)
	}
	return checkIDsOf(t, b, i64s(b.IDs[i]), i, s0, s1)
}

func checkIDsOf[I index](t *PackedTable, b *Bags, ids []I, i, s0, s1 int) error {
	if s1 <= s0 {
		return nil
	}
	lo, rows, _ := idRange(t, b, i)
	off := b.offsets(i)
	p0, _ := bounds(off, s0)
	_, p1 := bounds(off, s1-1)
	for p := p0; p < p1; p++ {
		if id := int64(ids[p]); uint64(id-lo) >= uint64(rows) {
			s := s0 // find the sample, for the message
			for _, h := bounds(off, s); h <= p; _, h = bounds(off, s) {
				s++
			}
			return idError(t.first+i, s, id, lo, rows)
		}
	}
	return nil
}
