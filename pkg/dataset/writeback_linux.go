package dataset

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing f's dirty pages to disk
// now, without waiting for them. Outputs are synced when their directory is
// committed (atomicfile); started early, that writeback overlaps the work
// still to do instead of stalling the commit. Failure only loses the
// overlap, so it is ignored.
func startWriteback(f *os.File) {
	_ = unix.SyncFileRange(int(f.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
}
