//go:build amd64 && !race

package storerel

import (
	"sync/atomic"
	"unsafe"
)

// Weak is true where Uint64 is a release store only, not a full barrier.
const Weak = true

// store64 is Uint64 (see the package comment): v is stored into *p with
// one MOV.
func store64(p *atomic.Uint64, v uint64) { mov64((*uint64)(unsafe.Pointer(p)), v) }

// mov64 stores v into *p with a plain MOVQ (storerel_amd64.s).
//
//go:noescape
func mov64(p *uint64, v uint64)
