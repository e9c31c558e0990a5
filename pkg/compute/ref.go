package compute

// ref is the reference backend: plain serial loops that define each
// kernel's contract, in host memory. Tests compare every other backend with
// it.
type ref struct{ *hostMem }

// Reference returns the reference backend, whose kernels are the plain
// loops every other backend is tested against. It is slow. Each call
// returns a backend with its own allocation count.
func Reference() Backend { return ref{&hostMem{space: Host}} }

func (ref) Name() string { return "ref" }

func (ref) Close() error { return nil }

func (r ref) Gemm(transA, transB bool, m, n, k int, alpha float32, ab Buffer, lda int, bb Buffer, ldb int, beta float32, cb Buffer, ldc int) {
	a, b, c := r.f32("Gemm", "a", ab), r.f32("Gemm", "b", bb), r.f32("Gemm", "c", cb)
	checkGemm(transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	gemmRef(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func (r ref) BiasAct(ob Buffer, n, width int, bb Buffer, relu bool) {
	out, bias := r.f32("BiasAct", "out", ob), r.optF32("BiasAct", "bias", bb)
	checkBiasAct(out, n, width, bias)
	biasActRef(out, n, width, bias, relu)
}

func (r ref) ReLUBackward(gb, ab Buffer) {
	grad, act := r.f32("ReLUBackward", "grad", gb), r.f32("ReLUBackward", "act", ab)
	checkReLUBackward(grad, act)
	reluBackwardRef(grad, act)
}

func (r ref) BiasGrad(dbb, gb Buffer, n, width int) {
	db, grad := r.f32("BiasGrad", "db", dbb), r.f32("BiasGrad", "grad", gb)
	checkBiasGrad(db, grad, n, width)
	biasGradRef(db, grad, n, width)
}

func (r ref) ReLUBackwardBiasGrad(dbb, gb, ab Buffer, n, width int) {
	const k = "ReLUBackwardBiasGrad"
	db, grad, act := r.f32(k, "db", dbb), r.f32(k, "grad", gb), r.f32(k, "act", ab)
	checkBiasGrad(db, grad, n, width)
	needLen(k, "act", act, n*width)
	reluBackwardRef(grad[:n*width], act)
	biasGradRef(db, grad, n, width)
}

func (r ref) InteractForward(ob, xb, eb Buffer, n, f, d int) {
	const k = "InteractForward"
	out, x, emb := r.f32(k, "out", ob), r.f32(k, "x", xb), r.f32(k, "emb", eb)
	checkInteractForward(out, x, emb, n, f, d)
	interactForwardRef(out, x, emb, n, f, d)
}

func (r ref) InteractBackward(dxb, deb, gb, xb, eb Buffer, n, f, d int) {
	const k = "InteractBackward"
	dx, demb, dOut := r.f32(k, "dx", dxb), r.f32(k, "demb", deb), r.f32(k, "dOut", gb)
	x, emb := r.f32(k, "x", xb), r.f32(k, "emb", eb)
	checkInteractBackward(dx, demb, dOut, x, emb, n, f, d)
	interactBackwardRef(dx, demb, dOut, x, emb, n, f, d)
}

func (r ref) BCEWithLogits(lossb, db, zb, yb Buffer, scale float32) {
	const k = "BCEWithLogits"
	logit, label := r.f32(k, "logit", zb), r.f32(k, "label", yb)
	dlogit, loss := r.optF32(k, "dlogit", db), r.optF32(k, "loss", lossb)
	checkBCE(loss, dlogit, logit, label)
	sum := bceRef(dlogit, logit, label, scale)
	if loss != nil {
		loss[0] = float32(sum)
	}
}

func (r ref) EmbeddingBagForward(t *PackedTable, b *Bags, out Buffer) error {
	return embForwardRef(r.hostMem, t, b, out)
}

func (r ref) EmbeddingBagUpdate(t *PackedTable, b *Bags, dOut Buffer, step Step) error {
	return embUpdateRef(r.hostMem, t, b, dOut, step)
}

func (r ref) DenseUpdate(wb, accb Buffer, grads []Buffer, step Step) {
	w := r.f32("DenseUpdate", "w", wb)
	var acc []float32
	if step.Opt != OptSGD {
		acc = r.f32("DenseUpdate", "acc", accb)
	}
	g := make([][]float32, len(grads))
	for i, gb := range grads {
		g[i] = r.f32("DenseUpdate", "grads", gb)
	}
	checkDenseUpdate(w, acc, g, step)
	sum := append([]float32(nil), g[0]...)
	for _, gi := range g[1:] {
		for i, v := range gi {
			sum[i] += v
		}
	}
	stepRef(w, sum, acc, step, 0, len(w))
}

func (r ref) Axpy(yb Buffer, alpha float32, xb Buffer) {
	y, x := r.f32("Axpy", "y", yb), r.f32("Axpy", "x", xb)
	checkAxpy(y, x)
	axpy(y, alpha, x)
}

func (r ref) Fill(xb Buffer, v float32) { fillRef(r.f32("Fill", "x", xb), v) }

func (r ref) Copy2D(db Buffer, ldd int, sb Buffer, lds int, rows, cols int) {
	dst, src := r.f32("Copy2D", "dst", db), r.f32("Copy2D", "src", sb)
	checkCopy2D(dst, ldd, src, lds, rows, cols)
	copy2DRef(dst, ldd, src, lds, rows, cols)
}

func (r ref) GatherRows(db, sb, ib Buffer, width int) {
	dst, src := r.f32("GatherRows", "dst", db), r.f32("GatherRows", "src", sb)
	idx := rowIndexOf(r.hostMem, "GatherRows", ib)
	checkRowsCopy("GatherRows", dst, src, idx, width)
	gatherRange(dst, src, idx, width, 0, idx.len())
}

func (r ref) ScatterRows(db, sb, ib Buffer, width int) {
	dst, src := r.f32("ScatterRows", "dst", db), r.f32("ScatterRows", "src", sb)
	idx := rowIndexOf(r.hostMem, "ScatterRows", ib)
	checkRowsCopy("ScatterRows", src, dst, idx, width)
	scatterRange(dst, src, idx, width, 0, idx.len())
}
