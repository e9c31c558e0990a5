//go:build !purego

#include "textflag.h"

// AVX2+FMA kernels for the CPU backend's host-memory loops. Every kernel has
// a pure-Go twin (simd.go) that tests compare it with; the callers check
// hasAVX2 and the width conditions stated on each kernel.

// func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL eaxArg+0(FP), AX
	MOVL ecxArg+4(FP), CX
	CPUID
	MOVL AX, eax+8(FP)
	MOVL BX, ebx+12(FP)
	MOVL CX, ecx+16(FP)
	MOVL DX, edx+20(FP)
	RET

// func xgetbv() (eax, edx uint32)
TEXT ·xgetbv(SB), NOSPLIT, $0-8
	MOVL $0, CX
	XGETBV
	MOVL AX, eax+0(FP)
	MOVL DX, edx+4(FP)
	RET

// func biasReLUAVX2(out *float32, n, w int, bias *float32)
// out[i][j] = max(out[i][j]+bias[j], 0) for an n×w matrix; w%8 == 0, w > 0.
TEXT ·biasReLUAVX2(SB), NOSPLIT, $0-32
	MOVQ out+0(FP), DI
	MOVQ n+8(FP), CX
	MOVQ w+16(FP), BX
	MOVQ bias+24(FP), SI
	SHLQ $2, BX
	VXORPS Y15, Y15, Y15
	TESTQ CX, CX
	JZ   brDone

brRow:
	XORQ AX, AX

brCol:
	VMOVUPS (DI)(AX*1), Y0
	VADDPS  (SI)(AX*1), Y0, Y0
	VMAXPS  Y15, Y0, Y0
	VMOVUPS Y0, (DI)(AX*1)
	ADDQ    $32, AX
	CMPQ    AX, BX
	JLT     brCol
	ADDQ    BX, DI
	DECQ    CX
	JNZ     brRow

brDone:
	VZEROUPPER
	RET

// func reluBackwardSumAVX2(grad, act *float32, n, w int, sum *float32)
// g[i][j] = 0 where !(act[i][j] > 0); then sum[j] += g[i][j], row by row;
// w%8 == 0, w > 0.
TEXT ·reluBackwardSumAVX2(SB), NOSPLIT, $0-40
	MOVQ grad+0(FP), DI
	MOVQ act+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ w+24(FP), BX
	MOVQ sum+32(FP), R8
	SHLQ $2, BX
	VXORPS Y15, Y15, Y15
	TESTQ CX, CX
	JZ   rbDone

rbRow:
	XORQ AX, AX

rbCol:
	VMOVUPS (SI)(AX*1), Y1
	VCMPPS  $0x1e, Y15, Y1, Y1 // act > 0 (ordered, quiet)
	VANDPS  (DI)(AX*1), Y1, Y0
	VMOVUPS Y0, (DI)(AX*1)
	VADDPS  (R8)(AX*1), Y0, Y0
	VMOVUPS Y0, (R8)(AX*1)
	ADDQ    $32, AX
	CMPQ    AX, BX
	JLT     rbCol
	ADDQ    BX, DI
	ADDQ    BX, SI
	DECQ    CX
	JNZ     rbRow

rbDone:
	VZEROUPPER
	RET

// func sgdSum2AVX2(w, g0, g1 *float32, n int, lr float32)
// g0[i] += g1[i]; w[i] -= lr*g0[i] (a multiply then a subtraction, not
// fused); n%8 == 0.
TEXT ·sgdSum2AVX2(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), DI
	MOVQ g0+8(FP), SI
	MOVQ g1+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSS lr+32(FP), Y15
	SHLQ $2, CX
	XORQ AX, AX
	TESTQ CX, CX
	JZ   sgDone

sgLoop:
	VMOVUPS (SI)(AX*1), Y0
	VADDPS  (DX)(AX*1), Y0, Y0
	VMOVUPS Y0, (SI)(AX*1)
	VMULPS  Y15, Y0, Y0
	VMOVUPS (DI)(AX*1), Y1
	VSUBPS  Y0, Y1, Y1
	VMOVUPS Y1, (DI)(AX*1)
	ADDQ    $32, AX
	CMPQ    AX, CX
	JLT     sgLoop

sgDone:
	VZEROUPPER
	RET

// func interactTriAVX2(out, t *float32, m, d int)
// For i in 1..m-1 and j in 0..i-1, in that order, writes dot(t_i, t_j) to
// consecutive floats of out, where t_i is row i of the m×d matrix t.
// d%8 == 0, d > 0, m >= 1; t must be readable for m+2 rows (the last group
// of a row is computed four rows at a time and only the needed dots are
// stored).
TEXT ·interactTriAVX2(SB), NOSPLIT, $0-32
	MOVQ out+0(FP), DI
	MOVQ t+8(FP), SI
	MOVQ m+16(FP), R8
	MOVQ d+24(FP), DX
	SHLQ $2, DX              // row bytes
	MOVQ $1, R9              // i
	MOVQ SI, R10
	ADDQ DX, R10             // t_i

itRow:
	CMPQ R9, R8
	JGE  itDone
	MOVQ R9, R11             // dots left in row i
	MOVQ SI, R12             // t_j

itGroup:
	TESTQ R11, R11
	JZ    itNext
	LEAQ  (R12)(DX*1), R13
	LEAQ  (R12)(DX*2), R14
	LEAQ  (R13)(DX*2), BX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ  AX, AX

itK:
	VMOVUPS     (R10)(AX*1), Y4
	VFMADD231PS (R12)(AX*1), Y4, Y0
	VFMADD231PS (R13)(AX*1), Y4, Y1
	VFMADD231PS (R14)(AX*1), Y4, Y2
	VFMADD231PS (BX)(AX*1), Y4, Y3
	ADDQ        $32, AX
	CMPQ        AX, DX
	JLT         itK

	VHADDPS      Y1, Y0, Y0
	VHADDPS      Y3, Y2, Y2
	VHADDPS      Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0

	CMPQ R11, $4
	JLT  itTail
	VMOVUPS X0, (DI)
	ADDQ    $16, DI
	SUBQ    $4, R11
	LEAQ    (BX)(DX*1), R12
	JMP     itGroup

itTail:
	CMPQ R11, $2
	JLT  itOne
	JEQ  itTwo
	VMOVLPS    X0, (DI)
	VEXTRACTPS $2, X0, 8(DI)
	ADDQ       $12, DI
	JMP        itNext

itTwo:
	VMOVLPS X0, (DI)
	ADDQ    $8, DI
	JMP     itNext

itOne:
	VMOVSS X0, (DI)
	ADDQ   $4, DI

itNext:
	INCQ R9
	ADDQ DX, R10
	JMP  itRow

itDone:
	VZEROUPPER
	RET

// func interactGradAVX2(dx, demb, t, tri *float32, m, d int)
// With S the symmetric m×m matrix with zero diagonal whose strictly lower
// triangle, row by row, is g, and t an m×d matrix, writes row 0 of S·t to
// dx and rows 1..m-1 to consecutive rows of demb. Row i sums the terms j < i
// (g contiguous), then j > i (g at j(j-1)/2+i), in increasing j, in two
// interleaved partial sums. d%8 == 0, d > 0, m >= 1.
TEXT ·interactGradAVX2(SB), NOSPLIT, $0-48
	MOVQ dx+0(FP), DI
	MOVQ t+16(FP), SI
	MOVQ tri+24(FP), R8
	MOVQ m+32(FP), R9
	MOVQ d+40(FP), DX
	SHLQ $2, DX          // row bytes
	XORQ R10, R10        // i
	MOVQ R8, R11         // &g[i(i-1)/2]: the first lower term of row i

igRow:
	CMPQ R10, R9
	JGE  igDone
	XORQ AX, AX          // column byte offset

igCol:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

	// Lower part: j = 0..i-1, g[i(i-1)/2 + j], t_j.
	MOVQ R11, R12        // g pointer
	MOVQ SI, R13         // t_j
	MOVQ R10, CX         // terms left
	ADDQ AX, R13

igLow2:
	CMPQ CX, $2
	JLT  igLow1
	VBROADCASTSS (R12), Y2
	VFMADD231PS  (R13), Y2, Y0
	VBROADCASTSS 4(R12), Y3
	VFMADD231PS  (R13)(DX*1), Y3, Y1
	ADDQ         $8, R12
	LEAQ         (R13)(DX*2), R13
	SUBQ         $2, CX
	JMP          igLow2

igLow1:
	TESTQ CX, CX
	JZ    igUp
	VBROADCASTSS (R12), Y2
	VFMADD231PS  (R13), Y2, Y0
	ADDQ         DX, R13

igUp:
	// Upper part: j = i+1..m-1, g[j(j-1)/2 + i], t_j. R13 is t_{i}+col;
	// skip row i itself.
	ADDQ DX, R13
	MOVQ R10, BX
	INCQ BX              // j
	MOVQ BX, R14
	IMULQ R10, R14
	SHRQ $1, R14
	ADDQ R10, R14        // j(j-1)/2 + i with j = i+1: (i+1)i/2 + i
	LEAQ (R8)(R14*4), R12

igUp2:
	MOVQ BX, CX
	INCQ CX
	CMPQ CX, R9
	JGE  igUp1
	VBROADCASTSS (R12), Y2
	VFMADD231PS  (R13), Y2, Y0
	LEAQ         (R12)(BX*4), R12 // next j: offset grows by j
	VBROADCASTSS (R12), Y3
	VFMADD231PS  (R13)(DX*1), Y3, Y1
	LEAQ         (R12)(CX*4), R12
	LEAQ         (R13)(DX*2), R13
	ADDQ         $2, BX
	JMP          igUp2

igUp1:
	CMPQ BX, R9
	JGE  igStore
	VBROADCASTSS (R12), Y2
	VFMADD231PS  (R13), Y2, Y0

igStore:
	VADDPS  Y1, Y0, Y0
	VMOVUPS Y0, (DI)(AX*1)
	ADDQ    $32, AX
	CMPQ    AX, DX
	JLT     igCol

	// Next row: output row i+1 is demb's next row (row 0 was dx).
	TESTQ R10, R10
	JNZ   igAdv
	MOVQ  demb+8(FP), DI
	JMP   igAdvG

igAdv:
	ADDQ DX, DI

igAdvG:
	LEAQ (R11)(R10*4), R11 // g offset of row i+1: i(i-1)/2 + i
	INCQ R10
	JMP  igRow

igDone:
	VZEROUPPER
	RET

// tailMask<>: eight all-ones lanes and eight zero lanes; the eight lanes from
// tailMask<>+32-4·t on are a mask of the first t lanes, for t in [0, 8].
DATA tailMask<>+0(SB)/8, $0xffffffffffffffff
DATA tailMask<>+8(SB)/8, $0xffffffffffffffff
DATA tailMask<>+16(SB)/8, $0xffffffffffffffff
DATA tailMask<>+24(SB)/8, $0xffffffffffffffff
DATA tailMask<>+32(SB)/8, $0
DATA tailMask<>+40(SB)/8, $0
DATA tailMask<>+48(SB)/8, $0
DATA tailMask<>+56(SB)/8, $0
GLOBL tailMask<>(SB), RODATA|NOPTR, $64

// ZERO_ACC12 clears the twelve accumulators Y0-Y11 of the GEMM kernels.
#define ZERO_ACC12 \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7; \
	VXORPS Y8, Y8, Y8; \
	VXORPS Y9, Y9, Y9; \
	VXORPS Y10, Y10, Y10; \
	VXORPS Y11, Y11, Y11

// func dotNT3x4(k int, x *float32, ldx int, w *float32, ldw int, y *float32, ldy int)
// y[r·ldy+o] = Σ_p x[r·ldx+p]·w[o·ldw+p] for r < 3, o < 4 and p < k (k >= 1):
// a 3×4 block of X·Wᵀ with both operands read along k, so that neither is
// packed. The k%8 last columns are summed first, with masked loads that read
// no memory past them; then eight columns at a time, each of the 12 dot
// products in its own register, which are reduced at the end.
TEXT ·dotNT3x4(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ ldx+16(FP), DX
	MOVQ w+24(FP), DI
	MOVQ ldw+32(FP), R8
	MOVQ y+40(FP), R10
	MOVQ ldy+48(FP), R11
	SHLQ $2, DX
	SHLQ $2, R8
	SHLQ $2, R11
	LEAQ (R8)(R8*2), R9

	MOVQ CX, BX
	ANDQ $7, BX
	SHRQ $3, CX
	TESTQ BX, BX
	JNZ  dnTail
	ZERO_ACC12
	JMP  dnMain

dnTail:
	LEAQ tailMask<>+32(SB), AX
	SHLQ $2, BX
	SUBQ BX, AX
	VMOVDQU (AX), Y15
	MOVQ CX, BX
	SHLQ $5, BX
	LEAQ (SI)(BX*1), AX
	ADDQ DI, BX
	VMASKMOVPS (AX), Y15, Y12
	VMASKMOVPS (AX)(DX*1), Y15, Y13
	VMASKMOVPS (AX)(DX*2), Y15, Y14
	VMASKMOVPS (BX), Y15, Y11
	VMULPS     Y11, Y12, Y0
	VMULPS     Y11, Y13, Y4
	VMULPS     Y11, Y14, Y8
	VMASKMOVPS (BX)(R8*1), Y15, Y11
	VMULPS     Y11, Y12, Y1
	VMULPS     Y11, Y13, Y5
	VMULPS     Y11, Y14, Y9
	VMASKMOVPS (BX)(R8*2), Y15, Y11
	VMULPS     Y11, Y12, Y2
	VMULPS     Y11, Y13, Y6
	VMULPS     Y11, Y14, Y10
	VMASKMOVPS (BX)(R9*1), Y15, Y11
	VMULPS     Y11, Y12, Y3
	VMULPS     Y11, Y13, Y7
	VMULPS     Y11, Y14, Y11

dnMain:
	TESTQ CX, CX
	JZ    dnReduce

dnLoop:
	VMOVUPS     (SI), Y12
	VMOVUPS     (SI)(DX*1), Y13
	VMOVUPS     (SI)(DX*2), Y14
	VMOVUPS     (DI), Y15
	VFMADD231PS Y15, Y12, Y0
	VFMADD231PS Y15, Y13, Y4
	VFMADD231PS Y15, Y14, Y8
	VMOVUPS     (DI)(R8*1), Y15
	VFMADD231PS Y15, Y12, Y1
	VFMADD231PS Y15, Y13, Y5
	VFMADD231PS Y15, Y14, Y9
	VMOVUPS     (DI)(R8*2), Y15
	VFMADD231PS Y15, Y12, Y2
	VFMADD231PS Y15, Y13, Y6
	VFMADD231PS Y15, Y14, Y10
	VMOVUPS     (DI)(R9*1), Y15
	VFMADD231PS Y15, Y12, Y3
	VFMADD231PS Y15, Y13, Y7
	VFMADD231PS Y15, Y14, Y11
	ADDQ        $32, SI
	ADDQ        $32, DI
	DECQ        CX
	JNZ         dnLoop

dnReduce:
	VHADDPS      Y1, Y0, Y0
	VHADDPS      Y3, Y2, Y2
	VHADDPS      Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVUPS      X0, (R10)
	VHADDPS      Y5, Y4, Y4
	VHADDPS      Y7, Y6, Y6
	VHADDPS      Y6, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VADDPS       X5, X4, X4
	VMOVUPS      X4, (R10)(R11*1)
	VHADDPS      Y9, Y8, Y8
	VHADDPS      Y11, Y10, Y10
	VHADDPS      Y10, Y8, Y8
	VEXTRACTF128 $1, Y8, X9
	VADDPS       X9, X8, X8
	VMOVUPS      X8, (R10)(R11*2)
	VZEROUPPER
	RET

// func bcast6x16(k int, a *float32, rs, ps int, b *float32, ldb int, c *float32, ldc int, alpha, beta float32)
// acc[i][j] = Σ_p a[i·rs+p·ps]·b[p·ldb+j] for i < 6, j < 16 and p < k
// (k >= 1), then c[i·ldc+j] = alpha·acc[i][j] + beta·c[i·ldc+j]; with
// beta == 0, c is not read. A is read through its two strides, so a block
// of a row-major matrix or of its transpose needs no packing; each step
// broadcasts six of its values against one 16-wide row of B.
TEXT ·bcast6x16(SB), NOSPLIT, $0-72
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ rs+16(FP), DX
	MOVQ ps+24(FP), R9
	MOVQ b+32(FP), DI
	MOVQ ldb+40(FP), R8
	MOVQ c+48(FP), R10
	MOVQ ldc+56(FP), R11
	SHLQ $2, DX
	SHLQ $2, R9
	SHLQ $2, R8
	SHLQ $2, R11
	LEAQ (DX)(DX*2), R13
	ADDQ SI, R13
	ZERO_ACC12

bcLoop:
	VMOVUPS      (DI), Y12
	VMOVUPS      32(DI), Y13
	VBROADCASTSS (SI), Y14
	VFMADD231PS  Y12, Y14, Y0
	VFMADD231PS  Y13, Y14, Y1
	VBROADCASTSS (SI)(DX*1), Y15
	VFMADD231PS  Y12, Y15, Y2
	VFMADD231PS  Y13, Y15, Y3
	VBROADCASTSS (SI)(DX*2), Y14
	VFMADD231PS  Y12, Y14, Y4
	VFMADD231PS  Y13, Y14, Y5
	VBROADCASTSS (R13), Y15
	VFMADD231PS  Y12, Y15, Y6
	VFMADD231PS  Y13, Y15, Y7
	VBROADCASTSS (R13)(DX*1), Y14
	VFMADD231PS  Y12, Y14, Y8
	VFMADD231PS  Y13, Y14, Y9
	VBROADCASTSS (R13)(DX*2), Y15
	VFMADD231PS  Y12, Y15, Y10
	VFMADD231PS  Y13, Y15, Y11
	ADDQ         R9, SI
	ADDQ         R9, R13
	ADDQ         R8, DI
	DECQ         CX
	JNZ          bcLoop

	VBROADCASTSS alpha+64(FP), Y14
	MOVL         beta+68(FP), AX
	TESTL        $0x7fffffff, AX
	JZ           bcStore
	VBROADCASTSS beta+68(FP), Y15

#define BC_ROW_BETA(lo, hi) \
	VMULPS      (R10), Y15, Y12; \
	VFMADD231PS Y14, lo, Y12; \
	VMOVUPS     Y12, (R10); \
	VMULPS      32(R10), Y15, Y13; \
	VFMADD231PS Y14, hi, Y13; \
	VMOVUPS     Y13, 32(R10); \
	ADDQ        R11, R10

	BC_ROW_BETA(Y0, Y1)
	BC_ROW_BETA(Y2, Y3)
	BC_ROW_BETA(Y4, Y5)
	BC_ROW_BETA(Y6, Y7)
	BC_ROW_BETA(Y8, Y9)
	BC_ROW_BETA(Y10, Y11)
	VZEROUPPER
	RET

#define BC_ROW(lo, hi) \
	VMULPS  Y14, lo, lo; \
	VMOVUPS lo, (R10); \
	VMULPS  Y14, hi, hi; \
	VMOVUPS hi, 32(R10); \
	ADDQ    R11, R10

bcStore:
	BC_ROW(Y0, Y1)
	BC_ROW(Y2, Y3)
	BC_ROW(Y4, Y5)
	BC_ROW(Y6, Y7)
	BC_ROW(Y8, Y9)
	BC_ROW(Y10, Y11)
	VZEROUPPER
	RET
