package actor

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/actord/actord/executor"
)

// Allocation is what the executor does with an actor or a message after a
// behaviour returns. Behaviours return the actor's status; a message's status
// is set by the behaviour receiving it with Message.SetAllocation (default
// Nodelete).
type Allocation = executor.Allocation

const (
	// Nodelete: nothing happens; the actor keeps receiving, the message can
	// be sent again.
	Nodelete = executor.Nodelete
	// Delete: the object is finished and its storage goes back: its Destroy
	// hook (Destroyer) runs if it has one, then its Release hook (Releaser),
	// which typically puts it back in a sync.Pool. Without a Release hook the
	// executor just drops its references and the garbage collector frees it.
	Delete = executor.Delete
	// Destroy: the object is finished and its Destroy hook runs, but the
	// storage is kept for reuse: a destroyed actor may be spawned again once
	// Alive reports false, a destroyed message sent again.
	Destroy = executor.Destroy
	// Finished: the object is finished; no hook runs. For actors and
	// messages whose storage the program manages itself.
	Finished = executor.Finished
)

// Destroyer is the Destroy hook of an actor or message type, run for the
// Delete and Destroy statuses on the worker that applies them.
type Destroyer = executor.Destroyer

// Releaser is the Release hook of an actor or message type, run after
// Destroy for the Delete status.
type Releaser = executor.Releaser

// Actor is embedded, by value, in every actor type:
//
//	type Counter struct {
//		actor.Actor
//		n int
//	}
//
// It holds the executor's bookkeeping for the actor (its queue, its state).
// An actor's fields are only touched by its behaviours, which never run
// concurrently with each other, so they need no locking.
type Actor struct {
	cell executor.Cell
}

func (a *Actor) actorCell() *executor.Cell { return &a.cell }

// Alive reports whether the actor has been spawned and has not terminated.
// From outside the actor's behaviours the answer may be stale by the time it
// is used; Send reports termination reliably.
func (a *Actor) Alive() bool { return a.cell.Alive() }

// Message is embedded, by value, in every message type:
//
//	type Add struct {
//		actor.Message
//		N int
//	}
//
// It takes no space and holds no state; its SetAllocation method is called
// by the behaviour receiving the message (see "Message lifetime" in the
// package documentation).
type Message = executor.Message

// Ref is satisfied by a pointer to an actor type, that is, to a struct that
// embeds Actor. The type parameter is the struct type itself; it is inferred.
type Ref[T any] interface {
	*T
	actorCell() *executor.Cell
}

// Msg is satisfied by a pointer to a message type, that is, to a struct that
// embeds Message. The type parameter is the struct type itself; it is inferred.
type Msg[T any] = executor.MessagePtr[T]

// Spawn makes a into a live actor of sys and returns it. Create the actor value
// first (new, a composite literal, a pool); Spawn only enrols it: it is
// placed on one of the system's queues, round-robin, for its whole life.
//
// Errors: ErrNotStarted (nil or zero System), ErrStopped (the system has
// stopped, or a Stop whose context ended is stopping it: a Spawn racing
// it either fails so, or its actor is one that Stop ends),
// ErrAlreadySpawned (a is alive, or its termination is not over:
// its Destroy hook is still running), ErrIncarnationsExhausted (a has been
// spawned MaxIncarnations times: it is never spawned again, so that no
// port, timer or watch of an earlier incarnation can reach a later one;
// spawn a new value). A terminated actor may be spawned
// again (into this system or another) by whoever owns it: after Destroy or
// Finished, the program, once Alive reports false; after Delete, whoever
// the Release hook handed it to (a pool), even while Release is returning.
// An actor alive in a system stopped by an ended context counts as
// terminated once Stop has returned.
//
// Options choose the actor's failure handling and flow control
// (WithRestart, WithResume, WithEscalate, WithMailbox, WithPassivation); without them it is
// a plain actor: a panic terminates it, its mailbox is unbounded. They cost
// nothing to actors that do not use them. Errors with options: also
// ErrConfig for invalid ones.
func Spawn[T any, A Ref[T]](sys *System, a A, opts ...SpawnOption) (A, error) {
	if a == nil {
		panic("actor: Spawn of a nil actor")
	}
	checkEmbedded("Spawn", a)
	if sys == nil || sys.e == nil {
		return a, ErrNotStarted
	}
	if len(opts) == 0 {
		return a, executor.Spawn(sys.e, a.actorCell(), a)
	}
	return a, spawnWith(sys, a, opts)
}

// checkEmbedded panics unless a's cell lies inside *a, which is the case
// unless T embeds *Actor instead of Actor (fn names the caller).
func checkEmbedded[T any, A Ref[T]](fn string, a A) {
	if uintptr(unsafe.Pointer(a.actorCell()))-uintptr(unsafe.Pointer(a)) >= unsafe.Sizeof(*a) {
		panic("actor: " + fn + ": the actor type embeds *actor.Actor; embed actor.Actor by value")
	}
}

// spawnWith is Spawn with options, out of line so that Spawn without them
// stays small.
//
//go:noinline
func spawnWith[T any, A Ref[T]](sys *System, a A, opts []SpawnOption) error {
	var o executor.SpawnOptions
	for _, opt := range opts {
		if m, ok := opt.(mailboxOption); ok && m.bound < 1 {
			// Zero is the executor's "unbounded": refused here, so that
			// an unset bound does not silently lose flow control.
			return fmt.Errorf("%w: WithMailbox bound %d (1 to %d)", ErrConfig, m.bound, executor.MaxMailboxBound)
		}
		if p, ok := opt.(passivationOption); ok && p <= 0 {
			// Zero is the executor's "never": refused here, as a bound 0.
			return fmt.Errorf("%w: WithPassivation duration %v (must be positive)", ErrConfig, time.Duration(p))
		}
		opt.applySpawn(&o)
	}
	return executor.SpawnWith(sys.e, a.actorCell(), a, o)
}

// Send queues msg for the actor to and returns at once; the executor later
// runs behaviour(to, msg) on one of its workers. The behaviour is any
// function of the actor and message types, usually a method expression:
//
//	actor.Send(counter, &Add{N: 1}, (*Counter).Add)
//
// The types are checked at compile time: a message type for which the actor
// has no behaviour cannot be sent to it. The behaviour receives exactly the
// actor pointer given as to, which may be an actor type embedded in the one
// that was spawned. Messages from one sender to one actor are received in
// the order they were sent. Send may be called from any goroutine,
// including from behaviours, and does not allocate once the destination
// queue has grown to its working size.
//
// Sending passes the message on: the sender must not modify it afterwards
// (see "Message lifetime" in the package documentation). Errors:
// ErrNotSpawned, ErrTerminated (to has terminated: nothing is delivered),
// ErrStopped (its system has stopped).
func Send[TA, TM any, A Ref[TA], M Msg[TM]](to A, msg M, behaviour func(A, M) Allocation) error {
	if to == nil || msg == nil || behaviour == nil {
		nilSend()
	}
	return executor.Send(to.actorCell(), to, msg, behaviour)
}

func nilSend() { panic("actor: Send with a nil actor, message or behaviour") }

// Pill is a built-in poison pill: a message every actor accepts, whose
// behaviour does nothing but return the pill's allocation status, so that
// the actor terminates with that status after every message sent before the
// pill (by the same sender) has been received. Send pills with SendPill.
type Pill = executor.Pill

// The three built-in poison pills. Nothing is ever applied to the pills
// themselves: they can be sent any number of times, to any number of actors.
var (
	DeleteMsg   = executor.NewPill(Delete)
	DestroyMsg  = executor.NewPill(Destroy)
	FinishedMsg = executor.NewPill(Finished)
)

// SendPill sends a poison pill (DeleteMsg, DestroyMsg or FinishedMsg) to an
// actor. Errors as for Send.
func SendPill[T any, A Ref[T]](to A, pill *Pill) error {
	if to == nil || pill == nil {
		panic("actor: SendPill with a nil actor or pill")
	}
	return executor.SendPill(to.actorCell(), to, pill)
}
