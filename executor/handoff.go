package executor

// Handoff: keeping the work with the awake worker.
//
// When a behaviour sends to a mailbox whose owner is parked, the sender's
// half of the wake-up protocol (P4 in park.go) would wake the owner. Waking
// a worker means waking its OS thread, which costs far more than the
// message; and in a chain of messages
// between actors on different workers (a ping-pong, a token ring, a
// pipeline at a low rate) every hop would pay it, each worker going back to
// sleep before the next hop reaches it.
//
// Instead, a worker whose behaviour sends to a mailbox of a parked worker
// while its own batch holds no further envelope (the sending behaviour is
// the last of its batch: the worker is about to have nothing to do) keeps
// the mailbox in its handoff slot and does not wake the owner. The worker
// resolves the slot as its pass goes on (see pass and afterVisit):
//
//   - if the pass finds another of its own mailboxes waiting, it wakes the
//     handed-off mailbox's owner (P2-P4 of park.go) before serving that
//     mailbox, as the sender would have: with work of its own, the owner's
//     thread is worth waking, so that both run;
//   - if the pass ends without finding any, the worker gulps the
//     handed-off mailbox itself and runs its batch, as if it had stolen it
//     for one visit (the mailbox stays in its owner's slots; the
//     processing bit keeps it on one worker at a time, as for any gulp),
//     unless one of its own mailboxes waits (hasWork), in which case it
//     wakes the owner. The hasWork scan is skipped when the visit that
//     handed off was the pass's only one (a chain of single messages: the
//     pass has seen every other mailbox empty), so that such a chain costs
//     one scan of the slots per hop, not two. A mailbox the pass looked at
//     before that visit may have filled meanwhile (the behaviour itself
//     may have sent to it): its work then waits for the handed-off batch
//     and the next pass. If the served batch hands off again, the worker
//     follows the chain (below), and past its bound decides the same way,
//     with hasWork.
//
// The decision is a policy, not part of the wake-up protocol: either way
// the message is delivered.
//
// No wake-up is lost: the sender's obligation to wake the owner passes to
// the worker holding the slot, which is running and resolves the slot
// before it parks or exits (park resolves a slot left set, see park). When
// the worker gulps the mailbox itself, messages pushed after its gulp have
// their own senders' notify, and messages its release leaves behind are
// handed to the owner by the releaser's wake-up (processCurrent). When it
// wakes the owner instead, it loads the owner afresh (a thief may have
// taken the mailbox meanwhile: then the thief, which is running, serves it).
//
// Following the chain. While serving handed-off mailboxes, a worker
// follows the chain of messages without scanning its slots between hops:
// a handed-off batch that hands off again (a chain moving through the
// sleeping worker's mailboxes, as a token ring does) is served without the
// hasWork scan, and when a behaviour it runs sends to one of the worker's
// own mailboxes while some worker sleeps (the other end of a ping-pong
// answering), notify leaves that mailbox in the worker's next field and
// afterVisit visits it directly instead of returning to a pass that would
// scan every slot to find it, as Go's scheduler runs the goroutine its
// running one has just readied (runnext). At most maxFollows such hops are
// made per pass, so a chain cannot keep the worker from its other
// mailboxes for longer than that many visits. Like the handoff
// it is a policy: the mailbox is gulped like any other, and a hint that
// has gone stale (the mailbox emptied, or taken by a thief) finds nothing
// to take or a mailbox being processed.
//
// The price: a message handed off waits for the rest of the behaviour that
// sent it, the release of its batch and the rest of the pass (a load of
// each remaining slot), instead of running at once on
// the woken worker. A behaviour that sends and then runs for long (or
// blocks, even waiting for the answer to that very message) delays it until
// the watcher (park.go) sees its worker stuck and wakes a sleeper, which
// finds the message in its own mailbox: so there is no handoff without a
// watcher (stealing off, or a negative ParkTimeout). Sends from goroutines
// outside the system never hand off: nobody would resolve the slot.

// keepWake is called by a sender (notify) whose push found mb's owner o
// parked; cur is the sender's worker of e (e.current()), nil for a goroutine
// outside the system. It reports true if the sender is not to wake o: the
// sender is a worker of e that took mb into its handoff slot (handOff), or a
// goroutine outside the system that left the wake-up to an awake worker
// (deferWake, see defer.go). Both need the watcher, which rescues a mailbox
// kept by a worker stuck in a long behaviour.
func (e *Executor) keepWake(mb *mailbox, o, cur *worker) bool {
	if e.watchKick == nil {
		return false
	}
	if cur != nil {
		return cur.handOff(mb)
	}
	return e.deferWake(o)
}

// handOff takes mb into w's handoff slot if w, the caller's worker, has
// nothing queued after the running behaviour and no mailbox in the slot,
// and reports whether it did.
func (w *worker) handOff(mb *mailbox) bool {
	if w.handoff != nil || w.buf.Len() != 0 {
		return false
	}
	w.handoff = mb
	return true
}

// maxFollows bounds the mailboxes a worker visits by following a chain
// (see above) between two passes.
const maxFollows = 16

// afterVisit resolves the worker's handoff slot after a mailbox visit
// (processCurrent) ended with the mailbox released: it serves handed-off
// mailboxes while it has nothing else to do, and follows the chain back to
// its own mailboxes (see above). idle says that the caller has just looked
// at every owned mailbox and found none waiting (the end of a pass), so the
// first check is skipped. Called by the worker's goroutine only.
func (w *worker) afterVisit(idle bool) {
	for w.handoff != nil {
		mb := w.handoff
		w.handoff = nil
		if w.e.shutdown.Load() || (!idle && w.hasWork()) {
			w.wakeOwner(mb)
			return
		}
		idle = false // serving mb may give us work of our own
		if !w.visit(mb) {
			return
		}
		w.st.handoffs++
		if w.follows >= maxFollows {
			continue // past the bound: a handoff left in the slot checks for own work
		}
		if w.handoff != nil {
			// mb's batch handed off again: the chain goes on among
			// another worker's mailboxes. Serve the next one without a
			// scan of the slots, like the first of a pass.
			w.follows++
			w.st.follows++
			idle = true
			continue
		}
		// mb's batch may have sent to one of our own mailboxes: follow
		// the chain there.
		if nx := w.next; nx != nil {
			w.next = nil
			w.follows++
			if !w.visit(nx) {
				return
			}
			w.st.follows++
			idle = true // as above, for a handoff its batch may leave
		}
	}
}

// visit gulps mb, if it holds envelopes and is not being processed, and
// processes the batch (processCurrent). It reports whether it took any.
func (w *worker) visit(mb *mailbox) bool {
	n, missed := mb.gulp(&w.buf)
	if missed || n == 0 {
		// Being processed by another worker (its release hands back
		// what is left), or emptied already: nothing to do.
		return false
	}
	if w.spinner {
		// Found work (a spinner serving deferred wake-ups, see defer.go):
		// no longer spinning, and the watcher may see it stuck.
		w.stopSpinning()
	}
	w.processGulped(mb, n)
	return true
}

// flushHandoff wakes the owner of the mailbox in the worker's handoff slot,
// if any: the worker found more work of its own (a regulp) and will not be
// idle soon. Called by the worker's goroutine only.
func (w *worker) flushHandoff() {
	if mb := w.handoff; mb != nil {
		w.handoff = nil
		w.wakeOwner(mb)
	}
}

// wakeOwner is P2-P4 of the wake-up protocol for mb, made on behalf of the
// sender that handed it off: its push (P1: the lock's CAS and the
// unlocking store) came before, in this goroutine.
func (w *worker) wakeOwner(mb *mailbox) {
	e := w.e
	if e.sleepers.Load() == 0 { // P2
		return
	}
	if o := e.workers[mb.owner.Load()]; o != w { // P3
		o.wake() // P4
	}
}
