package executor

import (
	"sync/atomic"
	"time"
)

// Idle passivation: an actor spawned with SpawnOptions.IdleTimeout ends
// (ReasonPassivated) once it has received no message for that long.
//
// Nothing runs per message but one plain store. A passivating actor is
// extended (it has a cellExt), so every delivery to it takes deliverExt or
// drainPrivate, which set cellExt.delivered, the mark, before the
// behaviour runs. The mark is worker-owned: only the worker running the
// actor writes or reads it, and that worker also runs the check below, so
// it is a plain bool. No timer is set per message and no behaviour has to
// touch anything.
//
// The sweeper is the executor's timer set (timer.go: one heap and one
// goroutine per executor), which holds one internal timeout per
// passivating actor, due every IdleTimeout/passivationChecks. Its firing
// (passivator.timedOut, on the timer goroutine) sends the actor an
// opPassivate control envelope and nothing else. That check runs in the
// actor's own turn (passivationCheck): if the mark is set it clears it
// and restarts the count of quiet checks, else it counts one more; while
// fewer than passivationChecks checks in a row found no delivery, it sets
// the next timeout. So the actor has received nothing for at least
// IdleTimeout when it is passivated (the passivationChecks checks span it)
// and at most 1.25 times it, plus the timer's and the queue's delays.
// Each passivating actor costs one pending timer (a 56-byte slab entry)
// and one control envelope per period, busy or not.
//
// The decision must not lose a message that a sender was told it had
// queued (Send returned nil) and was not delivered yet: such a message may
// lie behind the check in the actor's mailbox. So the decision shuts the
// actor's gate (passivator.shut) first, and ends the actor only once
// everything accepted before that has been delivered:
//
//   - Without a private queue, senders push into the shared mailbox
//     through pushGated, which reads the gate under the mailbox's lock.
//     The worker sets the gate under that same lock, then pushes an
//     opPassivated marker. Every push ordered before the gate's store by
//     the lock lies in the mailbox (or the batch being drained) before the
//     marker, and is delivered to the actor as usual; every push after it
//     sees the gate and returns ErrTerminated, queuing nothing. The marker
//     ends the actor (terminatePassivated).
//   - With a private queue (bounded, Restart, Escalate), every undelivered
//     message is in that queue: under its mutex, the worker passivates
//     only if it is empty and not suspended, sets the gate and closes the
//     queue (later puts return ErrTerminated, see privQueue.put), and
//     ends the actor at once.
//
// Between the gate's store and the end the actor is alive and still
// delivered to, but refuses new messages, as an ending actor does;
// Passivating reports it, so that Entities (package actor) waits for the
// end and spawns the next incarnation rather than handing out this one.
// A message sent to this incarnation after the decision (through a port,
// or a pointer, kept from before) gets ErrTerminated from its Send, as
// for any actor that has ended; nothing is queued, so the sender may send
// it again elsewhere with no risk of a second delivery.
//
// A forced Stop that comes between the gate and the marker ends the actor
// as any alive one (ReasonStopped); the marker is dropped with the queues.

// passivationChecks is how many checks in a row must find no delivery for
// an actor to be passivated; checks are IdleTimeout/passivationChecks
// apart.
const passivationChecks = 4

// pushGateShut is pushGated's result when the gate refused the push.
const pushGateShut = -2

// passivator is a passivating incarnation's part of its cellExt.
type passivator struct {
	// period is the time between checks (IdleTimeout/passivationChecks,
	// at least a microsecond). Immutable.
	period time.Duration
	// c and want name the incarnation for timedOut. Written by arm, at
	// the spawn, before the first timeout is set; read by timedOut, on the
	// timer goroutine, after timers.mu (taken by the set and by the
	// firing) ordered them.
	c    *Cell
	want uint32
	// quiet counts the checks in a row that found no delivery.
	// Worker-owned, like cellExt.delivered.
	quiet uint8
	// shut is the gate: set once, when the passivation is decided, by the
	// worker running the actor, while it holds the actor's mailbox lock
	// (no private queue) or the private queue's mutex. It pairs with the
	// loads of senders made under that same lock (pushGated, put): a
	// sender that holds the lock after the store sees it and queues
	// nothing. It is atomic for the loads made without the lock
	// (Passivating), which only tell that the actor is ending.
	shut atomic.Bool
}

var (
	passivateMsg   = &control{op: opPassivate}
	passivatedMsg  = &control{op: opPassivated}
	minCheckPeriod = time.Microsecond
)

func newPassivator(idle time.Duration) *passivator {
	return &passivator{period: max(idle/passivationChecks, minCheckPeriod)}
}

// arm sets the first check of the new incarnation want of c (Spawn).
func (p *passivator) arm(e *Executor, c *Cell, want uint32) {
	p.c, p.want = c, want
	e.afterTimeout(p.period, p)
}

// timedOut sends the check to the actor (timer goroutine, under
// timers.mu: it must not block, which a control send does not). If the
// incarnation has ended the send fails and the chain of checks ends.
func (p *passivator) timedOut() { _ = sendControl(p.c, p.want, passivateMsg) }

// passivationCheck is the check, in the actor's turn: it counts a quiet
// period or clears the mark, and passivates the actor after
// passivationChecks quiet ones in a row, unless messages still wait in its
// private queue; else it sets the next check.
func (w *worker) passivationCheck(c *Cell, x *cellExt, want uint32) {
	p := x.pass
	if x.delivered {
		x.delivered, p.quiet = false, 0
	} else if p.quiet < passivationChecks {
		p.quiet++
	}
	if p.quiet >= passivationChecks && w.passivate(c, x, want) {
		return
	}
	w.e.afterTimeout(p.period, p)
}

// passivate shuts the gate of the idle actor c and ends it, at once (a
// private queue, empty) or at its marker (see the top of this file). It
// reports false if messages wait in the private queue, or it is
// suspended: the actor is not idle.
func (w *worker) passivate(c *Cell, x *cellExt, want uint32) bool {
	p := x.pass
	if q := x.pq; q != nil {
		q.mu.Lock()
		if q.suspended || q.closed || q.ring.n > 0 {
			q.mu.Unlock()
			return false
		}
		p.shut.Store(true)  // under q.mu: see shut
		_ = q.closeLocked() // empty: wakes SendContext callers, who see it closed
		q.mu.Unlock()
		w.terminatePassivated(c, x, want)
		return true
	}
	mb := c.mb.Load()
	lw := mb.lock()
	p.shut.Store(true) // under the mailbox lock: see shut
	mb.unlock(lw)
	// After the gate: every message accepted before it lies ahead of the
	// marker. A failed send (a forced Stop closed the mailboxes) leaves
	// the actor to that Stop.
	_ = sendControl(c, want, passivatedMsg)
	return true
}

// terminatePassivated ends the passivating incarnation x of c (its
// canonical word alive): terminateExt with status Finished (no Destroy or
// Release hook) and ReasonPassivated for the Stopped hook and the
// watchers. The word holds reasonNormal.
func (w *worker) terminatePassivated(c *Cell, x *cellExt, alive uint32) {
	t := extTerm{c: c, x: x, obj: c.obj, inc: incOf(alive), reason: reasonNormal, st: Finished, passivated: true}
	w.st.ActorsTerminated++
	w.st.Passivations++
	c.startExtEnd(t.inc, t.reason)
	t.run(w)
}

// Passivating reports whether the incarnation of c that is alive has been
// passivated: it refuses sends (ErrTerminated) and will end once the
// messages accepted before are delivered. Package actor's Entities uses it
// to wait for the end instead of handing out the incarnation.
func Passivating(c *Cell) bool {
	st := c.state.Load()
	if st&cellKindMask != cellAlive || st&cellPlain != 0 {
		return false
	}
	x := c.ext.Load()
	return x != nil && x.inc == incOf(st) && x.pass != nil && x.pass.shut.Load()
}
