package cuda

import (
	"fmt"
	"unsafe"

	"github.com/picasso-ctr/picasso/pkg/compute"
)

// scratch holds the backend's own device buffers (loss sums, table
// descriptors, error flags, the update's hash table), grown as needed and
// kept: they are not counted in InUse, which counts the caller's buffers.
type scratch struct {
	bufs [numScratch]struct {
		p     uintptr
		bytes int64
	}
}

const (
	sLoss = iota
	sTabs
	sErr
	sKeys
	sCnt
	sStart
	sFill
	sList
	sOccRow
	sOccOut
	sTotal
	numScratch
)

// get returns scratch buffer i with room for bytes. Growing frees the old
// buffer first, which waits for the work that may still use it.
func (s *scratch) get(g gpu, i int, bytes int64) (uintptr, error) {
	sb := &s.bufs[i]
	if sb.p != 0 && sb.bytes >= bytes {
		return sb.p, nil
	}
	if sb.p != 0 {
		if err := g.sync(); err != nil {
			return 0, err
		}
		g.free(sb.p)
		sb.p, sb.bytes = 0, 0
	}
	size := max(bytes+bytes/4, 256)
	p, err := g.alloc(size)
	if err != nil {
		return 0, fmt.Errorf("cuda: %s: scratch of %d bytes: %w", g.name(), size, err)
	}
	sb.p, sb.bytes = p, size
	return p, nil
}

func (s *scratch) lossBuf(g gpu, n int) (uintptr, error) { return s.get(g, sLoss, 8*int64(max(n, 1))) }

func (s *scratch) free(g gpu) {
	for i := range s.bufs {
		if s.bufs[i].p != 0 {
			g.free(s.bufs[i].p)
			s.bufs[i].p = 0
		}
	}
}

// errSlots is how many embedding calls may wait for Sync to read their
// error flags; one more syncs first.
const errSlots = 64

// embCheck is an embedding call whose flags (err slot) Sync reads: what a
// message about bad data needs.
type embCheck struct {
	slot int
	n    int64
	tabs []embTable
	name []int // index of each table in the table it views, for messages
}

// prepare checks a call's shapes and the lengths the host knows, uploads
// its table descriptors and runs the check kernel into a fresh error slot.
// It returns the argument block of the embedding kernels with tabs, err,
// w, n, ids, ntab and d set. The caller holds b.mu.
func (b *Backend) prepare(kn string, t *compute.PackedTable, bags *compute.Bags, buf compute.Buffer, bufName string) (*embArgs, error) {
	nt := t.Tables()
	if bags.N < 0 {
		panic(fmt.Sprintf("cuda: %s: negative batch size %d", kn, bags.N))
	}
	if len(bags.IDs) != nt || bags.Offsets != nil && len(bags.Offsets) != nt {
		panic(fmt.Sprintf("cuda: %s: bags for %d tables; table has %d", kn, len(bags.IDs), nt))
	}
	need(kn, bufName, buf, bags.N*nt*t.Dim)
	pw := b.own(kn, "table", t.W, compute.Float32)
	b.tabs = b.tabs[:0]
	check := embCheck{n: int64(bags.N)}
	var total int64
	for i := range nt {
		ids := bags.IDs[i]
		e := embTable{first: total, count: int32(ids.Len())}
		if ids.Kind() == compute.Int64 {
			e.ids, e.wide = uint64(b.own(kn, "ids", ids, compute.Int64)), 1
		} else {
			e.ids = uint64(b.own(kn, "ids", ids, compute.Int32))
		}
		e.lo, e.rows, e.toRow = t.IDRange(i, bags.Packed)
		var off compute.Buffer
		if bags.Offsets != nil {
			off = bags.Offsets[i]
		}
		if off.Valid() {
			e.offs = uint64(b.own(kn, "offsets", off, compute.Int32))
			if off.Len() != bags.N+1 {
				return nil, fmt.Errorf("compute: table %d: %d offsets for %d samples; want %d: %w", t.TableIndex(i), off.Len(), bags.N, bags.N+1, compute.ErrBadOffsets)
			}
		} else if ids.Len() != bags.N {
			return nil, fmt.Errorf("compute: table %d: %d ids for %d samples without offsets: %w", t.TableIndex(i), ids.Len(), bags.N, compute.ErrBadOffsets)
		}
		total += int64(ids.Len())
		b.tabs = append(b.tabs, e)
		check.name = append(check.name, t.TableIndex(i))
	}
	check.tabs = append([]embTable(nil), b.tabs...)
	if b.err != nil {
		return nil, nil // Sync reports the earlier error
	}
	if len(b.pending) == errSlots {
		b.fail(b.g.sync())
		for _, c := range b.pending {
			b.fail(b.readCheck(c))
		}
		b.pending = b.pending[:0]
	}
	tabs, err := b.scratch.get(b.g, sTabs, int64(nt)*int64(unsafe.Sizeof(embTable{})))
	if err == nil && nt > 0 {
		err = b.g.htod(tabs, unsafe.Pointer(&b.tabs[0]), int64(nt)*int64(unsafe.Sizeof(embTable{})))
	}
	var errs uintptr
	if err == nil {
		errs, err = b.scratch.get(b.g, sErr, 16*errSlots)
	}
	check.slot = len(b.pending)
	slot := errs + uintptr(16*check.slot)
	if err == nil {
		err = b.g.memset8(slot, 0xFF, 16)
	}
	if err != nil {
		b.fail(err)
		return nil, nil
	}
	a := &b.a.emb
	*a = embArgs{tabs: uint64(tabs), w: uint64(pw), err: uint64(slot), n: int64(bags.N), ids: total, ntab: int32(nt), d: int32(t.Dim)}
	b.run(kEmbCheck, max(total, int64(nt)*int64(bags.N+1)), unsafe.Pointer(a))
	b.pending = append(b.pending, check)
	return a, nil
}

// readCheck reads an embedding call's error flags after a sync and returns
// the error they report, naming the table and sample. The caller holds
// b.mu.
func (b *Backend) readCheck(c embCheck) error {
	errs := b.scratch.bufs[sErr].p + uintptr(16*c.slot)
	if err := b.g.dtoh(unsafe.Pointer(&b.errHost[0]), errs, 16); err != nil {
		return err
	}
	const none = ^uint64(0)
	if q := b.errHost[1]; q != none {
		t, s := int64(q)/(c.n+1), int64(q)%(c.n+1)
		return fmt.Errorf("compute: table %d: bag bounds at sample %d are not a valid index: %w", c.name[t], s, compute.ErrBadOffsets)
	}
	p := b.errHost[0]
	if p == none {
		return nil
	}
	t := 0
	for t+1 < len(c.tabs) && c.tabs[t+1].first <= int64(p) {
		t++
	}
	tb := c.tabs[t]
	q := int64(p) - tb.first
	var id int64
	if tb.wide == 1 {
		b.g.dtoh(unsafe.Pointer(&id), uintptr(tb.ids)+uintptr(8*q), 8)
	} else {
		var v int32
		b.g.dtoh(unsafe.Pointer(&v), uintptr(tb.ids)+uintptr(4*q), 4)
		id = int64(v)
	}
	s := q
	if tb.offs != 0 {
		off := make([]int32, c.n+1)
		b.g.dtoh(unsafe.Pointer(&off[0]), uintptr(tb.offs), 4*(c.n+1))
		for s = 0; s+1 < c.n && int64(off[s+1]) <= q; s++ {
		}
	}
	return fmt.Errorf("compute: table %d: sample %d: id %d not in [%d, %d): %w", c.name[t], s, id, tb.lo, tb.lo+tb.rows, compute.ErrIDOutOfRange)
}

// EmbeddingBagForward implements compute.Backend: one launch pools every
// (sample, table, element), each a sum in ID order. An ID out of range is
// skipped and reported by the next Sync.
func (b *Backend) EmbeddingBagForward(t *compute.PackedTable, bags *compute.Bags, out compute.Buffer) error {
	po := b.own("EmbeddingBagForward", "out", out, compute.Float32)
	b.mu.Lock()
	defer b.mu.Unlock()
	a, err := b.prepare("EmbeddingBagForward", t, bags, out, "out")
	if err != nil || a == nil {
		return err
	}
	a.out = uint64(po)
	b.run(kEmbFwd, int64(bags.N)*int64(t.Tables())*int64(t.Dim), unsafe.Pointer(a))
	return nil
}

// EmbeddingBagUpdate implements compute.Backend. The gradients of each row
// meet in a hash slot and are summed in batch order by one thread, so the
// result does not depend on timing (see kernels/embedding.cu). When the
// bags hold bad data, no row changes and the next Sync says why.
func (b *Backend) EmbeddingBagUpdate(t *compute.PackedTable, bags *compute.Bags, dOut compute.Buffer, step compute.Step) error {
	const kn = "EmbeddingBagUpdate"
	if step.Opt != compute.OptSGD && step.Opt != compute.OptAdagrad {
		panic(fmt.Sprintf("cuda: %s: optimizer %s: embedding rows take SGD or Adagrad", kn, step.Opt))
	}
	pg := b.own(kn, "dOut", dOut, compute.Float32)
	if step.Opt == compute.OptAdagrad {
		if err := t.AllocAcc(); err != nil {
			return err
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	a, err := b.prepare(kn, t, bags, dOut, "dOut")
	if err != nil || a == nil {
		return err
	}
	a.out = uint64(pg)
	if step.Opt == compute.OptAdagrad {
		a.acc = uint64(b.own(kn, "acc", t.Acc, compute.Float32))
	}
	a.opt, a.lr, a.eps, a.wd = int32(step.Opt), step.LR, step.Eps, step.WD
	a.split = 0
	if t.SplitLast {
		a.split = 1
	}
	ids := a.ids
	if ids == 0 {
		return nil
	}
	slots := nextPow2(2 * ids)
	a.slots = slots
	get := func(i int, bytes int64) uint64 {
		p, err := b.scratch.get(b.g, i, bytes)
		b.fail(err)
		return uint64(p)
	}
	a.keys, a.cnt = get(sKeys, 8*slots), get(sCnt, 4*slots)
	a.start, a.fill = get(sStart, 8*slots), get(sFill, 4*slots)
	a.list, a.occRow, a.occOut = get(sList, 8*ids), get(sOccRow, 8*ids), get(sOccOut, 8*ids)
	a.total = get(sTotal, 8)
	if b.err != nil {
		return nil
	}
	b.fail(b.g.memset8(uintptr(a.keys), 0xFF, 8*slots))
	b.fail(b.g.memset32(uintptr(a.cnt), 0, slots))
	b.fail(b.g.memset32(uintptr(a.fill), 0, slots))
	b.fail(b.g.memset8(uintptr(a.total), 0, 8))
	b.run(kEmbOcc, ids, unsafe.Pointer(a))
	b.run(kEmbInsert, ids, unsafe.Pointer(a))
	b.run(kEmbClaim, slots, unsafe.Pointer(a))
	b.run(kEmbFill, ids, unsafe.Pointer(a))
	b.run(kEmbApply, slots, unsafe.Pointer(a))
	return nil
}
