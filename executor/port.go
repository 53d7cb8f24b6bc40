package executor

import (
	"math"
	"unsafe"

	"github.com/actord/actord/internal/erased"
)

// Port is a reference to one behaviour of one incarnation of an actor,
// typed by the message it accepts: a Port[*M] accepts only *M. Anyone
// holding it can send to the actor without knowing the actor's type. A Port
// is a small value (24 bytes): copy it freely; ports compare equal when they
// name the same behaviour of the same incarnation of the same actor. The
// zero Port is bound to nothing: sends to it return ErrNotSpawned.
//
// A send through a port makes the same promises as Send (per-sender FIFO
// with every other send from the same sender to the same actor, no
// allocation once the queue has grown) and is for the incarnation the port
// was bound to: once that incarnation has terminated, sends return
// ErrTerminated, even if the actor has been spawned again.
type Port[M any] struct {
	cell *Cell
	fn   unsafe.Pointer // the behaviour, erased: a func(A, M) Allocation
	coff uint32         // offset of cell inside the actor bound
	want uint32         // the cell's canonical state word when bound: incarnation, alive, plain
}

// Bind returns a port for the behaviour fn of the live actor to, which
// contains the cell c. Errors: ErrNotSpawned (to was never spawned, or is
// being spawned), ErrTerminated (to has terminated). It panics if c is not
// inside *to.
func Bind[TA, TM any, A interface{ *TA }, M MessagePtr[TM]](c *Cell, to A, fn func(A, M) Allocation) (Port[M], error) {
	off := uintptr(unsafe.Pointer(c)) - uintptr(unsafe.Pointer(to))
	if off >= unsafe.Sizeof(*to) || off >= math.MaxUint32 {
		panic("executor: Bind: the cell is not inside the actor")
	}
	st := c.state.Load()
	if st&cellKindMask != cellAlive || c.executor().closed.Load() {
		if st&cellKindMask == cellAlive {
			return Port[M]{}, ErrTerminated
		}
		return Port[M]{}, stateErr(st)
	}
	want := st | cellPlain
	var m M
	if _, ok := any(m).(undeliverable); ok {
		want |= portRequest
	}
	return Port[M]{cell: c, fn: erased.Erase(fn), coff: uint32(off), want: want}, nil
}

// portRequest is set in the want of a port whose message type is a request
// (it implements undeliverable: the types embedding Request, *Failure).
// Bits 3-4 of an alive state word are cellPlain and zero, so no state word
// equals such a want: a send through the port fails send's comparison and
// takes sendSlow, which strips the flag and tells a behaviour forwarding
// the request it is receiving that the request has moved (handedOver).
// Port.word and portErr strip it too; a port's other sends pay nothing.
const portRequest uint32 = 16

// word returns the canonical state word of the port's incarnation.
func (p Port[M]) word() uint32 { return p.want &^ portRequest }

// Send queues msg for the port's behaviour. msg must not be nil: Send does
// not check it, a check that would cost every send, and the behaviour would
// receive nil (the other entry points that take a message, such as
// SendAfter, SendContext and Ask, panic on one). Errors: ErrNotSpawned (a
// zero Port), ErrTerminated (the port's incarnation has terminated),
// ErrStopped (its system has stopped).
func (p Port[M]) Send(msg M) error {
	if p.cell == nil {
		return ErrNotSpawned
	}
	return send(p.cell, uintptr(p.coff), math.MaxUint32, p.want, p.fn, msg)
}

// Alive reports whether the port's incarnation is alive (a snapshot, as
// Cell.Alive: true while its termination hooks run).
func (p Port[M]) Alive() bool {
	if p.cell == nil {
		return false
	}
	st, want := p.cell.state.Load(), p.word()
	if st|cellPlain != want {
		// Ending: its termination hooks run (a forced Stop's too, see stopExts).
		return incOf(st) == incOf(want) && st&cellKindMask == cellEnding
	}
	return !p.cell.executor().closed.Load()
}
