//go:build !purego

package nonzero

// masks is Masks for whole blocks (len(src) == 64·len(dst)).
func masks(dst []uint64, src []uint32) {
	if len(dst) > 0 {
		masksSSE2(&dst[0], &src[0], len(dst))
	}
}

//go:noescape
func masksSSE2(dst *uint64, src *uint32, blocks int)
