//go:build !amd64 || purego

package compute

// hasAVX2 is false: this build has no assembly kernels, and the functions
// below are never called.
const hasAVX2 = false

func biasReLUAVX2(*float32, int, int, *float32)                  { panic("compute: no AVX2 kernels") }
func reluBackwardSumAVX2(*float32, *float32, int, int, *float32) { panic("compute: no AVX2 kernels") }
func sgdSum2AVX2(*float32, *float32, *float32, int, float32)     { panic("compute: no AVX2 kernels") }
func interactTriAVX2(*float32, *float32, int, int)               { panic("compute: no AVX2 kernels") }
func interactGradAVX2(*float32, *float32, *float32, *float32, int, int) {
	panic("compute: no AVX2 kernels")
}

func dotNT3x4(int, *float32, int, *float32, int, *float32, int) { panic("compute: no AVX2 kernels") }
func bcast6x16(int, *float32, int, int, *float32, int, *float32, int, float32, float32) {
	panic("compute: no AVX2 kernels")
}
