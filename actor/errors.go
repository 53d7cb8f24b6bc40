package actor

import "github.com/actord/actord/executor"

// Errors returned by this package; they are the executor's sentinels, so
// errors.Is works with either name.
var (
	ErrConfig          = executor.ErrConfig
	ErrNotStarted      = executor.ErrNotStarted
	ErrStopped         = executor.ErrStopped
	ErrNotSpawned      = executor.ErrNotSpawned
	ErrAlreadySpawned  = executor.ErrAlreadySpawned
	ErrTerminated      = executor.ErrTerminated
	ErrUndelivered     = executor.ErrUndelivered
	ErrActorsAlive     = executor.ErrActorsAlive
	ErrStopInBehaviour = executor.ErrStopInBehaviour
	ErrPanic           = executor.ErrPanic
	ErrAskInBehaviour  = executor.ErrAskInBehaviour
	ErrNoRequester     = executor.ErrNoRequester
	ErrReplied         = executor.ErrReplied
	ErrMailboxFull     = executor.ErrMailboxFull

	ErrIncarnationsExhausted = executor.ErrIncarnationsExhausted
)

// MaxIncarnations is how many times one actor value can be spawned (see
// Spawn): after that, Spawn returns ErrIncarnationsExhausted.
const MaxIncarnations = executor.MaxIncarnations

// PanicError reports a behaviour, hook or function that panicked or called
// runtime.Goexit; the worker and every other actor went on. It is the
// error of an ask whose behaviour panicked, is passed to
// WithErrorHandler's function, is joined in Stop's error when the panic
// terminated its actor, is Failure.Err and Terminated.Err. Its fields:
//
//	Actor   any    // the actor whose behaviour or hook panicked; nil for a message's hook, a Go or AskFunc function
//	Message any    // the message being delivered
//	Value   any    // the value passed to panic (nil for runtime.Goexit)
//	Goexit  bool   // it called runtime.Goexit
//	Stack   []byte // the goroutine's stack at the panic
//	Worker  int    // the worker that recovered it; -1 off the workers
//
// and its methods: Error (the message names what panicked, the actor and
// message types, the worker and the value), Is (errors.Is(err, ErrPanic)
// is true for every PanicError) and Unwrap (the panic value when it is an
// error).
type PanicError = executor.PanicError
