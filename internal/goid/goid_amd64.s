#include "textflag.h"

// func getg() uintptr
// The runtime keeps the current g at offset 0 of the thread-local block; the
// assembler's TLS pseudo-register addresses it (as runtime/go_tls.h does).
TEXT ·getg(SB),NOSPLIT,$0-8
	MOVQ	(TLS), AX
	MOVQ	AX, ret+0(FP)
	RET
