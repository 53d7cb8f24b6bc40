package actor

import (
	"time"

	"github.com/actord/actord/executor"
	"github.com/actord/actord/internal/erased"
)

// Timer is a handle on a timer set by SendAfter or SendEvery; its one
// method,
//
//	func (t Timer) Stop() bool
//
// cancels the timer and reports whether it was still pending. When
// Stop returns true, the timer delivers nothing afterwards (a periodic timer
// included). A Timer is a small value; the zero Timer is no timer (Stop
// returns false), so an actor can keep one in a field and stop it
// unconditionally.
//
// Timers cost no goroutine and no time.Timer each: every system keeps its
// pending timers in one structure, driven by one goroutine started with the
// first timer and ended by Stop. A timer that fires, is stopped or is dropped
// keeps no reference to its message.
type Timer = executor.Timer

// ErrBadPeriod is returned by SendEvery for a period that is not positive.
var ErrBadPeriod = executor.ErrBadPeriod

// SendAfter sends msg through the port p once d has passed, unless the
// returned Timer is stopped first:
//
//	t, err := actor.SendAfter(port, 5*time.Second, &Expire{})
//	...
//	t.Stop() // no longer needed
//
// At that time the message is sent as by p.Send: if the actor's incarnation
// has terminated by then, the system has stopped, or the actor's bounded
// mailbox is full under the Reject policy, nothing is delivered and the
// firing is counted as a dead letter (System.Stats: TimersDead). The
// message belongs to the timer until it fires, then to the receiving
// behaviour, as with Send. Timers with equal deadlines fire in no
// particular order. With d <= 0 it sends at once and returns the zero Timer.
// It never blocks for long and may be called from behaviours.
//
// Errors: ErrNotSpawned (a zero Port), ErrTerminated (the port's actor has
// terminated), ErrStopped (its system has stopped or is stopping).
func SendAfter[M any](p Port[M], d time.Duration, msg M) (Timer, error) {
	if erased.Data(msg) == nil {
		panic("actor: SendAfter with a nil message")
	}
	return executor.SendAfter(p, d, msg)
}

// SendEvery sends msg through the port p every period, the first time after
// one period, until the returned Timer is stopped, the port's actor
// terminates (the first firing that finds it terminated is counted as a dead
// letter and cancels the timer) or the system stops; a firing that a full
// bounded mailbox refuses (Reject) is a dead letter, and the timer goes on:
//
//	tick, err := actor.SendEvery(port, time.Second, &Tick{})
//	...
//	tick.Stop()
//
// The same message is delivered every time, so it must be safe to deliver
// repeatedly: the receiving behaviour must not set Delete or Destroy on it
// (SetAllocation), must not send it on, and should only read it. When the
// system is too busy for a firing to happen on time, it happens late and
// once: the periods missed meanwhile are skipped, not queued, and the
// schedule keeps its original phase. A firing that comes while the previous
// one is still queued (the actor is slower than the period) is skipped too:
// at most one firing waits in the mailbox, beside the one being delivered.
// Once the Timer's Stop has returned true, nothing more is delivered, not
// even a firing that was queued: that firing is counted in
// WorkerStats.TimersDiscarded, not processed, and in neither TimersFired nor
// TimersDead.
//
// Errors: ErrBadPeriod (period <= 0), and those of SendAfter.
func SendEvery[M any](p Port[M], period time.Duration, msg M) (Timer, error) {
	if erased.Data(msg) == nil {
		panic("actor: SendEvery with a nil message")
	}
	return executor.SendEvery(p, period, msg)
}
