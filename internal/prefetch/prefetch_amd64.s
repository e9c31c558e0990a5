//go:build !purego

#include "textflag.h"

// func Lines(p unsafe.Pointer, lines int)
TEXT ·Lines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ lines+8(FP), CX

loop:
	PREFETCHT0 (AX)
	ADDQ       $64, AX
	DECQ       CX
	JG         loop
	RET
