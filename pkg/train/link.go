package train

import (
	"github.com/picasso-ctr/picasso/pkg/compute"
)

// link moves data between host memory and the device's, through the
// device backend's copy calls, and counts every byte that crosses: the
// host/device traffic of training, which summary.json reports. A copy
// between buffers of the same memory (cpu mode, where the "device" is the
// host) crosses nothing and counts nothing.
//
// Copies are queued on the device in call order; what get wrote is valid
// after sync.
type link struct {
	dev      compute.Backend // nil in cpu mode
	h2d, d2h int64
}

// crosses reports whether a copy between the host and b moves data over
// the link.
func (l *link) crosses(b compute.Buffer) bool { return !b.Space().IsHost() }

// put copies src, in host memory, to dst, in the device's memory.
func (l *link) put(dst, src compute.Buffer) {
	if !l.crosses(dst) {
		copyHost(dst, src)
		return
	}
	l.dev.CopyIn(dst, src)
	l.h2d += src.Bytes()
}

// get copies src, in the device's memory, to dst, in host memory; dst
// holds the data after sync.
func (l *link) get(dst, src compute.Buffer) {
	if !l.crosses(src) {
		copyHost(dst, src)
		return
	}
	l.dev.CopyOut(dst, src)
	l.d2h += src.Bytes()
}

// sync waits for the device's queue: copies made by get are then done.
func (l *link) sync() error {
	if l.dev == nil {
		return nil
	}
	return l.dev.Sync()
}

// copyHost copies between two buffers of host memory.
func copyHost(dst, src compute.Buffer) {
	if src.Kind() != dst.Kind() || src.Len() != dst.Len() {
		panic("train: copy between buffers of different shapes")
	}
	switch src.Kind() {
	case compute.Float32:
		copy(dst.Float32s(), src.Float32s())
	case compute.Int32:
		copy(dst.Int32s(), src.Int32s())
	default:
		copy(dst.Int64s(), src.Int64s())
	}
}

// place copies src (host memory) into dst on be without counting it:
// placing the model, restoring a checkpoint and evaluating are not
// training traffic.
func place(be compute.Backend, dst, src compute.Buffer) {
	if dst.Space().IsHost() {
		copyHost(dst, src)
		return
	}
	be.CopyIn(dst, src)
}

// fetch copies src (in be's memory) to dst (host memory) and waits for it,
// without counting it.
func fetch(be compute.Backend, dst, src compute.Buffer) error {
	if src.Space().IsHost() {
		copyHost(dst, src)
		return nil
	}
	be.CopyOut(dst, src)
	return be.Sync()
}
