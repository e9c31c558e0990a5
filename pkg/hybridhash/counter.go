package hybridhash

import (
	"container/heap"
	"fmt"
	"slices"
)

// Counter estimates how often each key was seen, in bounded memory: a
// count-min sketch of Depth rows of Width counters (conservative update:
// only the smallest of a key's counters grow, which keeps the
// overestimate small) and a set of at most Heavy keys with the largest
// estimates, from which Top picks. Decay halves every count, so that old
// accesses weigh less and the counter follows a drifting distribution.
//
// Its memory is 4·Depth·Width bytes for the sketch and about 64 bytes per
// heavy hitter, whatever the number of distinct keys.
type Counter struct {
	width, depth int
	mask         uint64
	seed         uint64
	c            []uint32
	hh           hitters
	cap          int
}

// NewCounter returns a counter with depth hash rows of width counters
// (width is rounded up to a power of two) keeping the heavy heavy hitters.
func NewCounter(width, depth, heavy int, seed uint64) (*Counter, error) {
	if width < 1 || depth < 1 || depth > 16 || heavy < 1 {
		return nil, fmt.Errorf("hybridhash: counter of width %d, depth %d (1 to 16), %d heavy hitters: %w", width, depth, heavy, ErrInvalidOptions)
	}
	w := 1
	for w < width {
		w <<= 1
	}
	return &Counter{width: w, depth: depth, mask: uint64(w - 1), seed: seed, c: make([]uint32, w*depth),
		hh: hitters{idx: make(map[Key]int, heavy)}, cap: heavy}, nil
}

// slots returns the sketch counters of k, one per row (double hashing).
func (c *Counter) slots(k Key, out *[16]int) {
	h := k.hash(c.seed)
	h1, h2 := h&0xffffffff, h>>32|1
	for r := range c.depth {
		out[r] = r*c.width + int((h1+uint64(r)*h2)&c.mask)
	}
}

// Add counts one sighting of k and returns its new estimate.
func (c *Counter) Add(k Key) uint32 {
	var s [16]int
	c.slots(k, &s)
	est := uint32(1<<32 - 1)
	for r := range c.depth {
		est = min(est, c.c[s[r]])
	}
	if est < 1<<32-1 {
		est++
	}
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

// offer updates k in the heavy-hitter set, or lets it replace the smallest
// one when its estimate is larger.
func (c *Counter) offer(k Key, est uint32) {
	h := &c.hh
	if i, ok := h.idx[k]; ok {
		h.e[i].n = est
		heap.Fix(h, i)
		return
	}
	if len(h.e) < c.cap {
		heap.Push(h, hit{k: k, n: est})
		return
	}
	if !h.less(0, hit{k: k, n: est}) {
		return
	}
	delete(h.idx, h.e[0].k)
	h.e[0] = hit{k: k, n: est}
	h.idx[k] = 0
	heap.Fix(h, 0)
}

// Decay halves every count.
func (c *Counter) Decay() {
	for i := range c.c {
		c.c[i] >>= 1
	}
	for i := range c.hh.e {
		c.hh.e[i].n >>= 1
	}
	heap.Init(&c.hh)
}

// Top returns up to k keys with the largest estimates (ties by key), most
// frequent first; keys whose count decayed to zero are left out.
func (c *Counter) Top(k int) []Key {
	e := slices.Clone(c.hh.e)
	slices.SortFunc(e, func(a, b hit) int {
		if a.n != b.n {
			if a.n > b.n {
				return -1
			}
			return 1
		}
		return a.k.Compare(b.k)
	})
	out := make([]Key, 0, min(k, len(e)))
	for _, h := range e {
		if len(out) == k || h.n == 0 {
			break
		}
		out = append(out, h.k)
	}
	return out
}

// Bytes returns the memory the counter holds.
func (c *Counter) Bytes() int64 { return int64(len(c.c))*4 + int64(c.cap)*64 }

// hit is one heavy hitter and its estimate.
type hit struct {
	k Key
	n uint32
}

// hitters is a min-heap of heavy hitters by (estimate, key), with each
// key's position.
type hitters struct {
	e   []hit
	idx map[Key]int
}

// less orders a before b: smaller estimate, then larger key (so that of
// equal estimates the smaller key is kept).
func (h *hitters) less(i int, b hit) bool {
	a := h.e[i]
	if a.n != b.n {
		return a.n < b.n
	}
	return a.k.Compare(b.k) > 0
}

func (h *hitters) Len() int           { return len(h.e) }
func (h *hitters) Less(i, j int) bool { return h.less(i, h.e[j]) }
func (h *hitters) Swap(i, j int) {
	h.e[i], h.e[j] = h.e[j], h.e[i]
	h.idx[h.e[i].k], h.idx[h.e[j].k] = i, j
}
func (h *hitters) Push(x any) {
	e := x.(hit)
	h.idx[e.k] = len(h.e)
	h.e = append(h.e, e)
}
func (h *hitters) Pop() any {
	e := h.e[len(h.e)-1]
	h.e = h.e[:len(h.e)-1]
	delete(h.idx, e.k)
	return e
}
