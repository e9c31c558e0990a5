package train

import "github.com/picasso-ctr/picasso/pkg/compute"

// The models other than DLRM (Wide&Deep, DCN-v2, DeepFM) share one input:
// x0, the dense features followed by the F pooled embeddings (their Dim
// factors; the first-order weight of Wide&Deep and DeepFM stays out). x0
// goes through the cross layers, if any, then the deep MLP to a logit, to
// which Wide&Deep adds the first-order weights of the sample's IDs, and
// DeepFM those and the factorization machine's second-order term. With
// Shape.DenseWide both add a first-order weight per dense feature, and
// DeepFM's FM gets a field per dense feature (its value times a vector of
// Dim factors) before the pooled embeddings.

// forwardX0 is forward for the models built on x0.
func (nt *net) forwardX0(dense, emb compute.Buffer, n int) compute.Buffer {
	m, be, s := nt.m, nt.be, nt.m.shape
	w0, e := nt.iw, s.RowDim()
	x0 := nt.z.Head(n * w0)
	be.Copy2D(x0, w0, dense, s.Dense, n, s.Dense)
	nt.embToX0(x0, emb, n, false)
	x := x0
	for i, l := range m.layers {
		out := nt.act[i].Head(n * l.out)
		if l.cross {
			u := nt.u[i].Head(n * l.out)
			be.Gemm(false, true, n, l.out, l.in, 1, x, l.in, m.w(l), l.in, 0, u, l.out)
			be.BiasAct(u, n, l.out, m.b(l), false)
			be.Copy2D(out, l.out, x, l.in, n, l.out)
			be.Mul(out, x0, u, true)
		} else {
			be.Gemm(false, true, n, l.out, l.in, 1, x, l.in, m.w(l), l.in, 0, out, l.out)
			be.BiasAct(out, n, l.out, m.b(l), l.relu)
		}
		x = out
	}
	logits := x.Head(n)
	if s.wide() {
		fe := s.Features * e
		be.Gemm(false, false, n, 1, fe, 1, emb, fe, m.firstOrder, 1, 1, logits, 1)
	}
	if s.DenseWide {
		// The dense features' first-order weights (the block's last Dense values).
		nd := s.Dense
		be.Gemm(false, true, n, 1, nd, 1, x0, w0, m.params.From(m.dw+denseFactors(s)), nd, 1, logits, 1)
	}
	if s.Arch == ArchDeepFM {
		if s.DenseWide {
			nd := s.Dense
			fw := (nd + s.Features) * e
			in := nt.fmIn.Head(n * fw)
			for j := range nd {
				// Field j: x_j times column j of the block's factor rows.
				be.Gemm(false, true, n, s.Dim, 1, 1, x0.From(j), w0, m.params.From(m.dw+j), nd, 0, in.From(j*e), fw)
			}
			be.Copy2D(in.From(nd*e), fw, emb, s.Features*e, n, s.Features*e)
			be.FMForward(logits, in, n, nd+s.Features, s.Dim, e)
		} else {
			be.FMForward(logits, emb, n, s.Features, s.Dim, e)
		}
	}
	return logits
}

// embToX0 copies the factors of the pooled embeddings (n×F×RowDim) into
// x0's columns after the dense features or, back, copies those columns of
// the gradient of x0 into demb.
func (nt *net) embToX0(x0, emb compute.Buffer, n int, back bool) {
	s, be := nt.m.shape, nt.be
	w0, e, d := nt.iw, s.RowDim(), s.Dim
	fe := s.Features * e
	if e == d {
		if back {
			be.Copy2D(emb, fe, x0.From(s.Dense), w0, n, fe)
		} else {
			be.Copy2D(x0.From(s.Dense), w0, emb, fe, n, fe)
		}
		return
	}
	for f := range s.Features {
		if back {
			be.Copy2D(emb.From(f*e), fe, x0.From(s.Dense+f*d), w0, n, d)
		} else {
			be.Copy2D(x0.From(s.Dense+f*d), w0, emb.From(f*e), fe, n, d)
		}
	}
}

// backwardX0 is backward for the models built on x0.
func (nt *net) backwardX0(emb, dlogit, demb compute.Buffer, n int, first bool) {
	m, be, s := nt.m, nt.be, nt.m.shape
	var beta float32 = 1
	if first {
		beta = 0
	}
	w0, e := nt.iw, s.RowDim()
	x0 := nt.z.Head(n * w0)
	dy := dlogit.Head(n)
	if s.wide() {
		// The gradient of each first-order weight is the logit's; this
		// writes the whole of demb, the factors' columns (0) being
		// overwritten below.
		fe := s.Features * e
		be.Gemm(false, false, n, fe, 1, 1, dy, 1, m.firstOrder, fe, 0, demb, fe)
	}
	k := 0
	dbDone := false
	lastCross := true
	for i := len(m.layers) - 1; i >= 0; i-- {
		l := m.layers[i]
		x := x0
		if i > 0 {
			x = nt.act[i-1].Head(n * l.in)
		}
		gw := nt.grads.Slice(l.w, l.w+l.in*l.out)
		if l.cross {
			// dy is the gradient of the output x0⊙u + x: u's is dy⊙x0,
			// x0 gains dy⊙u, and x's is dy plus u's through W.
			du := nt.du.Head(n * l.out)
			be.Mul(du, dy, x0, false)
			be.Mul(nt.dx0.Head(n*w0), dy, nt.u[i].Head(n*l.out), !lastCross)
			lastCross = false
			be.Gemm(true, false, l.out, l.in, n, 1, du, l.out, x, l.in, beta, gw, l.in)
			nt.biasGrad(l, du, n, first)
			be.Gemm(false, false, n, l.in, l.out, 1, du, l.out, m.w(l), l.in, 1, dy, l.in)
			continue
		}
		be.Gemm(true, false, l.out, l.in, n, 1, dy, l.out, x, l.in, beta, gw, l.in)
		if !dbDone {
			nt.biasGrad(l, dy, n, first)
		}
		dx := nt.g[k].Head(n * l.in)
		k ^= 1
		be.Gemm(false, false, n, l.in, l.out, 1, dy, l.out, m.w(l), l.in, 0, dx, l.in)
		dbDone = false
		if i > 0 && m.layers[i-1].relu {
			nt.reluBiasGrad(m.layers[i-1], dx, nt.act[i-1], n, first)
			dbDone = true
		}
		dy = dx
	}
	if s.Cross > 0 {
		be.Axpy(dy, 1, nt.dx0.Head(n*w0))
	}
	nt.embToX0(dy, demb, n, true)
	if s.DenseWide {
		nt.denseWideBackward(x0, dlogit.Head(n), demb, n, beta)
		return
	}
	if s.Arch == ArchDeepFM {
		be.FMBackward(demb, dlogit.Head(n), emb, n, s.Features, s.Dim, e)
	}
}

// denseWideBackward writes (beta 0) or adds the gradient of the dense
// features' wide block and, for DeepFM, adds the FM's gradient of the
// pooled embeddings to demb, from the forward's FM fields (fmIn).
func (nt *net) denseWideBackward(x0, dy, demb compute.Buffer, n int, beta float32) {
	m, be, s := nt.m, nt.be, nt.m.shape
	nd, e, w0 := s.Dense, s.RowDim(), nt.iw
	gw := nt.grads.Slice(m.dw, m.dw+denseWideLen(s))
	be.Gemm(true, false, 1, nd, n, 1, dy, 1, x0, w0, beta, gw.From(denseFactors(s)), nd)
	if s.Arch != ArchDeepFM {
		return
	}
	fw := (nd + s.Features) * e
	fe := s.Features * e
	in, din := nt.fmIn.Head(n*fw), nt.dfmIn.Head(n*fw)
	be.Fill(din, 0)
	be.Copy2D(din.From(nd*e), fw, demb, fe, n, fe)
	be.FMBackward(din, dy, in, n, nd+s.Features, s.Dim, e)
	be.Copy2D(demb, fe, din.From(nd*e), fw, n, fe)
	for j := range nd {
		// Factor k of feature j gains Σ over samples of x_j · dfield_j[k].
		be.Gemm(true, false, s.Dim, 1, n, 1, din.From(j*e), fw, x0.From(j), w0, beta, gw.From(j), nd)
	}
}

// biasGrad writes (first) or adds the column sums of dy into layer l's
// bias gradient.
func (nt *net) biasGrad(l layer, dy compute.Buffer, n int, first bool) {
	gb := nt.grads.Slice(l.b, l.b+l.out)
	if first {
		nt.be.BiasGrad(gb, dy, n, l.out)
		return
	}
	tmp := nt.btmp.Head(l.out)
	nt.be.BiasGrad(tmp, dy, n, l.out)
	nt.be.Axpy(gb, 1, tmp)
}
