package executor

import "time"

// Deferred wake-ups: no wake-up for a worker that would find no processor.
//
// A goroutine outside the system that sends to the actors (a producer, a
// driver, a consumer of a queue) runs on a processor of its own. When its
// push finds the mailbox's owner parked, the sender's half of the wake-up
// protocol (P4 in park.go) would wake the owner; but if every other
// processor is held by an awake worker, the woken worker's goroutine waits
// in the sender's run queue until the sender yields or is preempted, then
// takes the sender's processor (its thread locked, the runtime hands the
// processor over), and the sender waits in turn for a worker to park. The
// producer, the one goroutine that all the work comes from, stalls for
// milliseconds at a time, and the workers take turns at the pace of those
// hand-overs.
//
// So a sender outside the system whose push finds the owner o parked, while
// fewer processors (GOMAXPROCS at Start) than the awake workers plus two
// exist (the sender's, and one for o), and while some worker is awake,
// leaves the wake-up to the awake workers: it sets o's deferred flag
// instead of waking o, and the awake worker that clears the flag serves
// o's mailboxes (serveDeferred) at the end of its pass, or after a mailbox
// visit during the pass if deferLookEvery has passed since it last looked,
// as if it had been handed them (see handoff.go: the mailboxes stay in o's slots, and the
// processing bit keeps each on one worker at a time). A push that finds the
// flag already set does nothing more: the flag's clearing, which comes
// after its push, is followed by the serving. With processors to spare the
// owner is woken as before, and so it is without a watcher (stealing off,
// or a negative ParkTimeout): the watcher is what rescues a deferred
// mailbox whose helper is stuck in a long behaviour (it wakes a sleeper,
// which serves the mailbox at the end of its pass if it is not the owner).
//
// The helper wakes o after all (P4 on the senders' behalf) when it finds
// one of o's mailboxes holding helpBacklog envelopes or more (it falls
// behind the producer, and o's processor time is worth the hand-over), and
// when it has work of its own waiting while a processor is idle (the
// runtime counts fewer running goroutines than processors: the producer
// has stopped, and o can run beside the helper). The flag also keeps
// senders that are behaviours from waking o (notify loads it first, to
// spare senders outside the system the identity lookup): a busy helper
// whose behaviours send to o's actors leaves them to its pass's end, where
// this rule wakes o.
//
// No wake-up is lost, by a Dekker pattern over sequentially consistent
// atomics, like the protocol's own (park.go): the sender sets the flag and
// counts it in Executor.deferred (D1) before it loads sleepers (D2), and
// wakes o itself if D2 finds every worker parked; a parking worker
// increments sleepers (S1) before its S3 re-check, which also loads
// Executor.deferred and, if a flag is set, leaves park to serve it. If D2
// found a worker not yet parked, that worker's S1 comes after D2, so its S3
// sees the count (or a helper has cleared the flag meanwhile, and serves).
// A flag set by a sender that then woke o (D2 saw every worker parked) is
// cleared by the next worker to end a pass: o itself, or another, which
// serves what o has not.
//
// A policy, like the handoff: the message is delivered either way.

// helpBacklog is the length at which a deferred mailbox makes its helper
// wake the owner (see above).
const helpBacklog = 1024

// deferLookEvery bounds how often a worker looks at the deferred flags in
// the middle of a pass (after a mailbox visit); it always looks at the end
// of a pass. A pass through mailboxes whose behaviours compute for long (a
// burst of tasks sent from outside, after which the sender waits) would
// otherwise keep the owners asleep, and their mailboxes unserved, until it
// ended.
const deferLookEvery = 100 * time.Microsecond

// longBatchDelivs is the most deliveries a worker may have made since its
// last look at the deferred flags (deferLookEvery or more before) for its
// batch to count as one of long behaviours (see wakeDeferred).
const longBatchDelivs = 8

// deferLookDelivs is how many deliveries apart drainBatch calls
// wakeDeferred while deferred flags are set; a power of two.
const deferLookDelivs = 4

// deferWake is called by a sender outside the system (notify) whose push
// found mb's owner o parked; it reports true if the wake-up is left to an
// awake worker (D1, D2 above), false if the caller must wake o.
func (e *Executor) deferWake(o *worker) bool {
	n := int32(len(e.workers))
	awake := n - e.sleepers.Load()
	if awake == 0 || awake+2 <= e.procs {
		return false // nobody to serve it, or a processor for o
	}
	if !o.deferred.Swap(true) { // D1
		e.deferred.Add(1)
	}
	return e.sleepers.Load() != n // D2: a worker not parked yet will see D1
}

// wakeDeferred applies, between two deliveries of a batch of long
// behaviours, serveDeferred's rule for a helper with work of its own while
// a processor is idle: at most every deferLookEvery, if the worker
// delivered at most longBatchDelivs messages since it last looked (its
// behaviours take deferLookEvery/longBatchDelivs or more each) and the
// runtime counts fewer running goroutines than processors, it clears the
// deferred flags of the other workers and wakes those still parked (P4 on
// the deferring senders' behalf). Otherwise it leaves the flags for the
// end of the visit, where serveDeferred may also serve the mailboxes
// (which a worker in the middle of a batch cannot). Why: a batch of long
// behaviours (tasks sent from outside, such as the rows of a matrix
// product) would otherwise keep the owners asleep until it ends, even after
// the sender has stopped and left a processor idle for them. Batches of
// short behaviours (a producer's flood) are left alone: there a moment
// with fewer goroutines running is the producer between two time slices,
// and a woken owner would take its processor (docs/design.md, "Deferred
// wake-ups looked at during long batches").
// Called by the worker's goroutine, in drainBatch, every deferLookDelivs
// deliveries while Executor.deferred is not 0 (so that short behaviours
// do not pay a clock read each).
func (w *worker) wakeDeferred() {
	e := w.e
	now := time.Since(e.epoch)
	if now-w.deferLook < deferLookEvery {
		return
	}
	w.deferLook = now
	n := w.delivs - w.deferDelivs
	w.deferDelivs = w.delivs
	if n > longBatchDelivs || runningGoroutines(&w.running) >= uint64(e.procs) {
		return
	}
	for _, o := range e.workers {
		// An owner awake serves its own mailboxes (as in serveDeferred).
		if o != w && o.takeDeferred() && o.state.Load() == workerParked {
			o.wake()
		}
	}
}

// takeDeferred clears o's deferred flag, if set, and its count in
// Executor.deferred, and reports whether it did: the caller then owes the
// deferring senders o's wake-up, or the serving of o's mailboxes.
func (o *worker) takeDeferred() bool {
	if !o.deferred.Load() || !o.deferred.Swap(false) {
		return false
	}
	o.e.deferred.Add(-1)
	return true
}

// serveDeferred clears the deferred flags it finds set and serves the
// mailboxes of their workers that still sleep (see above), waking those
// workers instead where a mailbox holds a backlog, or all of them when w
// has work of its own while a processor is idle. It returns the number of
// mailboxes it processed. Called by the worker's goroutine, when
// Executor.deferred is not 0, at the end of a pass and after a mailbox
// visit at most every deferLookEvery (see pass).
func (w *worker) serveDeferred() int {
	e := w.e
	served := 0
	wakeOwners := -1 // not known yet; 1: wake the owners rather than serve
	for _, o := range e.workers {
		if !o.takeDeferred() {
			continue
		}
		// o awake (or w itself) serves its own mailboxes: its next pass,
		// or its S3 re-check before it parks, comes after the pushes that
		// set the flag.
		if o == w || o.state.Load() != workerParked {
			continue
		}
		if wakeOwners < 0 {
			wakeOwners = 0
			if w.hasWork() && runningGoroutines(&w.running) < uint64(e.procs) {
				wakeOwners = 1
			}
		}
		if wakeOwners == 1 {
			o.wake() // P4 for the senders that deferred
			continue
		}
		for i := o.lo; i < o.hi; i++ {
			mb := e.slots[i].Load() // nil only during a swap
			if mb == nil {
				continue
			}
			// Settled: a sender that found the flag set relies on this
			// look at its envelope (see park.go, P1).
			word := mb.settled()
			if wordLen(word) == 0 || word&wordProcessing != 0 {
				continue // empty, or a worker has it (its release hands back the rest)
			}
			if wordLen(word) >= helpBacklog {
				o.wake() // P4 for the senders that deferred
				break
			}
			if w.visit(mb) {
				served++
			}
		}
	}
	w.st.DeferredServes += uint64(served)
	return served
}
