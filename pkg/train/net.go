package train

import (
	"github.com/picasso-ctr/picasso/pkg/compute"
)

// net runs the dense part of the model (bottom MLP, interaction, top MLP)
// forward and backward on up to cap samples at a time, on one backend, in
// buffers of that backend's memory allocated once and reused by every call.
type net struct {
	be    compute.Backend
	m     *model
	cap   int
	grads compute.Buffer // where backward writes the MLP gradients (m's layout)

	// skipW leaves the weight gradients out of backward (only the bias
	// gradients are written): the lanes then compute the weight update
	// from dys and the activations (laneSet.fuse).
	skipW bool

	act  []compute.Buffer  // output of each layer, cap×out
	z    compute.Buffer    // interaction output, cap×InteractWidth
	dys  []compute.Buffer  // gradient of the output of each layer but the last, cap×out
	dlog compute.Buffer    // gradient of the logits, cap
	g    [2]compute.Buffer // gradients of layer outputs when !skipW, alternately, cap×max width
	dxb  compute.Buffer    // gradient of the bottom output when !skipW, cap×dim
	btmp compute.Buffer    // bias gradient of one micro-batch, to accumulate
	iw   int

	// DCN-v2: the inner products x·Wᵀ + b of each cross layer (nil for
	// other layers), and the backward pass's gradients of those and of x0.
	u       []compute.Buffer
	du, dx0 compute.Buffer

	// DeepFM with the dense features in its FM (Shape.DenseWide): the FM's
	// fields, the dense ones (value × factors) then the pooled embeddings,
	// RowDim apart, and their gradient.
	fmIn, dfmIn compute.Buffer
}

// netBufs are the per-sample buffers of a net: activations, interaction
// output and the gradients of the layer outputs, rows×width each.
type netBufs struct {
	act, dys []compute.Buffer
	u        []compute.Buffer // DCN-v2's cross-layer inner products
	z, dlog  compute.Buffer
}

// newNetBufs allocates the buffers of rows samples in a's memory.
func newNetBufs(a *allocator, m *model, rows int) netBufs {
	var b netBufs
	b.u = make([]compute.Buffer, len(m.layers))
	for i, l := range m.layers {
		b.act = append(b.act, a.f32(rows*l.out))
		if i < len(m.layers)-1 {
			b.dys = append(b.dys, a.f32(rows*l.out))
		}
		if l.cross {
			b.u[i] = a.f32(rows * l.out)
		}
	}
	b.z = a.f32(rows * m.shape.InteractWidth())
	b.dlog = a.f32(rows)
	return b
}

// bind points the net's per-sample buffers at rows off on of b, so that
// several nets fill consecutive rows of the same buffers.
func (nt *net) bind(b *netBufs, off int) {
	for i, l := range nt.m.layers {
		nt.act[i] = b.act[i].From(off * l.out)
		if i < len(b.dys) {
			nt.dys[i] = b.dys[i].From(off * l.out)
		}
		if l.cross {
			nt.u[i] = b.u[i].From(off * l.out)
		}
	}
	nt.z = b.z.From(off * nt.iw)
	nt.dlog = b.dlog.From(off)
}

// newNet returns a net of capacity samples computing on be, whose gradient
// buffer is grads, with buffers allocated by a (in be's memory).
func newNet(be compute.Backend, a *allocator, m *model, capacity int, grads compute.Buffer) *net {
	s := m.shape
	nt := &net{be: be, m: m, cap: capacity, iw: s.InteractWidth(), grads: grads}
	maxw := 0
	for _, l := range m.layers {
		maxw = max(maxw, l.in, l.out)
	}
	b := newNetBufs(a, m, capacity)
	nt.act, nt.dys = make([]compute.Buffer, len(b.act)), make([]compute.Buffer, len(b.dys))
	nt.u = make([]compute.Buffer, len(b.act))
	if s.Cross > 0 {
		nt.du, nt.dx0 = a.f32(capacity*nt.iw), a.f32(capacity*nt.iw)
	}
	if s.DenseWide && s.Arch == ArchDeepFM {
		w := (s.Dense + s.Features) * s.RowDim()
		nt.fmIn, nt.dfmIn = a.f32(capacity*w), a.f32(capacity*w)
	}
	nt.bind(&b, 0)
	nt.g[0] = a.f32(capacity * maxw)
	nt.g[1] = a.f32(capacity * maxw)
	nt.dxb = a.f32(capacity * s.Dim)
	nt.btmp = a.f32(maxw)
	return nt
}

// forward computes the logits of n samples (n <= cap) from their dense
// inputs (n×Dense) and pooled embeddings (n×Features×Dim) and returns them
// (a view of n values, valid until the next call).
func (nt *net) forward(dense, emb compute.Buffer, n int) compute.Buffer {
	if !nt.m.shape.dlrm() {
		return nt.forwardX0(dense, emb, n)
	}
	m, be := nt.m, nt.be
	x := dense
	for i, l := range m.layers {
		if i == m.nBottom {
			nt.interact(x, emb, n)
			x = nt.z
		}
		out := nt.act[i].Head(n * l.out)
		be.Gemm(false, true, n, l.out, l.in, 1, x, l.in, m.w(l), l.in, 0, out, l.out)
		be.BiasAct(out, n, l.out, m.b(l), l.relu)
		x = out
	}
	return x.Head(n)
}

func (nt *net) interact(x, emb compute.Buffer, n int) {
	s := nt.m.shape
	if s.Interaction == "cat" {
		// The bottom output (d values) followed by the f pooled embeddings.
		w, d := nt.iw, s.Dim
		nt.be.Copy2D(nt.z, w, x, d, n, d)
		nt.be.Copy2D(nt.z.From(d), w, emb, s.Features*d, n, s.Features*d)
		return
	}
	nt.be.InteractForward(nt.z, x, emb, n, s.Features, s.Dim)
}

// backward back-propagates dlogit (n values, dLoss/dlogit) through the
// samples of the last forward call, adding the MLP gradients into nt.grads
// (overwriting them when first is set) and writing the gradient of the
// pooled embeddings into demb (n×Features×Dim). dense and emb are the
// forward call's inputs.
func (nt *net) backward(dense, emb, dlogit, demb compute.Buffer, n int, first bool) {
	if !nt.m.shape.dlrm() {
		nt.backwardX0(emb, dlogit, demb, n, first)
		return
	}
	m, be, s := nt.m, nt.be, nt.m.shape
	var beta float32 = 1
	if first {
		beta = 0
	}
	dy := dlogit.Head(n)
	k := 0
	dbDone := false // the bias gradient of layer i was summed with its ReLU mask
	for i := len(m.layers) - 1; i >= 0; i-- {
		l := m.layers[i]
		var x compute.Buffer
		switch {
		case i == 0:
			x = dense
		case i == m.nBottom:
			x = nt.z
		default:
			x = nt.act[i-1]
		}
		if !nt.skipW {
			gw := nt.grads.Slice(l.w, l.w+l.in*l.out)
			be.Gemm(true, false, l.out, l.in, n, 1, dy, l.out, x, l.in, beta, gw, l.in)
		}
		if !dbDone {
			gb := nt.grads.Slice(l.b, l.b+l.out)
			if first {
				be.BiasGrad(gb, dy, n, l.out)
			} else {
				tmp := nt.btmp.Head(l.out)
				be.BiasGrad(tmp, dy, n, l.out)
				be.Axpy(gb, 1, tmp)
			}
		}
		if i == 0 {
			break // the dense inputs need no gradient
		}
		// Without skipW the output gradients alternate between two
		// buffers; with it, each layer's stays in dys for the update.
		var dx compute.Buffer
		if nt.skipW && i != m.nBottom {
			dx = nt.dys[i-1].Head(n * l.in)
		} else {
			dx = nt.g[k].Head(n * l.in)
			k ^= 1
		}
		be.Gemm(false, false, n, l.in, l.out, 1, dy, l.out, m.w(l), l.in, 0, dx, l.in)
		if i == m.nBottom {
			// dx is the gradient of the interaction output.
			xb := nt.act[i-1].Head(n * s.Dim)
			dxb := nt.dxb.Head(n * s.Dim)
			if nt.skipW {
				dxb = nt.dys[i-1].Head(n * s.Dim)
			}
			if s.Interaction == "cat" {
				d, w := s.Dim, nt.iw
				be.Copy2D(dxb, d, dx, w, n, d)
				be.Copy2D(demb, s.Features*d, dx.From(d), w, n, s.Features*d)
			} else {
				be.InteractBackward(dxb, demb, dx, xb, emb, n, s.Features, s.Dim)
			}
			dx = dxb
		}
		prev := m.layers[i-1]
		dbDone = false
		if prev.relu {
			nt.reluBiasGrad(prev, dx, nt.act[i-1], n, first)
			dbDone = true
		}
		dy = dx
	}
}

// reluBiasGrad masks dx, the gradient of layer l's output act, with its
// ReLU and writes (first) or adds the column sums into l's bias gradient,
// in one pass.
func (nt *net) reluBiasGrad(l layer, dx, act compute.Buffer, n int, first bool) {
	gb := nt.grads.Slice(l.b, l.b+l.out)
	if first {
		nt.be.ReLUBackwardBiasGrad(gb, dx, act, n, l.out)
		return
	}
	tmp := nt.btmp.Head(l.out)
	nt.be.ReLUBackwardBiasGrad(tmp, dx, act, n, l.out)
	nt.be.Axpy(gb, 1, tmp)
}
