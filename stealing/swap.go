package stealing

import "sync/atomic"

// TrySwap tries once to exchange slots[victim] and slots[mine], where mine is
// one of the caller's own slots and victim is a slot in another worker's range.
// It reports whether the exchange happened. It never blocks, loops or retries.
func TrySwap[T any](slots []atomic.Pointer[T], victim, mine int) bool {
	return TrySwapHooked(slots, victim, mine, NoHooks[T]{})
}

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

// TrySwapHooked is TrySwap with hooks (see Hooks).
//
// Memory ordering: every slot access is a sequentially consistent atomic, so
// whatever a hook writes before a queue is published into a slot is seen by
// any worker that later loads that slot and finds the queue.
func TrySwapHooked[T any, H Hooks[T]](slots []atomic.Pointer[T], victim, mine int, h H) bool {
	// Step 0: snapshot both pointers.
	myQueue := slots[mine].Load()
	vicQueue := slots[victim].Load()

	// Step 1: a nil victim slot is in the middle of another thief's swap.
	// myQueue is never nil: only this worker nils its own slots, and it is
	// not inside another swap (checked anyway, as it costs nothing).
	if vicQueue == nil || myQueue == nil {
		return false
	}

	// Step 2: claim our own slot by writing nil. Failure means another thief
	// swapped our slot since step 0 (we became a victim): nothing changed.
	if !slots[mine].CompareAndSwap(myQueue, nil) {
		return false
	}
	h.Giving(myQueue)

	// Step 3: install our queue in the victim's slot, only if it still holds
	// the queue we saw. It cannot hold nil there (step 1), so this never
	// overwrites another thief's claim. On failure restore our slot: by the
	// invariant nobody else has written it since our nil.
	if !slots[victim].CompareAndSwap(vicQueue, myQueue) {
		h.Ungiving(myQueue)
		slots[mine].Store(myQueue)
		return false
	}
	h.Taking(vicQueue)

	// Step 4: the swap can no longer fail; publish the victim's queue in our
	// slot. A plain store suffices: nobody else writes a nil slot it does not own.
	slots[mine].Store(vicQueue)
	return true
}
