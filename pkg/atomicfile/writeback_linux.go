package atomicfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// StartWriteback asks the kernel to start writing n bytes of f from off
// to disk now (n = 0: to the end of the file), without waiting: outputs
// are synced before they are put in place, and writeback started early
// overlaps the work still to do instead of stalling that sync. Failure
// only loses the overlap, so it is ignored.
func StartWriteback(f *os.File, off, n int64) {
	_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
