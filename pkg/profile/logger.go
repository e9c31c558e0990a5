package profile

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/picasso-ctr/picasso/internal/nonzero"
	"github.com/picasso-ctr/picasso/internal/par"
	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// DenseRowLimit is the largest table (in rows) whose counts are kept in a
// dense []uint32 (1 GiB at the limit); larger tables use a hash map holding
// only the rows seen.
const DenseRowLimit = 1 << 28

// TableInfo describes one embedding table of a logger.
type TableInfo struct {
	Name string
	Rows int64
}

// FeatureInfo describes one sparse feature of a logger: the table it looks
// up and whether it is multi-hot.
type FeatureInfo struct {
	Name     string
	Table    int
	MultiHot bool
}

// SampleInfo says what a logger's counts were drawn from.
type SampleInfo struct {
	// RowsSampled is the number of inputs counted.
	RowsSampled int64 `json:"rows_sampled"`
	// RowsTotal is the number of rows of the data the sample was drawn
	// from; 0 when unknown.
	RowsTotal int64 `json:"rows_total"`
	// RowsSkipped counts malformed rows dropped while reading.
	RowsSkipped int64 `json:"rows_skipped"`
	// SampleRate is the requested sample rate, in percent.
	SampleRate float64 `json:"sample_rate"`
	// Sampling is "row-groups", "rows", or "mixed" after merging both kinds.
	Sampling Sampling `json:"sampling"`
	// Seed is the seed the sample was drawn with.
	Seed uint64 `json:"seed"`
	// Fingerprint identifies the dataset (several joined by "+" after a
	// merge of loggers from different data).
	Fingerprint string `json:"fingerprint"`
}

// EffectiveRate returns the sampled share of the data in percent: measured
// (RowsSampled/RowsTotal) when RowsTotal is known, else the requested rate.
func (s *SampleInfo) EffectiveRate() float64 {
	if s.RowsTotal > 0 {
		return 100 * float64(s.RowsSampled) / float64(s.RowsTotal)
	}
	return s.SampleRate
}

// LoggerOptions configures a Logger.
type LoggerOptions struct {
	// KeepInputs is the fraction, in [0, 1], of counted inputs whose IDs are
	// kept to estimate the hot-input share (leave-one-out). The choice is a
	// keyed hash of the input's position, so it does not depend on the
	// order batches arrive in.
	KeepInputs float64
	// Seed keys the KeepInputs choice.
	Seed uint64
}

// Logger is the embedding logger: per table, the number of sampled accesses
// of every row. It also keeps a random subset of the sampled inputs (their
// IDs) for the hot-input share. A Logger is not safe for concurrent use;
// count shards in separate Loggers and Merge them.
type Logger struct {
	// Info describes the sample; Run fills it, Add counts RowsSampled.
	Info SampleInfo

	tables   []tableLog
	features []FeatureInfo
	wide     bool // some table has more than 2^32 rows: kept IDs are int64
	keepRate float64
	keepKey  uint64
	blocks   []*inputBlock
	lay      idLayout // how blocks pack their IDs (not wide)
}

// tableLog holds one table's counts.
type tableLog struct {
	info     TableInfo
	dense    []uint32         // when info.Rows <= DenseRowLimit
	sparse   map[int64]uint32 // otherwise
	accesses int64
}

// inputBlock holds kept inputs sampled at one rate: for each input, its IDs
// feature by feature (one per one-hot feature; lens gives the count of each
// multi-hot feature, in order), packed (kept.go), or in ids64 for a wide
// logger.
type inputBlock struct {
	weight float64 // 1/keep rate: how many sampled inputs one kept input stands for
	n      int64
	packed []byte
	ids64  []int64
	lens   []uint32
}

// NewLogger returns an empty logger for the spec's tables.
func NewLogger(spec *dataset.Spec, opts LoggerOptions) (*Logger, error) {
	if !(opts.KeepInputs >= 0 && opts.KeepInputs <= 1) {
		return nil, fmt.Errorf("profile: keep-inputs fraction %v is outside [0, 1]: %w", opts.KeepInputs, ErrOptions)
	}
	if len(spec.Sparse) == 0 {
		return nil, fmt.Errorf("profile: the data config has no sparse features: %w", ErrOptions)
	}
	tabs := spec.Tables()
	infos := make([]TableInfo, len(tabs))
	for i, t := range tabs {
		if t.Rows <= 0 {
			return nil, fmt.Errorf("profile: table %s has %d rows: %w", t.Name, t.Rows, ErrOptions)
		}
		infos[i] = TableInfo{Name: t.Name, Rows: t.Rows}
	}
	ft := spec.FeatureTable()
	feats := make([]FeatureInfo, len(spec.Sparse))
	for i, f := range spec.Sparse {
		feats[i] = FeatureInfo{Name: f.Name, Table: ft[i], MultiHot: f.MultiHot}
	}
	l := newLogger(infos, feats)
	l.keepRate = opts.KeepInputs
	l.keepKey = key(opts.Seed, 0x6b656570) // "keep"
	return l, nil
}

// DenseBytes is the memory of the dense count tables a logger of spec
// holds (4 bytes a row of each table of at most DenseRowLimit rows; larger
// tables count in a map).
func DenseBytes(spec *dataset.Spec) int64 {
	var n int64
	for _, t := range spec.Tables() {
		if denseTable(t.Rows) {
			n += 4 * t.Rows
		}
	}
	return n
}

// denseTable reports whether a table of rows rows is counted in a dense
// array.
func denseTable(rows int64) bool { return rows <= DenseRowLimit }

func newLogger(tables []TableInfo, feats []FeatureInfo) *Logger {
	l := &Logger{features: feats, tables: make([]tableLog, len(tables)), lay: newIDLayout(tables, feats)}
	for i, t := range tables {
		l.tables[i].info = t
		if denseTable(t.Rows) {
			l.tables[i].dense = make([]uint32, t.Rows)
		} else {
			l.tables[i].sparse = map[int64]uint32{}
		}
		if t.Rows > math.MaxUint32 {
			l.wide = true
		}
	}
	return l
}

// toPrefault returns the dense tables prefaultFor maps for a sample of
// about inputs inputs.
func (l *Logger) toPrefault(inputs float64) []int {
	perTable := make([]float64, len(l.tables))
	for _, f := range l.features {
		perTable[f.Table] += inputs
	}
	var out []int
	for z := range l.tables {
		if d := l.tables[z].dense; d != nil && perTable[z] >= float64(len(d))/64 {
			out = append(out, z)
		}
	}
	return out
}

// prefaultFor maps (prefault) the dense tables that a sample of about
// inputs inputs will touch nearly everywhere: those it gives at least 16
// accesses a page of counts on average. A table the sample only grazes (a
// large hashed one) keeps its untouched pages unmapped, costing no memory.
// The tables are mapped on every core at once: on one, the kaggle preset's
// 6.75 MB took 2.5-3 ms before its sample could start.
func (l *Logger) prefaultFor(inputs float64) {
	tabs := l.toPrefault(inputs)
	par.Each(len(tabs), runtime.GOMAXPROCS(0), func(k int) { prefault(l.tables[tabs[k]].dense) })
}

// Tables returns the logger's tables in spec order.
func (l *Logger) Tables() []TableInfo {
	out := make([]TableInfo, len(l.tables))
	for i := range l.tables {
		out[i] = l.tables[i].info
	}
	return out
}

// Features returns the logger's sparse features in spec order.
func (l *Logger) Features() []FeatureInfo { return slices.Clone(l.features) }

// Accesses returns the sampled accesses of table t (A_z): every ID of every
// counted input, multi-hot entries included.
func (l *Logger) Accesses(t int) int64 { return l.tables[t].accesses }

// Count returns the sampled access count of row id of table t.
func (l *Logger) Count(t int, id int64) uint32 {
	tl := &l.tables[t]
	if d := tl.dense; d != nil {
		if uint64(id) >= uint64(len(d)) {
			return 0
		}
		return d[id]
	}
	return tl.sparse[id]
}

// ForEach calls fn for every row of table t with a non-zero count, in
// increasing ID order.
func (l *Logger) ForEach(t int, fn func(id int64, count uint32)) {
	tl := &l.tables[t]
	if tl.dense != nil {
		for id, c := range tl.dense {
			if c != 0 {
				fn(int64(id), c)
			}
		}
		return
	}
	for _, id := range tl.sortedIDs() {
		fn(id, tl.sparse[id])
	}
}

// sortedIDs returns the IDs of a sparse table's counts in increasing order.
func (tl *tableLog) sortedIDs() []int64 {
	ids := make([]int64, 0, len(tl.sparse))
	for id := range tl.sparse {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// appendEntries appends table t's non-zero counts to out in increasing ID
// order: what the analysis estimates from (a dense table is walked
// without a call a row). out is a buffer the caller reuses from table to
// table: a slice grown afresh for each table cost the copies
// of its growth and a fault for each new page (about 600 of the 10,800
// page faults of a 5% profile of the kaggle preset).
func (l *Logger) appendEntries(out []uint32, t int) []uint32 {
	if d := l.tables[t].dense; d != nil {
		// A chunk of rows at a time (so out grows with the rows seen, not
		// with the table), 64 rows a mask of those not zero
		// (nonzero.Walker). A block with few rows seen has its bits
		// visited; a fuller one has each count stored and kept (n moves
		// on) only when it is not zero: a branch on it mispredicted on
		// most rows of a sampled table.
		w := nonzero.Walk(d)
		for w.Next() {
			chunk, ms := w.Chunk, w.Masks
			n := len(out)
			out = slices.Grow(out, len(chunk))[:n+len(chunk)]
			for k, mask := range ms {
				blk := chunk[64*k : min(64*k+64, len(chunk))]
				if bits.OnesCount64(mask) <= 16 {
					for ; mask != 0; mask &= mask - 1 {
						out[n] = blk[bits.TrailingZeros64(mask)]
						n++
					}
					continue
				}
				for _, c := range blk {
					out[n] = c
					n += int((c | -c) >> 31) // 1 when c != 0
				}
			}
			out = out[:n]
		}
		return out
	}
	l.ForEach(t, func(_ int64, c uint32) { out = append(out, c) })
	return out
}

// HotIDs returns the IDs of table t whose count is at least minCount, in
// increasing order. minCount 0 means every row of the table (a table kept
// whole).
func (l *Logger) HotIDs(t int, minCount uint32) []int64 {
	if minCount == 0 {
		rows := l.tables[t].info.Rows
		ids := make([]int64, rows)
		for i := range ids {
			ids[i] = int64(i)
		}
		return ids
	}
	var ids []int64
	l.ForEach(t, func(id int64, c uint32) {
		if c >= minCount {
			ids = append(ids, id)
		}
	})
	return ids
}

// Check reports whether spec describes the logger's tables and features.
func (l *Logger) Check(spec *dataset.Spec) error {
	tabs := spec.Tables()
	if len(tabs) != len(l.tables) || len(spec.Sparse) != len(l.features) {
		return fmt.Errorf("profile: the counts have %d tables and %d sparse features, the data config %d and %d: %w",
			len(l.tables), len(l.features), len(tabs), len(spec.Sparse), ErrMismatch)
	}
	var errs []error
	more := 0 // mismatches past the first few, counted only
	add := func(err error) {
		if len(errs) < 3 {
			errs = append(errs, err)
		} else {
			more++
		}
	}
	for i, t := range tabs {
		if li := l.tables[i].info; li.Name != t.Name || li.Rows != t.Rows {
			add(fmt.Errorf("profile: table %d is %s with %d rows in the counts, %s with %d rows in the data config: %w",
				i, li.Name, li.Rows, t.Name, t.Rows, ErrMismatch))
		}
	}
	ft := spec.FeatureTable()
	for i, f := range spec.Sparse {
		if lf := l.features[i]; lf.Name != f.Name || lf.Table != ft[i] || lf.MultiHot != f.MultiHot {
			add(fmt.Errorf("profile: sparse feature %d is %s in the counts, %s in the data config (or its table or multi-hot flag differ): %w",
				i, lf.Name, f.Name, ErrMismatch))
		}
	}
	if more > 0 {
		errs = append(errs, fmt.Errorf("and %d more tables or features differ", more))
	}
	return errors.Join(errs...)
}

// Add counts every row of b: each ID of each sparse feature adds one to its
// table's row. IDs must be in [0, rows) of their table.
func (l *Logger) Add(b *dataset.Batch) error {
	if err := l.count(b); err != nil {
		return err
	}
	if l.keepRate > 0 {
		l.keep(b)
	}
	return nil
}

// count is Add without keeping inputs: the per-table counts and the rows
// sampled.
func (l *Logger) count(b *dataset.Batch) error {
	if len(b.Sparse) != len(l.features) {
		return fmt.Errorf("profile: %s: row group %d: batch has %d sparse columns, want %d: %w",
			b.Pos.File, b.Pos.RowGroup, len(b.Sparse), len(l.features), ErrMismatch)
	}
	for f := range l.features {
		if err := l.countColumn(b, f); err != nil {
			return err
		}
	}
	l.Info.RowsSampled += int64(b.N)
	return nil
}

// countShared is count for workers that share l: table t is counted
// under locks[t], features taken from start on round the list, so that
// workers starting apart seldom wait on each other. The caller adds the
// rows sampled to l.Info.
func (l *Logger) countShared(b *dataset.Batch, locks []sync.Mutex, start int) error {
	if len(b.Sparse) != len(l.features) {
		return fmt.Errorf("profile: %s: row group %d: batch has %d sparse columns, want %d: %w",
			b.Pos.File, b.Pos.RowGroup, len(b.Sparse), len(l.features), ErrMismatch)
	}
	for k := range l.features {
		f := (start + k) % len(l.features)
		mu := &locks[l.features[f].Table]
		mu.Lock()
		err := l.countColumn(b, f)
		mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

func (l *Logger) countColumn(b *dataset.Batch, f int) error {
	col := &b.Sparse[f]
	if col.Offsets == nil && len(col.IDs) != b.N {
		return fmt.Errorf("profile: %s: row group %d: column %s has %d IDs for %d rows: %w",
			b.Pos.File, b.Pos.RowGroup, l.features[f].Name, len(col.IDs), b.N, ErrMismatch)
	}
	if col.Offsets != nil && len(col.Offsets) != b.N+1 {
		return fmt.Errorf("profile: %s: row group %d: column %s has %d offsets for %d rows: %w",
			b.Pos.File, b.Pos.RowGroup, l.features[f].Name, len(col.Offsets), b.N, ErrMismatch)
	}
	return l.countIDs(f, col.IDs, col.Offsets, b.Pos)
}

// countIDs adds one to the count of each of ids, feature f's IDs of rows
// from pos on (offsets, for a multi-hot feature, as in a SparseColumn);
// an ID out of its table's range is an error naming its row.
func (l *Logger) countIDs(f int, ids []int64, offsets []int32, pos dataset.Position) error {
	tl := &l.tables[l.features[f].Table]
	rows := tl.info.Rows
	bad := func(j int, id int64) error {
		row := j
		if offsets != nil {
			row, _ = slices.BinarySearch(offsets, int32(j+1))
			row--
		}
		return fmt.Errorf("profile: %s: row group %d, row %d of the group, column %s: id %d out of range [0, %d) of table %s: %w",
			pos.File, pos.RowGroup, pos.Row+int64(row), l.features[f].Name, id, rows, tl.info.Name, dataset.ErrBadData)
	}
	if d := tl.dense; d != nil { // len(d) == rows
		for j, id := range ids {
			if uint64(id) >= uint64(len(d)) {
				return bad(j, id)
			}
			if c := d[id]; c != math.MaxUint32 { // saturate rather than wrap
				d[id] = c + 1
			}
		}
	} else {
		for j, id := range ids {
			if uint64(id) >= uint64(rows) {
				return bad(j, id)
			}
			if c := tl.sparse[id]; c != math.MaxUint32 {
				tl.sparse[id] = c + 1
			}
		}
	}
	tl.accesses += int64(len(ids))
	return nil
}

// keep appends the inputs of b chosen at rate keepRate to the current block.
func (l *Logger) keep(b *dataset.Batch) { l.keepInto(l.currentBlock(), b) }

// currentBlock returns the block that inputs kept at rate keepRate go to,
// starting one when the last block has another rate.
func (l *Logger) currentBlock() *inputBlock {
	w := 1 / l.keepRate
	if n := len(l.blocks); n > 0 && l.blocks[n-1].weight == w {
		return l.blocks[n-1]
	}
	blk := &inputBlock{weight: w}
	l.blocks = append(l.blocks, blk)
	return blk
}

// keepInto appends the inputs of b chosen at rate keepRate to blk (whose
// weight is left to the caller). It only reads l, so workers may keep
// into blocks of their own at the same time.
func (l *Logger) keepInto(blk *inputBlock, b *dataset.Batch) {
	// The rows to keep first, then their IDs column by column into the
	// input-major block: one pass of the hash over the rows, and for
	// one-hot features a strided store instead of an append a value.
	rows := l.keptRows(b.Pos, b.N)
	if len(rows) == 0 {
		return
	}
	blk.n += int64(len(rows))
	oneHot := true
	for f := range l.features {
		oneHot = oneHot && !l.features[f].MultiHot && b.Sparse[f].Offsets == nil
	}
	if !oneHot || l.wide {
		for _, i := range rows {
			for f := range l.features {
				ids := b.Sparse[f].Row(int(i))
				if l.features[f].MultiHot {
					blk.lens = append(blk.lens, uint32(len(ids)))
				}
				if l.wide {
					blk.ids64 = append(blk.ids64, ids...)
					continue
				}
				for _, id := range ids {
					blk.packed = appendID(blk.packed, uint32(id), l.lay.feats[f].width)
				}
			}
		}
		blk.packed = spare(blk.packed)
		return
	}
	at, per := len(blk.packed), l.lay.per
	blk.packed = slices.Grow(blk.packed, len(rows)*per+3)[:at+len(rows)*per] // with spare's 3 bytes
	for f := range l.features {
		putIDs(blk.packed[at+l.lay.off[f]:], per, l.lay.feats[f].width, rows, b.Sparse[f].IDs)
	}
}

// keptRows returns the rows of n from pos whose inputs are kept at rate
// keepRate, as indices from pos: the choice is a keyed hash of each row's
// position (groupKey, then rowHash).
func (l *Logger) keptRows(pos dataset.Position, n int) []int32 {
	if l.keepRate >= 1 {
		rows := make([]int32, n)
		for i := range rows {
			rows[i] = int32(i)
		}
		return rows
	}
	// unitFloat(h) < keepRate holds exactly when h's top 53 bits are below
	// ceil(keepRate·2^53): both sides are exact in float64. The rows are
	// stored unconditionally and counted by the comparison, which the
	// branch predictor cannot guess for a rate far from 0 and 1.
	below := uint64(math.Ceil(l.keepRate * (1 << 53)))
	gk := groupKey(l.keepKey, stringHash(filepath.Base(pos.File)), pos.RowGroup)
	rows := make([]int32, min(int(float64(n)*l.keepRate*1.1)+16, n+1))
	k := 0
	for i := range n {
		if k == len(rows)-1 { // room for one more store
			rows = append(rows, make([]int32, len(rows))...)
		}
		rows[k] = int32(i)
		if rowHash(gk, pos.Row+int64(i))>>11 < below {
			k++
		}
	}
	return rows[:k:k]
}

// appendKept makes seg, inputs kept by keepInto at rate keepRate, the
// logger's last block, as it is: consecutive blocks of one weight are
// written as one (encode), so the file is the same as if they had been
// copied into one block, without the copy.
func (l *Logger) appendKept(seg *inputBlock) {
	seg.weight = 1 / l.keepRate
	l.blocks = append(l.blocks, seg)
}

// KeptInputs returns the number of inputs kept for the hot-input share.
func (l *Logger) KeptInputs() int64 {
	var n int64
	for _, b := range l.blocks {
		n += b.n
	}
	return n
}

// Merge adds other's counts, sample sizes and kept inputs to l. The two
// must have the same tables and features; they should count disjoint
// shards of the data. l keeps its seed; its sampling becomes "mixed" when
// the two differ, its fingerprint "l+other" when they differ, and its sample
// rate the merged RowsSampled/RowsTotal.
func (l *Logger) Merge(other *Logger) error {
	if len(l.tables) != len(other.tables) || !slices.Equal(l.features, other.features) {
		return fmt.Errorf("profile: merge: the loggers' features differ: %w", ErrMismatch)
	}
	for i := range l.tables {
		if l.tables[i].info != other.tables[i].info {
			return fmt.Errorf("profile: merge: table %d is %+v in one logger and %+v in the other: %w",
				i, l.tables[i].info, other.tables[i].info, ErrMismatch)
		}
	}
	for i := range l.tables {
		a, b := &l.tables[i], &other.tables[i]
		if a.dense != nil {
			for id, c := range b.dense {
				a.dense[id] = satAdd(a.dense[id], c)
			}
		} else {
			for id, c := range b.sparse {
				a.sparse[id] = satAdd(a.sparse[id], c)
			}
		}
		a.accesses += b.accesses
	}
	li, oi := &l.Info, &other.Info
	li.RowsSampled += oi.RowsSampled
	li.RowsTotal += oi.RowsTotal
	li.RowsSkipped += oi.RowsSkipped
	if li.RowsTotal > 0 {
		li.SampleRate = 100 * float64(li.RowsSampled) / float64(li.RowsTotal)
	}
	if li.Sampling != oi.Sampling {
		li.Sampling = "mixed"
	}
	if li.Fingerprint != oi.Fingerprint {
		li.Fingerprint += "+" + oi.Fingerprint
	}
	for _, b := range other.blocks {
		// Copy with clipped slices, so that later Adds to l never write
		// into other's arrays.
		cp := *b
		cp.packed, cp.ids64, cp.lens = spare(slices.Clip(cp.packed)), slices.Clip(cp.ids64), slices.Clip(cp.lens)
		l.blocks = append(l.blocks, &cp)
	}
	return nil
}

func satAdd(a, b uint32) uint32 {
	s := uint64(a) + uint64(b)
	if s > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(s)
}

// stringHash is FNV-1a of s.
func stringHash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// groupKey is the key of one row group's rows under key k: a group's
// rows are the SplitMix64 sequence it seeds (rowHash), one mixing a row.
// Hashing each row's position through four mixings, as before, was most
// of the cost of choosing kept inputs.
func groupKey(k, fileHash uint64, rowGroup int) uint64 {
	return mix64(k ^ mix64(fileHash^mix64(uint64(rowGroup))))
}

// rowHash hashes row under its group's key gk (groupKey).
func rowHash(gk uint64, row int64) uint64 {
	return mix64(gk + uint64(row)*0x9e3779b97f4a7c15)
}

// touch writes a zero in every 4 KiB page of b, memory just allocated
// (zero), so that each page is faulted in writable at once.
func touch(b []byte) {
	for i := 0; i < len(b); i += 4096 {
		b[i] = 0
	}
	if len(b) > 0 {
		b[len(b)-1] = 0
	}
}
