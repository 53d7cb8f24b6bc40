package executor

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/actord/actord/internal/erased"
)

// Request/reply.
//
// A request is a message whose type embeds Request[R], R being the reply
// type. Ask (from any goroutine but a worker) and AskAsync (from a
// behaviour, or anywhere) attach a reply target to the
// request before sending it; the behaviour that receives it answers with
// Reply. The target is completed exactly once, by whichever comes first:
// the reply; the executor, when the request can never be answered (sent to
// an actor that terminated first, dropped at a stop, its receiver panicked
// or terminated without replying); or the requester giving up (its
// context ended, or its timeout fired). Whatever comes later is counted as
// a late reply and dropped: a reply never blocks and never leaks.

// Asked is the executor's part of a request message: its reply target
// (embedded in Request). Its zero value is a request nobody
// waits for (sent with a plain Send): Reply then returns ErrNoRequester.
type Asked[R any] struct {
	// t is the reply target of the current request. Written by the
	// requester before the send that publishes it (the mailbox lock
	// orders the write before the receiver's reads), read by the receiving
	// behaviour (Reply) and by the worker that drops the message.
	t *askTarget[R]
}

func (a *Asked[R]) asked() *Asked[R] { return a }

// Request is embedded, by value, in every request message type, R being the
// reply type (actor.Request is this type):
//
//	type GetBalance struct {
//		actor.Request[int]
//		Account string
//	}
//
// A request is a message (Request embeds Message) that the receiving
// behaviour answers with Reply.
type Request[R any] struct {
	Message
	Asked[R]
}

// RequestPtr is satisfied by a pointer to a request type: a struct that
// embeds Asked[R] (through actor.Request[R]), whose reply type is R.
type RequestPtr[T, R any] interface {
	*T
	asked() *Asked[R]
}

// Reply answers the request with v. The requester receives it (Ask returns
// it; AskAsync delivers it as a *Reply[R] message). Errors: ErrNoRequester
// (the request was sent with a plain Send), ErrReplied (it was answered
// already, the requester gave up, or the executor failed it when the actor
// that kept it ended: the reply is counted as late and dropped). It never
// blocks.
func (a *Asked[R]) Reply(v R) error {
	t := a.t
	if t == nil {
		return ErrNoRequester
	}
	if !t.complete(v, nil, false) {
		t.e.lateReplies.Add(1)
		return ErrReplied
	}
	return nil
}

// Fail answers the request with the error err instead of a value: Ask
// returns (the zero R, err), and AskAsync and AskFunc deliver err, as it
// is, so that the requester can test it with errors.Is and errors.As.
// Errors as for Reply. It panics if err is nil (answer with Reply).
func (a *Asked[R]) Fail(err error) error {
	if err == nil {
		panic("executor: Fail with a nil error (use Reply)")
	}
	t := a.t
	if t == nil {
		return ErrNoRequester
	}
	var zero R
	if !t.complete(zero, err, false) {
		t.e.lateReplies.Add(1)
		return ErrReplied
	}
	return nil
}

// undeliverable is implemented by every request type (promoted from
// Asked) and by *Failure: the executor calls it when it drops a message
// whose sender waits for an answer that can then never come (a reply, a
// supervisor's decision).
type undeliverable interface{ undelivered(err error) }

func (a *Asked[R]) undelivered(err error) {
	if t := a.t; t != nil {
		var zero R
		t.complete(zero, err, false)
	}
}

// dropped tells a dropped message's requester, if it is a request, that it
// will never be answered, and a periodic timer that its firing was dropped.
// It must be called once for each envelope dropped undelivered, and never
// for one whose behaviour ran, unless it is a request.
func dropped(msg any, err error) {
	if u, ok := msg.(undeliverable); ok && erased.Data(msg) != nil {
		u.undelivered(err)
	} else if t, ok := msg.(*periodicTick); ok {
		t.lost() // a periodic timer's firing: the next one may be sent
	}
}

// Reply is the message that delivers the answer to an AskAsync: the reply value, or the error that ended the request
// (ErrTerminated, ErrStopped, context.DeadlineExceeded for a timeout).
type Reply[R any] struct {
	Message
	Value R
	Err   error
}

// askTarget is one request's reply target.
type askTarget[R any] struct {
	// done is set (CAS false -> true) by whoever completes the request:
	// the replier, the executor dropping it, or the requester giving up.
	done atomic.Bool
	e    *Executor
	ch   chan askResult[R] // Ask: the asker waits here (capacity 1: never blocks)
	port Port[*Reply[R]]   // AskAsync: the requesting actor's reply behaviour
	fn   func(R, error)    // AskFunc: the completion function
	tm   Timer             // AskAsync: its timeout, if any
	rep  Reply[R]          // AskAsync: the reply message (one allocation with the target)
	h    reqHold           // the incarnation the request was sent to (see held.go)
}

type askResult[R any] struct {
	v   R
	err error
}

// complete completes the request with (v, err) if nobody did yet, and
// reports whether it did. Only the timeout's own firing passes fired: then
// tm, which AskAsync may still be writing, is not read (the timer is over
// anyway); every other completer is ordered after that write by the send
// that published the request.
func (t *askTarget[R]) complete(v R, err error, fired bool) bool {
	if !t.done.CompareAndSwap(false, true) {
		return false
	}
	t.e.askDone()
	if t.ch != nil {
		t.ch <- askResult[R]{v, err}
		return true
	}
	if !fired {
		t.tm.Stop()
	}
	if t.fn != nil {
		t.call(v, err)
		return true
	}
	t.rep.Value, t.rep.Err = v, err
	if t.port.Send(&t.rep) != nil {
		t.e.lateReplies.Add(1) // the requesting actor is gone
	}
	return true
}

// call runs the AskFunc function f. A panic in f is recovered and recorded
// (an error of Stop, passed to Config.OnError) instead of unwinding
// whoever completed the request: the replying behaviour, the timer
// goroutine, or a worker dropping the request (inside its own recovery
// from a panicking behaviour, where it would kill the process).
func (t *askTarget[R]) call(v R, err error) {
	defer func() {
		if r := recover(); r != nil {
			id := -1
			if w := t.e.current(); w != nil {
				id = w.id
			}
			t.e.recordPanic(&PanicError{Value: r, Stack: debug.Stack(), Worker: id, fn: "AskFunc function"})
		}
	}()
	t.fn(v, err)
}

// timedOut completes the request with context.DeadlineExceeded (its
// timeout fired).
func (t *askTarget[R]) timedOut() {
	var zero R
	if t.complete(zero, context.DeadlineExceeded, true) {
		t.e.asksTimedOut.Add(1)
	}
}

// timerStopped completes the request with ErrStopped: its system stopped
// before its timeout fired, and nothing else would end it (a request its
// receiver kept without answering).
func (t *askTarget[R]) timerStopped() {
	var zero R
	t.complete(zero, ErrStopped, true)
}

// askSpins bounds how many times Ask polls for the reply before blocking.
const askSpins = 2000

// Ask sends req through to and waits for the reply, or for ctx to end. It
// must not be called from a behaviour (ErrAskInBehaviour): a worker must
// never block waiting for another actor; behaviours use AskAsync instead.
//
// Errors: the send's errors (ErrNotSpawned, ErrTerminated, ErrStopped);
// ErrTerminated if the actor terminates before the request is delivered,
// or in the behaviour that receives it, without replying or forwarding it
// through a port (see "Message lifetime" in deliver.go); the *PanicError
// (ErrPanic) if that behaviour panics; the error given to Fail;
// ErrStopped if its system stops before the request is delivered; ctx.Err()
// if ctx ends first (a reply after that is counted as late and dropped). A
// request that a behaviour keeps, to reply later, is ended by its reply,
// by ctx, or by the end of the actor that keeps it (ErrTerminated, after
// its Stopped hook), a restart of that actor (ErrTerminated), or a Stop
// (ErrStopped): see held.go. No goroutine is created per request.
//
// Callers that help: if the worker that serves the actor's mailbox is
// parked when Ask sends, or parks while Ask waits with the request still
// queued, the calling goroutine delivers the request itself, as that
// worker (see help.go), instead of waking it: the behaviour runs on the
// caller's goroutine, in a behaviour in every respect (InBehaviour,
// ErrAskInBehaviour, panics and supervision, statistics), with the
// messages queued before the request delivered first, in order. This
// holds for plain actors and for extended actors without a private queue
// (watched, passivating, with hooks, Resume or Terminate supervision);
// a bounded or Restart- or Escalate-supervised actor's messages are
// delivered by the worker. The caller stops once the request is complete
// (or ctx ends, or after a bounded number of deliveries) and leaves the
// rest to the worker, which also runs, instead of the caller, every
// termination and its hooks, an extended actor's hooks, supervision (a
// panic out of an extended actor's behaviour the caller ran is recovered
// by the worker, which then fails the request) and watchers' notices. Differences
// for the caller: ctx is noticed between behaviours, so a behaviour the
// caller runs delays Ask's return by its own length even if ctx ends
// meanwhile; a runtime.Goexit in that behaviour ends the calling goroutine
// (the actor's end or supervision proceeds as on a worker); the goroutine is not
// locked to an OS thread, so a behaviour that needs its worker's thread
// (runtime.LockOSThread, thread-local state) must not rely on it; and a
// behaviour that blocks until the asker has gone on deadlocks it (a
// behaviour must not block anyway: it holds a worker). Config.NoCallerHelp
// turns helping off.
func Ask[TR, R any, Req RequestPtr[TR, R]](ctx context.Context, to Port[Req], req Req) (R, error) {
	var zero R
	if req == nil {
		panic("executor: Ask with a nil request")
	}
	if runningWorker() != nil { // first: misuse is reported whatever the port
		return zero, ErrAskInBehaviour
	}
	if to.cell == nil {
		return zero, ErrNotSpawned
	}
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	e := to.cell.executor()
	t := &askTarget[R]{e: e, ch: make(chan askResult[R], 1)}
	req.asked().t = t
	e.askStarted()
	var lent *worker
	var lentMb *mailbox
	helps := e.helps()
	if helps {
		lent, lentMb = lendFor(to.cell) // H1 (see help.go)
	}
	if err := to.Send(req); err != nil {
		if lent != nil {
			lent.giveBack()
		}
		if t.done.CompareAndSwap(false, true) {
			e.askDone()
		}
		return zero, err
	}
	if lent != nil {
		// H3, H4: serve the request's mailbox as its parked owner, until
		// the request is complete or ctx ends.
		lent.serveLent(lentMb, &helpStop{done: &t.done, ctx: ctx.Done(), left: helpBudget})
	}
	// Spin briefly before blocking: a reply that comes within a few
	// microseconds then finds this goroutine running, and costs no thread
	// wake-up on either side (the worker that replied is still spinning
	// when the next request comes).
	//
	// A caller that could not help when it sent (the owner was awake, or
	// lent to another caller) looks again now and then while it spins:
	// the owner may have gone back to sleep with the request still queued
	// (a helping caller that stopped at its own reply gives it back with
	// the rest of its mailbox), and serving it here saves the owner's
	// wake-up (see "late help" in help.go).
	for i := 0; i < askSpins; i++ {
		select {
		case r := <-t.ch:
			return r.v, r.err
		default:
		}
		if helps && lent == nil && i%lateHelpEvery == lateHelpEvery-1 {
			if o, mb := lendLate(to.cell); o != nil {
				lent = o
				o.serveLent(mb, &helpStop{done: &t.done, ctx: ctx.Done(), left: helpBudget})
			}
		}
	}
	select {
	case r := <-t.ch:
		return r.v, r.err
	case <-ctx.Done():
	}
	if t.done.CompareAndSwap(false, true) {
		e.askDone()
		e.asksTimedOut.Add(1)
		return zero, ctx.Err()
	}
	r := <-t.ch // completed just as ctx ended: take the answer
	return r.v, r.err
}

// AskAsync sends req through to without waiting: the reply, or the error
// that ends the request, arrives later as a *Reply[R] message through
// replyTo (usually a port of the requesting actor's own reply behaviour).
// With timeout > 0, if no reply came within timeout, the Reply carries
// context.DeadlineExceeded, and a later reply is counted as late. It never
// blocks, so behaviours use it where goroutines use Ask; any goroutine may.
// The Reply is sent through replyTo like any message: a bounded mailbox's
// overflow policy applies to it (refused under Reject: counted in
// Stats.LateReplies; dropped under DropNewest: counted as dropped).
//
// Errors: ErrNotSpawned for the zero replyTo port (the reply would have
// nowhere to go: req is not sent); the send's errors. Then nothing is
// delivered to replyTo.
func AskAsync[TR, R any, Req RequestPtr[TR, R]](to Port[Req], req Req, replyTo Port[*Reply[R]], timeout time.Duration) error {
	if replyTo.cell == nil && req != nil { // a nil req panics in askLater
		return fmt.Errorf("%w: AskAsync with the zero replyTo port", ErrNotSpawned)
	}
	return askLater(to, req, &askTarget[R]{port: replyTo}, timeout)
}

// askLater sends a request whose target t completes it later (AskAsync,
// AskFunc), with an optional timeout.
func askLater[TR, R any, Req RequestPtr[TR, R]](to Port[Req], req Req, t *askTarget[R], timeout time.Duration) error {
	if req == nil {
		panic("executor: AskAsync or AskFunc with a nil request")
	}
	if to.cell == nil {
		return ErrNotSpawned
	}
	e := to.cell.executor()
	t.e = e
	req.asked().t = t
	e.askStarted()
	if timeout > 0 {
		t.tm = e.afterTimeout(timeout, t)
	}
	if err := to.Send(req); err != nil {
		if !t.done.CompareAndSwap(false, true) {
			// Someone completed the request during the failing send: its
			// timeout (context.DeadlineExceeded), or the termination of
			// a supervised or bounded actor that dropped it once queued.
			// That reported the request's end; it is reported once.
			return nil
		}
		e.askDone()
		t.tm.Stop()
		return err
	}
	return nil
}

// AskFunc sends req through to without waiting; f is called exactly once
// with the reply, or with the error that ends the request (as for
// AskAsync, including context.DeadlineExceeded after timeout > 0). f runs
// on whichever goroutine completes the request: the worker of the
// replying behaviour (inside its Reply call), the timer goroutine, or the
// worker that drops the request. It must therefore be quick and must not
// block: hand the result to a channel with room, a port, or a network
// write. It is for bridges to the world outside the actors (a network
// server answering remote requests, for one); actors use AskAsync. A
// panic in f is recovered and recorded like a behaviour's (a *PanicError
// among Stop's errors, passed to Config.OnError); it does not affect the
// goroutine that called f.
//
// A request that a behaviour keeps, to reply later, is ended by its reply,
// by the timeout, or by the end or restart of the actor that keeps it
// (ErrTerminated) or a Stop (ErrStopped), as for Ask: f is called then.
//
// Errors: the send's errors; then f is not called.
func AskFunc[TR, R any, Req RequestPtr[TR, R]](to Port[Req], req Req, timeout time.Duration, f func(R, error)) error {
	if f == nil {
		panic("executor: AskFunc with a nil function")
	}
	return askLater(to, req, &askTarget[R]{fn: f}, timeout)
}

// askStarted and askDone count a request begun and ended. On a worker they
// are plain increments of its private counters (published with its other
// statistics); elsewhere, atomic adds to the executor's external counters.
// Stats.AsksPending is their difference, so the two sides of a request
// never write a shared cache line.
func (e *Executor) askStarted() {
	if w := e.current(); w != nil {
		w.st.asksStarted++
	} else {
		e.extAsksStarted.Add(1)
	}
}

func (e *Executor) askDone() {
	if w := e.current(); w != nil {
		w.st.asksDone++
	} else {
		e.extAsksDone.Add(1)
	}
}
