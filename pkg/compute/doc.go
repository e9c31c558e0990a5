// Package compute provides the kernels the DLRM trainer runs, behind the
// Backend interface, with a pure-Go reference implementation of each and a
// fast CPU implementation.
//
// Everything is float32 and row-major. The kernels are:
//
//   - Gemm: C = alpha·op(A)·op(B) + beta·C for the linear layers.
//   - BiasAct, ReLUBackward, BiasGrad: bias and ReLU forward, the ReLU mask
//     of the gradient and the bias gradient (column sums).
//   - InteractForward, InteractBackward: DLRM's dot interaction (x followed
//     by the strictly lower triangle of [x; e1..ef]·[x; e1..ef]ᵀ, as
//     facebookresearch/dlrm's "dot" interaction without self pairs).
//   - BCEWithLogits: mean binary cross-entropy from logits, numerically
//     stable, with dLoss/dlogit.
//   - EmbeddingBagForward, EmbeddingBagUpdate: sum-pooled lookups and sparse
//     SGD or row-wise Adagrad updates over a PackedTable, with duplicate IDs
//     merged in batch order and the updated rows recorded in a RowSet so a
//     later host/device sync copies only those.
//   - SGD, Adagrad: dense optimizer steps.
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
// backward and bias gradient, and the summed SGD step; BiasReLU,
// ReLUBackwardBiasGrad and SumSGD export the last three for the trainer's
// host epilogues. Each has a pure-Go twin that simd_test.go and the
// conformance suites compare it with. The embedding kernels prefetch the
// rows of bags a few samples ahead, and large packed tables are advised
// onto transparent huge pages, since random rows miss the caches and the
// TLB. Their
// results do not depend on goroutine scheduling: each output element is
// computed by one goroutine in a fixed order, and reductions use fixed
// chunks added in order.
//
// # Packing and sharding (PICASSO §III-B)
//
// A PackedTable holds all tables of one embedding dimension in one slice
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
// backend's tests call them. They compare against Reference on odd shapes
// with guard values around every output, and check gradients against
// finite differences.
package compute
