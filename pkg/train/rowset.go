package train

import (
	"fmt"
	"math/bits"
)

// rowSet is a set of row indices, one bit per row: the rows of a table a
// phase changed, so that a sync copies only those.
type rowSet struct {
	words []uint64
	n     int64
}

// newRowSet returns an empty set for rows [0, n).
func newRowSet(n int64) *rowSet {
	return &rowSet{words: make([]uint64, (n+63)/64), n: n}
}

// add inserts row.
func (r *rowSet) add(row int64) {
	if uint64(row) >= uint64(r.n) {
		panic(fmt.Sprintf("train: rowSet.add(%d) outside [0, %d)", row, r.n))
	}
	r.words[row>>6] |= 1 << (row & 63)
}

// has reports whether row is in the set.
func (r *rowSet) has(row int64) bool {
	if uint64(row) >= uint64(r.n) {
		return false
	}
	return r.words[row>>6]&(1<<(row&63)) != 0
}

// count returns the number of rows in the set.
func (r *rowSet) count() int64 {
	var c int
	for _, w := range r.words {
		c += bits.OnesCount64(w)
	}
	return int64(c)
}

// clear empties the set.
func (r *rowSet) clear() { clear(r.words) }

// appendRows appends the rows in the set to dst in increasing order.
func (r *rowSet) appendRows(dst []int64) []int64 {
	for i, w := range r.words {
		for w != 0 {
			b := bits.TrailingZeros64(w)
			dst = append(dst, int64(i)*64+int64(b))
			w &= w - 1
		}
	}
	return dst
}
