package compute

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/picasso-ctr/picasso/internal/prefetch"
)

// EmbeddingBagForward implements Backend. Work is split by the table's shard
// plan (further cut into sample ranges when the plan has fewer shards than
// goroutines); every output bag is summed in ID order, as the reference does.
func (c *CPU) EmbeddingBagForward(t *PackedTable, b *Bags, ob Buffer) error {
	out := c.f32("EmbeddingBagForward", "out", ob)
	if err := checkBags(c.hostMem, "EmbeddingBagForward", t, b, out, "out"); err != nil {
		return err
	}
	w := f32s(t.W)
	plan := t.plan
	sub := max(1, (2*c.pool.threads()+len(plan)-1)/max(len(plan), 1))
	errs := make([]error, len(plan)*sub)
	c.pool.run(len(plan)*sub, func(u int) {
		sh := plan[u/sub]
		s0, s1 := sh.Part*b.N/sh.Parts, (sh.Part+1)*b.N/sh.Parts
		q := u % sub
		s0, s1 = s0+q*(s1-s0)/sub, s0+(q+1)*(s1-s0)/sub
		if b.IDs[sh.Table].kind == Int32 {
			errs[u] = embForwardRange(t, b, i32s(b.IDs[sh.Table]), w, out, sh.Table, s0, s1)
		} else {
			errs[u] = embForwardRange(t, b, i64s(b.IDs[sh.Table]), w, out, sh.Table, s0, s1)
		}
	})
	return firstShardError(plan, sub, errs)
}

// firstShardError returns the error of the lowest (table, part, sub-range),
// so that the error reported does not depend on scheduling.
func firstShardError(plan []Shard, sub int, errs []error) error {
	best := -1
	for u, err := range errs {
		if err == nil {
			continue
		}
		if best < 0 {
			best = u
			continue
		}
		a, b := plan[u/sub], plan[best/sub]
		if a.Table < b.Table || a.Table == b.Table && (a.Part < b.Part || a.Part == b.Part && u < best) {
			best = u
		}
	}
	if best < 0 {
		return nil
	}
	return errs[best]
}

// prefetchAhead is how many bags (or rows) ahead of the one being summed
// (or updated) the embedding kernels prefetch.
const prefetchAhead = 8

func embForwardRange[I index](t *PackedTable, b *Bags, ids []I, w, out []float32, i, s0, s1 int) error {
	nt, d := t.Tables(), t.Dim
	lo, rows, toRow := idRange(t, b, i)
	off := b.offsets(i)
	lines := (d + 15) / 16
	for s := s0; s < s1; s++ {
		// Rows are read at random: ask for the rows of a bag a few
		// samples ahead, so that their cache misses overlap.
		if ps := s + prefetchAhead; ps < s1 {
			plo, phi := bounds(off, ps)
			for _, id := range ids[plo:phi] {
				if uint64(int64(id)-lo) < uint64(rows) {
					prefetch.Lines(unsafe.Pointer(&w[(int64(id)+toRow)*int64(d)]), lines)
				}
			}
		}
		o := out[(s*nt+i)*d : (s*nt+i)*d+d]
		p0, p1 := bounds(off, s)
		if p0 == p1 {
			clear(o)
			continue
		}
		for p := p0; p < p1; p++ {
			id := int64(ids[p])
			if uint64(id-lo) >= uint64(rows) {
				return idError(t.first+i, s, id, lo, rows)
			}
			r := (id + toRow) * int64(d)
			row := w[r : r+int64(d)]
			if p == p0 {
				copy(o, row)
			} else {
				axpy(o, 1, row)
			}
		}
	}
	return nil
}

// EmbeddingBagUpdate implements Backend. Each shard of the table's plan owns
// the rows whose ID mod Parts equals its Part, so shards write disjoint rows;
// within a shard, duplicate IDs are merged in batch order, as the reference
// does, so results do not depend on scheduling or thread count.
func (c *CPU) EmbeddingBagUpdate(t *PackedTable, b *Bags, gb Buffer, step Step) error {
	checkStep("EmbeddingBagUpdate", step)
	dOut := c.f32("EmbeddingBagUpdate", "dOut", gb)
	if err := checkBags(c.hostMem, "EmbeddingBagUpdate", t, b, dOut, "dOut"); err != nil {
		return err
	}
	nt := t.Tables()
	if ids := b.N * nt; ids < idCheckGrain {
		// A few thousand compares cost less than a fork and join.
		for i := range nt {
			if err := checkIDs(t, b, i, 0, b.N); err != nil {
				return err
			}
		}
	} else {
		errs := make([]error, nt)
		c.pool.run(nt, func(i int) { errs[i] = checkIDs(t, b, i, 0, b.N) })
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
	}
	w, acc, err := t.stepState(step)
	if err != nil {
		return err
	}
	plan := t.plan
	c.pool.run(len(plan), func(k int) {
		sc := dedupPool.Get().(*dedup)
		sh := plan[k]
		if b.IDs[sh.Table].kind == Int32 {
			updateShard(t, b, i32s(b.IDs[sh.Table]), w, acc, dOut, step, sh, sc)
		} else {
			updateShard(t, b, i64s(b.IDs[sh.Table]), w, acc, dOut, step, sh, sc)
		}
		dedupPool.Put(sc)
	})
	return nil
}

// idCheckGrain is the number of bags (samples × tables) below which
// EmbeddingBagUpdate checks the IDs on the calling goroutine.
const idCheckGrain = 1 << 14

func updateShard[I index](t *PackedTable, b *Bags, ids []I, w, acc, dOut []float32, step Step, sh Shard, sc *dedup) {
	nt, d := t.Tables(), t.Dim
	i := sh.Table
	off := b.offsets(i)
	sc.reset(len(ids)/sh.Parts+1, d)
	parts, part := int64(sh.Parts), int64(sh.Part)
	for s := range b.N {
		lo, hi := bounds(off, s)
		if lo == hi {
			continue
		}
		g := dOut[(s*nt+i)*d : (s*nt+i)*d+d]
		for _, id := range ids[lo:hi] {
			if parts > 1 && int64(id)%parts != part {
				continue
			}
			u, fresh := sc.slot(int64(id))
			if fresh {
				copy(sc.grads[u*d:u*d+d], g)
			} else {
				axpy(sc.grads[u*d:u*d+d], 1, g)
			}
		}
	}
	_, _, toRow := idRange(t, b, i)
	lines := (d + 15) / 16
	for u, id := range sc.uniq {
		if u+prefetchAhead < len(sc.uniq) {
			prefetch.Lines(unsafe.Pointer(&w[(sc.uniq[u+prefetchAhead]+toRow)*int64(d)]), lines)
		}
		applyRow(w, acc, id+toRow, d, sc.grads[u*d:u*d+d], step, t.SplitLast)
	}
}

// dedup maps IDs to dense slots in order of first sight (open addressing).
type dedup struct {
	keys  []int64 // -1 marks an empty slot
	vals  []int32
	mask  uint64
	shift uint
	uniq  []int64
	grads []float32
	d     int
}

var dedupPool = sync.Pool{New: func() any { return new(dedup) }}

func (h *dedup) reset(expect, d int) {
	size := 16
	for size < 2*expect {
		size <<= 1
	}
	if cap(h.keys) < size {
		h.keys = make([]int64, size)
		h.vals = make([]int32, size)
	}
	h.keys, h.vals = h.keys[:size], h.vals[:size]
	for i := range h.keys {
		h.keys[i] = -1
	}
	h.mask = uint64(size - 1)
	h.shift = uint(64 - bits.TrailingZeros(uint(size)))
	h.uniq = h.uniq[:0]
	h.grads = h.grads[:0]
	h.d = d
}

// slot returns id's slot index, adding it (with fresh set) when new.
func (h *dedup) slot(id int64) (u int, fresh bool) {
	p := (uint64(id) * 0x9E3779B97F4A7C15) >> h.shift
	for {
		k := h.keys[p]
		if k == id {
			return int(h.vals[p]), false
		}
		if k < 0 {
			break
		}
		p = (p + 1) & h.mask
	}
	if 2*(len(h.uniq)+1) > len(h.keys) {
		h.grow()
		return h.slot(id)
	}
	u = len(h.uniq)
	h.keys[p] = id
	h.vals[p] = int32(u)
	h.uniq = append(h.uniq, id)
	if n := (u + 1) * h.d; n <= cap(h.grads) {
		h.grads = h.grads[:n]
	} else {
		h.grads = append(h.grads, make([]float32, h.d)...)
	}
	return u, true
}

// grow doubles the table, keeping the slots in order.
func (h *dedup) grow() {
	size := 2 * len(h.keys)
	h.keys = make([]int64, size)
	h.vals = make([]int32, size)
	for i := range h.keys {
		h.keys[i] = -1
	}
	h.mask = uint64(size - 1)
	h.shift = uint(64 - bits.TrailingZeros(uint(size)))
	for u, id := range h.uniq {
		p := (uint64(id) * 0x9E3779B97F4A7C15) >> h.shift
		for h.keys[p] >= 0 {
			p = (p + 1) & h.mask
		}
		h.keys[p] = id
		h.vals[p] = int32(u)
	}
}
