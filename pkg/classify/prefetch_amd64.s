//go:build !purego

#include "textflag.h"

// func prefetch(p *byte, lines int)
// Hints the cache to fetch lines 64-byte lines from p on (PREFETCHT0).
TEXT ·prefetch(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ lines+8(FP), CX

loop:
	PREFETCHT0 (AX)
	ADDQ       $64, AX
	DECQ       CX
	JG         loop
	RET
