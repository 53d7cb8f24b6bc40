package executor

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/actord/actord/internal/erased"
)

// Overflow is what a send to a full bounded mailbox does (see
// SpawnOptions.MailboxBound).
type Overflow uint8

const (
	// Reject: the send fails with ErrMailboxFull; the message is not queued
	// and stays the sender's. The default.
	Reject Overflow = iota
	// DropNewest: the send succeeds but the message is dropped, counted
	// (Stats.MailboxDroppedNewest); a request's requester gets ErrMailboxFull.
	DropNewest
	// DropOldest: the message is queued and the oldest queued one is
	// dropped, counted (Stats.MailboxDroppedOldest); a request's requester
	// gets ErrMailboxFull. Pills are never dropped, nor a message sent
	// before a queued pill that terminates the actor: while such a pill is
	// queued (or a pill is the oldest message) the new message is dropped
	// instead, as DropNewest would (Stats.MailboxDroppedNewest), since it
	// could only be a dead letter.
	DropOldest
)

var overflowNames = [...]string{Reject: "Reject", DropNewest: "DropNewest", DropOldest: "DropOldest"}

func (o Overflow) String() string { return enumName(overflowNames[:], uint8(o), "Overflow") }

// privQueue is a bounded or supervised actor's own queue.
type privQueue struct {
	// mu guards every field but floodSeq. Senders hold it to queue (and
	// apply the bound); the actor's worker holds it to pop one message,
	// to suspend and resume. It is never held while a behaviour or hook
	// runs, nor across a push into the shared mailbox: offer, take and
	// close decide under it and return what happened, and their callers
	// act on that after it (the drain token, drops and their counts, a
	// flood yield, a wait for room).
	mu   sync.Mutex
	ring envRing
	// scheduled: a drain token is queued in the shared mailbox, or the
	// actor's worker is draining. Invariant (under mu): if the queue is
	// non-empty and neither suspended nor closed, scheduled is set, so
	// the messages will be drained. Set by the sender that finds it clear
	// (which then sends the token); cleared by the worker that finds the
	// queue empty or the actor suspended.
	scheduled bool
	suspended bool // a backoff or an escalation is pending (worker-written)
	closed    bool // the actor terminated: sends fail (worker- or Stop-written)
	// pills counts the queued poison pills that terminate the actor
	// (status other than Nodelete): while one is queued, everything sent
	// after it is a dead letter, so a full DropOldest queue drops the new
	// message instead of evicting one sent before the pill. Kept by push
	// and pop (offer, take, close).
	pills int
	// flooded: a push made the queue's length a flood point (offer), and
	// its sender may be yielding until the actor's worker catches up (see
	// flood.go). Set by offer; cleared by take once the length is down to
	// floodLimit/2, or by close, which then advance floodSeq.
	flooded bool
	// floodSeq is advanced under mu when flooded is cleared; it pairs
	// with the loads, without the lock, of senders yielding at a flood
	// point (privFloodYield), which wait for it to move from the value
	// offer read under mu when it decided the flood point.
	floodSeq atomic.Uint32
	// room, when non-nil, is closed by the worker when it pops from a full
	// queue: SendContext callers wait on it.
	room chan struct{}
}

// putResult is what offer decided about a message, under q.mu; put acts
// on it after the lock is released.
type putResult uint8

const (
	// putQueued: queued, and a drain token is already on its way (or
	// the worker is draining, or the actor is suspended).
	putQueued putResult = iota
	// putKick: queued into an idle queue, and scheduled is now set: the
	// caller sends the drain token.
	putKick
	// putDroppedOldest: queued into a full DropOldest queue, whose oldest
	// message (putOutcome.old) the caller drops.
	putDroppedOldest
	// putDroppedNewest: the queue is full (DropNewest): not queued, the
	// caller drops the message.
	putDroppedNewest
	// putRejected: the queue is full (Reject): not queued, the message
	// stays the sender's.
	putRejected
	// putWait: the queue is full and the caller may wait for room, on
	// putOutcome.room, and then offer again.
	putWait
	// putClosed: the queue is closed (the actor ended, or a forced Stop
	// closed it): not queued.
	putClosed
)

// putOutcome is offer's decision.
type putOutcome struct {
	res  putResult
	old  envelope      // putDroppedOldest: the message evicted
	room chan struct{} // putWait: closed when a message is taken or the queue closes
	// flood (putQueued, putKick): the push made the queue's length a
	// flood point; an outside sender yields (privFloodYield) until
	// floodSeq moves on from seq.
	flood bool
	seq   uint32
}

// offer decides, under q.mu, what becomes of env sent to an actor with
// bound and overflow (bound 0: unbounded); wait says that the sender may
// wait for room (SendContext from outside the behaviours). It queues env
// unless the result says otherwise, and has no other effect: the caller
// acts on the outcome after the lock is released.
func (q *privQueue) offer(env *envelope, bound int, overflow Overflow, wait bool) putOutcome {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return putOutcome{res: putClosed}
	}
	if bound > 0 && q.ring.n >= bound && env.fn != pillFn {
		if wait {
			if q.room == nil {
				q.room = make(chan struct{})
			}
			return putOutcome{res: putWait, room: q.room}
		}
		ov := overflow
		if ov == DropOldest && (q.pills > 0 || q.ring.buf[q.ring.head].fn == pillFn) {
			// Never drop a pill, nor a message sent before a pill
			// that terminates the actor: what is sent after such a
			// pill is a dead letter anyway, so drop that.
			ov = DropNewest
		}
		switch ov {
		case DropNewest:
			return putOutcome{res: putDroppedNewest}
		case DropOldest:
			old := q.pop()
			q.push(env)
			return putOutcome{res: putDroppedOldest, old: old}
		default:
			return putOutcome{res: putRejected}
		}
	}
	q.push(env)
	o := putOutcome{res: putQueued}
	if !q.scheduled && !q.suspended {
		o.res, q.scheduled = putKick, true
	}
	if floodPoint(q.ring.n, 1) {
		q.flooded = true
		o.flood, o.seq = true, q.floodSeq.Load()
	}
	return o
}

// put sends a message to the actor of q (see Overflow and SendContext): it
// returns nil once the message is queued, or dropped by the overflow
// policy, and an error when it is not queued and stays the sender's.
//
// A queued message belongs to the queue: it is delivered, evicted by
// DropOldest, or dropped and counted by the close of the queue (a dead
// letter when the actor ends, undelivered at a forced Stop). The drain
// token put sends for a queue it found idle is refused when the actor has
// begun to end (a termination closes the queue in extTerm's termDead step,
// which counts the message), or when a forced Stop has closed the
// mailboxes. In the latter case the Stop closed the queue (stopExts,
// before the mailboxes), which counted the message, unless the actor was
// not in its registry; then nobody would drain the queue: put closes it
// (abandon) and returns ErrStopped, the message not queued, staying the
// sender's and not counted sent, and drops the messages other senders
// queued after it (a request among them ends with ErrStopped).
func (q *privQueue) put(c *Cell, x *cellExt, coff, want uint32, fn unsafe.Pointer, msg any, ctx context.Context) error {
	e := x.exec // the executor the queue belongs to, whatever the cell names now (see cellExt.exec)
	env := envelope{cell: c, fn: fn, msg: msg, coff: coff, want: want}
	// SendContext from outside the behaviours waits for room, whatever
	// the overflow policy; a worker never waits.
	wait := ctx != nil && runningWorker() == nil
	for {
		o := q.offer(&env, x.bound, x.overflow, wait)
		switch o.res {
		case putQueued, putKick:
			if o.res == putKick && sendControl(c, want, drainMsg) == ErrStopped {
				// The mailboxes are closed (a forced Stop). Unless that
				// Stop closed the queue (stopExts, before the
				// mailboxes), nobody will: take msg back.
				rest, mine := q.abandon(&env)
				for _, r := range rest {
					dropped(r.msg, ErrStopped)
				}
				if mine {
					return ErrStopped // not counted sent: privSent was not added
				}
			}
			// After the drain token: a Stats snapshot may lag a send,
			// never count one refused (see Stats.MessagesSent).
			e.sup.privSent.Add(1)
			if o.flood {
				privFloodYield(e, q, o.seq)
			}
		case putDroppedOldest:
			e.sup.droppedOldest.Add(1)
			e.sup.privSent.Add(1)
			dropped(o.old.msg, ErrMailboxFull)
		case putDroppedNewest:
			e.sup.droppedNewest.Add(1)
			dropped(msg, ErrMailboxFull)
		case putRejected:
			e.sup.rejected.Add(1)
			return ErrMailboxFull
		case putWait:
			select {
			case <-o.room:
				continue
			case <-ctx.Done():
				return fmt.Errorf("%w: %w", ErrMailboxFull, context.Cause(ctx))
			}
		case putClosed:
			if x.pass != nil && x.pass.shut.Load() {
				return ErrTerminated // passivated (the load pairs with the store under q.mu)
			}
			if c.state.Load()|cellPlain == want {
				// Still alive: a forced Stop closed the queue (stopExts),
				// and after Stop sends report ErrStopped. A termination
				// ends the alive state before it closes the queue.
				return ErrStopped
			}
			return ErrTerminated
		}
		return nil
	}
}

// abandon is put's close of a queue that a forced Stop left open when it
// closed the mailboxes, so that no drain token can be sent and nobody will
// drain it: if the queue is open it closes it, takes env (the caller's
// message, queued by its offer) out, reporting mine, and returns the rest
// (messages queued after env by senders that found the token on its way),
// for the caller to drop after q.mu is released. It does nothing if the
// queue is closed: its closer took env, and counts it.
func (q *privQueue) abandon(env *envelope) (rest []envelope, mine bool) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil, false
	}
	rest = q.closeLocked()
	q.mu.Unlock()
	for i := len(rest) - 1; i >= 0; i-- {
		r := &rest[i]
		if r.fn == env.fn && r.cell == env.cell && r.coff == env.coff && r.want == env.want && erased.Data(r.msg) == erased.Data(env.msg) {
			return append(rest[:i], rest[i+1:]...), true
		}
	}
	return rest, false // evicted by a DropOldest send: it counted the drop
}

// close closes the queue (later puts fail, waiting SendContext callers
// wake) and returns what it held, for the caller to drop after q.mu is
// released: dropping a request completes it, and its Reply may be sent to
// this very queue (an actor that asked itself with AskAsync).
func (q *privQueue) close() []envelope {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closeLocked()
}

// closeLocked is close, called with q.mu held.
func (q *privQueue) closeLocked() []envelope {
	q.closed = true
	q.signalRoom()
	var rest []envelope
	for q.ring.n > 0 {
		rest = append(rest, q.ring.pop())
	}
	q.pills = 0
	if q.flooded {
		q.flooded = false
		q.floodSeq.Add(1)
	}
	return rest
}

// signalRoom wakes SendContext callers waiting for room. Called with mu held.
func (q *privQueue) signalRoom() {
	if q.room != nil {
		close(q.room)
		q.room = nil
	}
}

// envRing is a growable ring of envelopes.
type envRing struct {
	buf     []envelope
	head, n int
}

func (r *envRing) push(e envelope) {
	if r.n == len(r.buf) {
		nb := make([]envelope, max(2*len(r.buf), 8))
		for i := 0; i < r.n; i++ {
			nb[i] = r.buf[(r.head+i)%len(r.buf)]
		}
		r.buf, r.head = nb, 0
	}
	r.buf[(r.head+r.n)%len(r.buf)] = e
	r.n++
}

func (r *envRing) pop() envelope {
	e := r.buf[r.head]
	r.buf[r.head] = envelope{}
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	if r.n == 0 {
		r.head = 0
		if len(r.buf) > 1024 {
			r.buf = nil // an unbounded queue gives its peak back once drained
		}
	}
	return e
}

// privBatch bounds the messages a drain token delivers before the actor
// yields to the other actors of its mailbox (it sends itself a new token).
const privBatch = 64

// drainPrivate runs the Started hook if due, delivers up to privBatch
// messages of the private queue, then, if more are left, sends the actor a
// new drain token. It stops, leaving the rest queued, when the actor
// terminates, is suspended, or the executor shuts down: after a forced
// Stop's decision no further message of the queue is delivered (Stop's
// stopExts closes the queue and counts what it holds as undelivered), as a
// worker drops the rest of its batch (drainBatch).
func (w *worker) drainPrivate(c *Cell, x *cellExt, want uint32) {
	if !w.runStarted(c, x, want, false) {
		return
	}
	q := x.pq
	for range privBatch {
		if w.e.shutdown.Load() {
			return // scheduled stays set: nothing drains the queue any more
		}
		env, ok := q.take()
		if !ok {
			return
		}
		w.sup.env = env
		x.delivered = true // the passivation mark (see passivate.go)
		w.st.private++
		w.sup.inPriv = true
		w.deliverOne(&w.sup.env)
		w.sup.inPriv = false
		w.sup.env = envelope{}
		if c.state.Load()|cellPlain != want {
			return // it terminated: terminateExt closed the queue
		}
	}
	w.reschedule(c, x, want)
}

// take pops the next message for delivery, waking SendContext callers that
// wait for room. It reports false, and clears scheduled, if there is none
// to deliver: the queue is empty, suspended or closed.
func (q *privQueue) take() (envelope, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.suspended || q.closed || q.ring.n == 0 {
		q.scheduled = false
		return envelope{}, false
	}
	q.signalRoom()
	env := q.pop()
	if q.flooded && q.ring.n <= floodLimit/2 {
		q.flooded = false
		q.floodSeq.Add(1) // its flooding sender stops yielding
	}
	return env, true
}

// push queues env, counting a pill that terminates the actor. Called with
// mu held.
func (q *privQueue) push(env *envelope) {
	if env.fn == pillFn && env.msg.(*Pill).status != Nodelete {
		q.pills++
	}
	q.ring.push(*env)
}

// pop unqueues the oldest envelope (the queue must not be empty). Called
// with mu held.
func (q *privQueue) pop() envelope {
	env := q.ring.pop()
	if env.fn == pillFn && env.msg.(*Pill).status != Nodelete {
		q.pills--
	}
	return env
}

// reschedule sends a drain token if the private queue has messages to
// deliver, else clears scheduled.
func (w *worker) reschedule(c *Cell, x *cellExt, want uint32) {
	q := x.pq
	q.mu.Lock()
	more := !q.suspended && !q.closed && q.ring.n > 0
	q.scheduled = more
	q.mu.Unlock()
	if more {
		sendControl(c, want, drainMsg)
	}
}

// SendContext is Send for a bounded actor from a goroutine that can wait:
// when the actor's mailbox is full it waits for room until ctx ends (then
// it returns an error wrapping ErrMailboxFull and ctx's cause), whatever
// the actor's Overflow policy. Called from a behaviour it never waits (a
// worker must not block): it applies the policy like Send. For other actors
// it is Send.
func SendContext[TA, TM any, A interface{ *TA }, M MessagePtr[TM]](ctx context.Context, c *Cell, to A, msg M, fn func(A, M) Allocation) error {
	off := uintptr(unsafe.Pointer(c)) - uintptr(unsafe.Pointer(to))
	return sendCtx(ctx, c, off, unsafe.Sizeof(*to), 0, erased.Erase(fn), msg)
}

// SendContext is Port.Send that waits for room in a full bounded mailbox
// (see the function SendContext).
func (p Port[M]) SendContext(ctx context.Context, msg M) error {
	if p.cell == nil {
		return ErrNotSpawned
	}
	return sendCtx(ctx, p.cell, uintptr(p.coff), math.MaxUint32, p.want, p.fn, msg)
}

func sendCtx(ctx context.Context, c *Cell, off, size uintptr, want uint32, fn unsafe.Pointer, msg any) error {
	if off >= size || off > math.MaxUint32 {
		panic("executor: SendContext: the cell is not inside the actor")
	}
	if erased.Data(msg) == nil {
		panic("executor: SendContext with a nil message")
	}
	st := c.state.Load()
	if st&(cellKindMask|cellPlain) != cellAlive|cellPlain || (want != 0 && st != want) {
		return sendSlow(c, uint32(off), st, want, fn, msg, ctx)
	}
	return send(c, off, size, want, fn, msg)
}
