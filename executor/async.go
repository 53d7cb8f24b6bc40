package executor

import (
	"runtime/debug"
	"sync/atomic"
)

// Go runs f on a new goroutine, off the workers, and delivers its result as
// a *Reply[R] message through replyTo: the way for a behaviour to do
// blocking work (I/O, a system call, a lock held elsewhere) without holding
// its worker's thread. A panic in f is recovered and delivered as the
// Reply's Err (a *PanicError, with Worker -1), and so is a call of
// runtime.Goexit in f (PanicError.Goexit). If replyTo's actor has terminated by then,
// the result is dropped and counted in Stats.LateReplies. The Reply
// arrives like any message to the actor: after the messages sent to it
// before, and never concurrently with its other behaviours. When f has
// returned and replyTo's worker is parked, the goroutine that ran f
// delivers the Reply itself, as that worker (handBack; Config.NoCallerHelp
// turns it off).
//
// Error: ErrNotSpawned for a zero port (f is not run).
func Go[R any](replyTo Port[*Reply[R]], f func() (R, error)) error {
	if f == nil {
		panic("executor: Go with a nil function")
	}
	if replyTo.cell == nil {
		return ErrNotSpawned
	}
	e := replyTo.cell.executor()
	go func() {
		var r Reply[R]
		returned := false
		// Deferred, so that it also runs when f panics or calls
		// runtime.Goexit (t.FailNow in a test, say): the Reply is sent
		// whichever way f ends.
		defer func() {
			if returned {
				return // handed back below
			}
			p := recover() // nil for runtime.Goexit, which goes on after this function
			r.Value, r.Err = *new(R), &PanicError{Value: p, Goexit: p == nil, Stack: debug.Stack(), Worker: -1, fn: "Go function"}
			if replyTo.Send(&r) != nil {
				e.lateReplies.Add(1)
			}
		}()
		r.Value, r.Err = f()
		returned = true
		handBack(e, replyTo, &r)
	}()
	return nil
}

// handBack sends the Reply of a Go function that returned. Its goroutine
// has nothing left to do, so it is a caller that helps (see help.go): if
// the owner of replyTo's mailbox sleeps, it lends it (H1) before the send,
// and after the send serves that mailbox as the owner (H3, H4), at most
// helpBudget deliveries, rather than paying the owner's wake-up. The
// Reply's behaviour, and the ones queued with it, then run on this
// goroutine exactly as a helped Ask's do; a behaviour that calls
// runtime.Goexit ends this goroutine, which was ending anyway.
func handBack[R any](e *Executor, replyTo Port[*Reply[R]], r *Reply[R]) {
	var lent *worker
	var mb *mailbox
	if e.helps() {
		lent, mb = lendFor(replyTo.cell)
	}
	if err := replyTo.Send(r); err != nil {
		if lent != nil {
			lent.giveBack()
		}
		e.lateReplies.Add(1)
		return
	}
	if lent != nil {
		// No completion to wait for: done stays false, and the visit
		// ends at the batch's end or the budget.
		var never atomic.Bool
		lent.serveLent(mb, &helpStop{done: &never, left: helpBudget})
	}
}
