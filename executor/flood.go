package executor

import (
	"runtime"
	"time"

	"github.com/actord/actord/internal/spin"
)

// Floods from outside the system.
//
// A goroutine that is not a worker can push into a mailbox for as long as
// it keeps its processor: with one processor the worker does not even run
// until the producer's time slice ends, and the mailbox's copy queue grows
// to whatever the producer pushed meanwhile (hundreds of thousands of
// envelopes, in segments: see package copyq), costing an allocation per
// segment, garbage-collector work on memory far larger than any cache, and
// that memory until the drain gives it back. A channel bounds the same
// flood by blocking the producer when its buffer is full.
//
// A behaviour that floods another actor is not bounded here (workers never
// wait, below): on one worker its whole backlog is queued before the
// receiver can run (Savina's counting from an actor queues a million
// envelopes, 40 MB). The segments keep that growth free of copies and of
// outgrown arrays.
//
// actord does not block a sender, but a sender outside the system whose
// push made the mailbox's length a flood point yields its processor
// (runtime.Gosched) until a worker has gulped the mailbox, the mailbox is
// closed, or floodWait has passed, whichever comes first. On one processor
// the yield hands the processor to the woken worker, which takes the whole
// backlog; on more, the producer waits for the worker's current batch to
// end. The wait is bounded, so a worker stuck in a long behaviour delays
// such a producer by at most floodWait per flood point; the queue then
// grows as before. Workers (behaviours) never wait here: a worker that
// yields to a worker could deadlock, and a behaviour's sends must not
// depend on other actors' progress.
//
// The flood points bound the executor's backlog, not one mailbox's: a
// producer sending round-robin to many actors (one driver feeding a pool)
// fills many mailboxes at once, and a bound of floodLimit envelopes each
// let every one of their buffers grow to floodLimit (megabytes in all,
// grown by doubling up to a segment: garbage that slows every sender). So the executor
// counts its deep mailboxes (deepQueues): those that have reached
// floodStep envelopes since their last gulp. A mailbox's first flood point
// of a fill is floodLimit divided by that count, rounded up to a multiple
// of floodStep (at least floodStep), and every floodLimit envelopes after
// it are flood points too. With one deep mailbox (a producer flooding one
// actor) the points are the multiples of floodLimit; with d deep ones, the
// first point comes at about floodLimit/d envelopes each, so that the deep
// mailboxes hold about floodLimit envelopes together when their producer
// first waits.
//
// A bounded or supervised actor's private queue (privqueue.go) holds its
// messages itself, and its shared mailbox only a drain token, so the
// mailbox's flood points never come. The queue has its own: an outside
// sender whose push made the queue's length a multiple of floodLimit
// yields until the actor's worker has taken the queue down to
// floodLimit/2, the queue is closed, or floodWait has passed.
//
// The executor's timer goroutine never waits here either: it fires holding
// the timers' mutex, which behaviours take to set timers.
//
// The check costs a send a test of the length its push returned; at a
// multiple of floodStep, a load of deepQueues (a line that changes only
// when a mailbox turns deep or a deep one is gulped) and a division; the
// test for "am I a worker?" (runningWorker) is made only at a flood point.
// It is a policy, not a bound: several producers may each pass the check
// points, and the count is a hint, read without ordering.

const (
	// floodLimit is the backlog (envelopes, in deep mailboxes together)
	// at which an outside producer first yields, and the distance between
	// one mailbox's later flood points; a power of two. 4096
	// envelopes are 160 KiB: the mailbox's buffer and the worker's stay in
	// a core's second-level cache.
	floodLimit = 4096
	// floodStep is the length (envelopes) at which a mailbox counts as
	// deep, and the granularity of flood points; a power of two dividing
	// floodLimit. 512 envelopes are 20 KiB.
	floodStep = 512
	// floodWait bounds one yield: the longest an outside producer waits
	// for a worker to gulp the mailbox it floods.
	floodWait = time.Millisecond
	// floodGosched is how many times a yield calls runtime.Gosched alone
	// before it also yields the thread's CPU (spin.OSYield; see
	// floodYield).
	floodGosched = 16
)

// The yield is runtime.Gosched, which hands the Go processor to any
// goroutine waiting for one (on one processor, the woken worker) but keeps
// the OS thread's CPU when none is. With more than one processor, past
// floodGosched calls each one is preceded by a yield of the CPU itself
// (spin.OSYield): the worker's thread may be waiting for that very CPU,
// when the process has more Go processors than CPUs to run them
// (GOMAXPROCS above the CPUs it may use, or a CPU taken by the host), and
// a producer that only called Gosched spun until the kernel preempted it
// or floodWait passed, at every flood point. Gosched stays, so that a
// goroutine waiting for this processor still gets it. With one processor
// the worker runs on this thread (see "Giving the thread back" in
// park.go): Gosched alone hands it over, and a yield of the CPU would only
// hold the processor in a system call meanwhile.

// floodPoint reports whether a push that made a mailbox's length n is a
// flood point, deep being the executor's count of deep mailboxes (see
// above).
func floodPoint(n int, deep int32) bool {
	if n&(floodStep-1) != 0 || n < floodStep {
		return false
	}
	first := floodLimit
	if deep > 1 {
		first = max((floodLimit/int(deep)+floodStep-1)&^(floodStep-1), floodStep)
	}
	return n >= first && (n-first)&(floodLimit-1) == 0
}

// floodYield is called by a sender (notify) whose push made mb a flood
// point, w being the word it saw. Unless the caller is a worker, it yields
// until mb's gulp sequence moves on from the one in w (a gulp, or a re-take
// by the worker draining it), mb is closed, or floodWait has passed.
func floodYield(mb *mailbox, w uint64) {
	seq := w & wordSeqMask
	floodWaitFor(mb.exec, func() bool {
		now := mb.word.Load()
		return now&wordSeqMask != seq || now&wordClosed != 0
	})
}

// privFloodYield is called by a sender whose push made a private queue's
// length a flood point (privQueue.offer), seq being the queue's floodSeq
// then. Unless the caller is a worker, it yields until floodSeq moves on
// (the actor's worker has taken the queue down to half a flood point, or
// the queue closed), or floodWait has passed. A private queue is not
// counted in deepQueues: its flood points are the multiples of floodLimit.
func privFloodYield(e *Executor, q *privQueue, seq uint32) {
	floodWaitFor(e, func() bool { return q.floodSeq.Load() != seq })
}

// floodWaitFor is the yield of floodYield and privFloodYield: unless the
// caller is a worker or e's timer goroutine, it yields until moved reports
// true or floodWait has passed (e may be nil: then it yields only the
// processor).
func floodWaitFor(e *Executor, moved func() bool) {
	if runningWorker() != nil {
		return // a behaviour: never waits
	}
	if e != nil && e.timers.runner.Load() == selfID() {
		return // the timer goroutine, holding the timers' mutex
	}
	osYield := e != nil && e.procs > 1
	var start time.Time
	for i := 0; ; i++ {
		if osYield && i >= floodGosched {
			spin.OSYield()
		}
		runtime.Gosched()
		if moved() {
			if testHookFloodYield != nil {
				testHookFloodYield(false)
			}
			return
		}
		if i&15 == 15 {
			if start.IsZero() {
				start = time.Now()
			} else if time.Since(start) >= floodWait {
				if testHookFloodYield != nil {
					testHookFloodYield(true)
				}
				return
			}
		}
	}
}

// testHookFloodYield, if set (by tests only, before the flood), is called
// as a flood yield ends: timedOut says that floodWait passed first.
var testHookFloodYield func(timedOut bool)
