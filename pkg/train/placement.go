package train

import (
	"fmt"
	"time"

	"github.com/picasso-ctr/picasso/pkg/compute"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/hybridhash"
	"github.com/picasso-ctr/picasso/pkg/layout"
)

// stepInput is one mini-batch's input to the dense part of the model, in
// the dense backend's memory: n rows of dense values, labels and pooled
// embeddings.
type stepInput struct {
	n                 int
	dense, label, emb compute.Buffer
	demb              compute.Buffer // where the gradient of emb goes
}

// placement is where a mode keeps the embedding tables: it owns the tables,
// the buffers a step moves between host and device, and, in fae and
// artifact modes, the hot table and its synchronisation. The trainer's
// step goes through it once for the lookup and once for the update,
// whatever the mode; the link counts what crosses.
type placement interface {
	// lookup pools the embeddings of a training mini-batch (hot: its IDs
	// are hot slots) and returns the step's input on the dense backend.
	lookup(b *dataset.Batch, hot bool) (stepInput, error)
	// backward starts moving demb, the gradient of the pooled embeddings
	// (on the dense backend), to where the last lookup's tables are
	// updated; it is there after the link's sync.
	backward(demb compute.Buffer)
	// update applies the sparse step to the rows of the last lookup.
	update(step compute.Step) error
	// evalLookup pools an evaluation batch from the master tables (which
	// syncMaster brought up to date) without counting what it moves.
	evalLookup(b *dataset.Batch) (stepInput, error)
	// swap synchronises the hot rows for a change of class and returns how
	// many rows it copied (0 where there is no hot table).
	swap(from, to layout.Class) (int64, error)
	// syncMaster copies to the master the hot rows the device changed, so
	// that evaluations and checkpoints read the current model, and returns
	// how many.
	syncMaster() (int64, error)
	// state lists what a checkpoint saves of the placement.
	state() placementState
	// cacheStats returns HybridHash's statistics (nil in other modes).
	cacheStats() *hybridhash.Stats
	// saveCache saves what the checkpoint file of the run directory dir
	// holds beside it (HybridHash's tiers) and returns its name there and
	// a function to call once the file names it, which removes the older
	// saves of that file ("" and nil where there is nothing). Each file
	// (checkpoint.bin, best.bin) has saves of its own.
	saveCache(dir, file string, step int64) (string, func(), error)
	// loadCache restores what saveCache saved under name.
	loadCache(dir, name string) error
	close()
}

// placementState is what a checkpoint saves of a placement: the master
// embedding tables and, in fae and artifact modes, the hot table and the
// rows changed on either side since the last synchronisation.
type placementState struct {
	master *compute.PackedTable
	hot    *hotTable // nil without a hot table
	ms     *embStore // the master's lookups
}

// store returns the store that looks up the master tables.
func (s placementState) store() *embStore { return s.ms }

// inputs are the buffers of a step's input on the dense backend, with room
// for batch rows, and the host copies of the pooled embeddings and their
// gradient when the tables are in host memory and the MLPs on a device.
type inputs struct {
	dense          compute.Backend
	nd, fd         int
	onDevice       bool           // the dense backend is a device: inputs cross the link
	denseB, labelB compute.Buffer // dense backend
	pooled, demb   compute.Buffer // dense backend
	pooledH, dembH compute.Buffer // host, when shipping
	da, ha         *allocator
	// shift and scale standardize the dense values (Shape.DenseShift,
	// DenseScale) into norm, host memory, when set.
	shift, scale, norm []float32
}

func newInputs(dense, host compute.Backend, batch int, s Shape, fd int, ship bool) (*inputs, error) {
	nd := s.Dense
	in := &inputs{dense: dense, nd: nd, fd: fd, onDevice: !dense.Space().IsHost(), da: newAllocator(dense), ha: newAllocator(host)}
	if s.DenseShift != nil {
		in.shift, in.scale, in.norm = s.DenseShift, s.DenseScale, make([]float32, batch*nd)
	}
	if in.onDevice {
		in.denseB, in.labelB = in.da.f32(batch*nd), in.da.f32(batch)
	}
	in.pooled, in.demb = in.da.f32(batch*fd), in.da.f32(batch*fd)
	if ship && in.onDevice {
		in.pooledH, in.dembH = in.ha.f32(batch*fd), in.ha.f32(batch*fd)
	}
	if err := firstErr(in.da.err, in.ha.err); err != nil {
		in.close()
		return nil, err
	}
	return in, nil
}

func (in *inputs) close() {
	in.da.free()
	in.ha.free()
}

// shipping reports whether pooled embeddings looked up on the host cross
// the link to the MLPs.
func (in *inputs) shipping() bool { return in.pooledH.Valid() }

// hostOut is where a host-table lookup of n rows writes.
func (in *inputs) hostOut(n int) compute.Buffer {
	if in.shipping() {
		return in.pooledH.Head(n * in.fd)
	}
	return in.pooled.Head(n * in.fd)
}

// set returns the step input of b with the pooled embeddings in pooled,
// copying the dense values and labels to the device over l when the MLPs
// are there (counted), or without counting when l is nil.
func (in *inputs) set(b *dataset.Batch, l *link) stepInput {
	n := b.N
	s := stepInput{n: n, emb: in.pooled.Head(n * in.fd), demb: in.demb.Head(n * in.fd)}
	values := b.Dense[:n*in.nd]
	if in.shift != nil {
		standardize(in.norm[:len(values)], values, in.shift, in.scale)
		values = in.norm[:len(values)]
	}
	dense, label := compute.Wrap(values), compute.Wrap(b.Label[:n])
	if !in.onDevice {
		s.dense, s.label = dense, label
		return s
	}
	s.dense, s.label = in.denseB.Head(n*in.nd), in.labelB.Head(n)
	if l != nil {
		l.put(s.dense, dense)
		l.put(s.label, label)
	} else {
		place(in.dense, s.dense, dense)
		place(in.dense, s.label, label)
	}
	return s
}

// ship moves n pooled rows looked up on the host to the dense backend.
func (in *inputs) ship(n int, l *link) {
	if !in.shipping() {
		return
	}
	if l != nil {
		l.put(in.pooled.Head(n*in.fd), in.pooledH.Head(n*in.fd))
		return
	}
	place(in.dense, in.pooled.Head(n*in.fd), in.pooledH.Head(n*in.fd))
}

// route is where one kind of mini-batch looks up its embeddings and is
// updated: tables in host memory (hostRoute) or on the device
// (deviceRoute). A placement is one route (cpu, hybrid, device) or two
// (fae: hot and cold).
type route interface {
	lookup(b *dataset.Batch, l *link) (stepInput, error)
	backward(demb compute.Buffer, l *link)
	update(step compute.Step) error
	store() *embStore
}

// hostRoute looks mini-batches up in tables in host memory; with the MLPs
// on a device, the pooled embeddings go there and their gradients come
// back (hybrid; fae's cold mini-batches).
type hostRoute struct {
	s   *embStore
	in  *inputs
	ph  *PhaseSeconds
	n   int
	grd compute.Buffer // the gradient the update applies
}

func (r *hostRoute) lookup(b *dataset.Batch, l *link) (stepInput, error) {
	t0 := time.Now()
	if err := r.s.prepare(b, nil); err != nil {
		return stepInput{}, err
	}
	if err := r.s.lookup(r.in.hostOut(b.N)); err != nil {
		return stepInput{}, locate(b, err)
	}
	t1 := time.Now()
	r.in.ship(b.N, l)
	in := r.in.set(b, l)
	r.n = b.N
	if l != nil {
		r.ph.EmbForward += t1.Sub(t0).Seconds()
		r.ph.Transfer += time.Since(t1).Seconds()
	}
	return in, nil
}

func (r *hostRoute) backward(demb compute.Buffer, l *link) {
	if !r.in.shipping() {
		r.grd = demb
		return
	}
	t0 := time.Now()
	r.grd = r.in.dembH.Head(demb.Len())
	l.get(r.grd, demb)
	r.ph.Transfer += time.Since(t0).Seconds()
}

func (r *hostRoute) update(step compute.Step) error { return r.s.update(r.grd, step) }
func (r *hostRoute) store() *embStore               { return r.s }

// deviceRoute looks mini-batches up in tables on the device, where the
// MLPs are: only the IDs cross (device mode; fae's hot mini-batches).
type deviceRoute struct {
	s   *embStore
	in  *inputs
	ph  *PhaseSeconds
	grd compute.Buffer
}

func (r *deviceRoute) lookup(b *dataset.Batch, l *link) (stepInput, error) {
	t0 := time.Now()
	if err := r.s.prepare(b, l); err != nil {
		return stepInput{}, err
	}
	in := r.in.set(b, l)
	t1 := time.Now()
	if err := r.s.lookup(in.emb); err != nil {
		return stepInput{}, locate(b, err)
	}
	if l != nil {
		r.ph.Transfer += t1.Sub(t0).Seconds()
		r.ph.EmbForward += time.Since(t1).Seconds()
	}
	return in, nil
}

func (r *deviceRoute) backward(demb compute.Buffer, _ *link) { r.grd = demb }
func (r *deviceRoute) update(step compute.Step) error        { return r.s.update(r.grd, step) }
func (r *deviceRoute) store() *embStore                      { return r.s }

// tablePlacement keeps the embedding tables in one place, looked up by
// one route: in host memory with the MLPs (cpu: nothing crosses), in host
// memory with the MLPs on the device (hybrid: every mini-batch ships its
// pooled embeddings there and their gradients back, as DLRM's CPU-GPU
// baseline does), or on the device with the MLPs (device, for tables that
// fit: the IDs cross).
type tablePlacement struct {
	master *compute.PackedTable
	r      route
	in     *inputs
	l      *link
}

func (p *tablePlacement) lookup(b *dataset.Batch, _ bool) (stepInput, error) {
	return p.r.lookup(b, p.l)
}
func (p *tablePlacement) backward(demb compute.Buffer)                   { p.r.backward(demb, p.l) }
func (p *tablePlacement) update(step compute.Step) error                 { return p.r.update(step) }
func (p *tablePlacement) evalLookup(b *dataset.Batch) (stepInput, error) { return p.r.lookup(b, nil) }
func (p *tablePlacement) swap(_, _ layout.Class) (int64, error)          { return 0, nil }
func (p *tablePlacement) syncMaster() (int64, error)                     { return 0, nil }
func (p *tablePlacement) state() placementState {
	return placementState{master: p.master, ms: p.r.store()}
}
func (p *tablePlacement) cacheStats() *hybridhash.Stats { return nil }
func (p *tablePlacement) saveCache(string, string, int64) (string, func(), error) {
	return "", nil, nil
}
func (p *tablePlacement) loadCache(_, name string) error { return noCache(name) }
func (p *tablePlacement) close() {
	p.r.store().close()
	p.in.close()
	p.master.Free()
}

// faePlacement is FAE's (and the artifact order's) placement: the packed
// hot table on the device and the full tables, the master copy, in host
// memory. Hot mini-batches run on the device alone; cold ones look up and
// update the master and ship pooled embeddings like hybrid. Each side
// records the rows it changed, and a swap copies only those.
type faePlacement struct {
	master *compute.PackedTable
	hot    *hotTable
	hotR   deviceRoute
	coldR  hostRoute
	l      *link
	last   layout.Class // class of the last lookup
}

func (p *faePlacement) lookup(b *dataset.Batch, hot bool) (stepInput, error) {
	if hot {
		p.last = layout.Hot
		return p.hotR.lookup(b, p.l)
	}
	p.last = layout.Cold
	return p.coldR.lookup(b, p.l)
}

func (p *faePlacement) backward(demb compute.Buffer) {
	if p.last == layout.Hot {
		p.hotR.backward(demb, p.l)
		return
	}
	p.coldR.backward(demb, p.l)
}

func (p *faePlacement) update(step compute.Step) error {
	if p.last == layout.Hot {
		p.hot.markHot(p.hotR.s.hb)
		return p.hotR.update(step)
	}
	p.hot.markCold(p.coldR.s.hb)
	return p.coldR.update(step)
}

func (p *faePlacement) evalLookup(b *dataset.Batch) (stepInput, error) { return p.coldR.lookup(b, nil) }

func (p *faePlacement) swap(from, _ layout.Class) (int64, error) {
	if from == layout.Hot {
		return p.hot.syncToHost(p.l)
	}
	return p.hot.syncToDevice(p.l), nil
}

func (p *faePlacement) syncMaster() (int64, error) { return p.hot.syncToHost(p.l) }

func (p *faePlacement) state() placementState {
	return placementState{master: p.master, hot: p.hot, ms: p.coldR.s}
}

func (p *faePlacement) cacheStats() *hybridhash.Stats { return nil }
func (p *faePlacement) saveCache(string, string, int64) (string, func(), error) {
	return "", nil, nil
}
func (p *faePlacement) loadCache(_, name string) error { return noCache(name) }

func (p *faePlacement) close() {
	p.hotR.s.close()
	p.coldR.s.close()
	p.coldR.in.close()
	p.hot.close()
	p.master.Free()
}

// noCache is loadCache of a placement without a cache: a checkpoint that
// names one is not of its mode.
func noCache(name string) error {
	if name != "" {
		return fmt.Errorf("the checkpoint holds a cache (%s) this mode does not have: %w", name, ErrCheckpoint)
	}
	return nil
}

// placementOptions is what newPlacement needs to know of a run.
type placementOptions struct {
	mode      Mode
	shape     Shape
	seed      uint64
	adagrad   bool
	batch     int
	unpacked  bool
	host, dev compute.Backend // dev is nil in cpu mode
	dense     compute.Backend // where the MLPs run: dev, or host in cpu mode
	hotSet    *layout.HotSet  // fae and artifact
	l         *link
	ph        *PhaseSeconds
	hh        HybridHashOptions // hybridhash
	diskDir   string            // hybridhash: the disk tier's directory
}

// newPlacement builds the placement of a mode, with freshly initialised
// embedding tables (a resumed run then loads the checkpoint into them).
func newPlacement(o placementOptions) (placement, error) {
	s := o.shape
	fd := s.Features * s.RowDim()
	if o.mode == ModeHybridHash { // no table of every row: the cache holds them
		in, err := newInputs(o.dense, o.host, o.batch, s, fd, false)
		if err != nil {
			return nil, err
		}
		p, err := newHHPlacement(o, in)
		if err != nil { // not a typed nil in the interface
			return nil, err
		}
		return p, nil
	}
	tablesOn := o.host
	if o.mode == ModeDevice {
		tablesOn = o.dev
	}
	master, err := newEmbeddings(s, o.seed, o.adagrad, tablesOn)
	if err != nil {
		return nil, err
	}
	ok := false
	var cleanup []func()
	defer func() {
		if !ok {
			for i := len(cleanup) - 1; i >= 0; i-- {
				cleanup[i]()
			}
			master.Free()
		}
	}()
	in, err := newInputs(o.dense, o.host, o.batch, s, fd, o.mode != ModeDevice)
	if err != nil {
		return nil, err
	}
	cleanup = append(cleanup, in.close)
	store, err := newEmbStore(master, s, o.batch, o.unpacked, false)
	if err != nil {
		return nil, err
	}
	cleanup = append(cleanup, store.close)
	var p placement
	switch o.mode {
	case ModeCPU, ModeHybrid:
		p = &tablePlacement{master: master, r: &hostRoute{s: store, in: in, ph: o.ph}, in: in, l: o.l}
	case ModeDevice:
		p = &tablePlacement{master: master, r: &deviceRoute{s: store, in: in, ph: o.ph}, in: in, l: o.l}
	default: // fae, artifact
		hot, err := newHotTable(master, o.hotSet, o.host, o.dev)
		if err != nil {
			return nil, err
		}
		cleanup = append(cleanup, hot.close)
		hotStore, err := newEmbStore(hot.t, s, o.batch, o.unpacked, true)
		if err != nil {
			return nil, err
		}
		p = &faePlacement{master: master, hot: hot, l: o.l,
			hotR:  deviceRoute{s: hotStore, in: in, ph: o.ph},
			coldR: hostRoute{s: store, in: in, ph: o.ph}}
	}
	ok = true
	return p, nil
}
