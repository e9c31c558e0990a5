//go:build !linux

package compute

// adviseHugePages does nothing where transparent huge pages are not known.
func adviseHugePages([]float32) {}
