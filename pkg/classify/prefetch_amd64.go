//go:build !purego

package classify

// prefetch hints the cache to fetch lines (>= 1) 64-byte lines from p on.
//
//go:noescape
func prefetch(p *byte, lines int)
