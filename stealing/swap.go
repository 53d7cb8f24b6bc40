package stealing

import "sync/atomic"

// TrySwapHooked tries once to exchange slots[victim] and slots[mine], where
// mine is one of the caller's own slots and victim is a slot in another
// worker's range, calling h's hooks at the moments Hooks describes (pass
// NoHooks for none). It reports whether the exchange happened. It never
// blocks, loops or retries.
func TrySwapHooked[T any, H Hooks[T]](slots []atomic.Pointer[T], victim, mine int, h H) bool {
	return trySwapOn(atomicSlots[T](slots), victim, mine, h)
}

// slotArray is the memory the swap operates on: an array of queue pointers with
// atomic load, compare-and-swap and store. atomicSlots is the real one; tests
// substitute an instrumented one to single-step the algorithm through every
// interleaving of several thieves.
type slotArray[T any] interface {
	Load(i int) *T
	CompareAndSwap(i int, old, new *T) bool
	Store(i int, v *T)
}

// atomicSlots adapts a []atomic.Pointer[T] to slotArray.
type atomicSlots[T any] []atomic.Pointer[T]

func (s atomicSlots[T]) Load(i int) *T                          { return s[i].Load() }
func (s atomicSlots[T]) CompareAndSwap(i int, old, new *T) bool { return s[i].CompareAndSwap(old, new) }
func (s atomicSlots[T]) Store(i int, v *T)                      { s[i].Store(v) }

// Hooks lets a caller act on the two queues at the only moments when neither
// is reachable through the slot array, so that per-queue bookkeeping (such as
// "which worker owns this queue now") can be updated without racing with
// other thieves: a queue can only be swapped again once it is back in a slot.
type Hooks[T any] interface {
	// Giving is called after step 2, when the thief's own slot holds nil:
	// q, the thief's queue, is about to be installed in the victim's slot.
	Giving(q *T)
	// Ungiving is called when step 3 fails, before q goes back to the thief's slot.
	Ungiving(q *T)
	// Taking is called after a successful step 3, before step 4 publishes q,
	// the victim's former queue, in the thief's slot.
	Taking(q *T)
}

// NoHooks does nothing.
type NoHooks[T any] struct{}

func (NoHooks[T]) Giving(*T)   {}
func (NoHooks[T]) Ungiving(*T) {}
func (NoHooks[T]) Taking(*T)   {}

// trySwapOn is the swap itself, on any slotArray (see TrySwapHooked).
//
// Memory ordering (with atomicSlots): every slot access is a sequentially
// consistent atomic, so whatever a hook writes before a queue is published
// into a slot is seen by any worker that later loads that slot and finds the
// queue.
func trySwapOn[T any, S slotArray[T], H Hooks[T]](slots S, victim, mine int, h H) bool {
	// Step 0: snapshot both pointers.
	myQueue := slots.Load(mine)
	vicQueue := slots.Load(victim)

	// Step 1: a nil victim slot is in the middle of another thief's swap.
	// myQueue is never nil: only this worker nils its own slots, and it is
	// not inside another swap (checked anyway, as it costs nothing).
	if vicQueue == nil || myQueue == nil {
		return false
	}

	// Step 2: claim our own slot by writing nil. Failure means another thief
	// swapped our slot since step 0 (we became a victim): nothing changed.
	if !slots.CompareAndSwap(mine, myQueue, nil) {
		return false
	}
	h.Giving(myQueue)

	// Step 3: install our queue in the victim's slot, only if it still holds
	// the queue we saw. It cannot hold nil there (step 1), so this never
	// overwrites another thief's claim. On failure restore our slot: by the
	// invariant nobody else has written it since our nil.
	if !slots.CompareAndSwap(victim, vicQueue, myQueue) {
		h.Ungiving(myQueue)
		slots.Store(mine, myQueue)
		return false
	}
	h.Taking(vicQueue)

	// Step 4: the swap can no longer fail; publish the victim's queue in our
	// slot. A plain store suffices: nobody else writes a nil slot it does not own.
	slots.Store(mine, vicQueue)
	return true
}
