package compute

// Backend is the set of kernels the trainer runs. All buffers are float32,
// row-major and owned by the caller; kernels never keep them. Sizes that do
// not fit the buffers are programmer errors and panic; bad data (embedding
// IDs, bag offsets) is reported as an error.
//
// A Backend is safe for concurrent use by several goroutines as long as their
// output buffers (and, for EmbeddingBagUpdate, the tables) do not overlap.
type Backend interface {
	// Name identifies the backend, for example "cpu/openblas" or "ref".
	Name() string

	// Gemm computes C = alpha*op(A)*op(B) + beta*C, where op(X) is X or Xᵀ
	// (transA, transB), op(A) is m×k, op(B) is k×n and C is m×n. lda, ldb and
	// ldc are row strides of the matrices as stored. When beta is 0, C is
	// not read (NaNs in it do not propagate); when alpha is 0 or k is 0, A
	// and B are not read.
	Gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)

	// BiasAct adds bias (length width; nil for none) to every row of the
	// n×width matrix out and, when relu is set, applies max(0, x).
	BiasAct(out []float32, n, width int, bias []float32, relu bool)

	// ReLUBackward zeroes grad[i] wherever act[i] <= 0, act being the output
	// of a ReLU. len(act) must be at least len(grad).
	ReLUBackward(grad, act []float32)

	// BiasGrad writes the column sums of the n×width matrix grad into db
	// (length width): the gradient of a bias added to every row.
	BiasGrad(db, grad []float32, n, width int)

	// ReLUBackwardBiasGrad is ReLUBackward on the n×width matrix grad
	// followed by BiasGrad into db, in one pass over grad.
	ReLUBackwardBiasGrad(db, grad, act []float32, n, width int)

	// InteractForward computes DLRM's dot interaction for n samples. x is
	// n×d (bottom-MLP output), emb is n×f×d (pooled embeddings). For each
	// sample, with T = [x; e1; ...; ef] ((f+1)×d) and Z = T·Tᵀ, the output
	// row (width InteractWidth(f, d)) is x followed by Z[i][j] for i in
	// 1..f, j in 0..i-1, in that order.
	InteractForward(out, x, emb []float32, n, f, d int)

	// InteractBackward writes the gradients of the interaction wrt x (n×d)
	// and emb (n×f×d) given dOut (n×InteractWidth(f, d)). dx and demb are
	// overwritten.
	InteractBackward(dx, demb, dOut, x, emb []float32, n, f, d int)

	// BCEWithLogits returns the mean binary cross-entropy of sigmoid(logit)
	// against label (0 or 1, or any value in [0, 1]), computed stably from
	// the logits, and, when dlogit is not nil, writes dLoss/dlogit (that is,
	// (sigmoid(logit)-label)/n) into it. n = len(logit).
	BCEWithLogits(dlogit, logit, label []float32) float64

	// EmbeddingBagForward sum-pools each (sample, table) bag of bags into
	// out (bags.N × t.Tables() × t.Dim). An empty bag gives zeros. It returns
	// an error wrapping ErrIDOutOfRange or ErrBadOffsets for bad data, in
	// which case out is partly written.
	EmbeddingBagForward(t *PackedTable, bags *Bags, out []float32) error

	// EmbeddingBagUpdate applies step to the rows of t looked up by bags,
	// given dOut, the gradient of the pooled output (bags.N × t.Tables() ×
	// t.Dim). Gradients of an ID that occurs more than once in the batch
	// are summed (in batch order) before one step is applied to its row.
	// When touched is not nil, the packed index of every updated row is
	// added to it. Bad data is reported before any row changes.
	EmbeddingBagUpdate(t *PackedTable, bags *Bags, dOut []float32, step SparseStep, touched *RowSet) error

	// SGD applies w -= lr*g elementwise. len(w) must equal len(g).
	SGD(w, g []float32, lr float32)

	// Adagrad applies acc += g², w -= lr*g/(sqrt(acc)+eps) elementwise.
	Adagrad(w, g, acc []float32, lr, eps float32)

	// Close releases the backend's worker goroutines. Calls made after
	// Close still work, on the calling goroutine alone.
	Close() error
}

// Optimizer names a sparse (embedding) update rule.
type Optimizer int

const (
	// OptSGD is plain SGD: w -= lr*g.
	OptSGD Optimizer = iota
	// OptRowWiseAdagrad keeps one accumulator per row: acc += mean(g²) over
	// the row's values, w -= lr*g/(sqrt(acc)+eps).
	OptRowWiseAdagrad
)

// String returns "sgd" or "rowwise-adagrad".
func (o Optimizer) String() string {
	switch o {
	case OptSGD:
		return "sgd"
	case OptRowWiseAdagrad:
		return "rowwise-adagrad"
	}
	return "unknown"
}

// SparseStep is one sparse optimizer step: the rule and its hyper-parameters.
type SparseStep struct {
	Opt Optimizer
	LR  float32 // learning rate
	Eps float32 // Adagrad's denominator term; ignored by SGD
}
