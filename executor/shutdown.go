package executor

import (
	"context"
	"time"
)

// Shutdown: the stop that stops the actors first.
//
// Shutdown asks every live actor to stop with the stop pill, a pill of
// status stopStatus that the actor receives after the messages queued for
// it before the pill (a pill is queued past a bounded mailbox's bound and
// never dropped). Its termination is every termination's (terminate,
// terminateExt): on the actor's worker, never beside its behaviours, with
// its Stopped hook and its watchers told ReasonStopped and neither Destroy
// nor Release run, as at a forced Stop; the messages queued after the
// pill are dead letters, as after any end.
//
// The actors stop in waves: those that no live actor names as its
// supervisor (WithEscalate) first, then their supervisors, and so on, each
// wave waited for before the next, so that a supervisor is still there to
// decide the failures of the actors it supervises while they stop. Within
// a wave the actors end concurrently, in no set order. Then the executor
// stops as Stop does.

// stopStatus is the status of the stop pill: the actor terminates as with
// Finished (no Destroy, no Release), with ReasonStopped for its Stopped
// hook and its watchers. No behaviour of a user returns it.
const stopStatus Allocation = 64

// stopPill is the pill Shutdown sends. One pill serves every actor (a pill
// is never written). A stop pill that finds its actor terminated (it ended
// by itself meanwhile) is a dead letter in Stats, but not in Stop's
// ErrUndelivered error (see noteDead): Shutdown sent it, not the program.
var stopPill = &Pill{status: stopStatus}

// Shutdown stops every live actor, then the executor. See the package
// documentation of actor (System.Shutdown) for the promise.
func (e *Executor) Shutdown(ctx context.Context) error {
	if e == nil || e.stop.done == nil {
		return ErrNotStarted
	}
	if e.inBehaviour() || e.timers.inFiring() {
		return ErrStopInBehaviour
	}
	if r := e.stop.runner.Load(); r != 0 && r == selfID() {
		return ErrStopInBehaviour // a hook that the stop itself runs
	}
	if !e.stop.started.Load() {
		e.stopActors(ctx)
	}
	return e.Stop(ctx)
}

// liveKey names one incarnation.
type liveKey struct {
	c   *Cell
	inc uint32
}

// stopActors sends the stop pill to every live actor, wave by wave (see
// above), until none is alive or ctx ends.
func (e *Executor) stopActors(ctx context.Context) {
	sent := map[liveKey]bool{}
	for ctx.Err() == nil && !e.stop.started.Load() {
		rs := e.liveActors()
		if len(rs) == 0 {
			return
		}
		// The incarnations that supervise a live actor.
		sups := map[liveKey]bool{}
		for i := range rs {
			if x := rs[i].c.ext.Load(); x != nil && x.inc == rs[i].inc && x.supervisor.cell != nil {
				sups[liveKey{x.supervisor.cell, incOf(x.supervisor.word())}] = true
			}
		}
		var wave, waiting []liveRec
		for _, r := range rs {
			k := liveKey{r.c, r.inc}
			switch {
			case sent[k]:
				waiting = append(waiting, r)
			case !sups[k]:
				wave = append(wave, r)
			}
		}
		if len(wave) == 0 && len(waiting) == 0 {
			wave = rs // supervisors of one another only: all of them
		}
		for _, r := range wave {
			sent[liveKey{r.c, r.inc}] = true
			// An actor already ending refuses it: it is waited for all
			// the same.
			send(r.c, 0, 1, r.inc|cellAlive|cellPlain, pillFn, stopPill)
		}
		e.waitEnded(ctx, append(waiting, wave...))
	}
}

// waitEnded waits until none of rs is alive or ending, or ctx ends. It
// looks at their state words at growing intervals (50µs to 5ms).
func (e *Executor) waitEnded(ctx context.Context, rs []liveRec) {
	d := 50 * time.Microsecond
	for {
		alive := false
		for i := range rs {
			if rs[i].alive() {
				alive = true
				break
			}
		}
		if !alive {
			return
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		d = min(2*d, 5*time.Millisecond)
	}
}
