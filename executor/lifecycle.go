package executor

// An actor's life: the cell state word (the phase of the actor's current
// incarnation) and its transitions.

// Cell state word: the low 3 bits are the lifecycle state (the kind), bits 3
// and 4 flags whose meaning depends on the kind, and the upper 27 bits the
// incarnation, advanced by every Spawn. Transitions, per incarnation:
// new or dead -> spawning (Spawn's CAS, with the next incarnation) -> alive
// (Spawn's store) -> ending (the worker that terminates it, while the
// Stopped and Destroy hooks run) -> dead (before the Release hook, which
// hands the object to whoever may spawn it again). An alive cell whose
// executor has shut down counts as dead too (see Cell.Alive and Spawn).
//
// While alive, cellPlain is set when the incarnation has no extension (no
// supervision, bounded mailbox, lifecycle hook or watcher; see
// supervise.go). Senders stamp envelopes with the canonical alive word (the
// incarnation, alive, plain), so a delivery to a plain actor is one
// comparison, and a delivery to an extended one (plain clear) fails it and
// takes the slow path, which accepts the word with plain set back. Watch
// clears plain with a CAS while the actor lives; the terminating worker
// leaves the plain word by a CAS, so it learns whether a watcher came in.
// While ending or dead, bits 3-4 hold the reason of the termination
// (reasonNormal, reasonPanic, reasonBudget), or, while a plain actor's
// Destroy hook runs, cellEndingPlain, which a Watch clears the same way
// (see watch).
const (
	cellNew uint32 = iota
	cellSpawning
	cellAlive
	cellEnding
	cellDead

	cellKindMask    = 7
	cellPlain       = 8  // alive: no extension
	cellReasonShift = 3  // ending, dead: the reason, bits 3-4
	cellReasonMask  = 24 // ending, dead: the reason
	cellIncarnOne   = 32 // one incarnation, in the state word
)

// incOf returns the incarnation bits of a state word.
func incOf(st uint32) uint32 { return st &^ (cellIncarnOne - 1) }

// cellEndingPlain, in the reason bits of an ending word, marks a plain
// incarnation whose Destroy hook runs (terminate) and that no watch has
// extended yet (see watch); no reason has this value, and the dead word
// that follows holds reasonNormal.
const cellEndingPlain = cellReasonMask

// Reasons as stored in the state word's bits 3-4 (see cellReasonMask).
const (
	reasonNormal uint32 = 0
	reasonPanic  uint32 = 1
	reasonBudget uint32 = 2
)

func reasonOf(bits uint32) Reason {
	switch bits {
	case reasonPanic:
		return ReasonPanic
	case reasonBudget:
		return ReasonBudget
	}
	return ReasonNormal
}
