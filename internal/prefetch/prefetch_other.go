//go:build !amd64 || purego

package prefetch

import "unsafe"

// Lines does nothing where picasso has no assembly for it.
func Lines(unsafe.Pointer, int) {}
