//go:build !amd64 || purego

package classify

// prefetch does nothing where picasso has no assembly for it.
func prefetch(*byte, int) {}
