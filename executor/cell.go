package executor

import (
	"strconv"
	"sync/atomic"
	"unsafe"

	"github.com/actord/actord/internal/erased"
)

// Allocation is what a behaviour tells the executor to do with its actor (by
// returning it) or with its message (with Message.SetAllocation, from the behaviour
// receiving it) after the behaviour returns.
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

// Cell is the executor's part of an actor. The actor package embeds one in
// actor.Actor, which users embed in their actor types. It has no exported
// fields; the typed entry points (Spawn, Send) are the only way to use it.
type Cell struct {
	// state is the phase word of lifecycle.go, changed only by the
	// transitions there (whose table says who takes each: Spawn, Watch,
	// the terminating worker); read by every sender and by the worker
	// before each delivery. A sender stamps the word it saw (alive, incarnation i) into
	// the envelope, and delivery requires the word to be exactly that: an
	// envelope sent to an earlier incarnation is a dead letter, even if the
	// actor was spawned again since (possibly on another mailbox). The store
	// of alive publishes mb, obj and ext to senders and workers.
	state atomic.Uint32
	// mb is the incarnation's mailbox, and through it (mailbox.exec) its
	// executor. Atomic because a sender that saw an earlier incarnation
	// alive may read it while a re-spawn writes it (its envelope then
	// carries the old incarnation and is counted as a dead letter).
	// Written by Spawn, read by senders and by Alive.
	mb atomic.Pointer[mailbox]
	// obj is the spawned actor as an interface, for its hooks and for error
	// reports. Written by Spawn (before the alive store), read by the worker
	// that terminates the incarnation, which copies it before the dead store
	// and never reads the field after it (a re-spawn may write it then).
	obj any
	// ext is the incarnation's extension, or nil (see supervise.go).
	// Written by Spawn before the alive store and by Watch before the CAS
	// that clears cellPlain (each publishes it to those who then see the
	// word); read by senders and workers that saw plain clear, by Watch
	// and by the terminating worker.
	ext atomic.Pointer[cellExt]
}

// executor returns the executor of the cell's latest incarnation, nil if
// it was never spawned.
func (c *Cell) executor() *Executor {
	if mb := c.mb.Load(); mb != nil {
		return mb.exec
	}
	return nil
}

// Alive reports whether the actor has been spawned and has not terminated.
// An actor whose termination hooks (Stopped, Destroy) are running already
// refuses sends but still reports true: Alive turns false when they have
// returned, so that the program may spawn it again from then on. An actor
// still alive when its executor shut down (a Stop whose context ended)
// counts as terminated once Stop has returned and every worker has exited,
// except one whose Stopped hook that Stop runs had not returned by then:
// it counts as alive until the hook returns.
func (c *Cell) Alive() bool {
	switch c.state.Load() & cellKindMask {
	case cellEnding:
		return true // its termination hooks run (a forced Stop's too, see stopExts)
	case cellAlive:
		return !c.executor().closed.Load()
	}
	return false
}

// Message is embedded, by value, in every message type (actor.Message is
// this type). It takes no space and holds nothing: a message's allocation
// status belongs to the delivery that sets it (see SetAllocation), never to
// the message, so a message forwarded to another actor is never written by
// two workers.
type Message struct{}

func (m *Message) message() *Message { return m }

// MessagePtr is satisfied by a pointer to a message type: a struct that
// embeds Message. The type parameter is the struct type itself; it is
// inferred.
type MessagePtr[T any] interface {
	*T
	message() *Message
}

// envelope is one queued message: everything a worker needs to deliver it.
// Envelopes live by value in copy queues, written in place by the sender (see
// set) and read in place by the worker, so a send allocates nothing once the
// queues have grown. 40 bytes: the actor the sender named is stored as the
// offset of the cell inside it, which leaves room for the incarnation stamp
// in the same word.
type envelope struct {
	cell *Cell
	fn   unsafe.Pointer // the behaviour, erased (see package internal/erased)
	msg  any            // the user's message (a pointer), for the call and the hooks
	coff uint32         // offset of cell inside the actor the sender named
	want uint32         // the cell's state word when sent: alive, incarnation
}

// set fills an envelope in place.
func (e *envelope) set(c *Cell, fn unsafe.Pointer, msg any, coff, want uint32) {
	e.cell, e.fn, e.msg, e.coff, e.want = c, fn, msg, coff, want
}

// call runs the envelope's behaviour on the actor the sender named (which
// contains the cell at offset coff, checked by Send) and the message.
func (e *envelope) call() Allocation {
	self := unsafe.Add(unsafe.Pointer(e.cell), -int(e.coff))
	return Allocation(erased.Call(e.fn, self, erased.Data(e.msg)))
}
