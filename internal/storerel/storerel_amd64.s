//go:build amd64 && !race

#include "textflag.h"

// func mov64(p *uint64, v uint64)
TEXT ·mov64(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, (AX)
	RET
