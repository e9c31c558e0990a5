package train

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/picasso-ctr/picasso/pkg/compute"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/hybridhash"
	"github.com/picasso-ctr/picasso/pkg/layout"
)

// HybridHashOptions configures mode hybridhash (seeds/000 §III-D): the
// memory of each tier and the cache's schedule.
type HybridHashOptions struct {
	// DeviceBytes is the device memory for the hot store: k hot rows with
	// their optimizer state, each table's default row and the rows a
	// mini-batch misses (staged there for its step). A refresh briefly
	// holds the old and the new hot store.
	DeviceBytes int64
	// HostBytes bounds the host tier (rows, state and ~64 bytes each of
	// bookkeeping); rows beyond it spill to the disk tier.
	HostBytes int64
	// DiskDir holds the disk tier's database (default OutDir/hybridhash-disk;
	// it is emptied when a run starts or resumes).
	DiskDir string
	// WarmupIters, FlushIters, DecayIters and AdmitAfter: see
	// hybridhash.Options.
	WarmupIters, FlushIters, DecayIters int64
	AdmitAfter                          int
	// SketchWidth is the count-min sketch's counters per row (default 2^18).
	SketchWidth int
}

// Validate reports every problem with o at once.
func (o HybridHashOptions) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("train: hybridhash: "+format+": %w", append(a, ErrInvalidOptions)...))
	}
	if o.DeviceBytes <= 0 || o.HostBytes <= 0 {
		bad("device budget %d and host budget %d bytes must be > 0", o.DeviceBytes, o.HostBytes)
	}
	if o.WarmupIters < 0 || o.FlushIters < 1 || o.DecayIters < 0 {
		bad("warm-up %d, flush every %d, decay every %d steps (want ≥ 0, ≥ 1, ≥ 0)", o.WarmupIters, o.FlushIters, o.DecayIters)
	}
	if o.AdmitAfter < 0 || o.SketchWidth < 0 {
		bad("admit after %d sightings, sketch width %d", o.AdmitAfter, o.SketchWidth)
	}
	return errors.Join(errs...)
}

// hhPlacement is HybridHash's placement: the MLPs and the hot store on the
// device, the cold storage (host tier, then disk) in a hybridhash.Cache.
// Every table's device region is its default row (served to IDs not yet
// admitted), its hot rows (hot index i at slot 1+i) and room for the rows
// a mini-batch misses. A step resolves the batch's IDs to slots, copies
// the missed rows (weights and state) to their region, runs the lookup and
// update on the device like device mode (only slots cross), and copies the
// missed rows back to the cache. A refresh moves only the rows that enter
// or leave the hot store across the link.
type hhPlacement struct {
	c      *hybridhash.Cache
	copts  hybridhash.Options
	shape  Shape
	seed   uint64
	host   compute.Backend
	dev    compute.Backend
	dim    int
	width  int // floats per row in the cache: dim, then aw of optimizer state
	aw     int // Adagrad state per row: 0 without, 1, 2 when the first-order weight has its own (Shape.wide)
	batch  int
	unpack bool

	tab     *compute.PackedTable // on the device
	hotCap  []int64
	missCap []int64
	r       deviceRoute
	in      *inputs
	l       *link
	ph      *PhaseSeconds

	// The current batch: each feature's resolved IDs, each table's
	// distinct misses, the slot each miss is served from, the admitted
	// misses (index into misses) and their rows staged on the host.
	rb       dataset.Batch
	out      [][]int32
	misses   [][]int64
	missSlot [][]int64
	adm      [][]int32
	stageW   compute.Buffer // host: missCap rows of dim
	stageA   compute.Buffer // host: missCap accumulators
	row      []float32
	ha       *allocator
}

// hhDiskDir returns the directory of the working disk tier of a run.
func hhDiskDir(o HybridHashOptions, outDir string) string {
	if o.DiskDir != "" {
		return o.DiskDir
	}
	return filepath.Join(outDir, "hybridhash-disk")
}

// hhDiskMarker marks a directory as a disk tier picasso made, which a new
// run may empty.
const hhDiskMarker = "PICASSO-HYBRIDHASH"

// freshDiskDir empties dir for a new disk tier: it must not exist, be
// empty, or hold a disk tier of an earlier run (its marker file).
func freshDiskDir(dir string) error {
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("train: hybridhash: disk directory %s: %w", dir, err)
	case len(ents) > 0:
		if _, err := os.Stat(filepath.Join(dir, hhDiskMarker)); err != nil {
			return fmt.Errorf("train: hybridhash: disk directory %s is not empty and holds no %s file: not emptying it: %w", dir, hhDiskMarker, ErrInvalidOptions)
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("train: hybridhash: empty disk directory %s: %w", dir, err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("train: hybridhash: disk directory %s: %w", dir, err)
	}
	return os.WriteFile(filepath.Join(dir, hhDiskMarker), []byte("a picasso hybridhash disk tier; picasso train empties this directory\n"), 0o644)
}

func newHHPlacement(o placementOptions, in *inputs) (*hhPlacement, error) {
	s := o.shape
	p := &hhPlacement{shape: s, seed: o.seed, host: o.host, dev: o.dev, dim: s.RowDim(), width: s.RowDim(),
		batch: o.batch, unpack: o.unpacked, in: in, l: o.l, ph: o.ph, ha: newAllocator(o.host)}
	if o.adagrad {
		p.aw = 1
		if s.wide() {
			p.aw = 2 // as the master tables' SplitLast
		}
		p.width += p.aw
	}
	ok := false
	defer func() {
		if !ok {
			p.close() // the inputs too: the placement owns them from here
		}
	}()
	nt := len(s.TableRows)
	p.hotCap, p.missCap = make([]int64, nt), make([]int64, nt)
	feats := make([]int64, nt)
	for _, t := range s.FeatureTable {
		feats[t]++
	}
	var fixed int64
	for t := range nt {
		// One-hot features miss at most one row per sample; multi-hot ones
		// grow the region when a batch needs more.
		p.missCap[t] = int64(o.batch) * feats[t]
		fixed += 1 + p.missCap[t]
	}
	rowBytes := int64(4 * p.width)
	k := o.hh.DeviceBytes/rowBytes - fixed
	if k < 0 {
		return nil, fmt.Errorf("train: hybridhash: a device budget of %d bytes holds %d rows of %d bytes; the default rows and one mini-batch's misses need %d: %w",
			o.hh.DeviceBytes, o.hh.DeviceBytes/rowBytes, rowBytes, fixed, ErrInvalidOptions)
	}
	bounds := make([]float64, nt)
	for t, r := range s.TableRows {
		bounds[t] = math.Sqrt(1 / float64(r))
	}
	if err := freshDiskDir(o.diskDir); err != nil {
		return nil, err
	}
	var err error
	p.copts = hybridhash.Options{Tables: nt, Dim: p.dim, Width: p.width, Bounds: bounds, Seed: o.seed,
		HotRows: int(k), HostBytes: o.hh.HostBytes, DiskDir: o.diskDir, WarmupIters: o.hh.WarmupIters,
		FlushIters: o.hh.FlushIters, DecayIters: o.hh.DecayIters, AdmitAfter: uint32(o.hh.AdmitAfter),
		SketchWidth: o.hh.SketchWidth}
	p.c, err = hybridhash.New(p.copts)
	if err != nil {
		return nil, err
	}
	p.out = make([][]int32, s.Features)
	p.misses = make([][]int64, nt)
	p.missSlot = make([][]int64, nt)
	p.adm = make([][]int32, nt)
	p.row = make([]float32, p.width)
	p.rb.Sparse = make([]dataset.SparseColumn, s.Features)
	if err := p.layout(nil, nil); err != nil {
		return nil, err
	}
	// Default rows, one per table, placed on the device (not counted).
	for t := range nt {
		p.defaultRow(t, p.row)
		p.putRows(nil, p.tab.Start[t], p.row[:p.dim], p.row[p.dim:])
		if err := p.dev.Sync(); err != nil { // p.row is reused
			return nil, err
		}
	}
	ok = true
	return p, nil
}

// defaultRow writes table t's initial default row (weights, then state).
func (p *hhPlacement) defaultRow(t int, dst []float32) {
	hybridhash.InitRow(dst[:p.dim], hybridhash.Key{Table: int32(t), ID: math.MinInt64}, p.seed, math.Sqrt(1/float64(p.shape.TableRows[t])))
	clear(dst[p.dim:])
}

// layout allocates the device table for the current hot and miss
// capacities, moving the rows of old (whose hot rows were oldHot) that stay
// (default rows and hot IDs still hot) device to device, and rebuilds the
// store and the staging buffers.
func (p *hhPlacement) layout(old *compute.PackedTable, oldHot [][]int64) error {
	nt := len(p.hotCap)
	rows := make([]int64, nt)
	var miss int64
	for t := range nt {
		p.hotCap[t] = int64(len(p.c.HotIDs(t)))
		rows[t] = 1 + p.hotCap[t] + p.missCap[t]
		miss = max(miss, p.missCap[t])
	}
	tab, err := compute.NewPackedTable(p.dev, p.dim, rows)
	if err != nil {
		return fmt.Errorf("train: hybridhash: hot store: %w", err)
	}
	tab.SplitLast = p.aw == 2
	if p.aw > 0 {
		if err := tab.AllocAcc(); err != nil {
			tab.Free()
			return fmt.Errorf("train: hybridhash: hot store: %w", err)
		}
	}
	if old != nil {
		var from, to []int32
		for t := range nt {
			from, to = append(from, int32(old.Start[t])), append(to, int32(tab.Start[t]))
			now := p.c.HotIDs(t)
			j := 0
			for i, id := range oldHot[t] {
				for j < len(now) && now[j] < id {
					j++
				}
				if j < len(now) && now[j] == id {
					from, to = append(from, int32(old.Start[t]+1+int64(i))), append(to, int32(tab.Start[t]+1+int64(j)))
				}
			}
		}
		if err := p.moveDevice(tab, to, old, from); err != nil {
			tab.Free()
			return err
		}
	}
	if p.tab != nil {
		p.tab.Free()
	}
	p.tab = tab
	if p.r.s != nil {
		p.r.s.close()
	}
	if p.r.s, err = newEmbStore(tab, p.shape, p.batch, p.unpack, true); err != nil {
		return err
	}
	p.r.in, p.r.ph = p.in, p.ph
	if int64(p.stageW.Len()) < miss*int64(p.dim) {
		p.ha.free()
		p.stageW, p.stageA = p.ha.f32(int(miss)*p.dim), p.ha.f32(int(miss)*max(p.aw, 1))
		if p.ha.err != nil {
			return p.ha.err
		}
	}
	return nil
}

// moveDevice copies rows from of src to rows to of dst, on the device.
func (p *hhPlacement) moveDevice(dst *compute.PackedTable, to []int32, src *compute.PackedTable, from []int32) error {
	if len(from) == 0 {
		return nil
	}
	a := newAllocator(p.dev)
	defer a.free()
	n := len(from)
	fi, ti, rw := a.i32(n), a.i32(n), a.f32(n*p.dim)
	var ra compute.Buffer
	if p.aw > 0 {
		ra = a.f32(n * p.aw)
	}
	if a.err != nil {
		return a.err
	}
	p.l.put(fi, compute.Wrap(from))
	p.l.put(ti, compute.Wrap(to))
	p.dev.GatherRows(rw, src.W, fi, p.dim)
	p.dev.ScatterRows(dst.W, rw, ti, p.dim)
	if p.aw > 0 {
		p.dev.GatherRows(ra, src.Acc, fi, p.aw)
		p.dev.ScatterRows(dst.Acc, ra, ti, p.aw)
	}
	return p.dev.Sync()
}

// putRows copies rows (weights w, state acc) to consecutive device rows
// from slot: over l (counted) or uncounted when l is nil.
func (p *hhPlacement) putRows(l *link, slot int64, w, acc []float32) {
	n := len(w) / p.dim
	dst := p.tab.W.Slice(int(slot)*p.dim, (int(slot)+n)*p.dim)
	if l != nil {
		l.put(dst, compute.Wrap(w))
	} else {
		place(p.dev, dst, compute.Wrap(w))
	}
	if p.aw > 0 {
		da := p.tab.Acc.Slice(int(slot)*p.aw, (int(slot)+n)*p.aw)
		if l != nil {
			l.put(da, compute.Wrap(acc))
		} else {
			place(p.dev, da, compute.Wrap(acc))
		}
	}
}

// getRows copies n consecutive device rows from slot into w and acc over
// l (counted) and waits for them.
func (p *hhPlacement) getRows(l *link, slot int64, w, acc []float32) error {
	n := len(w) / p.dim
	l.get(compute.Wrap(w), p.tab.W.Slice(int(slot)*p.dim, (int(slot)+n)*p.dim))
	if p.aw > 0 {
		l.get(compute.Wrap(acc), p.tab.Acc.Slice(int(slot)*p.aw, (int(slot)+n)*p.aw))
	}
	return l.sync()
}

// refresh applies the cache's refresh (Algorithm 1, L23-26): the leaving
// rows go back to the cache, the device table is laid out for the new hot
// set (staying rows move on the device), and the entering rows come from
// the cache.
func (p *hhPlacement) refresh() error {
	nt := len(p.hotCap)
	oldHot := make([][]int64, nt)
	for t := range nt {
		oldHot[t] = p.c.HotIDs(t)
	}
	plan := p.c.Refresh()
	// Leaving rows: their old slots, fetched in one copy each way.
	if n := len(plan.Leave); n > 0 {
		slots := make([]int32, n)
		for i, k := range plan.Leave {
			j, _ := searchIDs(oldHot[k.Table], k.ID)
			slots[i] = int32(p.tab.Start[k.Table] + 1 + int64(j))
		}
		w, acc, err := p.gatherSlots(slots)
		if err != nil {
			return err
		}
		for i, k := range plan.Leave {
			copy(p.row, w[i*p.dim:(i+1)*p.dim])
			copy(p.row[p.dim:], acc[i*p.aw:(i+1)*p.aw])
			if err := p.c.Store(k, p.row); err != nil {
				return err
			}
		}
	}
	old := p.tab
	p.tab = nil
	err := p.layout(old, oldHot)
	old.Free()
	if err != nil {
		return err
	}
	if n := len(plan.Enter); n > 0 {
		slots := make([]int32, n)
		w := make([]float32, n*p.dim)
		acc := make([]float32, n*p.aw)
		for i, k := range plan.Enter {
			j, _ := searchIDs(p.c.HotIDs(int(k.Table)), k.ID)
			slots[i] = int32(p.tab.Start[k.Table] + 1 + int64(j))
			if err := p.c.Take(k, p.row); err != nil {
				return err
			}
			copy(w[i*p.dim:], p.row[:p.dim])
			copy(acc[i*p.aw:], p.row[p.dim:])
		}
		if err := p.scatterSlots(slots, w, acc); err != nil {
			return err
		}
	}
	return nil
}

func searchIDs(ids []int64, id int64) (int, bool) {
	lo, hi := 0, len(ids)
	for lo < hi {
		m := (lo + hi) / 2
		if ids[m] < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(ids) && ids[lo] == id
}

// gatherSlots copies the rows at slots of the device table to the host:
// the slots cross, the device gathers, the rows cross back.
func (p *hhPlacement) gatherSlots(slots []int32) (w, acc []float32, err error) {
	a := newAllocator(p.dev)
	defer a.free()
	n := len(slots)
	di, dw := a.i32(n), a.f32(n*p.dim)
	var da compute.Buffer
	if p.aw > 0 {
		da = a.f32(n * p.aw)
	}
	if a.err != nil {
		return nil, nil, a.err
	}
	w, acc = make([]float32, n*p.dim), make([]float32, n*p.aw)
	p.l.put(di, compute.Wrap(slots))
	p.dev.GatherRows(dw, p.tab.W, di, p.dim)
	p.l.get(compute.Wrap(w), dw)
	if p.aw > 0 {
		p.dev.GatherRows(da, p.tab.Acc, di, p.aw)
		p.l.get(compute.Wrap(acc), da)
	}
	return w, acc, p.l.sync()
}

// scatterSlots copies rows from the host to the slots of the device table.
func (p *hhPlacement) scatterSlots(slots []int32, w, acc []float32) error {
	a := newAllocator(p.dev)
	defer a.free()
	n := len(slots)
	di, dw := a.i32(n), a.f32(n*p.dim)
	var da compute.Buffer
	if p.aw > 0 {
		da = a.f32(n * p.aw)
	}
	if a.err != nil {
		return a.err
	}
	p.l.put(di, compute.Wrap(slots))
	p.l.put(dw, compute.Wrap(w))
	p.dev.ScatterRows(p.tab.W, dw, di, p.dim)
	if p.aw > 0 {
		p.l.put(da, compute.Wrap(acc))
		p.dev.ScatterRows(p.tab.Acc, da, di, p.aw)
	}
	return p.dev.Sync()
}

// resolve maps batch b's IDs to slots of the device table, stages the
// missed rows there (over l, or uncounted for evaluations when l is nil)
// and returns the rewritten batch.
func (p *hhPlacement) resolve(b *dataset.Batch, l *link, train bool) (*dataset.Batch, error) {
	s := p.shape
	if len(b.Sparse) != s.Features {
		return nil, fmt.Errorf("train: batch at %s row group %d row %d has %d sparse columns; the model has %d features: %w",
			b.Pos.File, b.Pos.RowGroup, b.Pos.Row, len(b.Sparse), s.Features, ErrInvalidOptions)
	}
	c := p.c
	c.Reset()
	for t := range p.misses {
		p.misses[t] = p.misses[t][:0]
	}
	for f, col := range b.Sparse {
		t := s.FeatureTable[f]
		p.out[f] = grow(p.out[f], len(col.IDs))
		p.misses[t] = c.Resolve(t, col.IDs, p.out[f], p.misses[t], train)
	}
	grown := false
	for t, m := range p.misses {
		if int64(len(m)) > p.missCap[t] {
			p.missCap[t] = int64(len(m)) + int64(len(m))/4
			grown = true
		}
	}
	if grown {
		nt := len(p.hotCap)
		hot := make([][]int64, nt)
		for t := range nt {
			hot[t] = p.c.HotIDs(t)
		}
		old := p.tab
		p.tab = nil
		err := p.layout(old, hot)
		old.Free()
		if err != nil {
			return nil, err
		}
	}
	w, acc := p.stageW.Float32s(), p.stageA.Float32s()
	for t, m := range p.misses {
		base := p.tab.Start[t] + 1 + p.hotCap[t]
		p.missSlot[t] = grow(p.missSlot[t], len(m))
		p.adm[t] = p.adm[t][:0]
		for j, id := range m {
			ok, err := c.Fetch(hybridhash.Key{Table: int32(t), ID: id}, p.row, train)
			if err != nil {
				return nil, err
			}
			if !ok {
				p.missSlot[t][j] = p.tab.Start[t] // the default row
				continue
			}
			a := len(p.adm[t])
			p.missSlot[t][j] = base + int64(a)
			p.adm[t] = append(p.adm[t], int32(j))
			copy(w[a*p.dim:], p.row[:p.dim])
			copy(acc[a*p.aw:], p.row[p.dim:])
		}
		if a := len(p.adm[t]); a > 0 {
			var ac []float32
			if p.aw > 0 {
				ac = acc[:a*p.aw]
			}
			p.putRows(l, base, w[:a*p.dim], ac)
			if l == nil {
				if err := p.dev.Sync(); err != nil { // the staging is reused by the next table
					return nil, err
				}
			}
		}
		if l != nil && len(p.adm[t]) > 0 {
			if err := l.sync(); err != nil {
				return nil, err
			}
		}
	}
	rb := &p.rb
	rb.N, rb.Label, rb.Dense, rb.PTrue, rb.Pos = b.N, b.Label, b.Dense, b.PTrue, b.Pos
	for f, col := range b.Sparse {
		t := s.FeatureTable[f]
		ids := grow(rb.Sparse[f].IDs, len(col.IDs))
		hotBase := p.tab.Start[t] + 1
		for i, r := range p.out[f][:len(col.IDs)] {
			if r >= 0 {
				ids[i] = hotBase + int64(r)
			} else {
				ids[i] = p.missSlot[t][-1-r]
			}
		}
		rb.Sparse[f] = dataset.SparseColumn{IDs: ids, Offsets: col.Offsets}
	}
	return rb, nil
}

func (p *hhPlacement) lookup(b *dataset.Batch, _ bool) (stepInput, error) {
	if p.c.RefreshDue() {
		s0 := time.Now()
		if err := p.refresh(); err != nil {
			return stepInput{}, err
		}
		p.ph.Sync += time.Since(s0).Seconds() // a refresh is the hot set's synchronisation
	}
	t0 := time.Now()
	rb, err := p.resolve(b, p.l, true)
	if err != nil {
		return stepInput{}, err
	}
	p.ph.EmbForward += time.Since(t0).Seconds()
	return p.r.lookup(rb, p.l)
}

func (p *hhPlacement) backward(demb compute.Buffer) { p.r.backward(demb, p.l) }

// update steps the rows of the batch on the device, then copies the
// admitted missed rows back to the cache and ends the cache's step.
func (p *hhPlacement) update(step compute.Step) error {
	if err := p.r.update(step); err != nil {
		return err
	}
	w, acc := p.stageW.Float32s(), p.stageA.Float32s()
	for t, adm := range p.adm {
		a := len(adm)
		if a == 0 {
			continue
		}
		base := p.tab.Start[t] + 1 + p.hotCap[t]
		var ac []float32
		if p.aw > 0 {
			ac = acc[:a*p.aw]
		}
		if err := p.getRows(p.l, base, w[:a*p.dim], ac); err != nil {
			return err
		}
		for i, j := range adm {
			copy(p.row, w[i*p.dim:(i+1)*p.dim])
			copy(p.row[p.dim:], acc[i*p.aw:(i+1)*p.aw])
			if err := p.c.Store(hybridhash.Key{Table: int32(t), ID: p.misses[t][j]}, p.row); err != nil {
				return err
			}
		}
	}
	p.c.EndStep()
	return nil
}

func (p *hhPlacement) evalLookup(b *dataset.Batch) (stepInput, error) {
	rb, err := p.resolve(b, nil, false)
	if err != nil {
		return stepInput{}, err
	}
	return p.r.lookup(rb, nil)
}

func (p *hhPlacement) swap(_, _ layout.Class) (int64, error) { return 0, nil }
func (p *hhPlacement) syncMaster() (int64, error)            { return 0, nil }
func (p *hhPlacement) state() placementState                 { return placementState{ms: p.r.s} }

func (p *hhPlacement) close() {
	if p.r.s != nil {
		p.r.s.close()
	}
	p.in.close()
	p.ha.free()
	if p.tab != nil {
		p.tab.Free()
	}
	if p.c != nil {
		p.c.Close()
	}
}

// hhCkptPrefix starts the names of the directories beside checkpoint.bin
// that hold the cache's saved state; hhBestPrefix those of best.bin.
const (
	hhCkptPrefix = "hybridhash-ckpt-"
	hhBestPrefix = "hybridhash-best-"
)

// hhPrefix is the prefix of the saved caches of the checkpoint file named
// file: each file's saves are its own, so that writing one never removes
// a cache the other still names.
func hhPrefix(file string) string {
	if file == BestFile {
		return hhBestPrefix
	}
	return hhCkptPrefix
}

// defaultKey is the cache key of table t's default row in a saved state
// (a negative table, which no lookup uses).
func defaultKey(t int) hybridhash.Key { return hybridhash.Key{Table: int32(-1 - t)} }

// saveCache writes the hot and default rows into the disk tier and saves
// the cache (the disk tier's log so far, the counter and the hot
// set) into dir/PREFIX-STEP[-N], PREFIX that of the checkpoint file
// (hhPrefix). Copies from the device are not counted.
func (p *hhPlacement) saveCache(dir, file string, step int64) (string, func(), error) {
	if dir == "" {
		return "", nil, nil
	}
	nt := len(p.hotCap)
	w := make([]float32, 0)
	for t := range nt {
		n := 1 + p.hotCap[t]
		w = grow(w, int(n)*p.dim)
		acc := make([]float32, int(n)*p.aw)
		base := p.tab.Start[t]
		if err := fetch(p.dev, compute.Wrap(w), p.tab.W.Slice(int(base)*p.dim, int(base+n)*p.dim)); err != nil {
			return "", nil, err
		}
		if p.aw > 0 {
			if err := fetch(p.dev, compute.Wrap(acc), p.tab.Acc.Slice(int(base)*p.aw, int(base+n)*p.aw)); err != nil {
				return "", nil, err
			}
		}
		row := func(i int) []float32 {
			copy(p.row, w[i*p.dim:(i+1)*p.dim])
			copy(p.row[p.dim:], acc[i*p.aw:(i+1)*p.aw])
			return p.row
		}
		if err := p.c.SaveRow(defaultKey(t), row(0)); err != nil {
			return "", nil, err
		}
		for i, id := range p.c.HotIDs(t) {
			if err := p.c.SaveRow(hybridhash.Key{Table: int32(t), ID: id}, row(1+i)); err != nil {
				return "", nil, err
			}
		}
	}
	prefix := hhPrefix(file)
	name := fmt.Sprintf("%s%d", prefix, step)
	for n := 1; ; n++ {
		if _, err := os.Stat(filepath.Join(dir, name)); errors.Is(err, fs.ErrNotExist) {
			break
		}
		name = fmt.Sprintf("%s%d-%d", prefix, step, n)
	}
	if err := p.c.Checkpoint(filepath.Join(dir, name)); err != nil {
		return "", nil, err
	}
	done := func() {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if e.IsDir() && strings.HasPrefix(e.Name(), prefix) && e.Name() != name {
				os.RemoveAll(filepath.Join(dir, e.Name()))
			}
		}
	}
	return name, done, nil
}

// loadCache replaces the cache by the one saved under dir/name and puts
// its hot and default rows on the device (not counted).
func (p *hhPlacement) loadCache(dir, name string) error {
	if name == "" || strings.ContainsAny(name, `/\`) {
		return fmt.Errorf("the checkpoint names no hybridhash cache (%q): %w", name, ErrCheckpoint)
	}
	if err := p.c.Close(); err != nil {
		return err
	}
	p.c = nil
	if err := freshDiskDir(p.copts.DiskDir); err != nil {
		return err
	}
	c, err := hybridhash.Restore(p.copts, filepath.Join(dir, name))
	if err != nil {
		return err
	}
	p.c = c
	old := p.tab
	p.tab = nil
	err = p.layout(nil, nil)
	old.Free()
	if err != nil {
		return err
	}
	for t := range len(p.hotCap) {
		load := func(k hybridhash.Key, slot int64) error {
			ok, err := c.LoadRow(k, p.row)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("saved cache %s has no row for table %d id %d: %w", name, k.Table, k.ID, ErrCheckpoint)
			}
			p.putRows(nil, slot, p.row[:p.dim], p.row[p.dim:])
			return p.dev.Sync()
		}
		if err := load(defaultKey(t), p.tab.Start[t]); err != nil {
			return err
		}
		for i, id := range c.HotIDs(t) {
			if err := load(hybridhash.Key{Table: int32(t), ID: id}, p.tab.Start[t]+1+int64(i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// cacheStats returns the cache's statistics.
func (p *hhPlacement) cacheStats() *hybridhash.Stats {
	s := p.c.Stats()
	return &s
}

// CacheFigures are HybridHash's figures over a metrics interval or a run:
// the hit ratios of lookups and of distinct IDs per batch (PICASSO Table
// VI), the cache's counts over the span and the rows in each tier at its
// end.
type CacheFigures struct {
	HitRatio       Number `json:"hit_ratio"`
	UniqueHitRatio Number `json:"unique_hit_ratio"`
	hybridhash.Stats
}

// cacheInterval returns the figures of the span from prev (nil: the start)
// to now; the tier sizes are now's.
func cacheInterval(now hybridhash.Stats, prev *hybridhash.Stats) *CacheFigures {
	d := now
	if prev != nil {
		d.Lookups -= prev.Lookups
		d.Hits -= prev.Hits
		d.Unique -= prev.Unique
		d.UniqueHits -= prev.UniqueHits
		d.Admitted -= prev.Admitted
		d.Refused -= prev.Refused
		d.Entered -= prev.Entered
		d.Left -= prev.Left
		d.Refreshes -= prev.Refreshes
		d.Evictions -= prev.Evictions
		d.DiskBytesRead -= prev.DiskBytesRead
		d.DiskBytesWritten -= prev.DiskBytesWritten
		d.DiskRowsRead -= prev.DiskRowsRead
		d.DiskRowsWritten -= prev.DiskRowsWritten
	}
	return &CacheFigures{HitRatio: Number(d.HitRatio()), UniqueHitRatio: Number(d.UniqueHitRatio()), Stats: d}
}
