package executor

import (
	"runtime"
	"runtime/metrics"
	"time"

	"github.com/actord/actord/internal/copyq"
	"github.com/actord/actord/internal/event"
	"github.com/actord/actord/internal/goid"
)

// Idling: spinning, parking, and the wake-up protocol.
//
// A worker whose pass finds no work becomes a spinner, if fewer than
// maxSpinners workers spin already: it keeps making passes (and steal
// attempts, see steal.go) for Config.SpinPasses passes, or until it has
// visited SpinPasses*spinVisitsPerPass slots, whichever comes first, so that
// the cost of spinning does not grow with the number of queues. A spinner
// that has spun out goes on spinning, up to spinInFlight times as long,
// while another worker's wake-up is in flight (until that worker runs, see
// spinForWake) or while its last steal attempt saw another worker's
// mailboxes waiting (see spinForBacklog). A worker that may not spin, or
// has spun out, makes one steal attempt and parks.
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
//	S3  re-check every owned mailbox (waiting for a held lock to be
//	    released, mailbox.settled), Executor.deferred (defer.go) and
//	    Executor.shutdown (stored by Stop before it wakes every worker);
//	    if a mailbox has work, or a deferred flag is set:
//	    CAS state parked -> running, and if that succeeded, sleepers -= 1
//	    (if it failed, a waker moved us to woken and decremented for us)
//	S4  otherwise sleep on the event while state == parked
//
// The sender (send -> notify), and likewise releasers (processCurrent) and
// thieves (trySteal) that leave work in a mailbox another worker owns:
//
//	P1  publish: the CAS that takes the mailbox word's lock, the writes,
//	    and the unlocking release store (push, release); a thief's swap
//	P2  load sleepers; if 0, stop: nobody sleeps
//	P3  load the mailbox's owner
//	P4  if its state is parked, CAS parked -> woken; if that succeeded,
//	    sleepers -= 1 and signal its event
//
// Every step is a sequentially consistent atomic, so all of them fall in one
// total order, except P1's unlocking store: a release store
// (mailbox.unlock), after which the sender's own loads (P2, P3, P4's) may
// be performed before other processors see it. P1's CAS, which takes the
// lock, is sequentially consistent and precedes them; it is P1's place in
// the order. If S3's load of the word comes after that CAS, it finds the
// lock held or released, waits for the release if held, and sees the
// message: the sleeper does not sleep. Otherwise S1 < S2 < S3 < P1 < P2: P2 sees the
// sleeper's increment (sleepers counts increments minus decrements, and a
// decrement for this sleeper comes only from whoever moves it out of
// parked), so the sender goes on to P4, which sees the state stored at S2
// and wakes it. S1 comes before S2 so that a waker's decrement, which
// follows its CAS on a parked state, can never precede the matching
// increment: sleepers never undercounts the parked workers, which would let
// a sender skip P3 while another worker sleeps. The event itself never
// loses a signal given after S2 (see package internal/event): with the
// two-phase park, S4 sleeps first in the futex (if a futex slot is free,
// see initPark) and then on the channel, and a waker's Wake signals the
// phase it finds the sleeper in, ordered against the sleeper's change of
// phase so that a sleeper moving to the channel sees the woken state.
//
// A sender that is a worker about to be idle may, at P4, find the owner
// parked and keep the mailbox in its handoff slot instead of waking it: it
// then serves the mailbox itself or makes P2-P4 later, before it parks
// (see handoff.go). Being running, it is the worker that the message is
// not lost to.
//
// A sender outside the system may, at P4, find the owner parked while no
// processor is free for it, and leave the wake-up to the awake workers
// (defer.go): it sets the owner's deferred flag and counts it (D1), then
// loads sleepers again (D2) and wakes the owner itself if every worker is
// parked. With S1 before S3's load of the count, D1 before D2 makes the
// same Dekker pattern as above: the last worker to park sees the flag, and
// leaves park to serve it, unless the sender saw every worker parked and
// woke the owner. A sender that finds the flag set does nothing more: the
// flag's clearing comes after its push's CAS, and its clearer serves the
// owner's mailboxes, reading their words settled (the push's unlocking
// store may not be visible yet when the flag is cleared; its CAS is).
//
// A mailbox's owner can change under the sender (a thief swapped it): a
// sender that loaded the previous owner at P3 wakes that one, and the thief,
// which takes the mailbox while running, scans it itself.
//
// Parked workers have no timeout of their own: see the watcher below.

// spinVisitsPerPass scales Config.SpinPasses into a bound on the slots a
// spinner visits before it parks.
const spinVisitsPerPass = 32

// maxSpinners is the number of workers that may spin at once: half of them,
// as Go's scheduler bounds its spinning threads, but never fewer than two
// (or all of them, if fewer), so that two workers handing messages back and
// forth both stay awake between hand-offs.
func (e *Executor) maxSpinners() int32 {
	return int32(max(min(2, len(e.workers)), len(e.workers)/2))
}

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
				w.spinningNow.Store(true)
				break
			}
		}
	}
	cfg := &w.e.cfg
	budget := cfg.SpinPasses
	if w.spinShort {
		// Woken from a sleep at a low rate: a short spin (see "Giving the
		// thread back").
		budget = max(budget/lowRateSpinDiv, 1)
	}
	if idle < budget && visits < budget*spinVisitsPerPass {
		return false
	}
	// Spun out. Keep spinning, up to spinInFlight times the budget, while
	// another worker's wake-up is in flight (see spinForWake) or another
	// worker has a backlog (see spinForBacklog).
	if idle >= cfg.SpinPasses*spinInFlight || visits >= cfg.SpinPasses*spinVisitsPerPass*spinInFlight {
		return true
	}
	if w.e.spinForWake() {
		w.st.inFlightSpins++
		return false
	}
	if w.spinForBacklog() {
		w.st.backlogSpins++
		return false
	}
	return true
}

// spinInFlight bounds the extra spinning of spinForWake and spinForBacklog,
// as a multiple of the spin budget (Config.SpinPasses).
const spinInFlight = 32

// spinForWake reports whether a spinner that has spun out its budget should
// go on spinning: some worker has been woken and is not running yet
// (waking), and every worker awake, the woken ones included, can hold a
// processor at once (at most procs are not parked), so that spinning does
// not keep the woken worker from running.
//
// Why: a worker that wakes another has usually just sent it messages, and
// the woken worker's behaviours often answer at once (a ring, a ping-pong,
// clients moving between actors on both workers). A sender that parks
// before that answer arrives must itself be woken for it, and two workers
// that hand messages back and forth this way take turns at the pace of
// thread wake-ups, each parked while the other runs. Staying awake until
// the woken worker is running bridges that one wake-up; once it runs, the
// spinner parks after its usual budget if nothing comes.
func (e *Executor) spinForWake() bool {
	return e.waking.Load() > 0 && int32(len(e.workers))-e.sleepers.Load() <= e.procs
}

// spinForBacklog reports whether a spinner that has spun out its budget
// should go on spinning because another worker has a backlog: the
// spinner's last steal attempt saw mailboxes of another worker waiting
// (w.backlogSeen, see steal), and the spinner holds a processor nobody else
// needs (procsSpare).
//
// Why: a worker that owns waiting mailboxes besides the one it is serving
// sends messages to other workers' mailboxes as it serves them, whenever
// its actors talk to actors there. In a closed system (rings of actors
// spread over both workers, clients circulating between servers) a spinner
// that parks before those messages arrive must be woken for them, and then
// the whole backlog moves to it while the sender, having run out, parks in
// turn: the two workers take turns at the pace of thread wake-ups instead
// of running together (a convoy), each parked about half the time. A
// spinner that waits while it sees a backlog elsewhere serves the messages
// as they arrive, or steals the backlog once it has aged. A chain of
// single messages (a ping-pong) leaves no mailbox waiting, so it does not
// keep a second worker spinning.
func (w *worker) spinForBacklog() bool {
	return w.backlogSeen && w.procsSpare()
}

// procsSpare reports whether a spinning worker holds a processor that
// nothing else is waiting for: every worker that is not parked can hold a
// processor at once (at most procs are not parked), and no goroutine is
// waiting to run (the runtime's count of runnable goroutines, read every
// runqEvery calls per worker and cached in between). A goroutine outside
// the system that sends to the actors, a timer's, or a worker woken through
// the channel would otherwise wait for the spinner to park or be preempted.
// Called by the worker's goroutine only.
func (w *worker) procsSpare() bool {
	e := w.e
	if int32(len(e.workers))-e.sleepers.Load() > e.procs {
		return false
	}
	if w.runqCalls%runqEvery(len(e.workers)) == 0 {
		w.runqIdle = runnableGoroutines(&w.runq) == 0
	}
	w.runqCalls++
	return w.runqIdle
}

// runqEvery is how many procsSpare calls a worker answers from its cached
// runnable count before it reads the count again: 8 per worker of the
// executor, so that however many workers spin, the runtime's scheduler
// lock, which the read takes, is taken about once per 8 idle passes of the
// whole executor.
func runqEvery(workers int) uint {
	return 8 * uint(max(workers, 2))
}

// runnableGoroutines returns the runtime's count of goroutines waiting for a
// processor (runtime/metrics), or what testHookRunnable returns. s is the
// worker's sample, allocated on first use.
func runnableGoroutines(s *[]metrics.Sample) uint64 {
	if testHookRunnable != nil {
		return testHookRunnable()
	}
	return schedCount(s, runnableMetric)
}

// runningGoroutines returns the runtime's count of goroutines running on a
// processor (runtime/metrics; 0 where not supported), or what
// testHookRunning returns. s is the worker's sample, allocated on first use.
func runningGoroutines(s *[]metrics.Sample) uint64 {
	if testHookRunning != nil {
		return testHookRunning()
	}
	return schedCount(s, runningMetric)
}

// schedCount reads the runtime/metrics count name into the sample *s
// (allocated on first use); 0 where the runtime does not support it.
// Reading it takes the runtime's scheduler lock.
func schedCount(s *[]metrics.Sample, name string) uint64 {
	if *s == nil {
		*s = []metrics.Sample{{Name: name}}
	}
	metrics.Read(*s)
	if (*s)[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return (*s)[0].Value.Uint64()
}

// The runtime/metrics names of the number of goroutines ready to run and
// waiting for a processor, and of those running on one.
const (
	runnableMetric = "/sched/goroutines/runnable:goroutines"
	runningMetric  = "/sched/goroutines/running:goroutines"
)

// testHookRunnable and testHookRunning, if set (by tests only, before
// Start), replace the runtime's counts of runnable goroutines (procsSpare)
// and of running ones (wakeThief).
var (
	testHookRunnable func() uint64
	testHookRunning  func() uint64
)

// stopSpinning gives back w's spinning place, if it holds one.
func (w *worker) stopSpinning() {
	if w.spinner {
		w.spinner = false
		w.spinningNow.Store(false)
		w.e.spinning.Add(-1)
	}
}

// park puts the worker to sleep until a sender (or thief, releaser, the
// watcher, Stop) wakes it, following the protocol above.
func (w *worker) park() {
	e := w.e
	w.flushHandoff() // a slot is resolved before sleeping (see handoff.go)
	w.stopSpinning()
	w.publish(e.statsEpoch.Load())                                  // Stats does not wait for sleepers: publish first
	e.sleepers.Add(1)                                               // S1
	w.state.Store(workerParked)                                     // S2
	if e.shutdown.Load() || w.hasWork() || e.deferred.Load() != 0 { // S3
		for {
			if w.state.CompareAndSwap(workerParked, workerRunning) {
				e.leftPark(e.sleepers.Add(-1))
				return
			}
			if w.state.Load() == workerLent {
				w.waitLent() // a helping caller holds us (see help.go): wait for it
				continue
			}
			w.state.Store(workerRunning) // a waker beat us to it (and decremented)
			e.waking.Add(-1)             // its wake-up has arrived
			return
		}
	}
	w.st.Parks++
	w.seq += 2 // a sleep ends the visit a watcher or thief may be timing (victimStuck)
	w.stored = w.seq & 0xffffffff
	w.batchSeq.Store(w.stored)
	w.publish(e.statsEpoch.Load()) // with this park counted
	start := time.Now()
	inFutex, caught, unlocked, lendable := false, false, false, false
	if w.futexPhase > 0 && w.futexWanted() && e.futexSlots.Load() > 0 {
		// S4, phase one, if a slot is free: a wake-up within it is one
		// FUTEX_WAKE (see initPark for who may have this phase).
		if e.futexSlots.Add(-1) >= 0 {
			if testHookFutexPhase != nil {
				testHookFutexPhase(e, 1)
			}
			// lendGen pairs with lendOwner's loads (help.go): odd, the
			// worker is past its last write to its own fields before
			// waking, and may be lent.
			w.lendGen.Add(1)
			lendable = true
			w.ev.WaitFutex(&w.state, workerParked, w.futexPhase)
			s := w.state.Load()
			inFutex, caught = true, s != workerParked && s != workerLent
			if testHookFutexPhase != nil {
				testHookFutexPhase(e, -1)
			}
		}
		e.futexSlots.Add(1)
	}
	if s := w.state.Load(); s == workerParked || s == workerLent {
		// S4 on the channel, without the thread at a low rate (see
		// "Giving the thread back" below). givesThread reads only what
		// no helping caller writes (the sleep averages, the pinning).
		unlocked = w.givesThread()
		if unlocked {
			runtime.UnlockOSThread()
			w.threadless.Store(true)
		}
		if !lendable {
			w.lendGen.Add(1) // odd: lendable from here (see help.go)
			lendable = true
		}
		for {
			s := w.state.Load()
			if s == workerParked {
				w.ev.WaitChan(&w.state, workerParked, 0) // S4
			} else if s == workerLent {
				w.waitLent() // lent to a helping caller (see help.go)
			} else {
				break
			}
		}
	}
	if lendable {
		w.lendGen.Add(1) // even: no longer lendable
	}
	if unlocked {
		w.st.ThreadReleases++ // counted after the sleep: a lend may publish w.st meanwhile
		w.threadless.Store(false)
		runtime.LockOSThread() // whichever thread runs us now
	}
	if w.watchWoken.Swap(false) {
		w.st.WakeupsByTimeout++
	} else {
		w.st.WakeupsBySender++
	}
	w.state.Store(workerRunning)
	if testHookWoken != nil {
		testHookWoken(w)
	}
	e.waking.Add(-1) // woken (the loop ends only once a waker moved us)
	parked := time.Since(start)
	w.st.ParkedTime += parked
	w.noteSleep(parked)
	if w.futexPhase > 0 {
		w.futexOutcome(inFutex, caught, parked)
	}
	w.reclaimOwn()
}

// Giving the thread back. A worker's goroutine is locked to its OS thread,
// and a locked goroutine woken on the channel needs two thread wake-ups to
// run again: the runtime wakes a thread to find it, which hands a
// processor to the worker's own thread and wakes that. At a low rate of
// messages every message pays them, while a goroutine woken by a
// goroutine that is about to block runs on the waker's processor with
// none. So a worker that sleeps at
// a low rate, and that is not pinned to a CPU (pinning applies to its
// thread), unlocks its goroutine from the thread for the channel phase of
// its sleep and locks it again to whichever thread runs it when it wakes:
// behaviours always run on a thread locked to their worker, but after such
// a sleep not necessarily the same one. A low rate is either
//
//   - a last sleep of threadSleep or more (and the first sleep; a short
//     sleep that followed no message does not count, see noteSleep), or
//   - sleeps of threadSleepMid or more on average (a moving average with
//     weight 1/4, each sleep counted up to sleepAvgCap) between awake
//     periods that take their messages one at a time (fewer than two per
//     gulp, averaged the same way): a chain of single messages arriving
//     every millisecond or so, such as a pipeline fed at a thousand
//     messages a second.
//
// With a single processor (GOMAXPROCS 1 at Start) every sleep on the
// channel gives the thread back, whatever the rate. There the workers and
// every other goroutine of the program take turns on the one processor,
// and each turn to or from a locked worker is a switch of OS threads (the
// runtime hands the processor to the worker's thread and wakes it, then
// the other way): a goroutine outside the system flooding an actor pays
// two at every flood point, the worker's sleep and its wake-up. Unlocked,
// the sleeping worker's thread runs the next goroutine itself, and the
// woken worker resumes on the thread of whoever readied it: goroutine
// switches, as between any two goroutines. No other processor exists for
// the runtime to hand the woken worker to, so the cost below does not
// arise.
//
// With more processors, other sleeps keep the thread: an unlocked sleeper
// costs the runtime's scheduler more per sleep (its thread looks for other
// work before it sleeps, and the woken goroutine is handed between
// processors), which at thousands of sleeps a second costs more CPU than
// the wake-ups it saves.
// Short sleeps are those of a busy worker; a worker fed ten thousand
// messages a second while it keeps its thread sleeps about a millisecond
// too, but wakes to batches of messages (the senders' sends gather while
// the locked worker wakes), and unlocked it would sleep once per message
// or two instead. The cap lets a worker that has been idle for long return
// to its thread within a few short sleeps.
//
// A worker whose sleeps before the one just ended averaged threadSleepMid
// or more spins 1/lowRateSpinDiv of its budget (Config.SpinPasses, at
// least one pass) before it parks again, unless spinDone's reasons to spin
// longer hold, whether or not it gave its thread back: at such a rate the
// next message is a sleep away, whether messages come one at a time or in
// batches (a producer whose timers fire on the runtime's millisecond poll
// sends its due messages together), and the spin would only burn CPU.
// (After one long sleep the rate is not known yet: the whole budget.)
//
// A policy only: the wake-up protocol does not depend on it.
const (
	threadSleep    = 2 * time.Millisecond
	threadSleepMid = 500 * time.Microsecond
	sleepAvgCap    = 2 * threadSleep
	lowRateSpinDiv = 16
)

// givesThread reports whether the sleep about to begin on the channel
// should give the worker's thread back (see above). Called by the worker's
// goroutine.
func (w *worker) givesThread() bool {
	if w.cpu >= 0 || w.ev.Kind() == event.KindFutex {
		return false
	}
	return w.e.procs == 1 || w.sleptLong || w.lowRate()
}

// lowRate reports whether the worker's averages say that it sleeps at a low
// rate of single messages (the second rule above).
func (w *worker) lowRate() bool {
	return w.sleepAvg >= threadSleepMid && w.gulpAvg < 2*16
}

// noteSleep records a sleep of length parked and the awake period that
// preceded it, for givesThread and spinDone: the worker spins briefly
// after it if the sleeps before it averaged threadSleepMid or more. Called
// by the worker's goroutine when it wakes.
//
// A short sleep after an awake period that took no message (the first
// sleep, which waits for the first work, or a wake-up whose messages
// another worker took) leaves sleptLong as it was: the interval between
// the messages before and after it spans that awake period too, so the
// sleep does not show that they come often. Without this a worker started
// just before its first message would keep its thread for the sleep after
// that message, at whatever rate the messages come.
func (w *worker) noteSleep(parked time.Duration) {
	if w.awakeGulps > 0 || parked >= threadSleep {
		w.sleptLong = parked >= threadSleep
	}
	w.spinShort = w.sleepAvg >= threadSleepMid
	w.sleepAvg += (min(parked, sleepAvgCap) - w.sleepAvg) / 4
	if w.awakeGulps > 0 {
		w.gulpAvg += (w.awakeMsgs*16/w.awakeGulps - w.gulpAvg) / 4
	}
	w.awakeGulps, w.awakeMsgs = 0, 0
}

// Skipping a futex phase that does not pay. A worker whose sleeps outlast
// the futex phase (a steady low rate of messages: a pipeline fed at 1-10k
// messages per second) pays for the phase without its benefit: the
// thread wakes at the phase's timeout, and the runtime hands processors
// around the system call, only to sleep on the channel anyway. So a worker
// whose last futexMissLimit phases all ended in the timeout parks on the
// channel directly, except every futexProbeEvery-th park, which takes the
// phase again to see whether sleeps got short; any sleep shorter than the
// phase, or a phase ended by a wake-up, resets the count. A policy only:
// the wake-up protocol does not depend on the phase.
const (
	futexMissLimit  = 4 // consecutive phases ended by the timeout before phases are skipped
	futexProbeEvery = 8 // while skipping, every futexProbeEvery-th park takes the phase
)

// futexWanted reports whether the park about to sleep should take the futex
// phase (see above). Called by the worker's goroutine, after counting the
// park in st.Parks.
func (w *worker) futexWanted() bool {
	return w.futexMisses < futexMissLimit || w.st.Parks%futexProbeEvery == 0
}

// futexOutcome records how a park ended: whether it took the futex phase
// (inFutex), whether a wake-up ended the phase (caught), and how long it
// slept in all.
func (w *worker) futexOutcome(inFutex, caught bool, parked time.Duration) {
	switch {
	case caught || parked < w.futexPhase:
		w.futexMisses = 0 // a short sleep: the phase pays
	case inFutex:
		w.futexMisses++
	}
}

// testHookFutexPhase, if set (by tests only, before Start), is called by
// a parking worker with +1 as it enters the futex phase and -1 as it
// leaves it.
var testHookFutexPhase func(e *Executor, delta int)

// testHookWoken, if set (by tests only, before Start), is called by a worker
// woken from park (by a waker, not by its own re-check) just before it
// counts its wake-up as arrived (Executor.waking).
var testHookWoken func(w *worker)

// The watcher. Workers sleep until woken. So that mailboxes stuck behind a
// long behaviour are stolen even when every other worker sleeps (a stuck
// worker cannot wake a thief itself), one goroutine per executor (with
// stealing on and Config.ParkTimeout > 0) looks every ParkTimeout, while
// some worker is awake, for a worker still inside the same mailbox visit
// as at its previous look, and if it finds one wakes one sleeping worker;
// the interval doubles after each look that finds no stuck worker, up to
// ParkTimeoutMax, starts over when a thief takes work, and is two steal
// ages (at most ParkTimeout) while a worker stays stuck. The woken worker spins and steals what has
// aged, then parks again. While every worker
// sleeps, the watcher sleeps too, without a timer (after giving back grown
// queue buffers once the idle has lasted ParkTimeoutMax), until the first
// worker to leave the parked state kicks it (leftPark), or has it kicked by
// its waker (wakeOnly's caller, at once or, a sender yielding to the woken
// worker, right after; see wakeBySender): an idle system makes no wake-ups
// at all, whatever its number of workers and queues.

// leftPark is called with the sleepers count just after a worker left the
// parked state (every decrement of sleepers goes through it or through
// wakeOnly, whose caller kicks): if that made the count drop from all
// workers, the watcher is kicked.
func (e *Executor) leftPark(sleepers int32) {
	if e.lastLeft(sleepers) {
		e.kickWatcher()
	}
}

// lastLeft reports whether the watcher is to be kicked after a decrement
// of sleepers that left the count sleepers (see leftPark).
func (e *Executor) lastLeft(sleepers int32) bool {
	return sleepers == int32(len(e.workers))-1 && e.watchKick != nil
}

// kickWatcher wakes the watcher from its wait without a timer (see leftPark).
func (e *Executor) kickWatcher() {
	select {
	case e.watchKick <- struct{}{}:
	default: // a kick is pending already
	}
}

// watch is the watcher goroutine; it exits at shutdown (Stop kicks it).
func (e *Executor) watch() {
	defer close(e.watchDone)
	first, most := e.cfg.ParkTimeout, e.cfg.ParkTimeoutMax
	interval := first
	t := time.NewTimer(interval)
	defer t.Stop()
	next := 0 // the worker to try first: round-robin
	seen := make([]uint32, len(e.workers))
	var reclaimAt time.Time // when to give back grown buffers, if still idle
	armed := true           // t is set (its value not yet received)
	for !e.shutdown.Load() {
		if testHookWatcherWait != nil {
			testHookWatcherWait(e, !armed)
		}
		select {
		case <-e.watchKick:
			// Some worker is awake again after all slept: start over.
			interval = first
			reclaimAt = time.Time{}
			t.Reset(interval)
			armed = true
			continue
		case <-t.C:
			armed = false
		}
		if e.watchReset.Swap(false) {
			interval = first // a thief took work: look often again
		}
		n := e.sleepers.Load()
		if n == int32(len(e.workers)) {
			// Everyone sleeps: nothing can be stuck. If buffers grew,
			// give them back once the system has stayed idle for
			// ParkTimeoutMax (a kick meanwhile restarts the wait); then
			// wait for a kick without a timer.
			if reclaimAt.IsZero() && e.grown.Load() {
				reclaimAt = time.Now().Add(most)
				t.Reset(most)
				armed = true
			} else if !reclaimAt.IsZero() && !time.Now().Before(reclaimAt) {
				e.reclaimIdle()
				reclaimAt = time.Time{}
			}
			continue
		}
		reclaimAt = time.Time{}
		// A worker is stuck if it is awake, not spinning idle, and has
		// begun no mailbox visit (and not slept) since the previous look
		// (batchSeq): it is inside one
		// visit all that time (or, rarely and harmlessly, in one long idle
		// pass before it spins). Busy workers that are not stuck wake
		// thieves themselves (see pass).
		stuck := false
		for i, w := range e.workers {
			s := w.visitSeq()
			if s == seen[i] && w.state.Load() == workerRunning && !w.spinningNow.Load() {
				stuck = true
			}
			seen[i] = s
		}
		if stuck {
			// Look again soon while a worker is stuck: every two steal
			// ages, so that the thieves woken take its queues as soon as
			// they have aged (at most ParkTimeout apart).
			interval = min(first, max(2*e.cfg.StealAge, time.Millisecond))
		}
		if stuck && n > 0 {
			for k := range e.workers {
				w := e.workers[(next+k)%len(e.workers)]
				if w.state.Load() != workerParked {
					continue
				}
				w.watchWoken.Store(true)
				if w.wake() {
					next = (w.id + 1) % len(e.workers)
					break
				}
				w.watchWoken.Store(false)
			}
		}
		if !stuck {
			interval = min(2*interval, most)
		}
		t.Reset(interval)
		armed = true
	}
}

// testHookWatcherWait, if set (by tests only, before Start), is called by
// the watcher each time it is about to wait, with whether it waits for a
// kick alone (no timer set).
var testHookWatcherWait func(e *Executor, timerless bool)

// reclaimIdle gives back the buffers a burst grew, in a system that has
// been idle for ParkTimeoutMax: every grown mailbox buffer (empty and not
// being processed), and each worker's own spare buffer, which only its
// worker may touch: the watcher wakes each sleeping worker once with a
// request to shrink it (see reclaimOwn). Run by the watcher; without one
// (stealing off, or a negative ParkTimeout) buffers shrink only by the copy
// queue's own rule, as they are drained. Not done at every park: a busy
// system parks often, and would regrow them at once.
func (e *Executor) reclaimIdle() {
	if !e.grown.Swap(false) {
		return
	}
	floor := e.cfg.QueueCapacity
	for _, mb := range e.mailboxes {
		if mb.queued() == 0 && mb.grown(floor) {
			mb.shrink(floor)
		}
	}
	for _, w := range e.workers {
		w.reclaimReq.Store(true)
		w.wake()
	}
	e.reclaims.Add(1)
}

// reclaimOwn shrinks the worker's spare buffer if the watcher asked for it
// (see reclaimIdle). Called by the worker when it leaves park.
func (w *worker) reclaimOwn() {
	if w.cur != nil || !w.reclaimReq.Swap(false) {
		return // a visit left by a helping caller holds the buffer: next park
	}
	if floor := w.e.cfg.QueueCapacity; w.buf.Cap() > floor {
		w.buf.Shrink(floor, copyq.NewArray[envelope](floor))
	}
}

// notify is the sender's half of the wake-up protocol (P2-P4 above), called
// after every push into mb (after the unlock that published it), n being
// mb's length that the push made. When no worker sleeps it is one atomic
// load. Then it counts mb deep if the push made it so, and a sender outside
// the system whose push made a flood point yields (see flood.go).
//
// e must be mb.exec (pushTo calls mb.exec.notify): mb.owner indexes e's
// workers, the handoff slot and next hint it may set belong to a worker of
// e, and deepQueues pairs with mailbox.taken, which counts into mb.exec.
func (e *Executor) notify(mb *mailbox, n int) {
	if e.sleepers.Load() != 0 { // P2
		o := e.workers[mb.owner.Load()] // P3
		if o.state.Load() == workerParked {
			// P4, unless a worker about to be idle takes the wake-up on
			// itself (a behaviour's send, see handoff.go) or an awake
			// worker will serve mb (a send from outside while no
			// processor is free for o, see defer.go). A deferred flag
			// already set means the latter: the worker that clears it
			// serves o's mailboxes afterwards.
			if !o.deferred.Load() {
				if cur := e.current(); !e.keepWake(mb, o, cur) {
					o.wakeBySender(cur == nil)
				}
			}
		} else if goid.Supported && o.g.Load() == goid.Unchecked() {
			// The owner is awake: no wake-up. It is the caller itself,
			// running a behaviour: it may visit mb next (see "Following
			// the chain" in handoff.go).
			o.next = mb
		}
	}
	// Flood points (see flood.go): a test of n, and at every floodStep
	// envelopes a load of the deep count.
	if n&(floodStep-1) == 0 {
		var d int32
		if n == floodStep {
			d = e.deepQueues.Add(1) // paired with the gulp's -1 (mailbox.taken)
		} else {
			d = e.deepQueues.Load()
		}
		if floodPoint(n, d) {
			floodYield(mb, mb.word.Load())
		}
	}
}

// wake moves w out of the parked state and wakes its goroutine, if it is
// parked, and reports whether it did (P4); otherwise it does nothing. Any
// goroutine may call it.
func (w *worker) wake() bool {
	kick, ok := w.wakeOnly()
	if kick {
		w.e.kickWatcher()
	}
	return ok
}

// wakeOnly is wake without the watcher's kick: it reports whether it woke
// w, and whether the watcher is to be kicked (see leftPark), which the
// caller must then do.
func (w *worker) wakeOnly() (kick, ok bool) {
	if w.state.Load() != workerParked {
		return false, false
	}
	// waking counts this wake-up before the CAS makes it visible to the
	// sleeper, so that the sleeper's decrement (in park, after it has seen
	// the woken state) always follows the increment.
	w.e.waking.Add(1)
	if w.state.CompareAndSwap(workerParked, workerWoken) {
		kick = w.e.lastLeft(w.e.sleepers.Add(-1))
		w.ev.Wake(&w.state)
		return kick, true
	}
	w.e.waking.Add(-1)
	return false, false
}

// Yielding to a woken worker. A worker that gave its thread back for its
// sleep (see "Giving the thread back") is woken like any goroutine blocked
// on a channel: the runtime readies it onto the waker's processor, where
// it runs only once the waker blocks or yields. A waker outside the system,
// such as a producer feeding a pipeline at a low rate, goes on with its
// own work first (returning from the send, reading the clock, arming its
// next timer), and the message waits for all of it. So a sender outside the
// system (a goroutine that is no executor's worker) that wakes such a
// worker yields its processor to it at once
// (runtime.Gosched, which lets the woken worker run next there) and kicks
// the watcher, if its wake-up is the one that must, only after it runs
// again: a kick readies the watcher's goroutine too, which would cost the
// message its time. The sender resumes on another processor if one is
// idle, else once the worker blocks. Only with more than one processor
// (GOMAXPROCS at Start): with one, every sleep gives the thread back, and a
// producer flooding an actor would yield at every message instead of
// letting a batch gather. A policy only: the kick is delayed, not lost (the
// sender is runnable), and the watcher is needed only once a worker has
// been awake for ParkTimeout.

// testHookYield, if set (by tests only, before Start), is called by a
// sender just before it yields to the worker w it woke.
var testHookYield func(w *worker)

// wakeBySender is P4 for a sender (notify) that did not keep the wake-up
// (keepWake): it wakes w, yielding to it when the sender is outside the
// system (outside: it is no worker of w's executor, as notify's identity
// lookup found) and w sleeps without its thread (see above). A sender that is a
// worker of another executor (a behaviour sending across systems) never
// yields: its goroutine is locked to its thread, and a yield would hand
// its processor to another thread and wait to be handed one back.
func (w *worker) wakeBySender(outside bool) {
	e := w.e
	if outside && e.procs > 1 && goid.Supported && w.threadless.Load() && !otherWorker(e) {
		kick, ok := w.wakeOnly()
		if ok {
			if testHookYield != nil {
				testHookYield(w)
			}
			runtime.Gosched()
		}
		if kick {
			e.kickWatcher()
		}
		return
	}
	w.wake()
}

// wakeAll wakes every parked worker (for shutdown).
func (e *Executor) wakeAll() {
	for _, w := range e.workers {
		if w != nil {
			w.wake()
		}
	}
}

// stopWatcher makes the watcher exit (shutdown is set) and waits for it.
func (e *Executor) stopWatcher() {
	if e.watchKick == nil {
		return
	}
	select {
	case e.watchKick <- struct{}{}:
	default:
	}
	<-e.watchDone
}
