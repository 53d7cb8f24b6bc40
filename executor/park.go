package executor

import (
	"time"

	"github.com/actord/actord/internal/copyq"
)

// Idling: spinning, parking, and the wake-up protocol.
//
// A worker whose pass finds no work becomes a spinner, if fewer than
// maxSpinners workers spin already: it keeps making passes (and steal
// attempts, see steal.go) for Config.SpinPasses passes, or until it has
// visited SpinPasses*spinVisitsPerPass slots, whichever comes first, so that
// the cost of spinning does not grow with the number of queues. A worker
// that may not spin, or has spun out, makes one steal attempt and parks.
// Spinning places are counted in Executor.spinning: taken with a CAS that
// keeps the count at most maxSpinners, released when the spinner finds work,
// parks or exits.
//
// # The wake-up protocol (no lost wake-ups)
//
// The sleeper (park), in this order:
//
//	S1  sleepers += 1
//	S2  state = parked
//	S3  re-check every owned mailbox; if one has work:
//	    CAS state parked -> running, and if that succeeded, sleepers -= 1
//	    (if it failed, a waker moved us to woken and decremented for us)
//	S4  otherwise sleep on the event while state == parked
//
// The sender (send -> notify), and likewise releasers (processCurrent) and
// thieves (trySteal) that leave work in a mailbox another worker owns:
//
//	P1  publish: the unlocking store of the mailbox word (push, release, swap)
//	P2  load sleepers; if 0, stop: nobody sleeps
//	P3  load the mailbox's owner
//	P4  if its state is parked, CAS parked -> woken; if that succeeded,
//	    sleepers -= 1 and signal its event
//
// Every step is a sequentially consistent atomic, so all of them fall in one
// total order. If S3's loads come after P1, the sleeper sees the message
// and does not sleep. Otherwise S1 < S2 < S3 < P1 < P2: P2 sees the
// sleeper's increment (sleepers counts increments minus decrements, and a
// decrement for this sleeper comes only from whoever moves it out of
// parked), so the sender goes on to P4, which sees the state stored at S2
// and wakes it. S1 comes before S2 so that a waker's decrement, which
// follows its CAS on a parked state, can never precede the matching
// increment: sleepers never undercounts the parked workers, which would let
// a sender skip P3 while another worker sleeps. The event itself never
// loses a signal given after S2 (see package internal/event).
//
// A mailbox's owner can change under the sender (a thief swapped it): a
// sender that loaded the previous owner at P3 wakes that one, and the thief,
// which takes the mailbox while running, scans it itself.
//
// # Park timeouts
//
// With stealing on, a parked worker also wakes after Config.ParkTimeout
// (doubling after each timeout that found no work, up to ParkTimeoutMax),
// so that mailboxes stuck behind a long behaviour are stolen even when every
// other worker sleeps. A timeout while no other worker is awake finds
// nothing to steal (a parked worker's mailboxes are empty, or it would have
// been woken), so the sleeper goes back to sleep at once without scanning:
// an idle system costs one timer per worker per ParkTimeoutMax, whatever the
// number of queues. Without stealing there is no timeout.

// spinVisitsPerPass scales Config.SpinPasses into a bound on the slots a
// spinner visits before it parks.
const spinVisitsPerPass = 32

// maxSpinners is the number of workers that may spin at once: half of them
// (at least one), as Go's scheduler bounds its spinning threads.
func (e *Executor) maxSpinners() int32 { return int32(max(1, len(e.workers)/2)) }

// spinDone reports whether the worker, idle for idle passes that visited
// visits slots, should stop spinning and park (after one last steal
// attempt). It takes a spinning place on the first idle pass if one is free.
func (w *worker) spinDone(idle, visits int) bool {
	if !w.spinner {
		e := w.e
		for {
			n := e.spinning.Load()
			if n >= e.maxSpinners() {
				return true // enough workers spin: park
			}
			if e.spinning.CompareAndSwap(n, n+1) {
				w.spinner = true
				break
			}
		}
	}
	cfg := &w.e.cfg
	return idle >= cfg.SpinPasses || visits >= cfg.SpinPasses*spinVisitsPerPass
}

// stopSpinning gives back w's spinning place, if it holds one.
func (w *worker) stopSpinning() {
	if w.spinner {
		w.spinner = false
		w.e.spinning.Add(-1)
	}
}

// park puts the worker to sleep until a sender (or thief, releaser, Stop)
// wakes it, following the protocol above.
func (w *worker) park() {
	e := w.e
	w.stopSpinning()
	w.reclaim()
	w.publish(e.statsEpoch.Load())        // Stats does not wait for sleepers: publish first
	e.sleepers.Add(1)                     // S1
	w.state.Store(workerParked)           // S2
	if e.shutdown.Load() || w.hasWork() { // S3
		if w.state.CompareAndSwap(workerParked, workerRunning) {
			e.sleepers.Add(-1)
		} else {
			w.state.Store(workerRunning) // a waker beat us to it (and decremented)
		}
		return
	}
	w.st.Parks++
	w.publish(e.statsEpoch.Load()) // with this park counted
	start := time.Now()
	sleepStart := start
	timeout := w.parkTimeout()
	for {
		wait := time.Duration(0)
		if timeout > 0 {
			if wait = timeout - time.Since(sleepStart); wait <= 0 {
				w.idleWakes++ // reset by loop as soon as there is work
				if !w.othersAwake() {
					// Nothing to steal: sleep again, longer.
					sleepStart, timeout = time.Now(), w.parkTimeout()
					continue
				}
				if w.state.CompareAndSwap(workerParked, workerRunning) {
					e.sleepers.Add(-1)
					w.st.WakeupsByTimeout++
				} else {
					w.st.WakeupsBySender++
				}
				break
			}
		}
		w.ev.Wait(&w.state, workerParked, wait) // S4
		if w.state.Load() != workerParked {
			w.st.WakeupsBySender++
			break
		}
	}
	w.state.Store(workerRunning)
	w.st.ParkedTime += time.Since(start)
}

// parkTimeout returns how long the next sleep may last before the worker
// looks for work to steal: 0 (until woken) without stealing, else
// Config.ParkTimeout doubled once per timeout that found no work, up to
// ParkTimeoutMax.
func (w *worker) parkTimeout() time.Duration {
	cfg := &w.e.cfg
	if w.e.sel == nil || cfg.ParkTimeout <= 0 {
		return 0
	}
	t := cfg.ParkTimeout
	for i := 0; i < w.idleWakes && t < cfg.ParkTimeoutMax; i++ {
		t *= 2
	}
	return min(t, cfg.ParkTimeoutMax)
}

// othersAwake reports whether another worker is awake (running a behaviour,
// scanning or spinning), that is, whether there may be anything to steal.
func (w *worker) othersAwake() bool {
	for _, o := range w.e.workers {
		if o != w && o.state.Load() != workerParked {
			return true
		}
	}
	return false
}

// reclaim gives back buffers grown by a burst before the worker parks: its
// own spare buffer and those of its idle mailboxes shrink to the floor
// (Config.QueueCapacity). It runs only if a grown buffer passed through
// this worker since the last reclaim, so parking after ordinary traffic
// costs nothing.
func (w *worker) reclaim() {
	if !w.grown {
		return
	}
	w.grown = false
	e := w.e
	floor := e.cfg.QueueCapacity
	if w.buf.Cap() > floor {
		w.buf.Shrink(floor, copyq.NewArray[envelope](floor))
	}
	for i := w.lo; i < w.hi; i++ {
		if mb := e.slots[i].Load(); mb != nil && mb.grown(floor) {
			mb.shrink(floor)
		}
	}
}

// notify is the sender's half of the wake-up protocol (P2-P4 above), called
// after every push into mb (after the unlock that published it). When no
// worker sleeps it is one atomic load.
func (e *Executor) notify(mb *mailbox) {
	if e.sleepers.Load() == 0 { // P2
		return
	}
	e.workers[mb.owner.Load()].wake() // P3, P4
}

// wake moves w out of the parked state and wakes its goroutine, if it is
// parked, and reports whether it did (P4); otherwise it does nothing. Any
// goroutine may call it.
func (w *worker) wake() bool {
	if w.state.Load() == workerParked && w.state.CompareAndSwap(workerParked, workerWoken) {
		w.e.sleepers.Add(-1)
		w.ev.Wake(&w.state)
		return true
	}
	return false
}

// wakeAll wakes every parked worker (for shutdown).
func (e *Executor) wakeAll() {
	for _, w := range e.workers {
		if w != nil {
			w.wake()
		}
	}
}
