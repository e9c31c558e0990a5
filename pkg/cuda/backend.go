package cuda

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"unsafe"

	"github.com/picasso-ctr/picasso/pkg/compute"
)

// Backend is the CUDA backend: compute.Backend on one GPU. Buffers live in
// the GPU's memory; every call is queued on one stream in call order, GEMMs
// go to cuBLAS and the other kernels are picasso's CUDA C (kernels/).
// CopyIn reads pageable host memory before it returns; CopyOut has written
// it when it returns. Errors of queued work (and bad embedding IDs, which
// the kernels find) are returned by the next Sync.
type Backend struct {
	g     gpu
	space *compute.Space

	mu     sync.Mutex
	allocs map[uintptr]int64
	inUse  int64
	err    error // first error of a queued call, returned by Sync

	scratch scratch
	// Argument blocks, reused by every launch (the driver copies them).
	a struct {
		biasAct      biasActArgs
		reluBackward reluBackwardArgs
		biasGrad     biasGradArgs
		reluBiasGrad reluBiasGradArgs
		interact     interactArgs
		bce          bceArgs
		dense        denseUpdateArgs
		axpy         axpyArgs
		copy2D       copy2DArgs
		rows         rowsArgs
		emb          embArgs
		mul          mulArgs
		fm           fmArgs
	}
	tabs    []embTable // host staging of a launch's table descriptors
	pending []embCheck // embedding checks whose flags Sync reads
	errHost [2]uint64
}

var _ compute.Backend = (*Backend)(nil)

// threadsPerBlock is every launch's block size.
const threadsPerBlock = 256

// Open returns the CUDA backend on GPU index, or an error wrapping
// ErrNoDevice when the driver or the GPU is missing.
func Open(index int, opts Options) (*Backend, error) {
	g, err := openCUDA(index, opts)
	if err != nil {
		return nil, err
	}
	return newBackend(g), nil
}

func newBackend(g gpu) *Backend {
	return &Backend{g: g, space: compute.NewSpace(g.name(), false), allocs: map[uintptr]int64{}}
}

// Name implements compute.Backend: "cuda:0 (NVIDIA H100 80GB HBM3, sm_90)".
func (b *Backend) Name() string { return b.g.name() }

// Space implements compute.Backend.
func (b *Backend) Space() *compute.Space { return b.space }

// fail records the first error of a queued call.
func (b *Backend) fail(err error) {
	if err != nil && b.err == nil {
		b.err = err
	}
}

// Alloc implements compute.Backend: zeroed device memory.
func (b *Backend) Alloc(kind compute.Kind, n int) (compute.Buffer, error) {
	if n < 0 {
		return compute.Buffer{}, fmt.Errorf("cuda: alloc %d %v: %w", n, kind, compute.ErrInvalidOptions)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	bytes := int64(n) * int64(kind.Size())
	var p uintptr
	if bytes > 0 {
		var err error
		if p, err = b.g.alloc(bytes); err != nil {
			var ce *Error
			if errors.As(err, &ce) && ce.Code == 2 {
				return compute.Buffer{}, fmt.Errorf("cuda: %s: %d bytes: %w: %w", b.g.name(), bytes, compute.ErrOutOfMemory, err)
			}
			return compute.Buffer{}, err
		}
		if err := b.g.memset8(p, 0, bytes); err != nil {
			b.g.free(p)
			return compute.Buffer{}, err
		}
		b.allocs[p] = bytes
		b.inUse += bytes
	}
	return compute.MakeBuffer(b.space, nil, p, n, kind), nil
}

// Free implements compute.Backend.
func (b *Backend) Free(buf compute.Buffer) {
	if !buf.Valid() || buf.Addr() == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	bytes, ok := b.allocs[buf.Addr()]
	if !ok {
		panic(fmt.Sprintf("cuda: Free of %v, which Alloc did not return", buf))
	}
	delete(b.allocs, buf.Addr())
	b.inUse -= bytes
	b.fail(b.g.free(buf.Addr()))
}

// InUse implements compute.Backend.
func (b *Backend) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inUse
}

func (b *Backend) own(kernel, name string, buf compute.Buffer, k compute.Kind) uintptr {
	if buf.Space() != b.space {
		panic(fmt.Sprintf("cuda: %s: %s is a buffer in %s memory; this backend computes in %s", kernel, name, buf.Space().Name(), b.space.Name()))
	}
	if buf.Kind() != k {
		panic(fmt.Sprintf("cuda: %s: %s is a %v buffer; want %v", kernel, name, buf.Kind(), k))
	}
	return buf.Addr()
}

// opt returns the address of an optional float32 buffer, 0 for none.
func (b *Backend) opt(kernel, name string, buf compute.Buffer) uintptr {
	if !buf.Valid() {
		return 0
	}
	return b.own(kernel, name, buf, compute.Float32)
}

func need(kernel, name string, buf compute.Buffer, n int) {
	if buf.Len() < n {
		panic(fmt.Sprintf("cuda: %s: len(%s) = %d; want at least %d", kernel, name, buf.Len(), n))
	}
}

func needMat(kernel, name string, buf compute.Buffer, rows, cols, ld int) {
	if ld < max(1, cols) {
		panic(fmt.Sprintf("cuda: %s: %s: leading dimension %d < max(1, %d)", kernel, name, ld, cols))
	}
	if rows > 0 && cols > 0 {
		need(kernel, name, buf, (rows-1)*ld+cols)
	}
}

// CopyIn implements compute.Backend.
func (b *Backend) CopyIn(dst, src compute.Buffer) {
	if dst.Kind() != src.Kind() || dst.Len() != src.Len() {
		panic(fmt.Sprintf("cuda: CopyIn: dst is %d %v, src %d %v", dst.Len(), dst.Kind(), src.Len(), src.Kind()))
	}
	p := b.own("CopyIn", "dst", dst, dst.Kind())
	if !src.Space().IsHost() {
		panic(fmt.Sprintf("cuda: CopyIn: src is in %s memory, not host memory", src.Space().Name()))
	}
	if src.Len() == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fail(b.g.htod(p, src.Pointer(), src.Bytes()))
}

// CopyOut implements compute.Backend.
func (b *Backend) CopyOut(dst, src compute.Buffer) {
	if dst.Kind() != src.Kind() || dst.Len() != src.Len() {
		panic(fmt.Sprintf("cuda: CopyOut: dst is %d %v, src %d %v", dst.Len(), dst.Kind(), src.Len(), src.Kind()))
	}
	p := b.own("CopyOut", "src", src, src.Kind())
	if !dst.Space().IsHost() {
		panic(fmt.Sprintf("cuda: CopyOut: dst is in %s memory, not host memory", dst.Space().Name()))
	}
	if src.Len() == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fail(b.g.dtoh(dst.Pointer(), p, src.Bytes()))
}

// Sync implements compute.Backend: it waits for the stream and returns the
// first error of the calls queued since the last Sync, bad embedding data
// included.
func (b *Backend) Sync() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fail(b.g.sync())
	for _, c := range b.pending {
		if b.err != nil {
			break
		}
		b.fail(b.readCheck(c))
	}
	b.pending = b.pending[:0]
	err := b.err
	b.err = nil
	return err
}

// Close implements compute.Backend.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.g == nil {
		return nil
	}
	b.scratch.free(b.g)
	err := b.g.close()
	b.g = nil
	return err
}

// grid returns the blocks of a grid-stride launch over n items.
func (b *Backend) grid(n int64) int {
	return int(max(1, min((n+threadsPerBlock-1)/threadsPerBlock, int64(b.g.blocks()))))
}

// run launches kernel k over n items with args (a field of b.a). The
// caller holds b.mu.
func (b *Backend) run(k kernel, n int64, args unsafe.Pointer) {
	if n <= 0 || b.err != nil {
		return
	}
	b.fail(b.g.launch(k, b.grid(n), threadsPerBlock, args))
}

// one launches kernel k on a single thread.
func (b *Backend) one(k kernel, args unsafe.Pointer) {
	if b.err != nil {
		return
	}
	b.fail(b.g.launch(k, 1, 1, args))
}

// Gemm implements compute.Backend.
func (b *Backend) Gemm(transA, transB bool, m, n, k int, alpha float32, ab compute.Buffer, lda int, bb compute.Buffer, ldb int, beta float32, cb compute.Buffer, ldc int) {
	const kn = "Gemm"
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("cuda: Gemm: negative size m=%d n=%d k=%d", m, n, k))
	}
	ar, ac, br, bc := m, k, k, n
	if transA {
		ar, ac = k, m
	}
	if transB {
		br, bc = n, k
	}
	pa, pb, pc := b.own(kn, "a", ab, compute.Float32), b.own(kn, "b", bb, compute.Float32), b.own(kn, "c", cb, compute.Float32)
	needMat(kn, "a", ab, ar, ac, lda)
	needMat(kn, "b", bb, br, bc, ldb)
	needMat(kn, "c", cb, m, n, ldc)
	if m == 0 || n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if k == 0 || alpha == 0 {
		// C = beta·C: A and B are not read.
		a := &b.a.copy2D
		*a = copy2DArgs{dst: uint64(pc), rows: int64(m), cols: int64(n), ldd: int64(ldc), beta: beta}
		b.run(kScale2D, int64(m)*int64(n), unsafe.Pointer(a))
		return
	}
	if b.err == nil {
		b.fail(b.g.sgemm(transA, transB, m, n, k, alpha, pa, lda, pb, ldb, beta, pc, ldc))
	}
}

// BiasAct implements compute.Backend.
func (b *Backend) BiasAct(out compute.Buffer, n, width int, bias compute.Buffer, relu bool) {
	po, pb := b.own("BiasAct", "out", out, compute.Float32), b.opt("BiasAct", "bias", bias)
	need("BiasAct", "out", out, n*width)
	if bias.Valid() && bias.Len() != width {
		panic(fmt.Sprintf("cuda: BiasAct: len(bias) = %d; want %d", bias.Len(), width))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	a := &b.a.biasAct
	*a = biasActArgs{out: uint64(po), bias: uint64(pb), n: int64(n), w: int64(width)}
	if relu {
		a.relu = 1
	}
	b.run(kBiasAct, int64(n)*int64(width), unsafe.Pointer(a))
}

// ReLUBackward implements compute.Backend.
func (b *Backend) ReLUBackward(grad, act compute.Buffer) {
	pg, pa := b.own("ReLUBackward", "grad", grad, compute.Float32), b.own("ReLUBackward", "act", act, compute.Float32)
	need("ReLUBackward", "act", act, grad.Len())
	b.mu.Lock()
	defer b.mu.Unlock()
	a := &b.a.reluBackward
	*a = reluBackwardArgs{grad: uint64(pg), act: uint64(pa), n: int64(grad.Len())}
	b.run(kReLUBackward, int64(grad.Len()), unsafe.Pointer(a))
}

func checkBiasGrad(kernel string, db, grad compute.Buffer, n, width int) {
	if n < 0 || width < 0 {
		panic(fmt.Sprintf("cuda: %s: negative size n=%d width=%d", kernel, n, width))
	}
	if db.Len() != width {
		panic(fmt.Sprintf("cuda: %s: len(db) = %d; want %d", kernel, db.Len(), width))
	}
	need(kernel, "grad", grad, n*width)
}

// BiasGrad implements compute.Backend.
func (b *Backend) BiasGrad(db, grad compute.Buffer, n, width int) {
	pd, pg := b.own("BiasGrad", "db", db, compute.Float32), b.own("BiasGrad", "grad", grad, compute.Float32)
	checkBiasGrad("BiasGrad", db, grad, n, width)
	b.mu.Lock()
	defer b.mu.Unlock()
	a := &b.a.biasGrad
	*a = biasGradArgs{db: uint64(pd), grad: uint64(pg), n: int64(n), w: int64(width)}
	b.run(kBiasGrad, int64(width), unsafe.Pointer(a))
}

// ReLUBackwardBiasGrad implements compute.Backend.
func (b *Backend) ReLUBackwardBiasGrad(db, grad, act compute.Buffer, n, width int) {
	const kn = "ReLUBackwardBiasGrad"
	pd, pg, pa := b.own(kn, "db", db, compute.Float32), b.own(kn, "grad", grad, compute.Float32), b.own(kn, "act", act, compute.Float32)
	checkBiasGrad(kn, db, grad, n, width)
	need(kn, "act", act, n*width)
	b.mu.Lock()
	defer b.mu.Unlock()
	a := &b.a.reluBiasGrad
	*a = reluBiasGradArgs{db: uint64(pd), grad: uint64(pg), act: uint64(pa), n: int64(n), w: int64(width)}
	b.run(kReLUBiasGrad, int64(width), unsafe.Pointer(a))
}

func checkInteract(kernel string, n, f, d int) {
	if n < 0 || f < 0 || d < 0 {
		panic(fmt.Sprintf("cuda: %s: negative size n=%d f=%d d=%d", kernel, n, f, d))
	}
}

// InteractForward implements compute.Backend.
func (b *Backend) InteractForward(out, x, emb compute.Buffer, n, f, d int) {
	const kn = "InteractForward"
	checkInteract(kn, n, f, d)
	w := compute.InteractWidth(f, d)
	need(kn, "out", out, n*w)
	need(kn, "x", x, n*d)
	need(kn, "emb", emb, n*f*d)
	po, px, pe := b.own(kn, "out", out, compute.Float32), b.own(kn, "x", x, compute.Float32), b.own(kn, "emb", emb, compute.Float32)
	b.mu.Lock()
	defer b.mu.Unlock()
	a := &b.a.interact
	*a = interactArgs{out: uint64(po), x: uint64(px), emb: uint64(pe), n: int64(n), f: int32(f), d: int32(d)}
	b.run(kInteractFwd, int64(n)*int64(w), unsafe.Pointer(a))
}

// InteractBackward implements compute.Backend.
func (b *Backend) InteractBackward(dx, demb, dOut, x, emb compute.Buffer, n, f, d int) {
	const kn = "InteractBackward"
	checkInteract(kn, n, f, d)
	need(kn, "dx", dx, n*d)
	need(kn, "demb", demb, n*f*d)
	need(kn, "dOut", dOut, n*compute.InteractWidth(f, d))
	need(kn, "x", x, n*d)
	need(kn, "emb", emb, n*f*d)
	a := &b.a.interact
	pdx, pde, pg := b.own(kn, "dx", dx, compute.Float32), b.own(kn, "demb", demb, compute.Float32), b.own(kn, "dOut", dOut, compute.Float32)
	px, pe := b.own(kn, "x", x, compute.Float32), b.own(kn, "emb", emb, compute.Float32)
	b.mu.Lock()
	defer b.mu.Unlock()
	*a = interactArgs{dx: uint64(pdx), demb: uint64(pde), dout: uint64(pg), x: uint64(px), emb: uint64(pe),
		n: int64(n), f: int32(f), d: int32(d)}
	b.run(kInteractBwd, int64(n)*int64(f+1)*int64(d), unsafe.Pointer(a))
}

// BCEWithLogits implements compute.Backend. The per-sample losses go to a
// scratch buffer, summed in order by one thread.
func (b *Backend) BCEWithLogits(loss, dlogit, logit, label compute.Buffer, scale float32) {
	const kn = "BCEWithLogits"
	n := logit.Len()
	pz, py := b.own(kn, "logit", logit, compute.Float32), b.own(kn, "label", label, compute.Float32)
	pd, pl := b.opt(kn, "dlogit", dlogit), b.opt(kn, "loss", loss)
	need(kn, "label", label, n)
	if dlogit.Valid() {
		need(kn, "dlogit", dlogit, n)
	}
	if loss.Valid() {
		need(kn, "loss", loss, 1)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	a := &b.a.bce
	*a = bceArgs{dlogit: uint64(pd), logit: uint64(pz), label: uint64(py), loss: uint64(pl), n: int64(n), scale: scale}
	if loss.Valid() {
		buf, err := b.scratch.lossBuf(b.g, n)
		if err != nil {
			b.fail(err)
			return
		}
		a.lossbuf = uint64(buf)
	}
	b.run(kBCE, int64(n), unsafe.Pointer(a))
	if loss.Valid() {
		b.one(kBCESum, unsafe.Pointer(a))
	}
}

// DenseUpdate implements compute.Backend: one pass over the parameters
// with up to four gradients; more are first added into grads[0].
func (b *Backend) DenseUpdate(w, acc compute.Buffer, grads []compute.Buffer, step compute.Step) {
	const kn = "DenseUpdate"
	if len(grads) == 0 {
		panic("cuda: DenseUpdate: no gradients")
	}
	pw := b.own(kn, "w", w, compute.Float32)
	var pacc uintptr
	switch step.Opt {
	case compute.OptSGD:
	case compute.OptAdagrad:
		pacc = b.own(kn, "acc", acc, compute.Float32)
		need(kn, "acc", acc, w.Len())
	case compute.OptAdam:
		pacc = b.own(kn, "acc", acc, compute.Float32)
		need(kn, "acc", acc, 2*w.Len())
	default:
		panic(fmt.Sprintf("cuda: DenseUpdate: unknown optimizer %d", step.Opt))
	}
	var pg [4]uintptr
	for len(grads) > 4 {
		b.Axpy(grads[0], 1, grads[1])
		grads = append(grads[:1:1], grads[2:]...)
	}
	for i, g := range grads {
		pg[i] = b.own(kn, "grads", g, compute.Float32)
		if g.Len() != w.Len() {
			panic(fmt.Sprintf("cuda: DenseUpdate: len(grads[%d]) = %d; want %d", i, g.Len(), w.Len()))
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	a := &b.a.dense
	*a = denseUpdateArgs{w: uint64(pw), acc: uint64(pacc), g0: uint64(pg[0]), g1: uint64(pg[1]), g2: uint64(pg[2]), g3: uint64(pg[3]),
		n: int64(w.Len()), ng: int32(len(grads)), opt: int32(step.Opt), lr: step.LR, eps: step.Eps, wd: step.WD}
	if step.Opt == compute.OptAdam {
		a.b1, a.b2 = step.Beta1, step.Beta2
		a.c1, a.c2 = step.AdamCorrection()
	}
	b.run(kDenseUpdate, int64(w.Len()), unsafe.Pointer(a))
}

// Axpy implements compute.Backend.
func (b *Backend) Axpy(y compute.Buffer, alpha float32, x compute.Buffer) {
	py, px := b.own("Axpy", "y", y, compute.Float32), b.own("Axpy", "x", x, compute.Float32)
	if x.Len() != y.Len() {
		panic(fmt.Sprintf("cuda: Axpy: len(x) = %d; want len(y) = %d", x.Len(), y.Len()))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	a := &b.a.axpy
	*a = axpyArgs{y: uint64(py), x: uint64(px), n: int64(y.Len()), alpha: alpha}
	b.run(kAxpy, int64(y.Len()), unsafe.Pointer(a))
}

// Fill implements compute.Backend.
func (b *Backend) Fill(x compute.Buffer, v float32) {
	px := b.own("Fill", "x", x, compute.Float32)
	b.mu.Lock()
	defer b.mu.Unlock()
	a := &b.a.axpy
	*a = axpyArgs{y: uint64(px), n: int64(x.Len()), v: v}
	b.run(kFill, int64(x.Len()), unsafe.Pointer(a))
}

// Copy2D implements compute.Backend.
func (b *Backend) Copy2D(dst compute.Buffer, ldd int, src compute.Buffer, lds int, rows, cols int) {
	pd, ps := b.own("Copy2D", "dst", dst, compute.Float32), b.own("Copy2D", "src", src, compute.Float32)
	if rows < 0 || cols < 0 {
		panic(fmt.Sprintf("cuda: Copy2D: negative size rows=%d cols=%d", rows, cols))
	}
	needMat("Copy2D", "dst", dst, rows, cols, ldd)
	needMat("Copy2D", "src", src, rows, cols, lds)
	b.mu.Lock()
	defer b.mu.Unlock()
	a := &b.a.copy2D
	*a = copy2DArgs{dst: uint64(pd), src: uint64(ps), rows: int64(rows), cols: int64(cols), ldd: int64(ldd), lds: int64(lds)}
	b.run(kCopy2D, int64(rows)*int64(cols), unsafe.Pointer(a))
}

// rows launches a gather or scatter. packed is the buffer of idx.Len()
// rows, table the one the indices name; the indices are not checked
// against table (the device cannot read them): they are the caller's.
func (b *Backend) rows(kn string, k kernel, dst, src, idx compute.Buffer, width int, packed, table compute.Buffer) {
	pd, ps := b.own(kn, "dst", dst, compute.Float32), b.own(kn, "src", src, compute.Float32)
	wide := int32(0)
	var pi uintptr
	if idx.Kind() == compute.Int64 {
		wide, pi = 1, b.own(kn, "idx", idx, compute.Int64)
	} else {
		pi = b.own(kn, "idx", idx, compute.Int32)
	}
	if width < 1 {
		panic(fmt.Sprintf("cuda: %s: width %d < 1", kn, width))
	}
	need(kn, "packed rows", packed, idx.Len()*width)
	b.mu.Lock()
	defer b.mu.Unlock()
	a := &b.a.rows
	*a = rowsArgs{dst: uint64(pd), src: uint64(ps), idx: uint64(pi), k: int64(idx.Len()), width: int64(width), wide: wide}
	b.run(k, int64(idx.Len())*int64(width), unsafe.Pointer(a))
}

// GatherRows implements compute.Backend.
func (b *Backend) GatherRows(dst, src, idx compute.Buffer, width int) {
	b.rows("GatherRows", kGatherRows, dst, src, idx, width, dst, src)
}

// ScatterRows implements compute.Backend.
func (b *Backend) ScatterRows(dst, src, idx compute.Buffer, width int) {
	b.rows("ScatterRows", kScatterRows, dst, src, idx, width, src, dst)
}

// nextPow2 returns the least power of two >= n (and >= 1024).
func nextPow2(n int64) int64 {
	if n <= 1024 {
		return 1024
	}
	return 1 << (64 - bits.LeadingZeros64(uint64(n-1)))
}

// Mul implements compute.Backend.
func (b *Backend) Mul(out, x, y compute.Buffer, accumulate bool) {
	const kn = "Mul"
	po, px, py := b.own(kn, "out", out, compute.Float32), b.own(kn, "a", x, compute.Float32), b.own(kn, "b", y, compute.Float32)
	if x.Len() != out.Len() || y.Len() != out.Len() {
		panic(fmt.Sprintf("cuda: Mul: len(a) = %d, len(b) = %d; want len(out) = %d", x.Len(), y.Len(), out.Len()))
	}
	var acc int32
	if accumulate {
		acc = 1
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	a := &b.a.mul
	*a = mulArgs{out: uint64(po), a: uint64(px), b: uint64(py), n: int64(out.Len()), acc: acc}
	b.run(kMul, int64(out.Len()), unsafe.Pointer(a))
}

// checkFM panics unless emb holds n samples of f fields, stride values
// apart, of which the first d are the factors.
func checkFM(kn, name string, emb compute.Buffer, n, f, d, stride int) {
	if n < 0 || f < 0 || d < 0 || stride < d {
		panic(fmt.Sprintf("cuda: %s: bad size n=%d f=%d d=%d stride=%d", kn, n, f, d, stride))
	}
	if n > 0 && f > 0 {
		need(kn, name, emb, (n*f-1)*stride+d)
	}
}

// FMForward implements compute.Backend: one thread per sample.
func (b *Backend) FMForward(out, emb compute.Buffer, n, f, d, stride int) {
	const kn = "FMForward"
	po, pe := b.own(kn, "out", out, compute.Float32), b.own(kn, "emb", emb, compute.Float32)
	checkFM(kn, "emb", emb, n, f, d, stride)
	need(kn, "out", out, n)
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	a := &b.a.fm
	*a = fmArgs{out: uint64(po), emb: uint64(pe), n: int64(n), f: int32(f), d: int32(d), stride: int32(stride)}
	b.run(kFMFwd, int64(n), unsafe.Pointer(a))
}

// FMBackward implements compute.Backend: one thread per sample and factor.
func (b *Backend) FMBackward(demb, dOut, emb compute.Buffer, n, f, d, stride int) {
	const kn = "FMBackward"
	pd, pg, pe := b.own(kn, "demb", demb, compute.Float32), b.own(kn, "dOut", dOut, compute.Float32), b.own(kn, "emb", emb, compute.Float32)
	checkFM(kn, "emb", emb, n, f, d, stride)
	checkFM(kn, "demb", demb, n, f, d, stride)
	need(kn, "dOut", dOut, n)
	if n == 0 || d == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	a := &b.a.fm
	*a = fmArgs{demb: uint64(pd), dout: uint64(pg), emb: uint64(pe), n: int64(n), f: int32(f), d: int32(d), stride: int32(stride)}
	b.run(kFMBwd, int64(n)*int64(d), unsafe.Pointer(a))
}
