package train

import (
	"fmt"

	"github.com/picasso-ctr/picasso/pkg/compute"
)

// allocator allocates a component's buffers on one backend and frees them
// together. The first failure is kept (err) and later calls return the
// zero Buffer, so that a constructor checks once at its end.
type allocator struct {
	be   compute.Backend
	bufs []compute.Buffer
	err  error
}

func newAllocator(be compute.Backend) *allocator { return &allocator{be: be} }

func (a *allocator) alloc(kind compute.Kind, n int) compute.Buffer {
	if a.err != nil {
		return compute.Buffer{}
	}
	b, err := a.be.Alloc(kind, n)
	if err != nil {
		a.err = fmt.Errorf("train: %d %v values on %s: %w", n, kind, a.be.Name(), err)
		return compute.Buffer{}
	}
	a.bufs = append(a.bufs, b)
	return b
}

func (a *allocator) f32(n int) compute.Buffer { return a.alloc(compute.Float32, n) }
func (a *allocator) i32(n int) compute.Buffer { return a.alloc(compute.Int32, n) }
func (a *allocator) i64(n int) compute.Buffer { return a.alloc(compute.Int64, n) }

// free releases every buffer allocated so far.
func (a *allocator) free() {
	for _, b := range a.bufs {
		a.be.Free(b)
	}
	a.bufs = nil
}
