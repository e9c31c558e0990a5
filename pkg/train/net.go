package train

import (
	"github.com/picasso-ctr/picasso/pkg/compute"
)

// net runs the dense part of the model (bottom MLP, interaction, top MLP)
// forward and backward on up to cap samples at a time, in buffers allocated
// once and reused by every call.
type net struct {
	be    compute.Backend
	m     *model
	cap   int
	grads []float32 // where backward writes the MLP gradients (m's layout)

	// skipW leaves the weight gradients out of backward (only the bias
	// gradients are written): the lanes then compute the weight update
	// from dys and the activations (laneSet.fuse).
	skipW bool

	act  [][]float32  // output of each layer, cap×out
	z    []float32    // interaction output, cap×InteractWidth
	dys  [][]float32  // gradient of the output of each layer but the last, cap×out
	dlog []float32    // gradient of the logits, cap
	g    [2][]float32 // gradients of layer outputs when !skipW, alternately, cap×max width
	dxb  []float32    // gradient of the bottom output when !skipW, cap×dim
	btmp []float32    // bias gradient of one micro-batch, to accumulate
	iw   int
}

// netBufs are the per-sample buffers of a net: activations, interaction
// output and the gradients of the layer outputs, rows×width each.
type netBufs struct {
	act, dys [][]float32
	z, dlog  []float32
}

func newNetBufs(m *model, rows int) netBufs {
	var b netBufs
	for i, l := range m.layers {
		b.act = append(b.act, make([]float32, rows*l.out))
		if i < len(m.layers)-1 {
			b.dys = append(b.dys, make([]float32, rows*l.out))
		}
	}
	b.z = make([]float32, rows*m.shape.InteractWidth())
	b.dlog = make([]float32, rows)
	return b
}

// bind points the net's per-sample buffers at rows off on of b, so that
// several nets fill consecutive rows of the same buffers.
func (nt *net) bind(b *netBufs, off int) {
	for i, l := range nt.m.layers {
		nt.act[i] = b.act[i][off*l.out:]
		if i < len(b.dys) {
			nt.dys[i] = b.dys[i][off*l.out:]
		}
	}
	nt.z = b.z[off*nt.iw:]
	nt.dlog = b.dlog[off:]
}

func newNet(be compute.Backend, m *model, capacity int) *net {
	s := m.shape
	nt := &net{be: be, m: m, cap: capacity, iw: s.InteractWidth(), grads: m.grads}
	maxw := 0
	for _, l := range m.layers {
		maxw = max(maxw, l.in, l.out)
	}
	b := newNetBufs(m, capacity)
	nt.act, nt.dys = make([][]float32, len(b.act)), make([][]float32, len(b.dys))
	nt.bind(&b, 0)
	nt.g[0] = make([]float32, capacity*maxw)
	nt.g[1] = make([]float32, capacity*maxw)
	nt.dxb = make([]float32, capacity*s.Dim)
	nt.btmp = make([]float32, maxw)
	return nt
}

// forward computes the logits of n samples (n <= cap) from their dense
// inputs (n×Dense) and pooled embeddings (n×Features×Dim) and returns them
// (a view of n values, valid until the next call).
func (nt *net) forward(dense, emb []float32, n int) []float32 {
	m, be := nt.m, nt.be
	x := dense
	for i, l := range m.layers {
		if i == m.nBottom {
			nt.interact(x, emb, n)
			x = nt.z
		}
		out := nt.act[i][:n*l.out]
		be.Gemm(false, true, n, l.out, l.in, 1, x, l.in, m.w(l), l.in, 0, out, l.out)
		be.BiasAct(out, n, l.out, m.b(l), l.relu)
		x = out
	}
	return x[:n]
}

func (nt *net) interact(x, emb []float32, n int) {
	s := nt.m.shape
	if s.Interaction == "cat" {
		catForward(nt.z, x, emb, n, s.Features, s.Dim)
		return
	}
	nt.be.InteractForward(nt.z, x, emb, n, s.Features, s.Dim)
}

// backward back-propagates dlogit (n values, dLoss/dlogit) through the
// samples of the last forward call, adding the MLP gradients into nt.grads
// (overwriting them when first is set) and writing the gradient of the
// pooled embeddings into demb (n×Features×Dim). dense and emb are the
// forward call's inputs.
func (nt *net) backward(dense, emb, dlogit, demb []float32, n int, first bool) {
	m, be, s := nt.m, nt.be, nt.m.shape
	var beta float32 = 1
	if first {
		beta = 0
	}
	dy := dlogit[:n]
	k := 0
	dbDone := false // the bias gradient of layer i was summed with its ReLU mask
	for i := len(m.layers) - 1; i >= 0; i-- {
		l := m.layers[i]
		var x []float32
		switch {
		case i == 0:
			x = dense
		case i == m.nBottom:
			x = nt.z
		default:
			x = nt.act[i-1]
		}
		if !nt.skipW {
			gw := nt.grads[l.w : l.w+l.in*l.out]
			be.Gemm(true, false, l.out, l.in, n, 1, dy, l.out, x, l.in, beta, gw, l.in)
		}
		gb := nt.grads[l.b : l.b+l.out]
		if !dbDone {
			if first {
				be.BiasGrad(gb, dy, n, l.out)
			} else {
				tmp := nt.btmp[:l.out]
				be.BiasGrad(tmp, dy, n, l.out)
				for j, v := range tmp {
					gb[j] += v
				}
			}
		}
		if i == 0 {
			break // the dense inputs need no gradient
		}
		// Without skipW the output gradients alternate between two
		// buffers; with it, each layer's stays in dys for the update.
		var dx []float32
		if nt.skipW && i != m.nBottom {
			dx = nt.dys[i-1][:n*l.in]
		} else {
			dx = nt.g[k][:n*l.in]
			k ^= 1
		}
		be.Gemm(false, false, n, l.in, l.out, 1, dy, l.out, m.w(l), l.in, 0, dx, l.in)
		if i == m.nBottom {
			// dx is the gradient of the interaction output.
			xb := nt.act[i-1][:n*s.Dim]
			dxb := nt.dxb[:n*s.Dim]
			if nt.skipW {
				dxb = nt.dys[i-1][:n*s.Dim]
			}
			if s.Interaction == "cat" {
				catBackward(dxb, demb, dx, n, s.Features, s.Dim)
			} else {
				be.InteractBackward(dxb, demb, dx, xb, emb, n, s.Features, s.Dim)
			}
			dx = dxb
		}
		prev := m.layers[i-1]
		dbDone = false
		if prev.relu {
			// Mask and sum the previous layer's bias gradient in one pass.
			gb := nt.grads[prev.b : prev.b+prev.out]
			if first {
				be.ReLUBackwardBiasGrad(gb, dx, nt.act[i-1], n, prev.out)
			} else {
				tmp := nt.btmp[:prev.out]
				be.ReLUBackwardBiasGrad(tmp, dx, nt.act[i-1], n, prev.out)
				for j, v := range tmp {
					gb[j] += v
				}
			}
			dbDone = true
		}
		dy = dx
	}
}

// catForward writes, for each sample, the bottom output x (d values)
// followed by its f pooled embeddings: the "cat" interaction.
func catForward(out, x, emb []float32, n, f, d int) {
	w := d + f*d
	for s := range n {
		o := out[s*w : s*w+w]
		copy(o[:d], x[s*d:s*d+d])
		copy(o[d:], emb[s*f*d:(s+1)*f*d])
	}
}

// catBackward splits the gradient of the "cat" interaction into the
// gradients of x and of the embeddings.
func catBackward(dx, demb, dOut []float32, n, f, d int) {
	w := d + f*d
	for s := range n {
		g := dOut[s*w : s*w+w]
		copy(dx[s*d:s*d+d], g[:d])
		copy(demb[s*f*d:(s+1)*f*d], g[d:])
	}
}
