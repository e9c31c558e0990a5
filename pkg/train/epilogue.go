package train

import (
	"github.com/picasso-ctr/picasso/pkg/compute"
)

// Layer epilogues for backends that compute in host memory, written
// without data-dependent branches. The backend's BiasAct and ReLUBackward
// branch on the sign of every value; with activations of random sign the
// branch mispredicts half the time, which made them about a tenth of the
// CPU time of a DLRM step at batch 1024 (BenchmarkEpilogue, 1024×512 values
// on one core: 3.7 ms against 1.2 ms for bias+ReLU, 3.8 against 1.3 for
// ReLU backward with the bias gradient). They now run compute's host
// kernels (compute.BiasReLU, compute.ReLUBackwardBiasGrad), AVX2 where the
// CPU has it, which fuse the two passes and are several times faster still.
// These give the same results bit for bit (tested against compute.Reference)
// for finite values; a NaN activation, which stops training anyway, may
// come out differently.

// hostEpilogues reports whether be computes on host slices, so that the
// trainer may run its own epilogues on them.
func hostEpilogues(be compute.Backend) bool {
	_, ok := be.(*compute.CPU)
	return ok
}

// biasReLU adds bias to every row of the n×w matrix out and applies
// max(0, x).
func biasReLU(out []float32, n, w int, bias []float32) {
	compute.BiasReLU(out, n, w, bias)
}

// reluBackwardBiasGrad zeroes g (n×w) wherever act <= 0, as the gradient of
// a ReLU whose output is act, and writes the column sums of the result into
// db (summed in row order, as the backend's BiasGrad does) or, when add is
// set, adds them to db. tmp holds w values of scratch.
func reluBackwardBiasGrad(g, act []float32, n, w int, db, tmp []float32, add bool) {
	sum := db[:w]
	if add {
		sum = tmp[:w]
	}
	compute.ReLUBackwardBiasGrad(g[:n*w], act[:n*w], n, w, sum)
	if add {
		for j, v := range sum {
			db[j] += v
		}
	}
}
