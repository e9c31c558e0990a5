package convert

import (
	"fmt"
	"math"
	"math/bits"
)

// mix64 is the splitmix64 finaliser dataset.HashID uses: a bijection of
// uint64 that spreads nearby values over the whole range.
func mix64(v uint64) uint64 {
	z := v + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// hashRow maps a categorical value to a row of a hashed table of rows rows:
// row 0 is reserved for missing values and value v goes to
// 1 + dataset.HashID(v, rows-1), in [1, rows). It also returns mix64(v) for
// counting.
func hashRow(v uint64, rows int64) (row int64, mixed uint64) {
	z := mix64(v)
	return 1 + int64(z%uint64(rows-1)), z
}

// Distinct counting in hash mode, with memory bounded whatever the input
// size: an exact set of up to exactCap values per table; when a table
// has more, the set is poured into a HyperLogLog sketch (2^hllBits
// one-byte registers, about 0.4% standard error) which counts from then on.
// Each parser goroutine keeps its own counters; they are merged at the end,
// and the result does not depend on how the lines were shared out (the
// merged set overflows exactly when the table has more than exactCap
// distinct values, and a sketch holds the same registers whatever the order
// of its values).
const (
	exactCap = 1 << 15
	hllBits  = 16
)

// distinct counts the distinct values of one table. Values are added
// already mixed (mix64), which is a bijection, so distinct mixed values
// are distinct values.
type distinct struct {
	slots   []uint64 // open addressing, 0 = empty; the value 0 is kept in hasZero
	n       int      // values in slots (hasZero excluded)
	hasZero bool
	hll     []uint8 // nil until the exact set overflows; then slots is nil
}

func newDistinct() *distinct {
	return &distinct{slots: make([]uint64, 64)}
}

// add records one mixed value.
func (d *distinct) add(z uint64) {
	if d.hll != nil {
		d.sketch(z)
		return
	}
	if z == 0 {
		d.hasZero = true
		d.checkCap()
		return
	}
	mask := uint64(len(d.slots) - 1)
	for i := z & mask; ; i = (i + 1) & mask {
		switch d.slots[i] {
		case z:
			return
		case 0:
			d.slots[i] = z
			d.n++
			if 2*d.n > len(d.slots) {
				d.grow()
			}
			d.checkCap()
			return
		}
	}
}

func (d *distinct) sketch(z uint64) {
	idx := z >> (64 - hllBits)
	rank := uint8(bits.LeadingZeros64(z<<hllBits|1<<(hllBits-1))) + 1
	if rank > d.hll[idx] {
		d.hll[idx] = rank
	}
}

// checkCap switches to the sketch when the exact set grows too large.
func (d *distinct) checkCap() {
	if d.exact() > exactCap {
		d.toSketch()
	}
}

func (d *distinct) toSketch() {
	if d.hll != nil {
		return
	}
	d.hll = make([]uint8, 1<<hllBits)
	if d.hasZero {
		d.sketch(0)
	}
	for _, z := range d.slots {
		if z != 0 {
			d.sketch(z)
		}
	}
	d.slots, d.n, d.hasZero = nil, 0, false
}

func (d *distinct) grow() {
	old := d.slots
	d.slots = make([]uint64, 2*len(old))
	mask := uint64(len(d.slots) - 1)
	for _, z := range old {
		if z == 0 {
			continue
		}
		i := z & mask
		for d.slots[i] != 0 {
			i = (i + 1) & mask
		}
		d.slots[i] = z
	}
}

func (d *distinct) exact() int {
	if d.hasZero {
		return d.n + 1
	}
	return d.n
}

// merge adds o's values to d.
func (d *distinct) merge(o *distinct) {
	if o.hll != nil {
		d.toSketch()
		for i, r := range o.hll {
			if r > d.hll[i] {
				d.hll[i] = r
			}
		}
		return
	}
	if o.hasZero {
		d.add(0)
	}
	for _, z := range o.slots {
		if z != 0 {
			d.add(z)
		}
	}
}

// count returns the number of distinct values and whether it is exact.
func (d *distinct) count() (int64, bool) {
	if d.hll == nil {
		return int64(d.exact()), true
	}
	m := float64(len(d.hll))
	sum, zeros := 0.0, 0
	for _, r := range d.hll {
		sum += math.Ldexp(1, -int(r))
		if r == 0 {
			zeros++
		}
	}
	e := 0.7213 / (1 + 1.079/m) * m * m / sum
	if e <= 2.5*m && zeros > 0 {
		e = m * math.Log(m/float64(zeros)) // linear counting for small counts
	}
	return int64(math.Round(e)), false
}

// Re-indexing. IDs 0 and 1 are reserved in every table: 0 for a missing
// value, 1 for a value seen fewer than MinCount times in the training inputs
// or not seen there at all (test inputs). Kept values get 2, 3, ... in order
// of first appearance in the training inputs.
const (
	reindexMissing = 0
	reindexRare    = 1
	reindexFirst   = 2
)

// vocab is one table's value -> ID map. During the first pass ids maps a
// value to its order of first appearance and counts holds its occurrences;
// finish turns ids into the final IDs and drops rare values.
type vocab struct {
	ids    map[uint64]uint32
	counts []uint32
	rows   int64 // after finish: IDs in use, reserved ones included
}

func newVocab() *vocab { return &vocab{ids: map[uint64]uint32{}} }

// add counts one occurrence of v (first pass; called in input order).
func (v *vocab) add(x uint64) error {
	p, ok := v.ids[x]
	if !ok {
		if len(v.counts) == math.MaxUint32-reindexFirst {
			return fmt.Errorf("more than %d distinct values", math.MaxUint32-reindexFirst)
		}
		v.ids[x] = uint32(len(v.counts))
		v.counts = append(v.counts, 1)
		return nil
	}
	if v.counts[p] < math.MaxUint32 {
		v.counts[p]++
	}
	return nil
}

// distinctValues returns the number of distinct values seen (first pass).
func (v *vocab) distinctValues() int64 { return int64(len(v.counts)) }

// finish assigns the final IDs: values seen at least minCount times get
// reindexFirst, reindexFirst+1, ... in order of first appearance.
func (v *vocab) finish(minCount int) {
	next := uint32(reindexFirst)
	for p, c := range v.counts {
		if c >= uint32(minCount) {
			v.counts[p] = next
			next++
		} else {
			v.counts[p] = reindexRare
		}
	}
	for x, p := range v.ids {
		if id := v.counts[p]; id == reindexRare {
			delete(v.ids, x)
		} else {
			v.ids[x] = id
		}
	}
	v.counts = nil
	v.rows = int64(next)
}

// lookup returns the ID of a present value (after finish; safe for
// concurrent use).
func (v *vocab) lookup(x uint64) int64 {
	if id, ok := v.ids[x]; ok {
		return int64(id)
	}
	return reindexRare
}
