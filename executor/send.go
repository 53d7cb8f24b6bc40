package executor

import (
	"context"
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/actord/actord/internal/erased"
	"github.com/actord/actord/internal/goid"
)

// Spawn makes a, an actor that contains the cell c, a live actor of e, on a
// mailbox chosen by Config.Placement. c must be new, or dead (an actor whose
// earlier termination is over, or that was alive in an executor that has
// shut down).
//
// Errors: ErrNotStarted (nil e), ErrStopped (e has stopped, or is stopping
// with no actor left alive), ErrAlreadySpawned (a is alive, being spawned, or
// its termination hooks are running), ErrIncarnationsExhausted (c has been
// spawned MaxIncarnations times). It panics if c is not inside *a.
//
// Every Spawn of c starts a new incarnation, which no port, timer or watch
// of an earlier one reaches. Incarnations are never reused: after
// MaxIncarnations spawns, c is never spawned again. The incarnation is kept
// in c: a program that overwrites c (resetting the whole actor value,
// *a = T{}) makes it new again, and ports, timers and watches of its
// earlier incarnations may then reach the next one; reset the actor's own
// fields instead.
func Spawn[T any, A interface{ *T }](e *Executor, c *Cell, a A) error {
	if uintptr(unsafe.Pointer(c))-uintptr(unsafe.Pointer(a)) >= unsafe.Sizeof(*a) {
		panic("executor: Spawn: the cell is not inside the actor")
	}
	if e == nil || len(e.mailboxes) == 0 { // nil, or the zero Executor
		return ErrNotStarted
	}
	return e.spawn(c, a, nil)
}

// MaxIncarnations is how many times one actor value (one Cell) can be
// spawned: Spawn refuses it after that with ErrIncarnationsExhausted.
const MaxIncarnations = 1<<27 - 1

// Send queues msg for the actor to, which contains the cell c, to be
// delivered by calling fn(to, msg) on a worker. The behaviour receives
// exactly the pointer the sender named: sending to an actor embedded in the
// spawned one delivers to the embedded actor. It allocates nothing once the
// destination copy queue has grown to its working size.
//
// msg must not be nil: Send does not check it (the check would cost every
// send; actor.Send makes it), and the behaviour would receive nil.
//
// Errors: ErrNotSpawned, ErrTerminated (the incarnation the sender could see
// has terminated), ErrStopped. It panics if c is not inside *to.
func Send[TA, TM any, A interface{ *TA }, M MessagePtr[TM]](c *Cell, to A, msg M, fn func(A, M) Allocation) error {
	// Kept small enough to be inlined into its caller: the checks are in send.
	return send(c, uintptr(unsafe.Pointer(c))-uintptr(unsafe.Pointer(to)), unsafe.Sizeof(*to), 0, erased.Erase(fn), msg)
}

// spawn implements Spawn and SpawnWith (o nil: no options).
func (e *Executor) spawn(c *Cell, obj any, o *SpawnOptions) error {
	st := c.state.Load()
	switch st & cellKindMask {
	case cellNew, cellDead:
	case cellAlive:
		// Alive in an executor that has shut down (a forced Stop left it
		// alive): it is terminated and may be spawned again.
		if x := c.executor(); x == nil || !x.closed.Load() {
			return ErrAlreadySpawned
		}
	default:
		return ErrAlreadySpawned // being spawned, or its termination hooks are running
	}
	if incOf(st) == cellIncarnLast {
		return ErrIncarnationsExhausted // the incarnation never wraps (see cellIncarnLast)
	}
	next := incOf(st) + cellIncarnOne // the next incarnation
	if !c.startSpawn(st, next) {
		return ErrAlreadySpawned
	}
	if !e.enter() {
		c.abortSpawn(st)
		return ErrStopped
	}
	w := e.current()
	var mb *mailbox
	if w != nil && e.cfg.Placement == PlaceLocal {
		mb = w.nextLocal()
	}
	if mb == nil {
		t := e.ticket.Add(1) - 1
		mb = e.mailboxes[t%uint64(len(e.mailboxes))]
	}
	oldMb, oldObj, oldExt := c.mb.Load(), c.obj, c.ext.Load()
	c.mb.Store(mb)
	c.obj = obj
	x := newExt(obj, o, next, w)
	if x != nil {
		x.exec = e
	}
	if oldExt != x { // a store only if it changes: most actors have none
		c.ext.Store(x)
	}
	if x == nil {
		c.publishAlive(next, true) // publishes the fields above to senders and workers
	} else if !e.registerSpawned(c, x, next) {
		// A forced Stop took the registry after enter: nothing would
		// finish this actor (its watchers never told, its private
		// queue never closed). The spawn fails, as one that came
		// after the Stop; the word and fields go back to what they
		// were, and nobody has seen them (the word never left
		// spawning).
		c.mb.Store(oldMb)
		c.obj = oldObj
		if oldExt != x {
			c.ext.Store(oldExt)
		}
		c.abortSpawn(st)
		e.actorGone()
		return ErrStopped
	}
	e.noteSpawn(w, c, obj, next)
	if x != nil {
		e.extended(c, x)
	}
	if w != nil {
		w.st.ActorsCreated++
	} else {
		e.extCreated.Add(1)
	}
	return nil
}

// stateErr maps a non-alive cell state to the error a send reports.
func stateErr(st uint32) error {
	switch st & cellKindMask {
	case cellEnding, cellDead:
		return ErrTerminated
	case cellSpawning:
		if incOf(st) > cellIncarnOne {
			// Being spawned again: the incarnation the sender could have
			// known has terminated.
			return ErrTerminated
		}
	}
	return ErrNotSpawned
}

// send queues an envelope (see Send).
//
// The local path: when the destination mailbox is being processed and the
// caller is the very goroutine draining it (a behaviour of an actor on that
// mailbox, sending to an actor on the same mailbox, such as itself), the
// envelope is appended to the batch being drained: no lock, no atomic write.
// Recognising the caller costs one load of the mailbox word (which the
// locked path needs anyway), and only when that word says "processing" a
// load of the drainer's batch, of its goroutine identity and of the
// caller's. Every other field of the batch the local path touches is read
// only after the identity matched, that is, by the draining goroutine.
//
// off is the cell's offset inside the actor the sender named, of size bytes:
// the cell must lie inside it, so that delivery can find that actor from the
// cell (see envelope). want is the state word of the incarnation the send is
// for (a port's), or 0 for whichever incarnation is alive.
func send(c *Cell, off, size uintptr, want uint32, fn unsafe.Pointer, msg any) error {
	if off >= size || off > math.MaxUint32 {
		panic("executor: Send: the cell is not inside the actor")
	}
	coff := uint32(off)
	st := c.state.Load()
	if st&(cellKindMask|cellPlain) != cellAlive|cellPlain || (want != 0 && st != want) {
		return sendSlow(c, coff, st, want, fn, msg, nil)
	}
	mb := c.mb.Load()
	if goid.Supported && mb.word.Load()&wordProcessing != 0 {
		if b := mb.drainer.Load(); b != nil && b.g.Load() == goid.Unchecked() {
			if b.cur == mb && b.buf.Pushed() < b.limit {
				// We are b's goroutine, inside a behaviour of the batch it
				// is draining: append to that batch. Per-sender FIFO holds:
				// every earlier send from here to this mailbox during this
				// batch was appended too (the batch only grows, so once it
				// reaches limit every later send of the batch goes to
				// the mailbox), and earlier batches were drained before
				// this one began.
				b.buf.Next().set(c, fn, msg, coff, st)
				return nil
			}
		}
	}
	return pushTo(c, mb, coff, st, fn, msg)
}

// pushTo pushes an envelope into mb and wakes its worker if needed.
//
// Everything after the push belongs to mb's own executor (mb.exec): the
// wake-up of mb's owner, a handoff or next hint, the deep-mailbox count.
// It never re-reads the cell: by then the actor may have ended and been
// spawned again on a mailbox of another executor, and the envelope (for
// the incarnation the sender saw) is in mb, where a worker of mb.exec
// finds it a dead letter.
func pushTo(c *Cell, mb *mailbox, coff, st uint32, fn unsafe.Pointer, msg any) error {
	n := mb.pushGated(c, fn, msg, coff, st, nil) // no wrapper on the hot path: see push
	if n < 0 {
		return ErrStopped
	}
	mb.exec.notify(mb, n)
	return nil
}

// pushGatedTo is pushTo for a passivating actor (see passivate.go): the
// push fails with ErrTerminated once the actor's passivation has shut
// gate, as if it had ended then.
func pushGatedTo(c *Cell, mb *mailbox, coff, st uint32, fn unsafe.Pointer, msg any, gate *atomic.Bool) error {
	n := mb.pushGated(c, fn, msg, coff, st, gate)
	if n < 0 {
		if n == pushGateShut {
			return ErrTerminated
		}
		return ErrStopped
	}
	mb.exec.notify(mb, n)
	return nil
}

// sendSlow is send's path for everything but an alive plain actor: the
// errors, and actors with an extension (see supervise.go). ctx is non-nil
// for SendContext: a send to a full bounded mailbox from outside the
// behaviours then waits for room.
func sendSlow(c *Cell, coff, st, want uint32, fn unsafe.Pointer, msg any, ctx context.Context) error {
	if want&portRequest != 0 {
		// A request through its port (see portRequest).
		want &^= portRequest
		// Record the request under the incarnation it goes to, before the
		// send (see held.go); put it back if the send fails.
		t := heldOf(msg)
		var pc *Cell
		var pinc uint32
		if t != nil {
			pc, pinc = holdAt(t, c, incOf(want))
		}
		var err error
		if st == want {
			err = send(c, uintptr(coff), math.MaxUint32, want, fn, msg)
		} else {
			err = sendSlow(c, coff, st, want, fn, msg, ctx)
		}
		if err == nil {
			handedOver(msg)
		} else if t != nil {
			holdAt(t, pc, pinc)
		}
		return err
	}
	if st&cellKindMask == cellAlive && (want == 0 || st|cellPlain == want) {
		return sendExt(c, coff, st|cellPlain, fn, msg, ctx)
	}
	if want != 0 && st|cellPlain != want && incOf(st) != incOf(want) {
		return ErrTerminated // a later incarnation: the port's has ended
	}
	return stateErr(st)
}

// Pill is a poison pill: a message that every actor accepts, whose
// behaviour does nothing but return the pill's status, so that the actor
// terminates with it once the messages sent before the pill by the same
// sender have been received. Nothing is ever applied to a pill itself: one
// pill may be sent any number of times, to any number of actors at once.
type Pill struct {
	Message
	status Allocation
}

// NewPill returns a pill that terminates its receiver with status a.
func NewPill(a Allocation) *Pill { return &Pill{status: a} }

// Status returns the status the pill terminates its receiver with.
func (p *Pill) Status() Allocation { return p.status }

// pillFn is the behaviour of every pill, erased once. Its first parameter
// (the receiving actor, of any type) is ignored, so one function serves
// every actor type without a generic instance per type.
var pillFn = erased.Erase(func(_ *byte, p *Pill) Allocation { return p.status })

// SendPill sends the pill p to the actor to, which contains the cell c.
// Errors as for Send.
func SendPill[T any, A interface{ *T }](c *Cell, to A, p *Pill) error {
	return send(c, uintptr(unsafe.Pointer(c))-uintptr(unsafe.Pointer(to)), unsafe.Sizeof(*to), 0, pillFn, p)
}
