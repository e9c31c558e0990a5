package dataset

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapRange maps n bytes of f from offset off read-only, with its pages
// mapped at once when populate is set (one call instead of a fault for
// every 16 pages). ok is false when the mapping failed; the caller then
// reads the bytes instead. release unmaps them.
func mapRange(f *os.File, off, n int64, populate bool) (data []byte, release func(), ok bool) {
	if n <= 0 {
		return nil, nil, false
	}
	pg := int64(os.Getpagesize())
	base := off &^ (pg - 1)
	flags := unix.MAP_SHARED
	if populate {
		flags |= unix.MAP_POPULATE
	}
	var m []byte
	var err error
	rc, cerr := f.SyscallConn()
	if cerr != nil {
		return nil, nil, false
	}
	if cerr = rc.Control(func(fd uintptr) {
		m, err = unix.Mmap(int(fd), base, int(off-base+n), unix.PROT_READ, flags)
	}); cerr != nil || err != nil {
		return nil, nil, false
	}
	return m[off-base:], func() { _ = unix.Munmap(m) }, true
}
