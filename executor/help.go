package executor

import (
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/actord/actord/internal/goid"
)

// Callers that help.
//
// A goroutine outside the system about to block in Ask for an actor whose
// mailbox's owner is parked serves that mailbox itself instead of paying
// the owner's wake-up (a thread wake-up, two for a worker sleeping on the
// channel). It does so as the owner: it borrows the parked worker whole,
// serves plain deliveries one at a time (a plain actor's, or an extended
// actor's message when the worker would only run its behaviour), and
// hands the rest of the visit
// back to the owner as soon as it would have to wait for anything but its
// own reply.
//
//	H1  lend: CAS owner.state parked -> lent (before the request's send,
//	    or while the caller waits for its reply: late help, below; a
//	    sender's P4 then finds the owner not parked and wakes nobody),
//	    only while the owner sleeps (its futex phase or the channel) past
//	    its last private write (lendGen odd, the same value before and
//	    after the CAS: a CAS that took a later park's parked state, in its
//	    S3 or before its sleep, is undone untouched), and has no visit
//	    left to it by an earlier caller (visitLeft: undone untouched too)
//	H2  the send (P1 for the request)
//	H3  serve: take the owner's identity (w.g, the lent table), gulp the
//	    target mailbox into the owner's buffer as a worker would
//	    (wordProcessing: if another worker processes it, nothing is
//	    served), and deliver its envelopes one at a time (helpBatch),
//	    stopping before the next one once the caller's request is
//	    complete, its context has ended, helpBudget deliveries were made,
//	    or the executor is stopping; before an envelope that is not a
//	    plain delivery (a dead letter, a control envelope, an extended
//	    actor's message whose Started hook has not run or whose actor has
//	    a private queue); and after a behaviour whose statuses ask for
//	    more than the next delivery (its actor's termination, its
//	    message's hooks), an extended actor's behaviour that panicked, or
//	    one after which a Stop has begun. An extended actor's message
//	    (helpExt) is delivered as deliverExtClaimed and deliverExt do: the
//	    inExt marker, the passivation mark, deliveredHeld, the behaviour.
//	    A batch drained to its end is released (re-taken while the caller
//	    may go on, as a worker does); a batch stopped short stays gulped,
//	    with the rest of the visit left to the owner (w.cur set, and
//	    lentTail for a termination, message hooks, an extended actor's
//	    panic (lentPanic) or its marker's clearing (lentExt) first)
//	H4  give back: restore the owner's identity, set visitLeft if a
//	    visit is left, store parked (the state word: lent -> parked), and
//	    if the owner waits for that (lentWait), signal its event; then the
//	    owner's S3 re-check on its behalf, with the visit left to it as one
//	    more reason: if Stop has begun, a visit is left, an owned mailbox
//	    has work, or a wake-up was deferred, wake the owner, which finishes
//	    the visit (finishLent) before its next pass
//
// Why no wake-up is lost: every waker that found the owner lent instead
// of parked (a sender's P4, a releaser, deferred wake-ups, Stop) made its
// publishing step first; H4's store of parked comes after that waker's load
// of the lent state, and H4's re-check, after the CAS, sees what it
// published (settled), as the owner's own S3 would. Wakers that find it
// parked again wake it as usual, and a caller that lends it in between
// (whose CAS takes the wake-up's place) makes the same re-check when it
// gives it back, or at once if a visit is left (visitLeft). The park model (park_model_test.go)
// checks this.
//
// Why the behaviour sees a worker: while lent, the owner is in park (its
// goroutine asleep, in the futex until the phase's timeout, a lend
// changing the word without a FUTEX_WAKE, or on the channel, or waiting
// for the lend to end: waitLent), and the
// lending CAS orders everything it wrote before parking before the
// helper's reads; the give-back store and the wake-up's CAS order the
// helper's writes before the owner's. So the helper may use every private
// field of the worker (its buffer, its statistics, its run mode): a
// behaviour it runs is in a behaviour (InBehaviour, ErrAskInBehaviour,
// SetAllocation), sends to its own mailbox append to the batch (the
// batch's identity is the helper's while lent), panics are recovered and
// supervised by the same code, and its counts land once, in the owner's
// WorkerStats, published at the give-back.
//
// Why an actor never runs in two places and per-sender FIFO holds: the
// mailbox is taken by the same gulp (wordProcessing) as a worker's and
// given back by the same release, or stays taken, with its batch, until
// the owner finishes the visit; a gulp takes a mailbox's envelopes in push
// order, whoever gulps, and the owner goes on from the next envelope of
// the same batch.
//
// Why an Ask does not wait for user code that waits for it: the helper
// stops once its request is complete, and never runs a termination's
// hooks, an extended actor's code but its behaviour (Started and Stopped
// hooks, supervision, watchers' notices, even for a panic of a behaviour
// it ran: the owner recovers it) or a message's hooks; code that waits
// for the asker to go on runs on the owner. Only a behaviour the helper runs, before the request is
// complete, can hold it; such a behaviour would hold a worker too.
//
// What differs from a worker: the helper's goroutine is not locked to an
// OS thread; a behaviour's runtime.Goexit ends the asking goroutine (the
// owner finishes the visit, after a plain actor's end made by the helper,
// or the extended actor's supervision it makes, as for a panic); a context
// that ends while a behaviour runs is noticed when it returns; OnError, for
// a plain actor's panic the helper recovered, runs on the helper's
// goroutine. Where goroutine identity is not
// supported, callers do not help.

// helpBudget bounds the deliveries one helping caller makes.
const helpBudget = 64

// helpForced, set by the environment variable ACTORD_HELP=force (read when
// the package is initialized), makes every Ask that may help (where
// Config.NoCallerHelp is not set) wait up to helpForcedWait for the owner
// of its actor's mailbox to become lendable: a test aid, to run the test
// suites with behaviours served by callers as often as possible.
var helpForced = os.Getenv("ACTORD_HELP") == "force"

const helpForcedWait = 200 * time.Microsecond

// lentTab maps the goroutine identities of helping callers to the workers
// they borrowed; lentCount counts its entries, so that identity lookups
// pay one load while nobody helps. An entry is stored by its helper
// (lentRun) before it runs anything as the worker, and cleared by it
// after; lentCount is added to after the store and subtracted from before
// the clear, so a non-zero count covers every entry a lookup may match.
var (
	lentTab   [16]atomic.Pointer[lentEntry]
	lentCount atomic.Int32
)

// lentEntry is a worker's entry in lentTab, one per worker (worker.lent),
// reused by each caller that borrows it. g is stored by that caller
// before the entry is published (the slot's CAS) and loaded by lookups,
// which compare it with their own identity: a lookup that loaded the
// entry during an earlier lend and reads the next caller's g does not
// match it (goroutine identities are not reused), and if it did, w would
// still be the worker that caller borrowed.
type lentEntry struct {
	g atomic.Uintptr
	w *worker
}

// lentWorker returns the worker that goroutine g has borrowed, or nil.
func lentWorker(g uintptr) *worker {
	for i := range lentTab {
		if ent := lentTab[i].Load(); ent != nil && ent.g.Load() == g {
			return ent.w
		}
	}
	return nil
}

// helps reports whether an Ask on e may help.
func (e *Executor) helps() bool {
	return !e.cfg.NoCallerHelp
}

// helpable reports whether a caller may help c: an alive actor whose
// messages come through its mailbox (plain, or extended without a private
// queue). A bounded or supervised actor's messages wait in its private
// queue, drained by the owner (privqueue.go): its mailbox holds only
// control envelopes, which a helper leaves to the owner.
func helpable(c *Cell) bool {
	st := c.state.Load()
	if st&cellKindMask != cellAlive {
		return false
	}
	if st&cellPlain != 0 {
		return true
	}
	// x.inc and x.pq are set before x is published, and never change.
	x := c.ext.Load()
	return x != nil && x.inc == incOf(st) && x.pq == nil
}

// lendFor lends the owner of c's mailbox to the caller if it is parked
// (H1), and returns it and the mailbox, or nil. Only for an actor that
// helpable accepts.
func lendFor(c *Cell) (*worker, *mailbox) {
	if !goid.Supported || !helpable(c) {
		return nil, nil
	}
	mb := c.mb.Load()
	if mb == nil {
		return nil, nil
	}
	if o := lendOwner(mb); o != nil || !helpForced {
		return o, mb
	}
	start := time.Now()
	for time.Since(start) < helpForcedWait {
		runtime.Gosched()
		if o := lendOwner(mb); o != nil {
			return o, mb
		}
	}
	return nil, nil
}

// Late help. A caller that could not lend the owner before its send (it
// was awake, or lent to another caller) may find it asleep again while it
// waits for its reply, its request still queued: a helping caller that
// stopped at its own reply gives the owner back with the requests queued
// behind its own, which would otherwise cost the owner's wake-up. H1 then
// comes after H2 (the send): nothing in the protocol depends on their
// order, since the lend takes a parked owner whatever its mailboxes hold,
// and the give-back's re-check looks at them all (a sender that found the
// owner parked and woke it first has moved it out of parked, and the lend
// fails).

// lateHelpEvery is how many of Ask's polls for its reply pass between two
// looks for a late lend.
const lateHelpEvery = 32

// lendLate lends the owner of c's mailbox to a caller whose request is
// queued there, if it sleeps (late help, above), without the forced wait.
func lendLate(c *Cell) (*worker, *mailbox) {
	if !goid.Supported || !helpable(c) {
		return nil, nil
	}
	mb := c.mb.Load()
	if mb == nil {
		return nil, nil
	}
	return lendOwner(mb), mb
}

// lendOwner is H1 for mb's owner: it returns the owner, lent, or nil.
func lendOwner(mb *mailbox) *worker {
	o := mb.exec.workers[mb.owner.Load()]
	// lendGen pairs with park's increments around the sleep: odd, the
	// owner is in it, past its last private write before sleeping.
	gen := o.lendGen.Load()
	if gen&1 == 0 || o.visitLeft.Load() || o.state.Load() != workerParked || !o.state.CompareAndSwap(workerParked, workerLent) {
		return nil
	}
	// visitLeft pairs with giveBack's store, made before its store of
	// parked that this CAS read: set, the owner's buffer holds a visit a
	// caller left to it, which the owner must finish first.
	if left := o.visitLeft.Load(); left || o.lendGen.Load() != gen {
		// Or the CAS took a later park's parked state, before that
		// park's sleep (its S3, or its writes before sleeping): hand
		// it back untouched.
		o.unlend(left)
		return nil
	}
	return o
}

// unlend ends a lend: the state is parked again, the worker signalled if
// it waits for that, and woken if its own S3 re-check would not let it
// sleep or a visit is left to it (left).
func (w *worker) unlend(left bool) {
	e := w.e
	// The store pairs with the owner's loads in park (waitLent, S3, S4)
	// and with wakers' CAS parked -> woken: it publishes the helper's
	// writes to whoever moves the worker out of parked next.
	w.state.Store(workerParked)
	if w.lentWait.Load() { // pairs with waitLent's store, before its load of state
		w.ev.Wake(&w.state)
	}
	if left || e.shutdown.Load() || w.hasWork() || e.deferred.Load() != 0 {
		w.wake()
	}
}

// helpStop says when a helping caller stops serving (H3). Its fields are
// the caller's own.
type helpStop struct {
	done *atomic.Bool    // the request's completion flag (askTarget.done)
	ctx  <-chan struct{} // the caller's context's Done, or nil
	left int             // deliveries left in the budget
}

// now reports whether the helper stops before its next delivery.
func (h *helpStop) now() bool {
	if h.left <= 0 || h.done.Load() { // done: the completer's CAS
		return true
	}
	if h.ctx != nil {
		select {
		case <-h.ctx:
			return true
		default:
		}
	}
	return false
}

// serveLent serves mb as w, lent to the caller (H3), and gives w back
// (H4).
func (w *worker) serveLent(mb *mailbox, h *helpStop) {
	w.lentRun(func() { w.helpVisit(mb, h) })
}

// helpVisit gulps mb and serves it as w until h says to stop (H3),
// leaving the rest of the visit to the owner (w.cur set) if it stopped
// before the visit's end.
func (w *worker) helpVisit(mb *mailbox, h *helpStop) {
	e := w.e
	if h.done.Load() {
		return // a late lend after the reply came (see late help): nothing to take
	}
	n, missed := mb.gulp(&w.buf)
	if missed {
		w.missedGulp()
		return
	}
	if n == 0 {
		return
	}
	w.beginVisit(mb, n)
	w.st.CallerVisits++
	w.seq += 2 // a new visit (see processCurrent)
	for {
		w.noteVisit()
		w.limit = w.gulped + e.cfg.LocalBatch
		if !w.helpDrain(h) {
			return // stopped short: the rest is the owner's (finishLent)
		}
		if !w.batchDone(!h.now()) {
			return
		}
	}
}

// helpDrain delivers envelopes of the batch as drain does, until the batch
// is empty (true) or h, or an envelope or status that is the owner's,
// stops it (false).
func (w *worker) helpDrain(h *helpStop) bool {
	for {
		switch w.helpBatch(h) {
		case helpEmpty:
			return true
		case helpStopped:
			return false
		}
	}
}

// helpOutcome is how helpBatch ended.
type helpOutcome uint8

const (
	helpPanicked helpOutcome = iota // a behaviour panicked (recovered): go on
	helpEmpty                       // the batch is drained
	helpStopped                     // the rest of the batch is the owner's
)

// helpBatch is drainBatch for a helping caller (H3): the same delivery,
// one envelope at a time, stopping where helpStop or the envelope says.
// An extended actor's user message is delivered as deliverExtClaimed and
// deliverExt do (helpExt); a panic or runtime.Goexit out of its behaviour
// is left to the owner (lentPanic), whose recovery supervises or
// terminates the actor, as are its statuses' hooks.
func (w *worker) helpBatch(h *helpStop) (out helpOutcome) {
	defer func() {
		if out == helpPanicked {
			r := recover()
			if w.lentExt != nil {
				// An extended actor's behaviour: its supervision,
				// termination and watchers are the owner's.
				w.lentPanic = &lentPanic{r: r, goexit: r == nil, stack: debug.Stack()}
				w.lentTail, w.lentStatus = true, Nodelete
				out = helpStopped
				return
			}
			w.recovered(r, r == nil) // r == nil: runtime.Goexit is unwinding us
		}
	}()
	e := w.e
	for {
		env := w.buf.Peek()
		if env == nil {
			return helpEmpty
		}
		if h.now() || e.shutdown.Load() {
			return helpStopped
		}
		if env.cell.state.Load() != env.want {
			if !w.helpExt(env, h) {
				return helpStopped
			}
			continue
		}
		w.buf.PopRef() // env: a panic's culprit is then w.buf.LastPopped()
		h.left--
		status := env.call()
		if w.delivs++; w.delivs%beatEvery == 0 {
			w.beat.Store(w.delivs) // see victimStalled
		}
		ms := w.msgStatus &^ msgForwarded
		if status != Nodelete || ms == Delete || ms == Destroy {
			// The rest of this delivery runs hooks: the owner's
			// (finishLent).
			w.lentTail, w.lentStatus = true, status
			return helpStopped
		}
		w.msgStatus = Nodelete
	}
}

// lentPanic is a panic (or runtime.Goexit: r nil, goexit set) out of an
// extended actor's behaviour run by a helping caller, with the stack of
// the caller's goroutine, for the owner to recover (finishLentTail).
type lentPanic struct {
	r      any
	goexit bool
	stack  []byte
}

// helpExt delivers env, the next envelope of the batch, which failed
// helpBatch's comparison, if it is a user message to an alive extended
// actor without a private queue whose Started hook has run, as
// deliverExtClaimed and deliverExt would, and reports whether it did and
// the helper may go on. Anything else (a dead letter, a control envelope,
// the Started hook, a stop begun) it leaves in the batch, for the owner.
// After the behaviour, the actor's inExt marker is cleared as
// deliverExtClaimed does, unless a Stop has begun, or the statuses ask
// for more than the next delivery: then the rest is the owner's
// (lentTail, lentExt).
func (w *worker) helpExt(env *envelope, h *helpStop) bool {
	c := env.cell
	if env.fn == ctlFn || c.state.Load()|cellPlain != env.want {
		return false
	}
	x := c.ext.Load()
	if x.pq != nil || (!x.started && x.starter != nil) {
		return false
	}
	w.inExt.Store(c) // see deliverExtClaimed
	if w.e.shutdown.Load() {
		w.inExt.Store(nil)
		return false // the owner drops it (deliverExtClaimed)
	}
	w.buf.PopRef() // env: a panic's culprit is then w.buf.LastPopped()
	h.left--
	x.delivered = true // the passivation mark (see passivate.go)
	if w.mayBeRequest(env.msg) {
		deliveredHeld(env.msg) // for a restart: see held.go
	}
	w.lentExt = c        // a panic out of the behaviour is the owner's (helpBatch)
	status := env.call() // not counted in delivs: a worker's slow path is not
	ms := w.msgStatus &^ msgForwarded
	if status != Nodelete || ms == Delete || ms == Destroy || w.e.shutdown.Load() {
		// Hooks, or leftExt's end at a Stop: the owner's (finishLent).
		w.lentTail, w.lentStatus = true, status
		return false
	}
	w.msgStatus = Nodelete
	w.lentExt = nil
	// leftExt, but what follows a Stop begun after the clear is the
	// owner's: it calls leftExt again (finishLentTail), whose look in
	// stop.busy, set once, decides as ours would, and whose endAtStop
	// runs c's termination hooks.
	w.inExt.Store(nil)
	if w.e.shutdown.Load() {
		w.lentTail, w.lentStatus, w.lentExt = true, Nodelete, c
		return false
	}
	return true
}

// finishLent finishes, on the owner's goroutine after its park, the visit
// a helping caller left to it (H3): the rest of the stopped delivery, if
// any (lentTail), then the rest of the batch and the visit, as resume
// does.
func (w *worker) finishLent() {
	w.visitLeft.Store(false) // awake: nobody can lend us before our next park
	if w.lentTail {
		w.finishLentTail()
	}
	w.processCurrent()
	if w.handoff != nil {
		w.afterVisit(false)
	}
}

// finishLentTail applies the statuses of the delivery a helping caller
// made last (lentStatus, and the message's in msgStatus), as drainBatch
// does after a behaviour returns, recovering a panic or Goexit of the
// hooks as drainBatch's deferred call does.
func (w *worker) finishLentTail() {
	done := false
	defer func() {
		if !done {
			r := recover()
			w.recovered(r, r == nil)
		}
	}()
	env := w.buf.LastPopped()
	status := w.lentStatus
	w.lentTail, w.lentStatus = false, Nodelete
	if p := w.lentPanic; p != nil {
		// The helper's behaviour panicked: recover it here, as
		// drainBatch's deferred call would have (its leaveExt clears
		// lentExt's marker).
		w.lentPanic, w.lentExt = nil, nil
		done = true
		w.recoveredStack(p.r, p.goexit, p.stack)
		return
	}
	if status != Nodelete {
		w.terminate(env.cell, env.want, status)
		if w.msgStatus&msgForwarded == 0 && w.mayBeRequest(env.msg) {
			dropped(env.msg, ErrTerminated) // a request its receiver did not answer
		}
	}
	if ms := w.msgStatus; ms != Nodelete {
		w.msgStatus = Nodelete
		w.messageDone(env, ms)
		w.msgStatus = Nodelete
	}
	if c := w.lentExt; c != nil {
		w.lentExt = nil
		w.leftExt(c) // see helpExt
	}
	done = true
}

// lentRun runs body on the calling goroutine as w, then gives w back. If
// a behaviour's runtime.Goexit unwinds the caller (which then ends, as a
// worker's goroutine would), the visit it interrupted, which still holds
// its mailbox (wordProcessing) and the rest of its batch, is left to the
// owner as any visit stopped short.
func (w *worker) lentRun(body func()) {
	g := goid.Get()
	ent := &w.lent // its w is set by newWorker
	ent.g.Store(g)
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
		w.giveBack()
	}()
	body()
}

// giveBack ends a lend (H4): the worker's statistics are published if
// its visit is over, and it is parked again, or woken if its own S3
// re-check would not let it sleep or a visit is left to it.
func (w *worker) giveBack() {
	e := w.e
	left := w.cur != nil
	if left {
		// A visit left to the owner: no caller may borrow the worker
		// until the owner has finished it (lendOwner). Nor are its
		// counters published: they are consistent only between batches
		// (the gulp is counted, its deliveries are not all made, and a
		// dead letter or a discarded firing the owner counts later in
		// the batch would make MessagesProcessed go down); the owner
		// publishes once it has finished the visit, and Stats meanwhile
		// reads what was published before.
		w.visitLeft.Store(true)
	} else {
		// The visit is over: resolve its handoff slot as a worker
		// does before it parks. A visit left to the owner keeps them.
		w.flushHandoff()
		w.next, w.follows, w.batchFrom = nil, 0, nil
		w.publish(e.statsEpoch.Load())
	}
	w.unlend(left)
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
