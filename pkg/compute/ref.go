package compute

// ref is the reference backend: plain serial loops that define each
// kernel's contract. Tests compare every other backend with it.
type ref struct{}

// Reference returns the reference backend, whose kernels are the plain
// loops every other backend is tested against. It is slow.
func Reference() Backend { return ref{} }

func (ref) Name() string { return "ref" }

func (ref) Close() error { return nil }

func (ref) Gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkGemm(transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	gemmRef(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func (ref) BiasAct(out []float32, n, width int, bias []float32, relu bool) {
	checkBiasAct(out, n, width, bias)
	biasActRef(out, n, width, bias, relu)
}

func (ref) ReLUBackward(grad, act []float32) {
	checkReLUBackward(grad, act)
	reluBackwardRef(grad, act)
}

func (ref) BiasGrad(db, grad []float32, n, width int) {
	checkBiasGrad(db, grad, n, width)
	biasGradRef(db, grad, n, width)
}

func (ref) ReLUBackwardBiasGrad(db, grad, act []float32, n, width int) {
	checkBiasGrad(db, grad, n, width)
	needLen("ReLUBackwardBiasGrad", "act", act, n*width)
	reluBackwardRef(grad[:n*width], act)
	biasGradRef(db, grad, n, width)
}

func (ref) InteractForward(out, x, emb []float32, n, f, d int) {
	checkInteractForward(out, x, emb, n, f, d)
	interactForwardRef(out, x, emb, n, f, d)
}

func (ref) InteractBackward(dx, demb, dOut, x, emb []float32, n, f, d int) {
	checkInteractBackward(dx, demb, dOut, x, emb, n, f, d)
	interactBackwardRef(dx, demb, dOut, x, emb, n, f, d)
}

func (ref) BCEWithLogits(dlogit, logit, label []float32) float64 {
	checkBCE(dlogit, logit, label)
	return bceRef(dlogit, logit, label)
}

func (ref) EmbeddingBagForward(t *PackedTable, b *Bags, out []float32) error {
	return embForwardRef(t, b, out)
}

func (ref) EmbeddingBagUpdate(t *PackedTable, b *Bags, dOut []float32, step SparseStep, touched *RowSet) error {
	return embUpdateRef(t, b, dOut, step, touched)
}

func (ref) SGD(w, g []float32, lr float32) {
	checkSGD(w, g)
	sgdRef(w, g, lr)
}

func (ref) Adagrad(w, g, acc []float32, lr, eps float32) {
	checkAdagrad(w, g, acc)
	adagradRef(w, g, acc, lr, eps)
}
