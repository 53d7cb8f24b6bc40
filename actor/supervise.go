package actor

import (
	"context"
	"time"

	"github.com/actord/actord/executor"
)

// SpawnOption chooses an actor's failure handling or flow control at
// Spawn. Options compose: one directive (the last given wins) and one
// mailbox bound.
type SpawnOption interface{ applySpawn(*executor.SpawnOptions) }

type spawnOption func(*executor.SpawnOptions)

func (f spawnOption) applySpawn(o *executor.SpawnOptions) { f(o) }

// Budget bounds restarts: at most MaxRestarts within a window of Within,
// with a pause of MinBackoff before the first restart of a window, doubled
// for each further one, capped at MaxBackoff. Each field's zero value is
// its default: MaxRestarts 0 means 10 and Within 0 one minute (so the zero
// Budget allows 10 restarts a minute), MinBackoff 0 no pause, MaxBackoff 0
// no cap. MaxRestarts NoRestarts allows none: the first panic terminates
// the actor (ReasonBudget); any other negative MaxRestarts allows any
// number. Spawn fails with ErrConfig for a negative duration, or a
// MaxBackoff other than 0 below MinBackoff.
type Budget struct {
	MaxRestarts            int
	Within                 time.Duration
	MinBackoff, MaxBackoff time.Duration
}

// NoRestarts, as Budget.MaxRestarts, allows no restart (MaxRestarts 0 is
// the default, 10): the first panic terminates the actor, with
// ReasonBudget, as past any budget.
const NoRestarts = executor.NoRestarts

// WithRestart restarts the actor when a behaviour panics: the failing
// message is dropped, reset (which may be nil: the state is kept) runs on
// the actor's worker to reset its state, its Started hook runs again, and
// it goes on with every message still queued for it, none lost, after the
// budget's backoff. Past the budget it terminates (ReasonBudget). A panic
// in the Started hook, at the spawn or after a restart, is not restarted:
// the actor terminates (ReasonPanic; see Starter).
func WithRestart(reset func(), b Budget) SpawnOption {
	return spawnOption(func(o *executor.SpawnOptions) {
		o.OnPanic, o.Reset = executor.Restart, reset
		o.MaxRestarts, o.Within, o.MinBackoff, o.MaxBackoff = b.MaxRestarts, b.Within, b.MinBackoff, b.MaxBackoff
	})
}

// WithResume keeps the actor going when a behaviour panics: the failing
// message is dropped (counted in Stats as Resumes), the state stays as the
// panic left it.
func WithResume() SpawnOption {
	return spawnOption(func(o *executor.SpawnOptions) { o.OnPanic = executor.Resume })
}

// WithEscalate hands each panic to a supervisor: the actor is suspended
// (its messages wait, in order) and supervisor receives a *Failure, whose
// Resume, Restart (running reset, which may be nil) or Stop method decides.
// If the supervisor cannot be sent to, or the Failure can never be decided
// (the supervisor's bounded mailbox drops it, or the supervisor terminates
// before deciding it), the actor terminates (ReasonPanic).
func WithEscalate(supervisor Port[*Failure], reset func()) SpawnOption {
	return spawnOption(func(o *executor.SpawnOptions) {
		o.OnPanic, o.Supervisor, o.Reset = executor.Escalate, supervisor, reset
	})
}

// WithMailbox bounds the messages queued for the actor (not counting the
// one being delivered) to bound; a send past it does what overflow says:
// Reject (the send returns ErrMailboxFull), DropNewest or DropOldest (the
// send succeeds and a message is dropped, counted in Stats; a dropped
// request's requester gets ErrMailboxFull). Sends never block; SendContext,
// from a goroutine that is not running a behaviour, waits for room instead.
// The bound is 1 to executor.MaxMailboxBound: Spawn fails with ErrConfig
// for any other (0 included).
func WithMailbox(bound int, overflow Overflow) SpawnOption {
	return mailboxOption{bound, overflow}
}

type mailboxOption struct {
	bound    int
	overflow Overflow
}

func (m mailboxOption) applySpawn(o *executor.SpawnOptions) {
	o.MailboxBound, o.Overflow = m.bound, m.overflow
}

// WithPassivation ends the actor once it has received no message for d
// (idle passivation): it terminates with ReasonPassivated, its Stopped hook
// runs (not Destroy nor Release, as for Finished), its watchers are told,
// and, for an entity, its name is free for the next incarnation. The
// actor is ended between d and 1.25·d after its last message (plus
// scheduling delays), and only in its own turn: a message sent to it
// before that decision, and accepted (Send returned nil), is delivered to
// it first, whatever its mailbox held; a send after it fails with
// ErrTerminated and queues nothing, as for any ended actor, so sending it
// again through an Entities (Get, EntityPort, EntitySend) reaches the
// next incarnation, exactly once.
//
// Behaviours need not do anything: the worker marks each delivery with a
// plain store, and one timer per actor, on the system's timer goroutine,
// sends it a check every d/4; an actor that received a message since the
// last check goes on. Spawn fails with ErrConfig for d <= 0. It composes
// with the other options; with WithMailbox, WithRestart or WithEscalate,
// an actor whose queued messages wait (a backoff, a pending escalation)
// is not idle.
func WithPassivation(d time.Duration) SpawnOption { return passivationOption(d) }

type passivationOption time.Duration

func (p passivationOption) applySpawn(o *executor.SpawnOptions) { o.IdleTimeout = time.Duration(p) }

// Overflow is what a send to a full bounded mailbox does (WithMailbox).
type Overflow = executor.Overflow

const (
	Reject     = executor.Reject     // the send fails with ErrMailboxFull
	DropNewest = executor.DropNewest // the new message is dropped, counted
	// DropOldest: the oldest queued message is dropped, counted; while a
	// pill that terminates the actor is queued, the new message is dropped
	// instead (it could only be a dead letter), counted as DropNewest.
	DropOldest = executor.DropOldest
)

// Failure is what an actor spawned WithEscalate sends its supervisor when a
// behaviour panics. Its field and methods:
//
//	Err *PanicError // the actor, the message it failed on (dropped), the panic value, the stack
//
//	func (f *Failure) Resume() error  // the actor goes on with its state
//	func (f *Failure) Restart() error // its reset function (WithEscalate's) and Started hook run, then it goes on
//	func (f *Failure) Stop() error    // it terminates (ReasonPanic)
//
// The actor is suspended (its messages wait, in order) until the
// supervisor decides with exactly one of them; each returns ErrReplied if
// the failure was decided already, ErrTerminated if the actor is gone. A
// Failure that can never be decided (dropped by the supervisor's bounded
// mailbox, still queued when the supervisor terminates, or received by a
// behaviour that terminates the supervisor without deciding) terminates
// the actor (ReasonPanic).
type Failure = executor.Failure

// Reason says why an actor terminated (see Terminated). Its String method
// gives "unknown", "normal", "panic", "budget_exhausted", "system_stopped"
// or "passivated": lower case, no spaces, usable as a Prometheus label
// value.
type Reason = executor.Reason

const (
	ReasonUnknown = executor.ReasonUnknown // terminated before the watch began, reason not recorded
	ReasonNormal  = executor.ReasonNormal  // a behaviour returned Delete, Destroy or Finished, or a pill
	ReasonPanic   = executor.ReasonPanic   // a panic under the Terminate directive (or in a hook), or Failure.Stop
	ReasonBudget  = executor.ReasonBudget  // more panics than the restart budget allows
	ReasonStopped = executor.ReasonStopped // its system's Stop context ended while it was alive
	// ReasonPassivated: it received no message for its WithPassivation
	// duration and was ended by its passivation.
	ReasonPassivated = executor.ReasonPassivated
)

// Terminated is the message a watcher receives, exactly once per watch,
// when the watched actor terminates (see Watch). Its fields:
//
//	Actor  any    // the terminated actor (the pointer that was spawned); nil when the watch began after the end and nothing recorded it
//	Reason Reason // why it terminated
//	Err    error  // the *PanicError of the last failure for ReasonPanic and ReasonBudget (when known), ErrStopped for ReasonStopped, else nil
type Terminated = executor.Terminated

// Starter is the Started hook of an actor type, a method
//
//	func (a *T) Started()
//
// It runs on the actor's worker before its first message, and again after
// each restart. A panic in it terminates the actor (ReasonPanic) whatever
// its spawn options, WithRestart included: a start that failed is not
// retried, and the messages queued for the actor are undelivered.
type Starter = executor.Starter

// Stopper is the Stopped hook of an actor type, a method
//
//	func (a *T) Stopped(why actor.Reason)
//
// It runs on the actor's worker when the actor terminates, for any reason,
// before Destroy and Release; at a Stop whose context ended, for an actor
// still alive, on a goroutine of Stop's, which waits for such hooks one
// second in all and leaves those still running to go on (see System.Stop). A method of another signature (Stopped()
// without the reason, say) is not the hook and is never called: assert the
// interface to catch that at compile time,
//
//	var _ actor.Stopper = (*T)(nil)
type Stopper = executor.Stopper

// Watch sends notify one *Terminated when the actor behind target (the
// incarnation it was bound to) terminates, or at once if it already has:
//
//	p, _ := actor.Bind(worker, (*Worker).OnJob)
//	watchPort, _ := actor.Bind(boss, (*Boss).OnTerminated)
//	actor.Watch(p, watchPort)
//
// The notice is a message like any other: if notify's actor has a bounded
// mailbox, its overflow policy applies to the notice too.
//
// Errors: ErrNotSpawned (a zero target, or a zero notify port);
// ErrTerminated (notify's actor has terminated, so it would never receive
// the notice).
func Watch[M any](target Port[M], notify Port[*Terminated]) error {
	return executor.Watch(target, notify)
}

// WatchChan is Watch for a goroutine: the channel receives the one
// *Terminated.
func WatchChan[M any](target Port[M]) (<-chan *Terminated, error) {
	return executor.WatchChan(target)
}

// SendContext is Send for a goroutine that may wait: when to's mailbox is
// bounded and full, it waits for room until ctx ends (then it returns an
// error wrapping ErrMailboxFull and ctx's cause), whatever the overflow
// policy. From inside a behaviour it never waits, since a blocked worker
// would hold up every actor of its queues, and may deadlock with the actor
// it waits for: it applies the overflow policy like Send. For unbounded
// actors it is Send. Port.SendContext does the same through a port.
//
// Errors, with the HTTP-style outcome each means (see Ask): ErrMailboxFull
// wrapping ctx's cause, busy (429 or 503), or timeout (504) when the
// cause is context.DeadlineExceeded: the mailbox stayed full until ctx
// ended (from a behaviour, under Reject: at once); ErrTerminated, gone
// (404): nothing was delivered; ErrStopped, unavailable (503);
// ErrNotSpawned, a programming error (500).
func SendContext[TA, TM any, A Ref[TA], M Msg[TM]](ctx context.Context, to A, msg M, behaviour func(A, M) Allocation) error {
	if to == nil || msg == nil || behaviour == nil {
		nilSend()
	}
	return executor.SendContext(ctx, to.actorCell(), to, msg, behaviour)
}
