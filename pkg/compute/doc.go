// Package compute provides the kernels the trainer runs, behind the
// Backend interface, with a pure-Go reference implementation of each, a
// fast CPU implementation, and a CPU backend that emulates a device.
//
// # Memory
//
// Kernels work on buffers the backend owns (Buffer: a view of float32,
// int32 or int64 elements in one memory Space), never on Go slices, so that
// a backend may keep its data on a GPU. The CPU and reference backends
// compute in host memory, where Wrap turns a Go slice into a buffer without
// a copy. Data moves between host memory and a backend's memory only by
// CopyIn (host to device) and CopyOut (device to host), which a device
// backend may queue on a stream: Sync waits for them, and the program
// reads what CopyOut wrote only after Sync. A kernel given a buffer of
// another memory panics, as a device would fault. Alloc and Free account
// for every byte (InUse), so tests can assert that nothing is left.
//
// (*CPU).Emulate returns a device for machines without one: it runs the
// CPU kernels on the same worker goroutines, but in a memory of its own
// that the program may not read, so that a trainer using it moves (and
// counts) every byte a GPU would need. In its deferred form CopyOut
// delivers at Sync, as an asynchronous queue does, so that tests catch a
// read that does not wait.
//
// Everything is float32 and row-major. The kernels are:
//
//   - Gemm: C = alpha·op(A)·op(B) + beta·C for the linear layers.
//   - BiasAct, ReLUBackward, BiasGrad, ReLUBackwardBiasGrad: bias and ReLU
//     forward, the ReLU mask of the gradient and the bias gradient (column
//     sums), fused or not.
//   - InteractForward, InteractBackward: DLRM's dot interaction (x followed
//     by the strictly lower triangle of [x; e1..ef]·[x; e1..ef]ᵀ, as
//     facebookresearch/dlrm's "dot" interaction without self pairs).
//   - BCEWithLogits: binary cross-entropy from logits, numerically stable,
//     with dLoss/dlogit; the loss sum stays in the backend's memory.
//   - EmbeddingBagForward, EmbeddingBagUpdate: sum-pooled lookups and sparse
//     SGD or row-wise Adagrad updates (optionally with weight decay, and a
//     second accumulator for each row's last value: SplitLast) over a
//     PackedTable, with duplicate IDs merged in batch order. IDs are int64
//     or int32, local to their table or rows of the packed table
//     (Bags.Packed).
//   - DenseUpdate: the SGD, Adagrad or Adam step of dense parameters, with
//     optional weight decay, on the sum of several gradients (the trainer's
//     lanes).
//   - Mul: elementwise products, for DCN-v2's cross layers.
//   - FMForward, FMBackward: the factorization machine's second-order term
//     of DeepFM and its gradient, in O(f·d) per sample.
//   - Axpy, Fill, Copy2D, GatherRows, ScatterRows: the small moves a step
//     and a hot-row synchronisation need.
//
// # Backends
//
// Reference returns the reference backend: plain serial loops that define
// each kernel's contract. New returns the CPU backend, whose GEMM is chosen
// by Options.BLAS:
//
//   - "openblas": OpenBLAS loaded at run time with purego (no cgo; the
//     binary builds with CGO_ENABLED=0), through the Fortran sgemm_ entry
//     point, with sgemv_ and sger_ for one-row, one-column and rank-one
//     products. The library runs single-threaded; GEMMs above about 4 MFLOP
//     are split by rows or columns over the backend's worker goroutines,
//     which measured as fast as OpenBLAS's own threads on the DLRM shapes,
//     faster on small ones, and does not leave library threads spinning
//     beside the Go scheduler. Arguments travel in a pooled block, so a
//     call allocates nothing.
//   - "gonum": gonum's pure-Go Sgemm.
//   - "auto" (the default): OpenBLAS when it loads, otherwise gonum; the
//     reason is kept in CPU.Fallback (wrapping ErrBLASUnavailable) for the
//     caller to print once.
//   - "ref": the reference triple loop, for checking.
//
// With "openblas" or "gonum" on an AVX2 CPU, GEMMs with a short batch side
// (up to 512 rows for the forward and input gradient, 256 for the weight
// gradient) run on this package's own kernels instead (gemm_small.go):
// OpenBLAS called from two threads of one process at once, as the trainer's
// lanes call it, scales poorly.
//
// The other CPU kernels are Go loops split over a small pool of worker
// goroutines (Options.Threads, the calling goroutine included). On amd64
// CPUs with AVX2 and FMA (detected at run time; the purego build tag turns
// them off), assembly kernels (simd_amd64.s) run the interaction for
// dimensions that are multiples of 8 (the Gram triangle four dot products
// at a time, its gradient S·T without forming S), bias+ReLU, the fused ReLU
// backward and bias gradient, and the summed SGD step. Each has a pure-Go
// twin that simd_test.go and the conformance suites compare it with.
// A CPU backend is a Splitter: Lanes gives backends on shares of its
// threads, for callers that run independent work at once. The embedding
// kernels prefetch the rows of bags a few samples ahead, and large buffers
// are advised onto transparent huge pages, since random rows miss the
// caches and the TLB. Results do not depend on goroutine scheduling: each
// output element is computed by one goroutine in a fixed order, and
// reductions use fixed chunks added in order.
//
// # Packing and sharding (PICASSO §III-B)
//
// A PackedTable holds all tables of one embedding dimension in one buffer
// (D-packing), so one call looks up or updates every table of that
// dimension; PackedTable.Table gives a one-table view for running the
// kernels per table instead (the packing ablation), with the same results.
// The work of a call is split into shards, one goroutine task
// each; PlanShards follows PICASSO's CalcVParam (seeds/000 Eq. 1) and splits
// a table whose estimated parameter volume is well above the mean into
// even shards: by sample range for lookups and by ID residue for updates,
// so update shards never write the same row.
//
// # Errors
//
// Shapes that do not fit the buffers are programmer errors and panic with a
// "compute: Kernel: ..." message. Bad data (an embedding ID outside its
// table, malformed bag offsets) is returned as an error wrapping
// ErrIDOutOfRange or ErrBadOffsets and naming the table and sample; a failed
// update changes nothing.
//
// # Testing
//
// Package computetest holds one conformance suite per kernel contract; each
// backend's tests call them (the CPU backend in every BLAS configuration,
// the emulated device, and a GPU backend). They move their data through
// the backend's own copies, compare against Reference on odd shapes with
// guard values around every output, and check gradients against finite
// differences.
package compute
