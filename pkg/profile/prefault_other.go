//go:build !linux

package profile

// prefault maps the pages of a new count table with one write a page, so
// that counting (a read, then a write) does not fault twice on each.
func prefault(d []uint32) { touch(d) }
