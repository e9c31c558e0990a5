//go:build !purego

package compute

// hasAVX2 reports whether the AVX2 and FMA kernels of simd_amd64.s may run:
// the CPU has AVX2 and FMA and the OS saves the YMM registers.
var hasAVX2 = detectAVX2()

func detectAVX2() bool {
	maxID, _, _, _ := cpuid(0, 0)
	if maxID < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const fma, osxsave, avx = 1 << 12, 1 << 27, 1 << 28
	if ecx1&(fma|osxsave|avx) != fma|osxsave|avx {
		return false
	}
	if xcr0, _ := xgetbv(); xcr0&6 != 6 { // XMM and YMM state enabled
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<5) != 0
}

func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)

func xgetbv() (eax, edx uint32)

//go:noescape
func biasReLUAVX2(out *float32, n, w int, bias *float32)

//go:noescape
func reluBackwardSumAVX2(grad, act *float32, n, w int, sum *float32)

//go:noescape
func sgdSum2AVX2(w, g0, g1 *float32, n int, lr float32)

//go:noescape
func interactTriAVX2(out, t *float32, m, d int)

//go:noescape
func interactGradAVX2(dx, demb, t, tri *float32, m, d int)

//go:noescape
func dotNT3x4(k int, x *float32, ldx int, w *float32, ldw int, y *float32, ldy int)

//go:noescape
func bcast6x16(k int, a *float32, rs, ps int, b *float32, ldb int, c *float32, ldc int, alpha, beta float32)
