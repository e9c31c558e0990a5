package computetest

import (
	"testing"

	"github.com/picasso-ctr/picasso/pkg/compute"
)

// mem moves test data between the host and the memory of the backend under
// test, through the backend's own copy calls, so that every suite runs
// unchanged on a backend whose memory the program cannot read (a GPU, or
// the CPU backend's emulated device). Buffers it allocates are freed when
// the test ends, and the test fails if the backend then still holds memory
// it held not before.
type mem struct {
	t      testing.TB
	be     compute.Backend
	bufs   []compute.Buffer
	tables []*compute.PackedTable
}

func newMem(t testing.TB, be compute.Backend) *mem {
	t.Helper()
	m := &mem{t: t, be: be}
	before := be.InUse()
	t.Cleanup(func() {
		for _, pt := range m.tables {
			pt.Free()
		}
		for _, b := range m.bufs {
			be.Free(b)
		}
		if got := be.InUse(); got != before {
			t.Errorf("%s: %d bytes in use after the test; %d before", be.Name(), got, before)
		}
	})
	return m
}

func (m *mem) alloc(kind compute.Kind, n int) compute.Buffer {
	m.t.Helper()
	b, err := m.be.Alloc(kind, n)
	if err != nil {
		m.t.Fatalf("%s: Alloc(%v, %d): %v", m.be.Name(), kind, n, err)
	}
	m.bufs = append(m.bufs, b)
	return b
}

// put returns a new buffer of the backend holding s.
func put[T compute.Elem](m *mem, s []T) compute.Buffer {
	m.t.Helper()
	src := compute.Wrap(s)
	b := m.alloc(src.Kind(), len(s))
	m.be.CopyIn(b, src)
	return b
}

func (m *mem) f32(s []float32) compute.Buffer { m.t.Helper(); return put(m, s) }
func (m *mem) i64(s []int64) compute.Buffer   { m.t.Helper(); return put(m, s) }
func (m *mem) i32(s []int32) compute.Buffer   { m.t.Helper(); return put(m, s) }

// get returns the values of a float32 buffer of the backend.
func (m *mem) get(b compute.Buffer) []float32 {
	m.t.Helper()
	out := make([]float32, b.Len())
	m.be.CopyOut(compute.Wrap(out), b)
	if err := m.be.Sync(); err != nil {
		m.t.Fatalf("%s: Sync: %v", m.be.Name(), err)
	}
	return out
}

// guarded is an output buffer with guard values before and after it, on
// the host (buf, data) and in the backend's memory (dev, ddata).
type devGuarded struct {
	*guarded
	dev   compute.Buffer
	ddata compute.Buffer
}

// guard puts g (guards and data as they are now) in the backend's memory.
func (m *mem) guard(g *guarded) *devGuarded {
	m.t.Helper()
	d := &devGuarded{guarded: g, dev: m.f32(g.buf)}
	d.ddata = d.dev.Slice(guardLen, guardLen+len(g.data))
	return d
}

// fetch copies the backend's buffer, guards included, back into g.
func (m *mem) fetch(d *devGuarded) {
	m.t.Helper()
	copy(d.buf, m.get(d.dev))
}

// guardedOut returns a guarded output of n values filled with noise.
func (m *mem) guardedOut(n int, noise func([]float32)) *devGuarded {
	m.t.Helper()
	g := newGuarded(n)
	if noise != nil {
		noise(g.data)
	}
	return m.guard(g)
}

// host wraps host slices as buffers the reference backend computes on.
func host(s []float32) compute.Buffer { return compute.Wrap(s) }
