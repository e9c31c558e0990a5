package compute

// Hooks for the benchmarks that choose between GEMM threading strategies.

// SetGemmSplit turns the split of large GEMMs over the worker pool on or off.
func SetGemmSplit(c *CPU, split bool) { c.gemmSplit = split }

// SetLibraryThreads sets OpenBLAS's own thread count (process-wide).
func SetLibraryThreads(c *CPU, n int) {
	if c.lib != nil && c.lib.setThreads != nil {
		c.lib.setThreads(int32(n))
	}
}

// SetSmallGemm turns the small-batch GEMM kernels on or off.
func SetSmallGemm(c *CPU, on bool) { c.small = on }
