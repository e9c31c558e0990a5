package compute

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Kind is the element type of a Buffer.
type Kind uint8

const (
	Float32 Kind = iota + 1
	Int32
	Int64
)

// Size returns the bytes of one element.
func (k Kind) Size() int {
	if k == Int64 {
		return 8
	}
	return 4
}

// String returns "float32", "int32" or "int64".
func (k Kind) String() string {
	switch k {
	case Float32:
		return "float32"
	case Int32:
		return "int32"
	case Int64:
		return "int64"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Space is a memory a backend computes in. Host memory (Go slices, or a
// device driver's page-locked host memory) can be read and written by the
// program directly; a device's memory cannot: data reaches it only through
// its backend's copy calls.
type Space struct {
	name string
	host bool
	id   uint64
}

var spaceIDs atomic.Uint64

// NewSpace returns a new memory space. host says whether the program may
// read and write its buffers directly. Backends call it once per memory they
// own; two backends that share a Space accept each other's buffers.
func NewSpace(name string, host bool) *Space {
	return &Space{name: name, host: host, id: spaceIDs.Add(1)}
}

// Host is the space of ordinary Go memory, where the CPU and reference
// backends compute and where Wrap puts its buffers.
var Host = NewSpace("host", true)

// Name returns the space's name, for messages.
func (s *Space) Name() string {
	if s == nil {
		return "no space"
	}
	return s.name
}

// IsHost reports whether the program may read and write the space's buffers.
func (s *Space) IsHost() bool { return s != nil && s.host }

// Buffer is a view of n elements of one kind in a backend's memory. It is a
// small value: slicing makes a new view without copying or allocating. A
// buffer in host memory holds the address of its first element; one in
// device memory holds the device address, which only its backend uses. The
// zero Buffer is "no buffer" (Valid reports false), which kernels accept
// where an argument is optional.
//
// Buffers do not own memory: the backend that allocated one frees it
// (Backend.Free), and views must not outlive that.
type Buffer struct {
	p     unsafe.Pointer // host address of element 0; nil for device memory or n == 0
	addr  uintptr        // device address of element 0; 0 for host-only memory
	n     int
	kind  Kind
	space *Space
}

// MakeBuffer describes memory a backend allocated: n elements of kind at
// host address p (nil when the program cannot address it) and device
// address addr (0 when the device cannot). Backends outside this package
// use it; a Go slice is wrapped with Wrap instead.
func MakeBuffer(space *Space, p unsafe.Pointer, addr uintptr, n int, kind Kind) Buffer {
	if space == nil || n < 0 || kind < Float32 || kind > Int64 {
		panic(fmt.Sprintf("compute: MakeBuffer(%s, n=%d, %v): bad arguments", space.Name(), n, kind))
	}
	if n == 0 {
		p = nil
	}
	return Buffer{p: p, addr: addr, n: n, kind: kind, space: space}
}

// Elem lists the element types of buffers.
type Elem interface{ float32 | int32 | int64 }

func kindOf[T Elem]() Kind {
	var z T
	switch any(z).(type) {
	case float32:
		return Float32
	case int32:
		return Int32
	}
	return Int64
}

// Wrap returns s as a buffer in Host memory, without copying: the CPU and
// reference backends compute on it, and any backend copies from or to it.
func Wrap[T Elem](s []T) Buffer {
	b := Buffer{n: len(s), kind: kindOf[T](), space: Host}
	if len(s) > 0 {
		b.p = unsafe.Pointer(&s[0])
	}
	return b
}

// Valid reports whether b is a buffer (not the zero Buffer).
func (b Buffer) Valid() bool { return b.space != nil }

// Len returns the number of elements.
func (b Buffer) Len() int { return b.n }

// Bytes returns the size of the view in bytes.
func (b Buffer) Bytes() int64 {
	if b.kind == 0 {
		return 0
	}
	return int64(b.n) * int64(b.kind.Size())
}

// Kind returns the element type.
func (b Buffer) Kind() Kind { return b.kind }

// Space returns the memory the buffer lives in.
func (b Buffer) Space() *Space { return b.space }

// Addr returns the device address of element 0 (0 for host-only memory),
// for the backend that owns the buffer.
func (b Buffer) Addr() uintptr { return b.addr }

// Pointer returns the host address of element 0 (nil for device memory or
// an empty view), for the backend that owns the buffer.
func (b Buffer) Pointer() unsafe.Pointer { return b.p }

// Slice returns elements [lo, hi) of b as a buffer.
func (b Buffer) Slice(lo, hi int) Buffer {
	if lo < 0 || hi < lo || hi > b.n {
		panic(fmt.Sprintf("compute: Buffer.Slice(%d, %d) of %d elements", lo, hi, b.n))
	}
	s := b
	s.n = hi - lo
	size := uintptr(b.kind.Size())
	if b.addr != 0 {
		s.addr = b.addr + uintptr(lo)*size
	}
	switch {
	case s.n == 0:
		s.p = nil // a pointer one past an allocation is not a valid Go pointer
	case b.p != nil:
		s.p = unsafe.Add(b.p, uintptr(lo)*size)
	}
	return s
}

// From returns elements [lo, Len()) of b.
func (b Buffer) From(lo int) Buffer { return b.Slice(lo, b.n) }

// Head returns elements [0, n) of b.
func (b Buffer) Head(n int) Buffer { return b.Slice(0, n) }

// Float32s returns the elements of a float32 buffer in host memory as a
// slice that shares them. It panics for device memory or another kind: the
// program reads a device's data only by copying it out.
func (b Buffer) Float32s() []float32 { b.mustHost(Float32); return f32s(b) }

// Int32s is Float32s for an int32 buffer.
func (b Buffer) Int32s() []int32 { b.mustHost(Int32); return i32s(b) }

// Int64s is Float32s for an int64 buffer.
func (b Buffer) Int64s() []int64 { b.mustHost(Int64); return i64s(b) }

func (b Buffer) mustHost(k Kind) {
	if !b.space.IsHost() {
		panic(fmt.Sprintf("compute: a %s buffer in %s memory read as a host slice; copy it out first", b.kind, b.space.Name()))
	}
	if b.kind != k {
		panic(fmt.Sprintf("compute: a %s buffer read as %s", b.kind, k))
	}
}

// The unchecked views below serve the kernels of backends whose memory is
// addressable by the program (the CPU backend and the emulated device),
// after the backend checked the buffer is its own.

func f32s(b Buffer) []float32 { return unsafe.Slice((*float32)(b.p), b.n) }
func i32s(b Buffer) []int32   { return unsafe.Slice((*int32)(b.p), b.n) }
func i64s(b Buffer) []int64   { return unsafe.Slice((*int64)(b.p), b.n) }

func (b Buffer) String() string {
	if !b.Valid() {
		return "Buffer{}"
	}
	return fmt.Sprintf("Buffer{%d %s in %s}", b.n, b.kind, b.space.Name())
}
