//go:build !purego

#include "textflag.h"

// group compares the 16 values at off(SI) with zero and ORs their
// "is zero" bits, shifted left by shift, into R8: four 4-value compares,
// packed (signed saturation keeps all-ones and zero) to 16 bytes whose
// sign bits PMOVMSKB gathers.
#define group(off, shift) \
	MOVOU    off(SI), X0;    \
	MOVOU    off+16(SI), X1; \
	MOVOU    off+32(SI), X2; \
	MOVOU    off+48(SI), X3; \
	PCMPEQL  X7, X0;         \
	PCMPEQL  X7, X1;         \
	PCMPEQL  X7, X2;         \
	PCMPEQL  X7, X3;         \
	PACKSSLW X1, X0;         \
	PACKSSLW X3, X2;         \
	PACKSSWB X2, X0;         \
	PMOVMSKB X0, AX;         \
	SHLQ     $shift, AX;     \
	ORQ      AX, R8

// func masksSSE2(dst *uint64, src *uint32, blocks int)
TEXT ·masksSSE2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ blocks+16(FP), CX
	PXOR X7, X7

loop:
	XORQ R8, R8
	group(0, 0)
	group(64, 16)
	group(128, 32)
	group(192, 48)
	NOTQ R8
	MOVQ R8, (DI)
	ADDQ $256, SI
	ADDQ $8, DI
	DECQ CX
	JNZ  loop
	RET
