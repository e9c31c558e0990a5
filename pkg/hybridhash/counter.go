package hybridhash

import (
	"fmt"
	"slices"
)

// Counter estimates how often each key was seen, in bounded memory: a
// count-min sketch of Depth rows of Width counters (conservative update:
// only the smallest of a key's counters grow, which keeps the
// overestimate small) and a set of heavy hitters, the keys with the
// largest estimates, from which Top picks. Decay halves every count, so
// that old accesses weigh less and the counter follows a drifting
// distribution.
//
// The heavy-hitter set keeps at least Heavy keys and at most twice as
// many: a key enters when its estimate beats the floor (the smallest
// estimate kept at the last pruning), and when the set is full it is pruned
// to the Heavy largest (ties by key), which costs O(1) per sighting
// amortised.
//
// Its memory is 4·Depth·Width bytes for the sketch and about 64 bytes per
// heavy hitter (at most 2·Heavy), whatever the number of distinct keys.
type Counter struct {
	width, depth int
	blocks       uint64 // cache-line blocks of 16 counters
	seed         uint64
	c            []uint32
	hh           []map[int64]uint32 // per table (int64 keys hash fast)
	hhN          int
	floor        uint32
	cap          int
	scratch      []hit
}

// NewCounter returns a counter with depth hash rows (1 to 16) of width
// counters (width is rounded up to a power of two, at least 16) keeping
// heavy heavy hitters.
//
// The sketch is blocked: a key's counters lie in two blocks of 16 (two
// cache lines), half of its rows in each, every row choosing among its own
// share of the block's counters, so that counting a key costs two cache
// misses, not depth, while two keys share all their counters with about
// the probability they would in an unblocked sketch of the same size.
func NewCounter(width, depth, heavy int, seed uint64) (*Counter, error) {
	if width < 1 || depth < 1 || depth > 16 || heavy < 1 {
		return nil, fmt.Errorf("hybridhash: counter of width %d, depth %d (1 to 16), %d heavy hitters: %w", width, depth, heavy, ErrInvalidOptions)
	}
	w := 16
	for w < width {
		w <<= 1
	}
	n := w * depth
	return &Counter{width: w, depth: depth, blocks: uint64(n / 16), seed: seed, c: make([]uint32, n), cap: heavy}, nil
}

// slots returns the sketch counters of k, one per row: rows 0 to
// (depth+1)/2-1 in one block, the others in a second, each row among its
// 16/(rows in the block) counters there.
func (c *Counter) slots(k Key, out *[16]int) {
	h := k.hash(c.seed)
	g := mix64(h ^ 0x9e3779b97f4a7c15)
	ra := (c.depth + 1) / 2
	blk := [2]int{int(h%c.blocks) * 16, int(g%c.blocks) * 16}
	pick := mix64(g)
	for r := range c.depth {
		b, rows, i := 0, ra, r
		if r >= ra {
			b, rows, i = 1, c.depth-ra, r-ra
		}
		sub := 16 / rows
		out[r] = blk[b] + i*sub + int(pick%uint64(sub))
		pick /= uint64(sub)
	}
}

// table returns the heavy-hitter map of table t.
func (c *Counter) table(t int32) map[int64]uint32 {
	for int(t) >= len(c.hh) {
		c.hh = append(c.hh, map[int64]uint32{})
	}
	return c.hh[t]
}

// Add counts one sighting of k and returns its new estimate.
func (c *Counter) Add(k Key) uint32 { return c.AddN(k, 1) }

// AddN counts n sightings of k and returns its new estimate. With
// conservative update this is the same as n calls of Add in a row.
func (c *Counter) AddN(k Key, n uint32) uint32 {
	var s [16]int
	c.slots(k, &s)
	est := uint32(1<<32 - 1)
	for r := range c.depth {
		est = min(est, c.c[s[r]])
	}
	est += min(n, 1<<32-1-est)
	for r := range c.depth {
		if c.c[s[r]] < est {
			c.c[s[r]] = est
		}
	}
	c.offer(k, est)
	return est
}

// Estimate returns the count of k (never below the true count since the
// last Decay, halved at each Decay).
func (c *Counter) Estimate(k Key) uint32 {
	var s [16]int
	c.slots(k, &s)
	est := uint32(1<<32 - 1)
	for r := range c.depth {
		est = min(est, c.c[s[r]])
	}
	return est
}

// offer updates k in the heavy-hitter set, or adds it when its estimate
// beats the floor, pruning a full set.
func (c *Counter) offer(k Key, est uint32) {
	if k.Table < 0 {
		return
	}
	m := c.table(k.Table)
	if _, ok := m[k.ID]; ok {
		m[k.ID] = est
		return
	}
	if c.hhN >= c.cap && est <= c.floor {
		return
	}
	m[k.ID] = est
	c.hhN++
	if c.hhN >= 2*c.cap {
		c.prune()
	}
}

// sorted returns the heavy hitters, largest estimate first, ties by key.
func (c *Counter) sorted() []hit {
	e := c.scratch[:0]
	for t, m := range c.hh {
		for id, n := range m {
			e = append(e, hit{k: Key{Table: int32(t), ID: id}, n: n})
		}
	}
	slices.SortFunc(e, func(a, b hit) int {
		if a.n != b.n {
			if a.n > b.n {
				return -1
			}
			return 1
		}
		return a.k.Compare(b.k)
	})
	c.scratch = e
	return e
}

// prune keeps the cap heavy hitters with the largest estimates.
func (c *Counter) prune() {
	e := c.sorted()
	for _, h := range e[c.cap:] {
		delete(c.hh[h.k.Table], h.k.ID)
	}
	c.hhN = c.cap
	c.floor = e[c.cap-1].n
}

// Decay halves every count.
func (c *Counter) Decay() {
	for i := range c.c {
		c.c[i] >>= 1
	}
	for _, m := range c.hh {
		for id, n := range m {
			m[id] = n >> 1
		}
	}
	c.floor >>= 1
}

// Top returns up to k keys with the largest estimates (ties by key), most
// frequent first; keys whose count decayed to zero are left out.
func (c *Counter) Top(k int) []Key {
	e := c.sorted()
	out := make([]Key, 0, min(k, len(e)))
	for _, h := range e {
		if len(out) == k || h.n == 0 {
			break
		}
		out = append(out, h.k)
	}
	return out
}

// Bytes returns the most memory the counter holds.
func (c *Counter) Bytes() int64 { return int64(len(c.c))*4 + int64(2*c.cap)*64 }

// hit is one heavy hitter and its estimate.
type hit struct {
	k Key
	n uint32
}
