// Package cuda is picasso's CUDA backend: compute.Backend on an NVIDIA GPU,
// with no cgo. The CUDA driver API (libcuda.so.1), NVRTC and cuBLAS are
// bound when the program runs, with github.com/ebitengine/purego, so the
// binary stays static (CGO_ENABLED=0) and uses a GPU when it finds one; a
// missing library or symbol is an error value naming it (ErrNoDevice,
// ErrLibrary), never a crash, and failed calls carry CUDA's own names
// (CUDA_ERROR_OUT_OF_MEMORY). The cgo bindings gorgonia.org/cu would need
// cuda.h and the CUDA libraries at build time, and call the 3-argument
// cuCtxCreate and device-number cuMemAdvise that CUDA 13's headers changed.
//
// # Kernels
//
// The kernels are CUDA C in kernels/: the packed embedding-bag lookup (all
// tables of one dimension in one launch), the sparse SGD and row-wise
// Adagrad update, the dot interaction forward and backward, bias and ReLU,
// the fused ReLU backward and bias gradient, the loss and its gradient,
// the dense optimizer step, strided copies, and row gathers and scatters
// for the hot-row sync. GEMMs go to cuBLAS (float32; TF32 tensor cores
// only when Options.TF32 asks). Every kernel is a grid-stride loop in which
// one thread computes whole output elements in a fixed order, with no
// floating-point atomics, so results do not depend on timing: the sparse
// update collects each row's gradients in a hash table with integer
// atomics and sums them in batch order on one thread (kernels/embedding.cu).
//
// `go generate ./pkg/cuda` (make ptx) compiles them with NVRTC into PTX for
// compute_80 and CUBINs for sm_80 and sm_90, committed and embedded, so a
// machine with only the driver runs them; kernels/build.json records the
// sources' hash, and the tests fail when the sources changed since, and,
// where NVRTC is installed (make deps), compile every kernel again. Open
// loads the CUBIN of the device's architecture, else compiles one with
// NVRTC when present (cached under the user's cache directory, keyed by
// source, architecture and NVRTC version), else the PTX.
//
// # Tests without a GPU
//
// The same kernel sources also build as C++ (g++ with kernels/emu.h), each
// kernel becoming a function that runs the threads of its launch one after
// another; the tests load that with purego and run the compute conformance
// suites and the trainer's modes on the backend over it. That checks the
// backend's launches, argument blocks and error reporting, and the
// kernels' logic, on machines without a GPU; what only a GPU shows (the
// driver, cuBLAS, timing) is checked by `make gpu-check` on one.
package cuda
