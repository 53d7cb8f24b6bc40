// Package storerel provides a store with release ordering only, for the
// unlocking store of a spin lock.
//
// sync/atomic's stores are sequentially consistent: on amd64 an
// atomic.Uint64.Store is an XCHG, a locked instruction that also orders the
// store before every later load of the same processor (a full barrier),
// and costs as much as a compare-and-swap. Releasing a spin lock needs less:
// the writes made inside the critical section must become visible no later
// than the store that opens the lock (release ordering). Uint64 gives just
// that. On amd64 built without the race detector it is a call to an
// assembly function that makes one MOV, no locked instruction: the
// compiler cannot see into the call, so it neither reorders memory
// operations across it nor removes it, and x86 processors keep stores in
// program order (x86-TSO), which is release ordering. Elsewhere,
// and under the race detector (which must see the store as a
// synchronising one), it is atomic.Uint64.Store.
//
// What the caller gives up is the full barrier: a load that follows Uint64
// in program order may be performed before the store becomes visible to
// other processors. A protocol that needs "store, then load" ordering
// between two processors (the Dekker pattern) must get it from another
// instruction: Weak says whether it has to.
//
// Readers of the word use the sequentially consistent atomic loads of
// sync/atomic, which on every platform order them before later loads
// (acquire ordering): a reader that sees the released value sees every
// write made before it.
package storerel

import "sync/atomic"

// Uint64 stores v into *p with release ordering (see the package comment).
func Uint64(p *atomic.Uint64, v uint64) { store64(p, v) }
