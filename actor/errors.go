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

// PanicError reports a behaviour that panicked; see executor.PanicError.
type PanicError = executor.PanicError
