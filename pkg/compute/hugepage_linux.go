package compute

import (
	"syscall"
	"unsafe"
)

// hugePageBytes is the size of a transparent huge page on x86-64.
const hugePageBytes = 2 << 20

// adviseHugePages asks the kernel to back the 2 MiB-aligned interior of w
// with transparent huge pages (madvise MADV_HUGEPAGE), for tables larger
// than a few huge pages. Embedding rows are read and written at random;
// with 4 KiB pages nearly every row access of a large table also misses
// the TLB and walks the page tables. It must be called before w is first
// written, so that its pages are faulted in huge. The advice is a hint:
// an error (THP disabled or absent) leaves ordinary pages.
func adviseHugePages(w []float32) {
	if len(w)*4 < 4*hugePageBytes {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(w)))
	lo := (p + hugePageBytes - 1) &^ (hugePageBytes - 1)
	hi := (p + uintptr(len(w))*4) &^ (hugePageBytes - 1)
	if hi <= lo {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), len(w)*4)
	const madvHugepage = 14
	_ = syscall.Madvise(b[lo-p:hi-p], madvHugepage)
}
