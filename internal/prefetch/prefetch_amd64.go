//go:build !purego

package prefetch

import "unsafe"

// Lines hints the cache to fetch lines (>= 1) 64-byte lines from p on.
//
//go:noescape
func Lines(p unsafe.Pointer, lines int)
