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

// func prefetchRow(p *float32, lines int)
// Hints the cache to fetch lines 64-byte lines from p on (PREFETCHT0).
TEXT ·prefetchRow(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ lines+8(FP), CX

pfLoop:
	PREFETCHT0 (AX)
	ADDQ       $64, AX
	DECQ       CX
	JG         pfLoop
	RET
