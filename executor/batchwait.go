package executor

import "time"

// Waiting for a batch. A goroutine outside the system that floods actors
// (a producer, a consumer of a queue, a driver) pushes one envelope at a
// time. A worker that drains faster than the producer pushes comes back to
// the same mailboxes for a few envelopes at a time: every gulp and release
// then takes the mailbox's lock line from the producer's core and hands it
// back, and the envelopes the producer writes land in buffer lines the
// worker has just read, so the two cores pass cache lines back and forth
// for every few messages. On one processor this does not arise (the
// producer floods until a flood point, see flood.go, and the worker drains
// the whole mailbox in turn); on two or more it made a flood from outside
// slower than the same flood through a channel.
//
// So a worker whose visit of a mailbox ended with envelopes pushed during
// the drain (the release re-took them, or left them for the next pass),
// fewer than batchWaitFill of them, the last one by a goroutine that is
// not a worker of the executor, waits at the end of its pass before it
// makes the next one: until that mailbox holds batchWaitFill envelopes,
// batchWaitMax has passed, or no envelope has arrived in it for
// batchWaitQuiet (the producer has stopped, or sends only now and then: a
// pipeline's generator that sent a burst). It waits only with more than
// one processor (GOMAXPROCS at Start), so that the producer runs meanwhile
// on another one. The next pass then finds batches, which the worker takes
// with one gulp each, and the producer meanwhile pushes into lines it owns.
//
// Pushes from behaviours never cause a wait: a refill by a worker is part
// of a conversation between actors, whose latency the wait would add to. A
// mailbox that a goroutine outside the system feeds now and then (a request
// from a handler) is rarely refilled during a drain, and when it is, the
// wait ends after batchWaitQuiet. The wait is a policy: it delays no
// wake-up (the worker is running) and holds no lock.
//
// While it waits the worker looks at the mailbox's length only every
// batchWaitPoll: each look takes the line the producer's pushes write.
//
// The last pusher's identity is recorded by push under the mailbox lock
// (mailbox.pushG) and read by the release, under the lock too.
const (
	batchWaitFill  = 1024
	batchWaitMax   = 20 * time.Microsecond
	batchWaitQuiet = 4 * time.Microsecond
	batchWaitPoll  = 2 * time.Microsecond // between looks at the mailbox's length
)

// noteRefill records, after the release of a visit of mb, that n envelopes
// were pushed into mb during the drain, the last by the goroutine by (0 if
// unknown): if the refill came from outside the system and is small, the
// worker waits for a batch at the end of its pass. Called by the worker's
// goroutine only.
func (w *worker) noteRefill(mb *mailbox, n int, by uintptr) {
	// by is 0 where identities are not supported: push records none.
	if n == 0 || n >= batchWaitFill || w.e.procs < 2 || by == 0 || by == w.peerG {
		return
	}
	if w.e.workerOf(by) != nil {
		// A behaviour's send: a conversation, not a flood. Remembered,
		// so that refills by the same worker skip the lookup (a stale
		// memory only skips a wait).
		w.peerG = by
		return
	}
	w.batchFrom = mb
}

// waitForBatch waits for mb to gather a batch (see above), unless the
// executor is stopping. Called by the worker's goroutine at the end of a
// pass.
func (w *worker) waitForBatch(mb *mailbox) {
	e := w.e
	start := time.Since(e.epoch)
	last, seen := start, mb.queued()
	w.st.BatchWaits++
	polled := start
	for !e.shutdown.Load() {
		now := time.Since(e.epoch)
		if now-start >= batchWaitMax {
			return
		}
		if now-polled < batchWaitPoll {
			continue // leave the mailbox's line to the producer meanwhile
		}
		polled = now
		n := mb.queued()
		if n >= batchWaitFill {
			return
		}
		if n != seen {
			last, seen = now, n
		} else if now-last >= batchWaitQuiet {
			return
		}
	}
}
