package train

import (
	"math"

	"github.com/picasso-ctr/picasso/pkg/compute"
)

// Layer epilogues for backends that compute in host memory, written
// without data-dependent branches. The backend's BiasAct and ReLUBackward
// branch on the sign of every value; with activations of random sign the
// branch mispredicts half the time, which made them about a tenth of the
// CPU time of a DLRM step at batch 1024 (BenchmarkEpilogue, 1024×512 values
// on one core: 3.7 ms against 1.2 ms for bias+ReLU, 3.8 against 1.3 for
// ReLU backward with the bias gradient). These give the same results bit for bit
// (tested against compute.Reference) for finite values; a NaN activation,
// which stops training anyway, may come out differently.

// hostEpilogues reports whether be computes on host slices, so that the
// trainer may run its own epilogues on them.
func hostEpilogues(be compute.Backend) bool {
	_, ok := be.(*compute.CPU)
	return ok
}

// biasReLU adds bias to every row of the n×w matrix out and applies
// max(0, x).
func biasReLU(out []float32, n, w int, bias []float32) {
	bias = bias[:w]
	for i := range n {
		row := out[i*w : i*w+w]
		row = row[:len(bias)]
		for j, b := range bias {
			u := math.Float32bits(row[j] + b)
			row[j] = math.Float32frombits(u &^ uint32(int32(u)>>31))
		}
	}
}

// positive returns all ones when the float32 with bits u is greater than
// zero and 0 otherwise (for -0, +0 and negatives): with x = int32(u), x > 0
// exactly when -x and ^x are both negative.
func positive(u uint32) uint32 {
	x := int32(u)
	return uint32(((-x) & ^x) >> 31)
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
	clear(sum)
	for i := range n {
		row := g[i*w : i*w+w]
		a := act[i*w : i*w+w]
		a, s := a[:len(row)], sum[:len(row)]
		for j, v := range row {
			v = math.Float32frombits(math.Float32bits(v) & positive(math.Float32bits(a[j])))
			row[j] = v
			s[j] += v
		}
	}
	if add {
		for j, v := range sum {
			db[j] += v
		}
	}
}
