//go:build !amd64 || purego

package nonzero

// masks is Masks for whole blocks (len(src) == 64·len(dst)).
func masks(dst []uint64, src []uint32) {
	for k := range dst {
		dst[k] = maskOf(src[64*k : 64*k+64])
	}
}
