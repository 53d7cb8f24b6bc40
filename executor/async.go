package executor

import "runtime/debug"

// Go runs f on a new goroutine, off the workers, and delivers its result as
// a *Reply[R] message through replyTo: the way for a behaviour to do
// blocking work (I/O, a system call, a lock held elsewhere) without holding
// its worker's thread. A panic in f is recovered and delivered as the
// Reply's Err (a *PanicError, with Worker -1), and so is a call of
// runtime.Goexit in f (PanicError.Goexit). If replyTo's actor has terminated by then,
// the result is dropped and counted in Stats.LateReplies. The Reply
// arrives like any message to the actor: after the messages sent to it
// before, and never concurrently with its other behaviours.
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
			if !returned {
				p := recover() // nil for runtime.Goexit, which goes on after this function
				r.Value, r.Err = *new(R), &PanicError{Value: p, Goexit: p == nil, Stack: debug.Stack(), Worker: -1, fn: "Go function"}
			}
			if replyTo.Send(&r) != nil {
				e.lateReplies.Add(1)
			}
		}()
		r.Value, r.Err = f()
		returned = true
	}()
	return nil
}
