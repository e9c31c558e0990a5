package prefetch

import (
	"testing"
	"unsafe"
)

// TestLinesTouchesNothing: a prefetch reads nothing back and writes
// nothing, over a buffer and past its end (a hint never faults).
func TestLinesTouchesNothing(t *testing.T) {
	b := make([]byte, 4096)
	for i := range b {
		b[i] = byte(i)
	}
	Lines(unsafe.Pointer(&b[0]), len(b)/64)
	Lines(unsafe.Pointer(&b[len(b)-1]), 8) // seven lines past the end
	for i := range b {
		if b[i] != byte(i) {
			t.Fatalf("byte %d changed to %d", i, b[i])
		}
	}
}
