//go:build !linux

package profile

import "unsafe"

// prefault maps the pages of a new count table with one write a page, so
// that counting (a read, then a write) does not fault twice on each.
func prefault[T byte | uint32 | int64](d []T) {
	touch(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(d))), uintptr(len(d))*unsafe.Sizeof(*new(T))))
}
