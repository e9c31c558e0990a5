package compute

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"
)

// hostMem is the memory of a backend that computes in memory the program
// can address: the CPU and reference backends (space Host) and the
// emulated device (a space of its own, which the program may not read:
// data crosses only through CopyIn and CopyOut, as with a real device).
type hostMem struct {
	space *Space
	inUse atomic.Int64

	// deferred: CopyOut takes its data when called (in call order, as a
	// device queue would) but writes it to the host only at Sync, so that
	// a caller who reads before Sync sees stale data in tests.
	deferred bool
	mu       sync.Mutex
	pending  []pendingCopy
}

type pendingCopy struct {
	dst  Buffer
	data []byte
}

// Space implements Backend.
func (m *hostMem) Space() *Space { return m.space }

// owns reports whether a kernel of this memory may take b: a buffer of its
// own space, or, for host memory, of any host space.
func (m *hostMem) owns(b Buffer) bool {
	return b.space == m.space || m.space.host && b.space.IsHost()
}

func (m *hostMem) check(kernel, name string, b Buffer, k Kind) {
	if !m.owns(b) {
		shapePanic(kernel, "%s is a buffer in %s memory; this backend computes in %s memory", name, b.space.Name(), m.space.Name())
	}
	if b.kind != k {
		shapePanic(kernel, "%s is a %s buffer; want %s", name, b.kind, k)
	}
}

// f32 returns the elements of b, a float32 buffer in m, for a kernel.
func (m *hostMem) f32(kernel, name string, b Buffer) []float32 {
	m.check(kernel, name, b, Float32)
	return f32s(b)
}

// optF32 is f32 for an optional argument: nil for the zero Buffer.
func (m *hostMem) optF32(kernel, name string, b Buffer) []float32 {
	if !b.Valid() {
		return nil
	}
	return m.f32(kernel, name, b)
}

func (m *hostMem) i32(kernel, name string, b Buffer) []int32 {
	m.check(kernel, name, b, Int32)
	return i32s(b)
}

func (m *hostMem) i64(kernel, name string, b Buffer) []int64 {
	m.check(kernel, name, b, Int64)
	return i64s(b)
}

// hugePageMin is the size from which allocations are advised onto huge
// pages: tables whose rows are read at random miss the TLB.
const hugePageMin = 4 << 20

// Alloc implements Backend.
func (m *hostMem) Alloc(kind Kind, n int) (Buffer, error) {
	if n < 0 || kind < Float32 || kind > Int64 {
		return Buffer{}, fmt.Errorf("compute: alloc %d %v elements: %w", n, kind, ErrInvalidOptions)
	}
	if uint64(n) > uint64(maxInt)/uint64(kind.Size()) {
		return Buffer{}, fmt.Errorf("compute: alloc %d %v elements: more than the address space: %w", n, kind, ErrOutOfMemory)
	}
	var p unsafe.Pointer
	if n > 0 {
		switch kind {
		case Float32:
			s := make([]float32, n)
			if n*4 >= hugePageMin {
				adviseHugePages(s)
			}
			p = unsafe.Pointer(&s[0])
		case Int32:
			p = unsafe.Pointer(&make([]int32, n)[0])
		case Int64:
			p = unsafe.Pointer(&make([]int64, n)[0])
		}
	}
	b := MakeBuffer(m.space, p, 0, n, kind)
	m.inUse.Add(b.Bytes())
	return b, nil
}

// Free implements Backend: the Go collector reclaims the memory once no
// view of it is left; Free settles the accounting.
func (m *hostMem) Free(b Buffer) {
	if !b.Valid() {
		return
	}
	if b.space != m.space {
		shapePanic("Free", "a buffer in %s memory freed by a backend of %s memory", b.space.Name(), m.space.Name())
	}
	m.inUse.Add(-b.Bytes())
}

// InUse implements Backend.
func (m *hostMem) InUse() int64 { return m.inUse.Load() }

func checkCopy(kernel string, dst, src Buffer) {
	if dst.kind != src.kind || dst.n != src.n {
		shapePanic(kernel, "dst is %d %v, src %d %v", dst.n, dst.kind, src.n, src.kind)
	}
}

func bytesOf(b Buffer) []byte { return unsafe.Slice((*byte)(b.p), b.Bytes()) }

// CopyIn implements Backend.
func (m *hostMem) CopyIn(dst, src Buffer) {
	checkCopy("CopyIn", dst, src)
	if !m.owns(dst) {
		shapePanic("CopyIn", "dst is in %s memory, not this backend's %s", dst.space.Name(), m.space.Name())
	}
	if !src.space.IsHost() {
		shapePanic("CopyIn", "src is in %s memory, not host memory", src.space.Name())
	}
	if src.n > 0 {
		copy(bytesOf(dst), bytesOf(src))
	}
}

// CopyOut implements Backend.
func (m *hostMem) CopyOut(dst, src Buffer) {
	checkCopy("CopyOut", dst, src)
	if !m.owns(src) {
		shapePanic("CopyOut", "src is in %s memory, not this backend's %s", src.space.Name(), m.space.Name())
	}
	if !dst.space.IsHost() {
		shapePanic("CopyOut", "dst is in %s memory, not host memory", dst.space.Name())
	}
	if src.n == 0 {
		return
	}
	if m.deferred {
		m.mu.Lock()
		m.pending = append(m.pending, pendingCopy{dst: dst, data: append([]byte(nil), bytesOf(src)...)})
		m.mu.Unlock()
		return
	}
	copy(bytesOf(dst), bytesOf(src))
}

// Sync implements Backend.
func (m *hostMem) Sync() error {
	if !m.deferred {
		return nil
	}
	m.mu.Lock()
	for _, p := range m.pending {
		copy(bytesOf(p.dst), p.data)
	}
	m.pending = nil
	m.mu.Unlock()
	return nil
}
