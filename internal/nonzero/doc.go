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

// maskOf is the mask of up to 64 values, in Go.
func maskOf(src []uint32) uint64 {
	var m uint64
	for j := len(src) - 1; j >= 0; j-- {
		c := src[j]
		m = m<<1 | uint64((c|-c)>>31) // 1 when c != 0
	}
	return m
}
