package executor

import (
	"runtime"
	"sync/atomic"

	"github.com/actord/actord/internal/goid"
)

// Callers that help (a prototype, off unless helpCallers is set).
//
// A goroutine outside the system about to block in Ask for an actor whose
// mailbox's owner is parked serves that mailbox itself instead of paying
// the owner's wake-up (a thread wake-up, two for a worker sleeping on the
// channel). It does so as the owner: it borrows the parked worker whole.
//
//	H1  lend: CAS owner.state parked -> lent (before the request's send;
//	    a sender's P4 then finds the owner not parked and wakes nobody),
//	    only while the owner sleeps on the channel past its last private
//	    write (lendGen odd, the same value before and after the CAS: a CAS
//	    that took a later park's state, in its S3 or before its sleep, is
//	    undone untouched)
//	H2  the send (P1 for the request)
//	H3  serve: take the owner's identity (w.g, the lent table), gulp the
//	    target mailbox into the owner's buffer as a worker would
//	    (wordProcessing: if another worker processes it, nothing is
//	    served), and process it with the owner's processCurrent: one
//	    visit, its re-gulps bounded by Config.Regulps; then resolve the
//	    owner's handoff slot and publish its statistics
//	H4  give back: restore the owner's identity, CAS lent -> parked, and
//	    if the owner waits for that (lentWait), signal its event; then the
//	    owner's S3 re-check on its behalf: if Stop has begun, an owned
//	    mailbox has work, or a wake-up was deferred, wake the owner
//
// Why no wake-up is lost: every waker that found the owner lent instead
// of parked (a sender's P4, a releaser, deferred wake-ups, Stop) made its
// publishing step first; H4's CAS to parked comes after that waker's load
// of the lent state, and H4's re-check, after the CAS, sees what it
// published (settled), as the owner's own S3 would. Wakers that find it
// parked again wake it as usual.
//
// Why the behaviour sees a worker: while lent, the owner is in park (its
// goroutine asleep, or waiting for the lend to end: waitLent), and the
// lending CAS orders everything it wrote before parking before the
// helper's reads; the give-back CAS orders the helper's writes before the
// owner's. So the helper may use every private field of the worker (its
// buffer, its statistics, its run mode): a behaviour it runs is in a
// behaviour (InBehaviour, ErrAskInBehaviour, SetAllocation), sends to its
// own mailbox append to the batch (the batch's identity is the helper's
// while lent), panics are recovered and supervised by the same code, and
// its counts land once, in the owner's WorkerStats.
//
// Why an actor never runs in two places and per-sender FIFO holds: the
// mailbox is taken by the same gulp (wordProcessing) as a worker's and
// given back by the same release; a gulp takes a mailbox's envelopes in
// push order, whoever gulps.
//
// Not handled in the prototype: a behaviour that calls runtime.Goexit ends
// the asking goroutine (a new goroutine finishes the visit as the lent
// worker, see lentRun); where goroutine identity is not supported, callers
// do not help.

// helpCallers switches callers that help on (Ask only).
var helpCallers = false

// lentTab maps the goroutine identities of helping callers to the workers
// they borrowed; lentCount counts its entries, so that identity lookups
// pay one load while nobody helps.
var (
	lentTab   [16]atomic.Pointer[gentry]
	lentCount atomic.Int32
)

// lentWorker returns the worker that goroutine g has borrowed, or nil.
func lentWorker(g uintptr) *worker {
	for i := range lentTab {
		if ent := lentTab[i].Load(); ent != nil && ent.g == g {
			return ent.w
		}
	}
	return nil
}

// lendFor lends the owner of c's mailbox to the caller if it is parked
// (H1), and returns it and the mailbox, or nil.
func lendFor(c *Cell) (*worker, *mailbox) {
	if !goid.Supported {
		return nil, nil
	}
	mb := c.mb.Load()
	if mb == nil {
		return nil, nil
	}
	e := mb.exec
	o := e.workers[mb.owner.Load()]
	gen := o.lendGen.Load()
	if gen&1 == 0 || o.state.Load() != workerParked || !o.state.CompareAndSwap(workerParked, workerLent) {
		return nil, nil
	}
	if o.lendGen.Load() != gen {
		// The CAS took a later park's parked state, before that park's
		// sleep (its S3, or its writes before sleeping): hand it back
		// untouched.
		o.unlend()
		return nil, nil
	}
	return o, mb
}

// unlend ends a lend in which nothing of the worker was touched: the state
// is parked again, the worker woken if it waits for that or has work.
func (w *worker) unlend() {
	e := w.e
	w.state.Store(workerParked)
	if w.lentWait.Load() {
		w.ev.Wake(&w.state)
	}
	if e.shutdown.Load() || w.hasWork() || e.deferred.Load() != 0 {
		w.wake()
	}
}

// serveLent serves mb as w, lent to the caller (H3), and gives w back
// (H4).
func (w *worker) serveLent(mb *mailbox) {
	w.lentRun(func() {
		n, missed := mb.gulp(&w.buf)
		if missed {
			w.missedGulp()
			return
		}
		if n > 0 {
			w.processGulped(mb, n)
			w.st.callerVisits++
		}
	})
}

// lentRun runs body on the calling goroutine as w, then gives w back. If
// a behaviour's runtime.Goexit unwinds the caller (which then ends, as a
// worker's goroutine would), the visit it interrupted still holds its
// mailbox (wordProcessing) and the rest of its batch: a new goroutine,
// still as w, finishes it as a worker's resume does, and gives w back.
func (w *worker) lentRun(body func()) {
	done := false
	defer func() {
		if done {
			w.giveBack()
		} else {
			go w.lentRun(w.resumeLentVisit)
		}
	}()
	g := goid.Get()
	ent := &gentry{g: g, w: w}
	slot := -1
	for slot < 0 {
		for i := range lentTab {
			if lentTab[i].Load() == nil && lentTab[i].CompareAndSwap(nil, ent) {
				slot = i
				break
			}
		}
		if slot < 0 {
			runtime.Gosched() // more helpers than slots at once: rare
		}
	}
	own := w.g.Load()
	w.g.Store(g) // the batch's identity: local sends append to it
	lentCount.Add(1)
	defer func() {
		lentCount.Add(-1)
		lentTab[slot].Store(nil)
		w.g.Store(own)
	}()
	body()
	done = true
}

// resumeLentVisit finishes the visit a runtime.Goexit interrupted on a
// lent worker (see lentRun), as resume does on a worker's goroutine.
func (w *worker) resumeLentVisit() {
	w.takeRun()
	w.termPanics = nil
	w.leaveExt()
	if w.cur != nil {
		w.processCurrent()
	}
}

// giveBack ends a lend (H4): the worker is parked again, and woken if its
// own S3 re-check would not let it sleep.
func (w *worker) giveBack() {
	e := w.e
	w.flushHandoff()
	w.next, w.follows, w.batchFrom = nil, 0, nil
	w.publish(e.statsEpoch.Load())
	w.unlend()
}

// waitLent waits, in park, until the caller that borrowed w gives it back.
// Called by w's goroutine.
func (w *worker) waitLent() {
	w.lentWait.Store(true)
	if w.state.Load() == workerLent {
		w.ev.WaitChan(&w.state, workerLent, 0)
	}
	w.lentWait.Store(false)
}
