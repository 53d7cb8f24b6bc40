package executor

import (
	"strconv"
	"sync/atomic"
	"unsafe"
)

// Allocation is what a behaviour tells the executor to do with its actor (by
// returning it) or with its message (by setting it on the message) after the
// behaviour returns.
type Allocation uint8

const (
	// Nodelete: nothing; the actor keeps receiving, the message may be reused.
	Nodelete Allocation = iota
	// Delete: terminate and give the storage back. The executor runs the
	// object's Destroy hook (Destroyer) if it has one, then its Release hook
	// (Releaser) if it has one, typically returning it to a sync.Pool; without
	// a Release hook the executor simply drops its references and the garbage
	// collector reclaims the object.
	Delete
	// Destroy: terminate and run the Destroy hook, but keep the storage: the
	// object may be re-initialised and spawned (or sent) again.
	Destroy
	// Finished: terminate without any hook. For actors and messages whose
	// lifetime the program manages itself (globals, stack-like reuse).
	Finished
)

func (a Allocation) String() string {
	switch a {
	case Nodelete:
		return "Nodelete"
	case Delete:
		return "Delete"
	case Destroy:
		return "Destroy"
	case Finished:
		return "Finished"
	}
	return "Allocation(" + strconv.Itoa(int(a)) + ")"
}

// Destroyer is the optional Destroy hook of an actor or a message, run by the
// executor for the Delete and Destroy allocation statuses.
type Destroyer interface{ Destroy() }

// Releaser is the optional Release hook of an actor or a message, run by the
// executor after Destroy for the Delete status: it returns the storage, for
// example to a sync.Pool.
type Releaser interface{ Release() }

// Cell state word: the low 3 bits are the lifecycle state, the upper 29 bits
// the incarnation, advanced by every Spawn. Transitions, per incarnation:
// new or dead -> spawning (Spawn's CAS, with the next incarnation) -> alive
// (Spawn's store) -> ending (the worker that terminates it, while the
// Destroy hook runs) -> dead (before the Release hook, which may return the
// object to a pool from where it is spawned again).
const (
	cellNew uint32 = iota
	cellSpawning
	cellAlive
	cellEnding
	cellDead

	cellKindMask  = 7
	cellIncarnOne = 8 // one incarnation, in the state word
)

// Cell is the executor's part of an actor. The actor package embeds one in
// actor.Actor, which users embed in their actor types.
type Cell struct {
	// state is the state word above. Written by Spawn (CAS to spawning,
	// then store alive) and by the worker that terminates the actor (store
	// ending, then dead); read by every sender and by the worker before each
	// delivery. A sender stamps the word it saw (alive, incarnation i) into
	// the envelope, and delivery requires the word to be exactly that: an
	// envelope sent to an earlier incarnation is a dead letter, even if the
	// actor was spawned again since (possibly on another mailbox). The store
	// of alive publishes self and obj to the workers that deliver.
	state atomic.Uint32
	// mb and exec are the incarnation's mailbox and executor. Atomic
	// because a sender that saw an earlier incarnation alive may read them
	// while a re-spawn writes them (its envelope then carries the old
	// incarnation and is counted as a dead letter). Written by Spawn, read
	// by senders.
	mb   atomic.Pointer[mailbox]
	exec atomic.Pointer[Executor]
	self unsafe.Pointer // the user's actor, passed to behaviours
	obj  any            // the same actor as an interface, for the hooks and error reports
}

// Alive reports whether the actor has been spawned and not terminated.
func (c *Cell) Alive() bool { return c.state.Load()&cellKindMask == cellAlive }

// MsgCell is the executor's part of a message: its allocation status.
// The status is written by behaviours (SetAllocation) and by the executor
// when it applies Delete or Destroy (it resets the status to Nodelete before
// running the hooks), and read by the executor after each delivery. Like the
// message's own fields, it must not be written while the message is being
// delivered to another actor concurrently.
type MsgCell struct {
	status Allocation
}

// Set sets the allocation status applied after the current behaviour.
func (m *MsgCell) Set(a Allocation) { m.status = a }

// Get returns the allocation status.
func (m *MsgCell) Get() Allocation { return m.status }

// envelope is one queued message: everything a worker needs to deliver it.
// Envelopes live by value in copy queues, written in place by the sender (see
// set) and read in place by the worker, so a send allocates nothing once the
// queues have grown. (Building one on the stack and copying it costs more
// than the rest of a local send: the copy's wide loads of freshly written
// narrow stores defeat store-to-load forwarding.) 40 bytes: the message's
// status cell is stored as its offset inside the message, which leaves room
// for the incarnation stamp in the same word.
type envelope struct {
	cell *Cell
	fn   unsafe.Pointer // the behaviour: a func(*A, *M) Allocation, called as behaviourFunc
	msg  any            // the user's message (a pointer), for the call and the hooks
	moff uint32         // offset of the message's MsgCell inside the message
	want uint32         // the cell's state word when sent: alive, incarnation
}

// set fills an envelope in place.
func (e *envelope) set(c *Cell, fn unsafe.Pointer, msg any, moff, want uint32) {
	e.cell, e.fn, e.msg, e.moff, e.want = c, fn, msg, moff, want
}

// mcell returns the message's status cell.
func (e *envelope) mcell() *MsgCell { return (*MsgCell)(unsafe.Add(efaceData(e.msg), e.moff)) }

// behaviourFunc is the erased type under which behaviours are called. A Go
// func value is a pointer to a closure record; func(*A, *M) Allocation and
// func(unsafe.Pointer, unsafe.Pointer) Allocation have the same calling
// convention (two pointer arguments, one uint8 result), so the executor calls
// the typed behaviour through this type without any wrapper, exactly as the
// chapter's generated send casts its receive routine to receive_t. The actor
// package guarantees statically that A and M are pointer types.
type behaviourFunc = func(self, msg unsafe.Pointer) Allocation

// call runs the envelope's behaviour.
func (e *envelope) call() Allocation {
	f := *(*behaviourFunc)(unsafe.Pointer(&e.fn))
	return f(e.cell.self, efaceData(e.msg))
}

// efaceData returns the data word of an interface holding a pointer.
func efaceData(x any) unsafe.Pointer {
	return (*[2]unsafe.Pointer)(unsafe.Pointer(&x))[1]
}
