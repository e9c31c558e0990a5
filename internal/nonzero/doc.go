// Package nonzero finds the non-zero values of a slice of counts 64 at a
// time, as bit masks, so that a walk over a large and mostly empty count
// table (a sampled embedding table's) visits only the rows seen. On amd64
// the masks come from SSE2 compares, 16 values an instruction (the
// baseline of the architecture, so no CPU check); elsewhere, and with the
// purego build tag, from Go.
package nonzero

// Masks sets bit j of dst[k] when src[64k+j] is not zero, for every k
// below ceil(len(src)/64), the length dst must have; the bits of a last,
// partial block past len(src) are zero.
func Masks(dst []uint64, src []uint32) {
	full := len(src) / 64
	if len(dst) != (len(src)+63)/64 {
		panic("nonzero: Masks: dst must hold one mask per 64 values")
	}
	if full > 0 {
		masks(dst[:full], src[:64*full])
	}
	if full < len(dst) {
		dst[full] = maskOf(src[64*full:])
	}
}

// ChunkLen is how many values a Walker's chunk holds: 256 masks, 2 KiB.
const ChunkLen = 1 << 14

// Walker walks a large count table ChunkLen values at a time, with the
// masks of each chunk (Masks), so that a loop visits only the values that
// are not zero:
//
//	w := nonzero.Walk(src)
//	for w.Next() {
//		for k, m := range w.Masks { ... w.Lo + 64*k + j ... }
//	}
//
// A loop, not a callback: a closure over the loop's state cost a counts
// file's encoder twice its time.
type Walker struct {
	Lo    int      // the chunk's offset in the table
	Chunk []uint32 // the chunk
	Masks []uint64 // its masks, valid until the next call of Next

	src   []uint32
	next  int
	masks [ChunkLen / 64]uint64
}

// Walk returns a Walker over src, before its first chunk.
func Walk(src []uint32) Walker { return Walker{src: src} }

// Next moves to the next chunk and reports whether there was one.
func (w *Walker) Next() bool {
	if w.next >= len(w.src) {
		return false
	}
	w.Lo = w.next
	w.Chunk = w.src[w.Lo:min(w.Lo+ChunkLen, len(w.src))]
	w.Masks = w.masks[:(len(w.Chunk)+63)/64]
	Masks(w.Masks, w.Chunk)
	w.next += ChunkLen
	return true
}

// maskOf is the mask of up to 64 values, in Go.
func maskOf(src []uint32) uint64 {
	var m uint64
	for j := len(src) - 1; j >= 0; j-- {
		c := src[j]
		m = m<<1 | uint64((c|-c)>>31) // 1 when c != 0
	}
	return m
}
