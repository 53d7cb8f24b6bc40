//go:build !amd64 || race

package storerel

import "sync/atomic"

// Weak is true where Uint64 is a release store only, not a full barrier.
const Weak = false

// store64 is Uint64: here a sequentially consistent store.
func store64(p *atomic.Uint64, v uint64) { p.Store(v) }
