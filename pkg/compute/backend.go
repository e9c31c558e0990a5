package compute

import "math"

// Backend runs the trainer's kernels on memory it owns. Every buffer a
// kernel takes lives in the backend's memory (Alloc): kernels never take
// Go slices, so a backend may keep its data on a device. Buffers in host
// memory move to and from the backend only through CopyIn and CopyOut.
//
// Calls are ordered as if they ran one after the other on the calling
// goroutine; a backend may run them asynchronously on a queue (a CUDA
// stream) as long as that order holds. The program reads what CopyOut wrote
// only after Sync. Kernels that return an error check their data before
// they are queued.
//
// Sizes that do not fit the buffers, a buffer of the wrong kind or in
// another backend's memory, are programmer errors and panic; bad data
// (embedding IDs, bag offsets) is reported as an error.
//
// A Backend is safe for concurrent use by several goroutines as long as
// their output buffers (and, for EmbeddingBagUpdate, the tables) do not
// overlap.
type Backend interface {
	// Name identifies the backend, for example "cpu/openblas", "ref" or
	// "cuda:0 (NVIDIA H100)".
	Name() string

	// Space returns the memory the backend computes in. A backend takes
	// buffers of its own space; one whose space is host memory also takes
	// buffers of any other host space (Wrap's, or page-locked memory).
	Space() *Space

	// Alloc returns a buffer of n zeroed elements of kind in the backend's
	// memory, or an error when there is not enough.
	Alloc(kind Kind, n int) (Buffer, error)

	// Free releases a buffer Alloc returned (the whole buffer, not a view).
	Free(b Buffer)

	// InUse returns the bytes allocated and not yet freed.
	InUse() int64

	// CopyIn copies src, in host memory, to dst, in the backend's memory
	// (host to device). Kinds and lengths must match. src may be reused
	// once CopyIn returns, unless it is page-locked memory the backend
	// allocated for staging, which it may read until the next Sync.
	CopyIn(dst, src Buffer)

	// CopyOut copies src, in the backend's memory, to dst, in host memory
	// (device to host). dst holds the data after the next Sync.
	CopyOut(dst, src Buffer)

	// Sync returns when every call made so far has finished, with the first
	// error a queued call reported.
	Sync() error

	// Gemm computes C = alpha*op(A)*op(B) + beta*C, where op(X) is X or Xᵀ
	// (transA, transB), op(A) is m×k, op(B) is k×n and C is m×n. lda, ldb and
	// ldc are row strides of the matrices as stored. When beta is 0, C is
	// not read (NaNs in it do not propagate); when alpha is 0 or k is 0, A
	// and B are not read.
	Gemm(transA, transB bool, m, n, k int, alpha float32, a Buffer, lda int, b Buffer, ldb int, beta float32, c Buffer, ldc int)

	// BiasAct adds bias (length width; the zero Buffer for none) to every
	// row of the n×width matrix out and, when relu is set, applies
	// max(0, x).
	BiasAct(out Buffer, n, width int, bias Buffer, relu bool)

	// ReLUBackward zeroes grad[i] wherever act[i] <= 0, act being the output
	// of a ReLU. act must be at least as long as grad.
	ReLUBackward(grad, act Buffer)

	// BiasGrad writes the column sums of the n×width matrix grad into db
	// (length width): the gradient of a bias added to every row.
	BiasGrad(db, grad Buffer, n, width int)

	// ReLUBackwardBiasGrad is ReLUBackward on the n×width matrix grad
	// followed by BiasGrad into db, in one pass over grad.
	ReLUBackwardBiasGrad(db, grad, act Buffer, n, width int)

	// InteractForward computes DLRM's dot interaction for n samples. x is
	// n×d (bottom-MLP output), emb is n×f×d (pooled embeddings). For each
	// sample, with T = [x; e1; ...; ef] ((f+1)×d) and Z = T·Tᵀ, the output
	// row (width InteractWidth(f, d)) is x followed by Z[i][j] for i in
	// 1..f, j in 0..i-1, in that order.
	InteractForward(out, x, emb Buffer, n, f, d int)

	// InteractBackward writes the gradients of the interaction wrt x (n×d)
	// and emb (n×f×d) given dOut (n×InteractWidth(f, d)). dx and demb are
	// overwritten.
	InteractBackward(dx, demb, dOut, x, emb Buffer, n, f, d int)

	// BCEWithLogits computes the binary cross-entropy of sigmoid(logit)
	// against label (0 or 1, or any value in [0, 1]) for the n = logit.Len()
	// samples, stably from the logits. When loss is valid, loss[0] receives
	// the sum of the n losses (accumulated in float64, rounded once). When
	// dlogit is valid, it receives dLoss/dlogit of the mean loss,
	// (sigmoid(logit)-label)/n, then multiplied by scale unless scale is 1
	// (a mean over more samples than this call sees).
	BCEWithLogits(loss, dlogit, logit, label Buffer, scale float32)

	// EmbeddingBagForward sum-pools each (sample, table) bag of bags into
	// out (bags.N × t.Tables() × t.Dim). An empty bag gives zeros. It returns
	// an error wrapping ErrIDOutOfRange or ErrBadOffsets for bad data, in
	// which case out is partly written; a backend whose memory the program
	// cannot read may return that error from the next Sync instead.
	EmbeddingBagForward(t *PackedTable, bags *Bags, out Buffer) error

	// EmbeddingBagUpdate applies step to the rows of t looked up by bags,
	// given dOut, the gradient of the pooled output (bags.N × t.Tables() ×
	// t.Dim). Gradients of an ID that occurs more than once in the batch
	// are summed (in batch order) before one step is applied to its row.
	// Bad data is reported as by EmbeddingBagForward, and changes no row.
	EmbeddingBagUpdate(t *PackedTable, bags *Bags, dOut Buffer, step Step) error

	// DenseUpdate applies step to the parameters w with the gradient
	// Σ grads (added in order; grads[0] may be overwritten with the sum),
	// plus step.WD·w when step.WD is not 0 (L2 weight decay): w -= lr·g for
	// SGD; acc += g², w -= lr·g/(sqrt(acc)+eps) elementwise for Adagrad
	// (acc as long as w); Adam's rule (Step.Opt) for Adam, whose acc holds
	// the first moments then the second (twice as long as w). SGD reads no
	// acc.
	DenseUpdate(w, acc Buffer, grads []Buffer, step Step)

	// Axpy computes y += alpha·x elementwise.
	Axpy(y Buffer, alpha float32, x Buffer)

	// Fill sets every element of x to v.
	Fill(x Buffer, v float32)

	// Copy2D copies a rows×cols matrix from src (row stride lds) to dst
	// (row stride ldd), both in the backend's memory.
	Copy2D(dst Buffer, ldd int, src Buffer, lds int, rows, cols int)

	// GatherRows copies row idx[k] of src to row k of dst, for every k,
	// rows being width elements long. idx (int32 or int64) is in the
	// backend's memory; its values must be rows of src.
	GatherRows(dst, src, idx Buffer, width int)

	// Mul computes out = a⊙b elementwise, or out += a⊙b when accumulate is
	// set. The three buffers have the same length; out may be a or b when
	// accumulate is not set.
	Mul(out, a, b Buffer, accumulate bool)

	// FMForward adds the second-order term of a factorization machine,
	// ½·Σ_k ((Σ_i e_ik)² − Σ_i e_ik²), to out[s] for each of the n samples.
	// Sample s's field i is the d values at emb[(s·f+i)·stride:], stride
	// >= d (a packed row may carry more values than the factors).
	FMForward(out, emb Buffer, n, f, d, stride int)

	// FMBackward adds the gradient of FMForward's term, dOut[s]·(Σ_j e_jk −
	// e_ik), to demb (laid out as emb) for each sample, field and factor.
	FMBackward(demb, dOut, emb Buffer, n, f, d, stride int)

	// ScatterRows copies row k of src to row idx[k] of dst, for every k.
	// The idx values must be distinct rows of dst.
	ScatterRows(dst, src, idx Buffer, width int)

	// Close releases the backend's worker goroutines and whatever it holds
	// beyond its buffers. Calls made after Close on a CPU backend still
	// work, on the calling goroutine alone.
	Close() error
}

// Splitter is a backend that can run several streams of kernels at once,
// each on its own share of the backend's threads. The trainer cuts a batch
// into lanes and runs them on Lanes when the backend offers them.
type Splitter interface {
	Backend
	// Lanes returns k backends that compute in this backend's memory, each
	// on an equal share of its threads, or nil when it has fewer than k
	// threads. The caller closes them.
	Lanes(k int) ([]Backend, error)
	// Parallel calls fn(i) for every i in [0, n), at once where threads
	// allow, the caller's goroutine included, and returns when all calls
	// have returned.
	Parallel(n int, fn func(i int))
}

// Optimizer names an update rule.
type Optimizer int

const (
	// OptSGD is plain SGD: w -= lr*g.
	OptSGD Optimizer = iota
	// OptAdagrad is Adagrad. For dense parameters it keeps one
	// accumulator per parameter; for embedding rows (EmbeddingBagUpdate)
	// one per row, row-wise: acc += mean(g²) over the row's values,
	// w -= lr*g/(sqrt(acc)+eps).
	OptAdagrad
	// OptAdam is Adam, for dense parameters only: with the first and
	// second moments m and v, m = β1·m + (1−β1)·g, v = β2·v + (1−β2)·g²,
	// w -= lr·(m/(1−β1^t)) / (sqrt(v/(1−β2^t)) + eps), t being Step.T.
	OptAdam
)

// String returns "sgd", "adagrad" or "adam".
func (o Optimizer) String() string {
	switch o {
	case OptSGD:
		return "sgd"
	case OptAdagrad:
		return "adagrad"
	case OptAdam:
		return "adam"
	}
	return "unknown"
}

// Step is one optimizer step: the rule and its hyper-parameters.
type Step struct {
	Opt Optimizer
	LR  float32 // learning rate
	Eps float32 // Adagrad's and Adam's denominator term; ignored by SGD
	// WD is the L2 weight decay: WD·w is added to the gradient of every
	// parameter the step updates (for embeddings, only the rows the batch
	// looked up, as sparse trainers do). 0 adds nothing.
	WD float32
	// Beta1 and Beta2 are Adam's moment decay rates and T its step number
	// (1 for the first step), which sets the bias correction.
	Beta1, Beta2 float32
	T            int64
}

// AdamCorrection returns Adam's bias corrections 1−β1^T and 1−β2^T, the
// values every backend divides the moments by.
func (s Step) AdamCorrection() (c1, c2 float32) {
	t := float64(max(s.T, 1))
	return float32(1 - math.Pow(float64(s.Beta1), t)), float32(1 - math.Pow(float64(s.Beta2), t))
}
