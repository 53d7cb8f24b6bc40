package actor

import (
	"unsafe"

	"github.com/actord/actord/executor"
)

// Allocation is what the executor does with an actor or a message after a
// behaviour returns. Behaviours return the actor's status; a message's status
// is set with Message.SetAllocation (default Nodelete).
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
	// storage is kept for reuse: a destroyed actor may be spawned again, a
	// destroyed message sent again.
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
type Message struct {
	cell executor.MsgCell
}

func (m *Message) messageCell() *executor.MsgCell { return &m.cell }

// SetAllocation sets what the executor does with the message after the
// current behaviour returns (Nodelete by default). Call it from the behaviour
// receiving the message. After Delete or Destroy the executor resets the
// status to Nodelete before running the message's hooks.
func (m *Message) SetAllocation(a Allocation) { m.cell.Set(a) }

// Allocation returns the message's allocation status.
func (m *Message) Allocation() Allocation { return m.cell.Get() }

// Ref is satisfied by a pointer to an actor type, that is, to a struct that
// embeds Actor. The type parameter is the struct type itself; it is inferred.
type Ref[T any] interface {
	*T
	actorCell() *executor.Cell
}

// Msg is satisfied by a pointer to a message type, that is, to a struct that
// embeds Message. The type parameter is the struct type itself; it is inferred.
type Msg[T any] interface {
	*T
	messageCell() *executor.MsgCell
}

// Spawn makes a a live actor of sys and returns it. Create the actor value
// first (new, a composite literal, a pool); Spawn only enrols it: it is
// placed on one of the system's queues, round-robin, for its whole life.
//
// Errors: ErrNotStarted (nil or zero System), ErrStopped (the system has
// stopped), ErrAlreadySpawned (a is alive, or its termination is not over:
// its Destroy hook is still running). An actor that terminated with Destroy
// (or any other status) may be spawned again once its termination is over;
// from its Release hook, or after Alive reports false and Spawn stops
// returning ErrAlreadySpawned.
func Spawn[T any, A Ref[T]](sys *System, a A) (A, error) {
	if a == nil {
		panic("actor: Spawn of a nil actor")
	}
	if sys == nil || sys.e == nil {
		return a, ErrNotStarted
	}
	return a, sys.e.Spawn(a.actorCell(), unsafe.Pointer(a), a)
}

// Send queues msg for the actor to and returns at once; the executor later
// runs behaviour(to, msg) on one of its workers. The behaviour is any
// function of the actor and message types, usually a method expression:
//
//	actor.Send(counter, &Add{N: 1}, (*Counter).Add)
//
// The types are checked at compile time: a message type for which the actor
// has no behaviour cannot be sent to it. Messages from one sender to one
// actor are received in the order they were sent. Send may be called from
// any goroutine, including from behaviours, and does not allocate once the
// destination queue has grown to its working size.
//
// msg must not be modified until the behaviour has received it. Errors:
// ErrNotSpawned, ErrTerminated (to has terminated: nothing is delivered),
// ErrStopped (its system has stopped).
func Send[TA, TM any, A Ref[TA], M Msg[TM]](to A, msg M, behaviour func(A, M) Allocation) error {
	if to == nil || msg == nil || behaviour == nil {
		panic("actor: Send with a nil actor, message or behaviour")
	}
	return executor.Send(to.actorCell(), *(*unsafe.Pointer)(unsafe.Pointer(&behaviour)), msg, msg.messageCell())
}

// Pill is a built-in poison pill: a message every actor accepts, whose
// behaviour does nothing but return the pill's allocation status, so that
// the actor terminates with that status after every message sent before the
// pill (by the same sender) has been received. Send pills with SendPill.
type Pill struct {
	Message
	status Allocation
}

// The three built-in poison pills. Their own status is Finished, so the
// executor never applies anything to them: they can be sent any number of
// times, to any number of actors.
var (
	DeleteMsg   = &Pill{status: Delete}
	DestroyMsg  = &Pill{status: Destroy}
	FinishedMsg = &Pill{status: Finished}
)

func init() {
	for _, p := range []*Pill{DeleteMsg, DestroyMsg, FinishedMsg} {
		p.SetAllocation(Finished)
	}
}

// pillBehaviour is the behaviour of every pill; its first parameter is the
// receiving actor, which it ignores (see executor's behaviourFunc for why an
// unsafe.Pointer stands in for the actor type).
func pillBehaviour(_ unsafe.Pointer, p *Pill) Allocation { return p.status }

var pillFn = pillBehaviour

// SendPill sends a poison pill (DeleteMsg, DestroyMsg or FinishedMsg) to an
// actor. Errors as for Send.
func SendPill[T any, A Ref[T]](to A, pill *Pill) error {
	if to == nil || pill == nil {
		panic("actor: SendPill with a nil actor or pill")
	}
	return executor.Send(to.actorCell(), *(*unsafe.Pointer)(unsafe.Pointer(&pillFn)), pill, pill.messageCell())
}
