package executor

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// Sentinel errors; test for them with errors.Is.
var (
	// ErrConfig: the configuration is invalid (for example fewer queues than workers).
	ErrConfig = errors.New("executor: invalid configuration")
	// ErrNotStarted: the system was never started (nil or zero value).
	ErrNotStarted = errors.New("executor: system not started")
	// ErrStopped: the system has been stopped.
	ErrStopped = errors.New("executor: system stopped")
	// ErrNotSpawned: the actor was never spawned.
	ErrNotSpawned = errors.New("executor: actor not spawned")
	// ErrAlreadySpawned: Spawn of an actor that is alive (or being spawned).
	ErrAlreadySpawned = errors.New("executor: actor already spawned")
	// ErrTerminated: send to an actor that has terminated.
	ErrTerminated = errors.New("executor: actor terminated")
	// ErrUndelivered: messages were sent but never delivered: sent to an
	// actor that terminated before receiving them, or still queued when the
	// system stopped.
	ErrUndelivered = errors.New("executor: messages undelivered")
	// ErrActorsAlive: Stop's context ended while actors were still alive.
	ErrActorsAlive = errors.New("executor: actors still alive")
	// ErrStopInBehaviour: Stop called from a behaviour, which could never
	// return (the calling actor is alive until its behaviour returns), or
	// from code the timer goroutine or the stop itself runs, which Stop
	// would wait for.
	ErrStopInBehaviour = errors.New("executor: Stop called from inside a behaviour")
	// ErrPanic: a behaviour or hook panicked (the error is a *PanicError).
	ErrPanic = errors.New("executor: behaviour panicked")
	// ErrAskInBehaviour: Ask called from a behaviour, where it would block
	// a worker; behaviours use AskAsync, whose reply arrives as a message.
	ErrAskInBehaviour = errors.New("executor: Ask called from inside a behaviour (use AskAsync)")
	// ErrNoRequester: Reply to a request that was sent with a plain Send,
	// so nobody waits for the answer.
	ErrNoRequester = errors.New("executor: request has no requester (sent without Ask, AskAsync or AskFunc)")
	// ErrReplied: Reply to a request that was answered already or whose
	// requester gave up; the reply was dropped and counted as late.
	ErrReplied = errors.New("executor: request already answered or abandoned")

	// ErrIncarnationsExhausted: Spawn of an actor value that has been
	// spawned MaxIncarnations times; it is never spawned again (so that no
	// port, timer or watch of an earlier incarnation can reach a later
	// one): spawn a new value instead.
	ErrIncarnationsExhausted = errors.New("executor: actor spawned its last incarnation")

	// ErrMailboxFull: a bounded actor's mailbox is full (SpawnOptions).
	ErrMailboxFull = errors.New("executor: mailbox full")
)

// PanicError reports a behaviour (or a hook: an actor's Started, Stopped,
// Destroy or Release, a Reset function, a message's Destroy or Release) that
// panicked or called runtime.Goexit. The worker and every other actor went on. A panic in
// a behaviour terminates its actor (without hooks); in an actor's hook, it
// completes that actor's termination; in a message's hook, it leaves the
// actor, whose behaviour completed, alive. It also reports a function run by
// Go that panicked or called runtime.Goexit (Actor and Message nil, Worker
// -1), as the Err of its Reply, and an AskFunc function that panicked (Actor
// and Message nil), as an error of Stop.
type PanicError struct {
	Actor   any    // the actor whose behaviour (or hook) panicked; nil when a message's hook panicked
	Message any    // the message being delivered
	Value   any    // the value passed to panic (nil for runtime.Goexit)
	Goexit  bool   // the behaviour called runtime.Goexit
	Stack   []byte // the goroutine's stack at the panic
	Worker  int    // the worker that recovered it; -1 off the workers (Go's functions, hooks run by Stop)

	fn   string // for a function given to Go or AskFunc: what it was
	hook string // for a hook: which one ("Started", "Stopped", "Reset", "Destroy", "Release"; "message" for a message's)
}

func (e *PanicError) Error() string {
	if e.fn != "" {
		if e.Goexit {
			return "executor: " + e.fn + " called runtime.Goexit"
		}
		return fmt.Sprintf("executor: %s panicked: %v", e.fn, e.Value)
	}
	if e.hook != "" {
		what := fmt.Sprintf("%s hook of %T", e.hook, e.Actor)
		if e.hook == "message" {
			what = fmt.Sprintf("Destroy or Release hook of message %T", e.Message)
		}
		if e.Goexit {
			return fmt.Sprintf("executor: %s called runtime.Goexit (worker %d)", what, e.Worker)
		}
		return fmt.Sprintf("executor: %s panicked (worker %d): %v", what, e.Worker, e.Value)
	}
	if e.Goexit {
		return fmt.Sprintf("executor: behaviour of %T called runtime.Goexit on message %T (worker %d)",
			e.Actor, e.Message, e.Worker)
	}
	return fmt.Sprintf("executor: behaviour of %T panicked on message %T (worker %d): %v",
		e.Actor, e.Message, e.Worker, e.Value)
}

// Is makes errors.Is(err, ErrPanic) true for every *PanicError.
func (e *PanicError) Is(target error) bool { return target == ErrPanic }

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	if err, ok := e.Value.(error); ok {
		return err
	}
	return nil
}

const maxKeptPanics = 64

// recordPanic stores a panic report for Stop and passes it to OnError.
func (e *Executor) recordPanic(err *PanicError) {
	e.keepPanic(err)
	if e.cfg.OnError != nil {
		e.callOnError(err)
	}
}

// keepPanic stores a panic report for Stop only: for a panic that OnError
// has already seen as handled (an escalated failure) and that terminated
// its actor after all.
func (e *Executor) keepPanic(err *PanicError) {
	e.errMu.Lock()
	if len(e.panics) < maxKeptPanics {
		e.panics = append(e.panics, err)
	}
	e.panicsN++
	e.errMu.Unlock()
}

// callOnError calls Config.OnError, recovering a panic in it (which would
// otherwise escape the worker's own recovery and end the process); that
// panic is recorded like any other.
func (e *Executor) callOnError(err *PanicError) {
	defer func() {
		if r := recover(); r != nil {
			e.errMu.Lock()
			if len(e.panics) < maxKeptPanics {
				e.panics = append(e.panics, &PanicError{Value: r, Stack: debug.Stack(), Worker: err.Worker,
					Actor: err.Actor, Message: err.Message})
			}
			e.panicsN++
			e.errMu.Unlock()
		}
	}()
	e.cfg.OnError(err)
}
