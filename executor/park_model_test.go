package executor

// A model checker for the wake-up protocol of park.go ("The wake-up protocol
// (no lost wake-ups)"), in the manner of stealing/swap_model_test.go.
//
// The model holds the protocol's shared memory: Executor.sleepers, each
// worker's state word (workerRunning, workerParked, workerWoken), each
// mailbox's "holds a published message" flag and whether its lock is held,
// each sender's store buffer (whether its unlocking store, a release store,
// is still invisible to the others), and each worker's event
// (event.Event of KindTwoPhase): its one-slot wake token, whose semantics
// are the channel phase's: WaitChan returns at once if the word no longer
// holds workerParked, and a token left after S2 is never lost (a later
// WaitChan consumes it); its inFutex flag; and whether the sleeper is queued
// in the futex (its program counter). Worker w owns mailbox w. Each thread is
// a small program whose steps are the protocol's atomic operations, one
// transition each, named after the code they stand for:
//
//	sleeper: one park of worker w (worker.park, without a park timeout, as
//	when stealing is off)
//	  S1        e.sleepers.Add(1)
//	  S2        w.state.Store(workerParked)
//	  S3 load   w.hasWork(): load mailbox w's word, settled: it waits while
//	            a sender holds the lock (the step is disabled until the
//	            sender's P1 unlock)
//	  S3 CAS    w.state.CompareAndSwap(workerParked, workerRunning)  (it saw work)
//	  S3 dec    e.sleepers.Add(-1)                                   (the CAS won)
//	  S3 store  w.state.Store(workerRunning)                         (the CAS lost: a waker decremented)
//	  then, if the scenario gives worker w the futex phase (parkScenario.futex:
//	  a futex slot was free), phase one, w.ev.WaitFutex(&w.state, workerParked, d):
//	  F1        e.inFutex.Store(1)
//	  F2        word.Load() == parked, else go to F4
//	  F3        futexWait(word, parked, d): the kernel's compare of the word
//	            and queueing of the thread, one step atomic with respect to
//	            FUTEX_WAKE: if the word is not parked, go to F4
//	  F3 asleep queued in the futex; always enabled, its step being the
//	            timeout d; a FUTEX_WAKE (a sender's P4 wake) dequeues it
//	            at once; either way it goes on to F4
//	  F4        e.inFutex.Store(0)
//	  and then phase two, the channel (w.ev.WaitChan in a loop):
//	  S4 wait   w.ev.WaitChan(&w.state, workerParked, 0): returns at once unless the word is parked
//	  S4 asleep blocked on the channel until a Wake's token arrives
//	  S4 load   w.state.Load() != workerParked: break (else WaitChan again)
//	  S4 store  w.state.Store(workerRunning)
//	sender: a send to mailbox mb (send: mb.push, then Executor.notify, then
//	worker.wake; the releaser in processCurrent and the thief in trySteal
//	take the same steps after their release or swap)
//	  P1        mb.push: the CAS that takes mailbox mb's lock (it waits while
//	            another sender holds it); the envelope and the unlocking
//	            store that publishes it go into the sender's store buffer
//	  P1 unlock the unlocking release store becomes visible to the other
//	            threads: the message is published and the lock free. A step
//	            of its own, taken at any time after P1 (the sender's loads,
//	            P2, P3, P4 load, DF, DA, D2, may come first), but before the
//	            sender's next locked instruction (P4 CAS, D1, R serve), which
//	            drains the store buffer (x86-TSO; elsewhere the store is
//	            sequentially consistent, a case of this one)
//	  P2        notify: e.sleepers.Load() == 0: return
//	  P3        notify: e.workers[mb.owner.Load()]
//	  P4 load   wake: w.state.Load() == workerParked, else return
//	  P4 CAS    wake: w.state.CompareAndSwap(workerParked, workerWoken), else return
//	  P4 dec    wake: w.e.sleepers.Add(-1)
//	  P4 wake   wake: w.ev.Wake(&w.state): it loads e.inFutex; if 1,
//	            futexWake(word), which dequeues the owner if it is asleep in
//	            the futex (F3 asleep) and is lost otherwise; if 0, it leaves
//	            the token. One step: the load decides, and FUTEX_WAKE is
//	            atomic with respect to the futex's compare-and-queue (F3).
//	handoff sender: a send from a behaviour of a running worker about to be
//	idle (handoff.go), which at P4 may keep the mailbox instead of waking:
//	  P1-P4 load as a sender; if P4 load read parked:
//	  H         handOff: the mailbox goes into the sender's handoff slot
//	  then, as the worker resolves the slot at the end of its visit, either
//	  R serve   afterVisit: gulp, process and release the mailbox (one
//	            step: the processing bit is not modelled), consuming every
//	            message published so far; the gulp takes the lock, so it
//	            waits for any sender holding it
//	  or        afterVisit or park (flushHandoff, wakeOwner): P2, P3, P4 as
//	            a sender, without handing off again
//	releaser: a worker other than the sleepers ends its visit of mailbox mb
//	(processCurrent), whose envelopes arrived during the drain (their
//	senders found the owner running): mb starts with a published message
//	and processing set, which S3 (hasWork), V serve and R serve read as
//	"its releaser's"
//	  P1        mb.release: the CAS that takes the lock
//	  P1 unlock the release store that clears processing becomes visible
//	  P2-P4     as a sender (processCurrent: left > 0, sleepers, owner, wake)
//	deferring sender: a send from outside the system while no processor is
//	free for the owner (defer.go), which at P4 may leave the wake-up to an
//	awake worker:
//	  P1-P4 load as a sender; if P4 load read parked:
//	  DF        notify: o.deferred.Load(): if set, return (a helper serves)
//	  DA        deferWake: e.sleepers.Load() == workers (nobody awake): wake (P4 CAS on)
//	  D1 swap   deferWake: o.deferred.Swap(true); if it was set, go to D2
//	  D1 add    deferWake: e.deferred.Add(1)
//	  D2        deferWake: e.sleepers.Load() == workers: wake (P4 CAS on); else return
//	helping caller: an Ask from outside the system that borrows the owner
//	of its mailbox while it sleeps (help.go), serves the
//	mailbox itself and gives the owner back; or, if the lend fails, a
//	plain sender:
//	  L         lendOwner: o.lendGen odd (the owner asleep: pc F1-F4, S4
//	            or waitLent) and o.state.CompareAndSwap(workerParked,
//	            workerLent); on failure, P1-P4 as a plain sender
//	  P1        the request's push, as a sender's (its unlock a step of its own)
//	  G         serve: gulp, process, release mailbox mb (one step, like R
//	            serve); a helper that stops short (parkScenario.handoff
//	            hoHelpLeave) leaves the rest of the visit to the owner
//	  B1        unlend: o.state.Store(workerParked)
//	  B2        unlend: o.lentWait.Load(): if set, o.ev.Wake (the token)
//	  B3        unlend: a visit left, or o.hasWork() (settled: disabled
//	            while a sender holds the lock), or e.deferred.Load() != 0:
//	            wake (P4 load, CAS on); else return
//	and the sleeper's channel loop (park's S4 loop) waits for a lend to end:
//	  S4 load   a lent word: waitLent (W1)
//	  W1        w.lentWait.Store(true)
//	  W2        waitLent's WaitChan(&w.state, workerLent, 0): returns at
//	            once unless the word is lent
//	  W asleep  blocked until a token arrives
//	  W3        w.lentWait.Store(false), then S4 load again
//	and the sleeper's S3 also loads the count of deferred flags:
//	  S3 dload  e.deferred.Load() != 0 (after S3 load found no work): leave
//	            park as if it saw work (S3 CAS ...), and then serve, for
//	            each other worker o (serveDeferred):
//	  V swap    o.deferred.Swap(false); if it was not set, next o
//	  V dec     e.deferred.Add(-1)
//	  V load    o.state.Load() == workerParked, else next o
//	  V serve   visit o's mailbox (one step, like R serve), its word read
//	            settled (disabled while a sender holds the lock)
//
// A depth-first search over which thread takes the next step visits every
// interleaving. The search is stateful, like the swap model's: a state (the
// pmState struct) is the shared memory plus every thread's program counter,
// locals and the bookkeeping the checks use, so two schedules reaching the
// same state have the same futures and verdicts; each state is expanded once
// and the number of complete schedules below it is memoised. The count
// reported as "interleavings" is the exact number of distinct complete
// schedules (a schedule is complete when no thread can step: every sender
// has returned and every sleeper has left park or is blocked on the
// channel; a sleeper in the futex can always step, by its timeout), each of
// which is covered. TestParkModelStateless checks this against a plain
// enumeration of every schedule one by one.
//
// Checked in every state reached (after every step):
//   - sleepers is never negative;
//   - sleepers never undercounts: it is at least the number of workers whose
//     state is workerParked (an undercount lets a sender stop at P2 while a
//     worker sleeps);
//   - no worker is moved out of workerParked twice in one park, and sleepers
//     is decremented at most once for one park.
//
// Checked at the end of every schedule:
//   - (a) no lost wake-up: a worker whose mailbox holds a published message
//     or a visit a helping caller left to it
//     is not asleep for good (it saw the message at S3 or was woken), unless
//     its deferred flag is set while some worker is awake (a worker that
//     left park makes passes, and the next one to end serves the flag: the
//     model's sleepers park once, so it ends awake), and no worker that was
//     moved out of workerParked is left asleep;
//   - (b) sleepers equals the number of workers whose state is workerParked;
//   - (c) every park that ended was decremented for exactly once;
//   - a worker that left park is in state workerRunning;
//   - (d) a worker that left park or sleeps on the channel has cleared
//     inFutex (a stale 1 would send the Wakes of its next park, which may
//     have no futex phase, to the futex only).
//
// The futex phase is safe because each Wake makes one signal, chosen by a
// Dekker pattern (all sequentially consistent): the sleeper clears inFutex
// (F4) before its channel-phase check of the word (S4 wait), and the waker
// changed the word (P4 CAS) before it loads inFutex (P4 wake). So either
// the waker loads 1 and the sleeper's check sees the woken word (it never
// sleeps on the channel), or it loads 0 and leaves the token; and the futex
// sleep itself always ends, woken or by its timeout, so no outcome depends
// on FUTEX_WAKE reaching it (a FUTEX_WAKE given while the sleeper is between
// F1 and F3 is lost, and F3's compare then sees the woken word).
//
// A deferring sender is one for which deferWake's processor test holds (no
// processor free for the owner); a sender outside the system with processors
// to spare is a plain sender. A helper that finds a backlog in a deferred
// mailbox wakes its owner: P2-P4 as a sender, like a handoff that wakes.
// Counts of schedules past 2^64 (some broken variants' scenarios) are
// reported as such.
//
// Not modelled: the processing bit of a worker's own visits (a handoff's
// serve is one step, so a sleeper never sees the mailbox being processed
// by it; a releaser's mailbox is being processed by a worker outside the
// model until the releaser's unlock), park timeouts (with
// stealing on they only add wake-ups), the shutdown flag (read at S3 like a
// message), a mailbox's owner changing under a sender (a thief that takes a
// mailbox scans it itself, see park.go), spurious returns from WaitChan (the
// S4 loop re-checks the word) and from the futex (the same as its timeout,
// which is always possible), the futex slots (e.futexSlots: the scenario
// says which sleepers take the futex phase; a sleeper without a slot parks
// as one without the phase), the futex phase's duration (any timing of the
// timeout is explored), KindChan and KindFutex events (KindChan is the
// two-phase event without the phase; KindFutex's Wait sleeps in the futex
// on the word itself, with no phase to choose), and more than one park per
// sleeper.
//
// TestParkModelCatchesBrokenProtocols runs broken variants of the protocol
// and requires the checker to find each one's counterexample.

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	pmWorkers = 2 // at most two sleepers: workers 0 and 1
	pmThreads = 4 // at most four threads: the sleepers, then the senders
)

// Program counters: the next step a thread takes (see the table above).
const (
	pcS1 uint8 = iota
	pcS2
	pcS3Load
	pcS3CAS
	pcS3Dec
	pcS3Store
	pcF1
	pcF2
	pcF3
	pcF3Asleep
	pcF4
	pcF4Late // brokenFutexFlagLate: F4 after the S4 wait's check of the word
	pcS4Wait
	pcS4Asleep
	pcS4Load
	pcS4Store
	pcP1
	pcP2
	pcP3
	pcP4Load
	pcP4CAS
	pcP4Dec
	pcP4Wake
	pcH
	pcRServe
	pcDF
	pcDA
	pcD1Swap
	pcD1Add
	pcD2
	pcS3DLoad
	pcVSwap
	pcVDec
	pcVLoad
	pcVServe
	pcL       // helping caller: lend
	pcG       // helping caller: serve
	pcB1      // helping caller: give back, store
	pcB2      // helping caller: give back, lentWait
	pcB3      // helping caller: give back, re-check
	pcW1      // sleeper: waitLent, lentWait set
	pcW2      // sleeper: waitLent's check of the word
	pcWAsleep // sleeper: waitLent, blocked
	pcW3      // sleeper: waitLent, lentWait cleared
	pcDone
)

// How a thread ended, set at the branch it last took (pmState.how); the
// coverage check of TestParkModel requires every ending to occur.
const (
	howNone       uint8 = iota
	howS3NoWork         // S3 found nothing (not an ending: it goes on to S4)
	howS3Won            // S3 saw the message and its CAS parked->running won
	howS3Lost           // S3 saw the message, but a waker's CAS won
	howWaitAtOnce       // S4's Wait returned at once: a waker had moved it already
	howSlept            // S4 slept and a Wake's token woke it
	howNobody           // P2 read sleepers == 0
	howNotParked        // P4 read a state other than parked
	howCASLost          // P4 read parked but lost the CAS
	howWoke             // P4 moved the owner to woken and woke it
	howAsleep           // the sleeper is blocked on the channel at the end of the schedule
	howServed           // handoff sender: served the mailbox itself
	howWokeFutex        // P4 moved the owner to woken and woke it by FUTEX_WAKE (it loaded inFutex == 1)
	howDeferred         // deferring sender: left the wake-up to an awake worker (D2)
	howDeferSeen        // deferring sender: found the flag set (DF)
	howS3Deferred       // sleeper: left at S3 for a deferred flag, and served what it found
	// How a sleeper's futex phase ended (pmState.phase: not endings, the
	// sleeper goes on to S4, but the coverage check counts them too).
	howFutexSkipped  // F2 loaded a word other than parked
	howFutexAtOnce   // F3's compare found the word not parked: futexWait returned at once
	howFutexWoken    // asleep in the futex, a sender's FUTEX_WAKE woke it
	howFutexTimedOut // asleep in the futex, the phase timed out
	// A helping caller's endings.
	howHelped     // served the mailbox as the lent owner, gave it back asleep
	howHelpWoke   // served, gave it back and woke it (work, or a visit left)
	howLendFailed // the lend failed: a plain sender (its ending recorded over this one)
	howCount
)

var howNames = [...]string{
	howNone:       "-",
	howS3NoWork:   "S3 found no work",
	howS3Won:      "sleeper: left at S3, its CAS won",
	howS3Lost:     "sleeper: left at S3, a waker's CAS won",
	howWaitAtOnce: "sleeper: Wait returned at once",
	howSlept:      "sleeper: slept and was woken",
	howNobody:     "sender: stopped at P2, sleepers == 0",
	howNotParked:  "sender: stopped at P4, owner not parked",
	howCASLost:    "sender: stopped at P4, CAS lost",
	howWoke:       "sender: woke the owner",
	howAsleep:     "sleeper: asleep at the end",
	howServed:     "handoff sender: served the mailbox itself",
	howWokeFutex:  "sender: woke the owner by futex",
	howDeferred:   "deferring sender: left the wake-up to an awake worker",
	howDeferSeen:  "deferring sender: found the owner's deferred flag set",
	howS3Deferred: "sleeper: left at S3 for a deferred flag",
	// The futex phase's endings.
	howFutexSkipped:  "sleeper: futex phase skipped at F2, word not parked",
	howFutexAtOnce:   "sleeper: futex phase returned at once, F3 compare saw the word not parked",
	howFutexWoken:    "sleeper: futex phase ended, woken by FUTEX_WAKE",
	howFutexTimedOut: "sleeper: futex phase ended, timed out",
	// A helping caller's.
	howHelped:     "helping caller: served the mailbox, gave the owner back asleep",
	howHelpWoke:   "helping caller: served the mailbox, gave the owner back and woke it",
	howLendFailed: "helping caller: the lend failed",
}

// futexHows are the hows only a sleeper with the futex phase, or a sender
// to one, can reach.
const futexHows = 1<<howWokeFutex | 1<<howFutexSkipped | 1<<howFutexAtOnce | 1<<howFutexWoken | 1<<howFutexTimedOut

// deferHows are the hows only scenarios with a deferring sender can reach.
const deferHows = 1<<howDeferred | 1<<howDeferSeen | 1<<howS3Deferred

// helpHows are the hows only scenarios with a helping caller can reach.
const helpHows = 1<<howHelped | 1<<howHelpWoke

// parkVariant selects the protocol: the real one or a deliberately broken one.
type parkVariant uint8

const (
	parkReal parkVariant = iota
	// brokenS2BeforeS1: the sleeper stores parked before it increments
	// sleepers; wakers still decrement after their CAS.
	brokenS2BeforeS1
	// brokenCheckBeforePublish: the sender loads sleepers (P2) before it
	// publishes the message (P1).
	brokenCheckBeforePublish
	// brokenNoRecheck: the sleeper skips S3 and goes from S2 to sleep.
	brokenNoRecheck
	// brokenS3ByStore: a sleeper that sees work at S3 leaves parked with a
	// plain store of running instead of the CAS, and always decrements.
	brokenS3ByStore
	// brokenWakeByStore: P4 moves a parked owner to woken with a plain store
	// after its load instead of the CAS.
	brokenWakeByStore
	// brokenLossyEvent: an event whose Wait does not check the word and
	// whose Wake is dropped unless the sleeper is already blocked (a
	// condition variable without its predicate).
	brokenLossyEvent
	// brokenHandoffDropped: a handoff sender keeps the mailbox and never
	// resolves the slot (neither serves it nor wakes its owner).
	brokenHandoffDropped
	// brokenFutexFlagLate: a sleeper leaving the futex phase clears inFutex
	// only after its channel-phase check of the word (S4 wait, then F4,
	// then asleep on the channel), so a waker between the two loads
	// inFutex == 1 and sends only a FUTEX_WAKE, which nobody receives.
	brokenFutexFlagLate
	// brokenDeferNoRecheck: a deferring sender leaves the wake-up to the
	// awake workers on the strength of DA's load, without D2.
	brokenDeferNoRecheck
	// brokenS3IgnoresDeferred: the sleeper's S3 does not load the count of
	// deferred flags.
	brokenS3IgnoresDeferred
	// brokenS3Unsettled: S3 reads a mailbox whose lock a sender holds as
	// empty, instead of waiting for the unlocking store.
	brokenS3Unsettled
	// brokenServeUnsettled: serving a deferred flag (V serve) reads a
	// mailbox whose lock a sender holds as empty and skips it.
	brokenServeUnsettled
	// brokenHelpNoRecheck: a helping caller gives the owner back (B1, B2)
	// without B3's re-check.
	brokenHelpNoRecheck
	// brokenHelpLeftIgnored: B3 does not count a visit left to the owner
	// as a reason to wake it.
	brokenHelpLeftIgnored
)

var parkVariantNames = [...]string{
	parkReal:                 "real protocol",
	brokenS2BeforeS1:         "S2 before S1",
	brokenCheckBeforePublish: "sender checks sleepers before publishing",
	brokenNoRecheck:          "sleeper skips the S3 re-check",
	brokenS3ByStore:          "S3 by store instead of CAS",
	brokenWakeByStore:        "P4 by load+store instead of CAS",
	brokenLossyEvent:         "event drops a Wake given before Wait",
	brokenHandoffDropped:     "handoff slot never resolved",
	brokenFutexFlagLate:      "inFutex cleared after the channel-phase check",
	brokenDeferNoRecheck:     "deferring sender without the D2 re-check",
	brokenS3IgnoresDeferred:  "S3 ignores deferred flags",
	brokenS3Unsettled:        "S3 reads a held lock as an empty mailbox",
	brokenServeUnsettled:     "serving a deferred flag reads a held lock as an empty mailbox",
	brokenHelpNoRecheck:      "a helping caller gives the owner back without a re-check",
	brokenHelpLeftIgnored:    "a helping caller's re-check ignores a visit left to the owner",
}

// pmViolation is a set of violated checks.
type pmViolation uint16

const (
	vNegative        pmViolation = 1 << iota // sleepers < 0
	vUndercount                              // sleepers < number of parked workers
	vTwiceOut                                // moved out of parked twice in one park
	vTwiceDec                                // sleepers decremented twice for one park
	vLostWakeup                              // (a) a message for X was published and X is asleep for good
	vAsleepNotParked                         // (a) X was moved out of parked but is left asleep
	vEndCount                                // (b) at the end, sleepers != number of parked workers
	vNoDec                                   // (c) a park that ended was never decremented for
	vNotRunning                              // a worker that left park is not running
	vFutexFlag                               // (d) a worker that left park or sleeps on the channel has inFutex set
	vTooLong                                 // a schedule longer than any the programs allow (a loop)
)

var violationNames = [...]string{
	"sleepers negative",
	"sleepers undercounts the parked workers",
	"a worker moved out of parked twice in one park",
	"sleepers decremented twice for one park",
	"lost wake-up: a worker with a published message is asleep for good",
	"lost wake-up: a worker moved out of parked is left asleep",
	"at the end, sleepers != number of parked workers",
	"a park that ended was never decremented for",
	"a worker that left park is not running",
	"a worker that left park or sleeps on the channel has inFutex set",
	"schedule too long",
}

// String lists the violated checks by name.
func (v pmViolation) String() string {
	var s []string
	for b := range violationNames {
		if v&(1<<b) != 0 {
			s = append(s, violationNames[b])
		}
	}
	return strings.Join(s, "; ")
}

// Handoff modes of a sender (parkScenario.handoff).
const (
	hoNone      uint8 = iota // a plain sender (from outside the system, or a busy worker)
	hoServe                  // a handoff sender that resolves its slot by serving the mailbox
	hoWake                   // a handoff sender that resolves its slot by waking the owner
	hoDefer                  // a sender from outside while no processor is free for the owner (defer.go)
	hoRelease                // a releaser: another worker ends its visit of the mailbox, which envelopes reached meanwhile (processCurrent)
	hoHelp                   // a helping caller (help.go) that serves its visit to the end
	hoHelpLeave              // a helping caller that stops short and leaves the rest of the visit to the owner
	hoHelpLate               // a caller that sends as a plain sender, then lends the owner while it waits (late help), and serves
)

// parkScenario is a set of sleepers and senders run concurrently.
type parkScenario struct {
	name     string
	sleepers int     // workers 0..sleepers-1 each park once; worker w owns mailbox w
	senders  []int   // senders[i] is the mailbox sender i sends to
	handoff  []uint8 // handoff[i] is sender i's handoff mode (nil: all hoNone)
	futex    []bool  // futex[w]: worker w takes the futex phase (nil: none does)
}

// hasFutex reports whether worker w takes the futex phase.
func (sc parkScenario) hasFutex(w int) bool { return w < len(sc.futex) && sc.futex[w] }

// mode returns sender i's handoff mode.
func (sc parkScenario) mode(i int) uint8 {
	if i < len(sc.handoff) {
		return sc.handoff[i]
	}
	return hoNone
}

// threads is the number of threads: the sleepers, then the senders.
func (sc parkScenario) threads() int { return sc.sleepers + len(sc.senders) }

// pmState is the shared memory, every thread's program counter and locals,
// and the checks' bookkeeping. Thread t < sleepers is worker t's sleeper;
// thread sleepers+i is sender i.
type pmState struct {
	sleepers int8              // Executor.sleepers
	state    [pmWorkers]uint32 // worker.state
	work     [pmWorkers]bool   // mailbox w holds a published message
	token    [pmWorkers]bool   // worker w's event holds a Wake token
	pc       [pmThreads]uint8  // next step
	how      [pmThreads]uint8  // last branch taken (how the thread ended, once done)
	owner    [pmThreads]int8   // a sender's P3 result
	early    [pmThreads]int8   // a sender's P2 result read before P1 (brokenCheckBeforePublish)
	handed   [pmThreads]bool   // a handoff sender has taken the handoff (H)
	inFutex  [pmWorkers]bool   // worker w's e.inFutex
	phase    [pmWorkers]uint8  // how worker w's futex phase ended (howNone: not taken, or not yet ended)
	decs     [pmWorkers]int8   // decrements of sleepers for worker w's park
	outs     [pmWorkers]int8   // moves of worker w out of parked in its park (or broken stores acting as one)
	dflag    [pmWorkers]bool   // worker w's deferred flag
	dcount   int8              // Executor.deferred
	serving  [pmWorkers]bool   // sleeper w left at S3 for a deferred flag: it serves after leaving
	vo       [pmWorkers]int8   // the worker sleeper w's serving looks at next
	locked   [pmWorkers]bool   // mailbox w's lock is held (a sender's P1, until its P1 unlock)
	busy     [pmWorkers]bool   // mailbox w is being processed by a worker other than the sleepers (a releaser's, until its P1 unlock)
	pending  [pmThreads]bool   // sender t's unlocking store is not visible yet
	lentWait [pmWorkers]bool   // worker w's lentWait
	left     [pmWorkers]bool   // a helping caller left a visit to worker w (w.cur set)
	lent     [pmThreads]bool   // helping caller t's lend succeeded
	late     [pmThreads]bool   // late helping caller t has tried its lend
}

// parkModel runs one scenario under one variant of the protocol.
type parkModel struct {
	sc parkScenario
	v  parkVariant
}

// initial is the state before any step: every worker running with sleepers
// 0 and no message published (each sleeper has just found nothing in its
// last pass), each thread at its first step, unused threads done.
func (m *parkModel) initial() pmState {
	var s pmState
	for t := range m.sc.threads() {
		switch {
		case t >= m.sc.sleepers && m.helper(t):
			s.pc[t] = pcL
		case t >= m.sc.sleepers:
			s.pc[t] = pcP1
			if m.v == brokenCheckBeforePublish {
				s.pc[t] = pcP2
			}
		case m.v == brokenS2BeforeS1:
			s.pc[t] = pcS2
		default:
			s.pc[t] = pcS1
		}
	}
	for t := m.sc.threads(); t < pmThreads; t++ {
		s.pc[t] = pcDone
	}
	for i, mb := range m.sc.senders {
		if m.sc.mode(i) == hoRelease {
			// Envelopes arrived while another worker processed the
			// mailbox; their senders found its owner running.
			s.busy[mb], s.work[mb] = true, true
		}
	}
	return s
}

// enabled reports whether thread t can take a step: it has not finished and
// is not blocked in Wait without a token.
func (m *parkModel) enabled(s *pmState, t int) bool {
	if t >= m.sc.threads() {
		return s.pending[m.flusher(t)] // P1 unlock
	}
	switch s.pc[t] {
	case pcDone:
		return false
	case pcS4Asleep, pcWAsleep:
		return s.token[t]
	case pcS3Load:
		return !s.locked[t] || m.v == brokenS3Unsettled
	case pcVServe:
		return !s.locked[s.vo[t]] || m.v == brokenServeUnsettled
	case pcP1:
		return !s.locked[m.sc.senders[t-m.sc.sleepers]]
	case pcP4CAS, pcD1Swap, pcD1Add:
		return !s.pending[t]
	case pcRServe, pcG:
		return !s.pending[t] && !s.locked[m.sc.senders[t-m.sc.sleepers]]
	case pcB3:
		return !s.locked[m.sc.senders[t-m.sc.sleepers]] // hasWork reads the word settled
	}
	return true
}

// steppers is the number of step sources: the threads, then one store
// buffer per sender (its P1 unlock).
func (m *parkModel) steppers() int { return m.sc.threads() + len(m.sc.senders) }

// flusher returns the sender thread whose store buffer is step source t
// (t >= threads).
func (m *parkModel) flusher(t int) int { return t - len(m.sc.senders) }

// step performs thread t's next step on s and returns its name.
func (m *parkModel) step(s *pmState, t int) string {
	if t >= m.sc.threads() {
		u := m.flusher(t)
		mb := m.sc.senders[u-m.sc.sleepers]
		s.pending[u] = false
		s.locked[mb] = false
		if m.sc.mode(u-m.sc.sleepers) == hoRelease {
			s.busy[mb] = false // release: wordProcessing cleared, the envelopes left queued
			return "P1 unlock: the release store (processing cleared) becomes visible"
		}
		s.work[mb] = true // the envelope, published
		return "P1 unlock: the release store becomes visible"
	}
	if t < m.sc.sleepers {
		return m.sleeperStep(s, t)
	}
	what := m.senderStep(s, t)
	if s.pc[t] == pcDone && m.sc.mode(t-m.sc.sleepers) == hoHelpLate && !s.late[t] {
		// The send is over; while it waits for its reply, the caller
		// tries a lend (late help).
		s.late[t] = true
		s.pc[t] = pcL
	}
	return what
}

// sleeperStep performs the next step of worker w's park (worker.park).
func (m *parkModel) sleeperStep(s *pmState, w int) string {
	pc := &s.pc[w]
	switch *pc {
	case pcS1:
		s.sleepers++ // e.sleepers.Add(1)
		*pc = pcS2
		if m.v == brokenS2BeforeS1 {
			*pc = pcS3Load
		}
		return "S1 e.sleepers.Add(1)"
	case pcS2:
		s.state[w] = workerParked // w.state.Store(workerParked)
		*pc = pcS3Load
		switch m.v {
		case brokenS2BeforeS1:
			*pc = pcS1
		case brokenNoRecheck:
			*pc = pcS4Wait
		}
		return "S2 w.state.Store(workerParked)"
	case pcS3Load:
		if s.work[w] && !s.busy[w] { // w.hasWork(): a mailbox being processed elsewhere is its releaser's
			s.how[w] = howS3Won // for now: the CAS decides
			*pc = pcS3CAS
			if m.v == brokenS3ByStore {
				*pc = pcS3Store
			}
			return "S3 w.hasWork() = true"
		}
		s.how[w] = howS3NoWork
		if m.v != brokenS3IgnoresDeferred {
			*pc = pcS3DLoad
			return "S3 w.hasWork() = false"
		}
		*pc = m.afterS3(w)
		return "S3 w.hasWork() = false"
	case pcS3DLoad:
		if s.dcount != 0 { // e.deferred.Load() != 0
			s.how[w] = howS3Deferred // for now: the CAS decides
			s.serving[w] = true
			*pc = pcS3CAS
			return "S3 e.deferred.Load() != 0"
		}
		*pc = m.afterS3(w)
		return "S3 e.deferred.Load() == 0"
	case pcS3CAS:
		if s.state[w] == workerParked { // w.state.CompareAndSwap(workerParked, workerRunning)
			s.state[w] = workerRunning
			s.outs[w]++
			*pc = pcS3Dec
			return "S3 w.state.CompareAndSwap(workerParked, workerRunning) = true"
		}
		s.how[w] = howS3Lost
		*pc = pcS3Store
		return "S3 w.state.CompareAndSwap(workerParked, workerRunning) = false"
	case pcS3Dec:
		s.sleepers-- // e.sleepers.Add(-1)
		s.decs[w]++
		*pc = m.afterPark(s, w)
		return "S3 e.sleepers.Add(-1)"
	case pcS3Store:
		if m.v == brokenS3ByStore {
			// The broken sleeper stores running and then decrements, as if
			// it had won a CAS (so it counts as moving itself out).
			s.outs[w]++
			s.state[w] = workerRunning
			*pc = pcS3Dec
			return "S3 w.state.Store(workerRunning) (broken: no CAS)"
		}
		s.state[w] = workerRunning // w.state.Store(workerRunning): a waker beat us to it
		*pc = m.afterPark(s, w)
		return "S3 w.state.Store(workerRunning)"
	case pcF1:
		s.inFutex[w] = true // e.inFutex.Store(1)
		*pc = pcF2
		return "F1 e.inFutex.Store(1)"
	case pcF2:
		if s.state[w] != workerParked { // if word.Load() == parked { futexWait }
			s.phase[w] = howFutexSkipped
			*pc = m.afterFutex()
			return "F2 word.Load() != parked: no futexWait"
		}
		*pc = pcF3
		return "F2 word.Load() == parked"
	case pcF3:
		// futexWait(word, parked, d): the kernel compares the word and
		// queues the thread, atomically with respect to FUTEX_WAKE.
		if s.state[w] != workerParked {
			s.phase[w] = howFutexAtOnce
			*pc = m.afterFutex()
			return "F3 futexWait: word not parked, returns at once"
		}
		*pc = pcF3Asleep
		return "F3 futexWait: queued, sleeps"
	case pcF3Asleep:
		// The phase's timeout d (or a spurious return): always possible,
		// so no outcome depends on a FUTEX_WAKE reaching the sleeper. A
		// FUTEX_WAKE moves the sleeper past this step (see P4 wake).
		s.phase[w] = howFutexTimedOut
		*pc = m.afterFutex()
		return "F3 futexWait: times out"
	case pcF4:
		s.inFutex[w] = false // e.inFutex.Store(0)
		*pc = pcS4Wait
		return "F4 e.inFutex.Store(0)"
	case pcF4Late:
		// The broken sleeper clears inFutex after S4 wait's check of the
		// word, and then sleeps on the channel unless that check returned
		// at once (which it recorded in how).
		s.inFutex[w] = false
		*pc = pcS4Asleep
		if s.how[w] == howWaitAtOnce {
			*pc = pcS4Load
		}
		return "F4 e.inFutex.Store(0) (broken: after the word's check)"
	case pcS4Wait:
		// w.ev.WaitChan(&w.state, workerParked, 0): event.WaitChan returns
		// at once if the word no longer holds parked.
		late := m.v == brokenFutexFlagLate && s.inFutex[w]
		if s.state[w] != workerParked && m.v != brokenLossyEvent {
			s.how[w] = howWaitAtOnce
			*pc = pcS4Load
			if late {
				*pc = pcF4Late
			}
			return "S4 w.ev.WaitChan: returns at once, word not parked"
		}
		*pc = pcS4Asleep
		if late {
			*pc = pcF4Late
			return "S4 w.ev.WaitChan: word parked (broken: inFutex still 1)"
		}
		return "S4 w.ev.WaitChan: blocks"
	case pcS4Asleep:
		s.token[w] = false // the Wake's token ends the sleep
		s.how[w] = howSlept
		*pc = pcS4Load
		return "S4 w.ev.WaitChan: woken by the token"
	case pcS4Load:
		if s.state[w] == workerLent { // lent to a helping caller: waitLent
			*pc = pcW1
			return "S4 w.state.Load() == workerLent: waitLent"
		}
		if s.state[w] != workerParked { // w.state.Load() != workerParked: break
			*pc = pcS4Store
			return "S4 w.state.Load() != workerParked: break"
		}
		*pc = pcS4Wait
		return "S4 w.state.Load() == workerParked: wait again"
	case pcS4Store:
		s.state[w] = workerRunning // w.state.Store(workerRunning)
		*pc = pcDone
		return "S4 w.state.Store(workerRunning)"
	case pcW1:
		s.lentWait[w] = true // w.lentWait.Store(true)
		*pc = pcW2
		return "W1 w.lentWait.Store(true)"
	case pcW2:
		// w.state.Load() == workerLent, then WaitChan(&w.state,
		// workerLent, 0), which returns at once unless the word is lent.
		if s.state[w] != workerLent {
			*pc = pcW3
			return "W2 waitLent: word not lent, returns at once"
		}
		*pc = pcWAsleep
		return "W2 waitLent: blocks"
	case pcWAsleep:
		s.token[w] = false
		*pc = pcW3
		return "W waitLent: woken by the token"
	case pcW3:
		s.lentWait[w] = false // w.lentWait.Store(false)
		*pc = pcS4Load
		return "W3 w.lentWait.Store(false)"
	case pcVSwap:
		o := s.vo[w]
		if !s.dflag[o] { // o.deferred.Swap(false) == false
			return m.nextServe(s, w, "V o.deferred.Swap(false) = false")
		}
		s.dflag[o] = false
		*pc = pcVDec
		return "V o.deferred.Swap(false) = true"
	case pcVDec:
		s.dcount-- // e.deferred.Add(-1)
		*pc = pcVLoad
		return "V e.deferred.Add(-1)"
	case pcVLoad:
		if s.state[s.vo[w]] != workerParked { // o.state.Load() != workerParked: o serves itself
			return m.nextServe(s, w, "V o.state.Load() != workerParked")
		}
		*pc = pcVServe
		return "V o.state.Load() == workerParked"
	case pcVServe:
		if s.locked[s.vo[w]] { // brokenServeUnsettled only (else disabled)
			return m.nextServe(s, w, "V o's mailbox locked: read as empty (broken)")
		}
		if s.busy[s.vo[w]] {
			return m.nextServe(s, w, "V o's mailbox being processed: its releaser's")
		}
		s.work[s.vo[w]] = false // visit: gulp, process, release
		return m.nextServe(s, w, "V visit serves o's mailbox")
	}
	panic(fmt.Sprintf("sleeper %d at pc %d", w, *pc))
}

// afterS3 is where a sleeper goes when S3 found nothing: the futex phase if
// it has one, else the channel.
func (m *parkModel) afterS3(w int) uint8 {
	if m.sc.hasFutex(w) {
		return pcF1 // a futex slot was free: phase one
	}
	return pcS4Wait
}

// afterPark is where sleeper w goes when it has left park at S3: done, or
// serving deferred flags if it left for one.
func (m *parkModel) afterPark(s *pmState, w int) uint8 {
	if !s.serving[w] {
		return pcDone
	}
	s.vo[w] = -1
	m.nextServe(s, w, "")
	return s.pc[w]
}

// nextServe moves sleeper w's serving to the next other worker, or ends it,
// and returns what, the name of the step just taken.
func (m *parkModel) nextServe(s *pmState, w int, what string) string {
	o := s.vo[w] + 1
	if int(o) == w {
		o++
	}
	if int(o) >= m.sc.sleepers {
		s.pc[w] = pcDone
		return what
	}
	s.vo[w] = o
	s.pc[w] = pcVSwap
	return what
}

// afterFutex is where a sleeper goes when futexWait returns or is skipped:
// F4, or straight to the channel phase's check in brokenFutexFlagLate.
func (m *parkModel) afterFutex() uint8 {
	if m.v == brokenFutexFlagLate {
		return pcS4Wait
	}
	return pcF4
}

// senderStep performs the next step of sender thread t: the push into its
// mailbox, Executor.notify and worker.wake.
func (m *parkModel) senderStep(s *pmState, t int) string {
	mb := m.sc.senders[t-m.sc.sleepers]
	pc := &s.pc[t]
	switch *pc {
	case pcP1:
		s.locked[mb] = true // mb.push (mb.release for a releaser): lockFor's CAS
		s.pending[t] = true // the envelope and the unlocking store, buffered
		*pc = pcP2
		if s.lent[t] {
			*pc = pcG // the owner is lent to us: its P4 would find it lent
			return "P1 mb.push: the lock's CAS"
		}
		if m.v == brokenCheckBeforePublish {
			// The broken sender acts on the sleepers it loaded before.
			*pc = pcP3
			if s.early[t] == 0 {
				s.how[t] = howNobody
				*pc = pcDone
			}
		}
		return "P1 mb.push: the lock's CAS"
	case pcP2:
		if m.v == brokenCheckBeforePublish {
			s.early[t] = s.sleepers
			*pc = pcP1
			return "P2 e.sleepers.Load() (broken: before P1)"
		}
		if s.sleepers == 0 { // notify: if e.sleepers.Load() == 0 { return }
			s.how[t] = howNobody
			*pc = pcDone
			return "P2 e.sleepers.Load() == 0: return"
		}
		*pc = pcP3
		return "P2 e.sleepers.Load() != 0"
	case pcP3:
		s.owner[t] = int8(mb) // e.workers[mb.owner.Load()]: worker mb owns mailbox mb
		*pc = pcP4Load
		return "P3 e.workers[mb.owner.Load()]"
	case pcP4Load:
		o := s.owner[t]
		if s.state[o] != workerParked { // wake: w.state.Load() == workerParked
			s.how[t] = howNotParked
			*pc = pcDone
			return "P4 w.state.Load() != workerParked: return"
		}
		*pc = pcP4CAS
		switch mode := m.sc.mode(t - m.sc.sleepers); {
		case mode == hoDefer:
			*pc = pcDF
		case mode != hoNone && !m.helper(t) && !s.handed[t]:
			*pc = pcH // notify: e.handOff(mb) succeeds
		}
		return "P4 w.state.Load() == workerParked"
	case pcDF:
		if s.dflag[s.owner[t]] { // notify: o.deferred.Load()
			s.how[t] = howDeferSeen
			*pc = pcDone
			return "DF o.deferred.Load() = true: return"
		}
		*pc = pcDA
		return "DF o.deferred.Load() = false"
	case pcDA:
		if int(s.sleepers) == m.sc.sleepers { // deferWake: nobody awake
			*pc = pcP4CAS
			return "DA e.sleepers.Load() == workers: wake"
		}
		*pc = pcD1Swap
		return "DA e.sleepers.Load() < workers"
	case pcD1Swap:
		o := s.owner[t]
		was := s.dflag[o] // o.deferred.Swap(true)
		s.dflag[o] = true
		*pc = pcD1Add
		if was {
			m.afterD1(s, t)
		}
		return "D1 o.deferred.Swap(true)"
	case pcD1Add:
		s.dcount++ // e.deferred.Add(1)
		m.afterD1(s, t)
		return "D1 e.deferred.Add(1)"
	case pcD2:
		if int(s.sleepers) == m.sc.sleepers { // e.sleepers.Load() == workers
			*pc = pcP4CAS
			return "D2 e.sleepers.Load() == workers: wake"
		}
		s.how[t] = howDeferred
		*pc = pcDone
		return "D2 e.sleepers.Load() < workers: left to the awake"
	case pcH:
		s.handed[t] = true // w.handoff = mb; no wake
		switch {
		case m.v == brokenHandoffDropped:
			*pc = pcDone
		case m.sc.mode(t-m.sc.sleepers) == hoServe:
			*pc = pcRServe
		default:
			*pc = pcP2 // wakeOwner: P2-P4 again
		}
		return "H e.handOff(mb): into the sender's handoff slot"
	case pcRServe:
		if s.busy[mb] { // the gulp misses: the releaser hands the envelopes back
			s.how[t] = howServed
			*pc = pcDone
			return "R afterVisit: mb being processed elsewhere, the gulp misses"
		}
		s.work[mb] = false // afterVisit: mb.gulp, processCurrent, release
		s.how[t] = howServed
		*pc = pcDone
		return "R afterVisit serves mb (gulp, process, release)"
	case pcL:
		// lendOwner: lendGen odd (the owner is asleep),
		// then the CAS parked -> lent.
		if asleepLendable(s.pc[mb]) && s.state[mb] == workerParked {
			s.state[mb] = workerLent
			s.lent[t] = true
			*pc = pcP1
			if s.late[t] {
				*pc = pcG // sent already: serve
			}
			return "L o.state.CompareAndSwap(workerParked, workerLent) = true"
		}
		s.how[t] = howLendFailed
		*pc = pcP1
		if s.late[t] {
			*pc = pcDone
			return "L late lend fails"
		}
		return "L lend fails: a plain sender"
	case pcG:
		if !s.busy[mb] { // a gulp that misses serves nothing
			s.work[mb] = false // gulp, deliver, release
		}
		if m.sc.mode(t-m.sc.sleepers) == hoHelpLeave {
			s.left[mb] = true // stopped short: w.cur stays set
		}
		*pc = pcB1
		return "G serve mb as its owner"
	case pcB1:
		s.state[mb] = workerParked // unlend: w.state.Store(workerParked)
		*pc = pcB2
		return "B1 o.state.Store(workerParked)"
	case pcB2:
		if s.lentWait[mb] { // w.lentWait.Load(): w.ev.Wake
			s.token[mb] = true
		}
		*pc = pcB3
		if m.v == brokenHelpNoRecheck {
			s.how[t] = howHelped
			*pc = pcDone
		}
		return "B2 o.lentWait.Load(), Wake if set"
	case pcB3:
		left := s.left[mb] && m.v != brokenHelpLeftIgnored
		if left || (s.work[mb] && !s.busy[mb]) || s.dcount != 0 {
			s.owner[t] = int8(mb)
			*pc = pcP4Load // w.wake(): P4 load, CAS on
			return "B3 a visit left, hasWork or deferred: wake"
		}
		s.how[t] = howHelped
		*pc = pcDone
		return "B3 nothing to wake for"
	case pcP4CAS:
		o := s.owner[t]
		if m.v == brokenWakeByStore {
			// The broken waker stores woken on the strength of its load,
			// and goes on as if it had won a CAS (so it counts as a wake).
			s.outs[o]++
			s.state[o] = workerWoken
			*pc = pcP4Dec
			return "P4 w.state.Store(workerWoken) (broken: no CAS)"
		}
		if s.state[o] == workerParked { // w.state.CompareAndSwap(workerParked, workerWoken)
			s.state[o] = workerWoken
			s.outs[o]++
			*pc = pcP4Dec
			return "P4 w.state.CompareAndSwap(workerParked, workerWoken) = true"
		}
		s.how[t] = howCASLost
		*pc = pcDone
		return "P4 w.state.CompareAndSwap(workerParked, workerWoken) = false"
	case pcP4Dec:
		o := s.owner[t]
		s.sleepers-- // w.e.sleepers.Add(-1)
		s.decs[o]++
		*pc = pcP4Wake
		return "P4 w.e.sleepers.Add(-1)"
	case pcP4Wake:
		o := s.owner[t]
		// w.ev.Wake(&w.state): if e.inFutex.Load() == 1 { futexWake(word);
		// return }. FUTEX_WAKE dequeues a sleeper queued in the futex (it
		// goes on to F4); given before F3's compare-and-queue or after the
		// futex returned, it wakes nobody.
		if s.inFutex[o] {
			what := "P4 w.ev.Wake: inFutex == 1: futexWake, owner not queued"
			if s.pc[o] == pcF3Asleep {
				s.phase[o] = howFutexWoken
				s.pc[o] = m.afterFutex()
				what = "P4 w.ev.Wake: inFutex == 1: futexWake wakes the owner"
			}
			s.how[t] = howWokeFutex
			*pc = pcDone
			return what
		}
		// Else the event's channel keeps one token, so a Wake given before
		// the sleeper blocks is not lost. The broken event drops it unless
		// the sleeper is blocked already.
		if m.v != brokenLossyEvent || s.pc[o] == pcS4Asleep {
			s.token[o] = true
		}
		s.how[t] = howWoke
		if s.lent[t] {
			s.how[t] = howHelpWoke
		}
		*pc = pcDone
		return "P4 w.ev.Wake: inFutex == 0: leaves the token"
	}
	panic(fmt.Sprintf("sender %d at pc %d", t, *pc))
}

// helper reports whether thread t is a helping caller that lends before
// its send.
func (m *parkModel) helper(t int) bool {
	mode := m.sc.mode(t - m.sc.sleepers)
	return mode == hoHelp || mode == hoHelpLeave
}

// asleepLendable reports whether a sleeper at pc is in park's sleep, where
// lendGen is odd: the futex phase, S4 and waitLent.
func asleepLendable(pc uint8) bool {
	switch pc {
	case pcF1, pcF2, pcF3, pcF3Asleep, pcF4, pcS4Wait, pcS4Asleep, pcS4Load, pcW1, pcW2, pcWAsleep, pcW3:
		return true
	}
	return false
}

// afterD1 moves deferring sender t on after D1: to D2, or (broken) done.
func (m *parkModel) afterD1(s *pmState, t int) {
	if m.v == brokenDeferNoRecheck {
		s.how[t] = howDeferred
		s.pc[t] = pcDone
		return
	}
	s.pc[t] = pcD2
}

// parked counts the workers whose state is workerParked.
func (m *parkModel) parked(s *pmState) int8 {
	var n int8
	for w := range m.sc.sleepers {
		if s.state[w] == workerParked {
			n++
		}
	}
	return n
}

// checkStep returns the checks s violates that must hold after every step.
func (m *parkModel) checkStep(s *pmState) pmViolation {
	var v pmViolation
	if s.sleepers < 0 {
		v |= vNegative
	}
	if s.sleepers < m.parked(s) {
		v |= vUndercount
	}
	for w := range m.sc.sleepers {
		if s.outs[w] > 1 {
			v |= vTwiceOut
		}
		if s.decs[w] > 1 {
			v |= vTwiceDec
		}
	}
	return v
}

// checkEnd returns the checks s violates that must hold when no thread can
// step.
func (m *parkModel) checkEnd(s *pmState) pmViolation {
	var v pmViolation
	for w := range m.sc.sleepers {
		if s.inFutex[w] {
			v |= vFutexFlag
		}
		if s.pc[w] != pcDone { // blocked on the channel
			if s.work[w] && !(s.dflag[w] && m.someAwake(s)) || s.left[w] {
				v |= vLostWakeup
			}
			if s.state[w] != workerParked {
				v |= vAsleepNotParked
			}
			continue
		}
		if s.decs[w] == 0 {
			v |= vNoDec
		}
		if s.state[w] != workerRunning {
			v |= vNotRunning
		}
	}
	if s.sleepers != m.parked(s) {
		v |= vEndCount
	}
	return v
}

// someAwake reports whether some worker has left park: it makes passes, and
// the end of the next one serves the deferred flags set (see checkEnd).
func (m *parkModel) someAwake(s *pmState) bool {
	for w := range m.sc.sleepers {
		if s.pc[w] == pcDone {
			return true
		}
	}
	return false
}

// pmCount counts the complete schedules below a state: all of them, and
// those that reach a violation.
type pmCount struct{ n, bad uint64 }

// parkChecker explores every interleaving of one scenario.
type parkChecker struct {
	m      *parkModel
	memo   map[pmState]pmCount // nil: enumerate every schedule one by one
	path   []uint8             // the schedule so far: which thread took each step
	states int                 // states expanded
	found  pmViolation         // every check violated somewhere
	first  map[pmViolation][]uint8
	ends   uint32 // bit h: some thread ended with how h (or a futex phase did), in some schedule
}

// parkOutcome is the result of exploring a scenario under a variant.
type parkOutcome struct {
	interleavings, bad uint64
	states             int
	found              pmViolation
	first              map[pmViolation][]uint8 // a schedule reaching each violated check
	ends               uint32
}

// exploreParkModel runs every interleaving of sc under v, memoised unless
// stateless.
func exploreParkModel(sc parkScenario, v parkVariant, stateless bool) parkOutcome {
	c := &parkChecker{
		m:     &parkModel{sc: sc, v: v},
		first: map[pmViolation][]uint8{},
	}
	if !stateless {
		c.memo = map[pmState]pmCount{}
	}
	cnt := c.explore(c.m.initial())
	return parkOutcome{interleavings: cnt.n, bad: cnt.bad, states: c.states, found: c.found, first: c.first, ends: c.ends}
}

// maxParkSchedule bounds a schedule's length: each thread takes at most 13
// steps in any variant (a sleeper: S1, S2, S3 load and dload, F1-F3, F3
// asleep, F4, S4 wait, asleep, load, store; a deferring sender: P1, P1
// unlock, P2-P4 load, DF, DA, D1 swap and add, D2, P4 CAS, dec, wake), so a
// longer schedule means a loop in the model.
//
// A helping caller takes at most 11 (L, P1, its unlock, G, B1-B3, P4
// load, CAS, dec, wake), and its sleeper 5 more per lend (S4 load, W1,
// W2, W asleep, W3).
const maxParkSchedule = 18 * pmThreads

// explore checks s, then every schedule from s (each enabled thread's step in
// turn), and counts them; at a state where no thread can step it runs the
// end checks. It records the schedule to the first state violating each check.
func (c *parkChecker) explore(s pmState) pmCount {
	if cnt, ok := c.memo[s]; ok {
		return cnt
	}
	c.states++
	m := c.m
	v := m.checkStep(&s)
	var cnt pmCount
	end := true
	if len(c.path) < maxParkSchedule {
		for t := range m.steppers() {
			if !m.enabled(&s, t) {
				continue
			}
			end = false
			next := s
			m.step(&next, t)
			c.path = append(c.path, uint8(t))
			sub := c.explore(next)
			c.path = c.path[:len(c.path)-1]
			cnt.n = satAdd(cnt.n, sub.n)
			cnt.bad = satAdd(cnt.bad, sub.bad)
		}
	} else {
		v |= vTooLong
	}
	if end {
		v |= m.checkEnd(&s)
		cnt = pmCount{n: 1}
		for t := range m.sc.threads() {
			if s.pc[t] == pcDone {
				c.ends |= 1 << s.how[t]
			} else {
				c.ends |= 1 << howAsleep
			}
		}
		for w := range m.sc.sleepers {
			if s.phase[w] != howNone {
				c.ends |= 1 << s.phase[w]
			}
		}
	}
	if v != 0 {
		cnt.bad = cnt.n
		for b := v &^ c.found; b != 0; b &= b - 1 {
			c.first[1<<bits.TrailingZeros16(uint16(b))] = slices.Clone(c.path)
		}
		c.found |= v
	}
	if c.memo != nil {
		c.memo[s] = cnt
	}
	return cnt
}

// satAdd returns a+b, or math.MaxUint64 (read as "2^64 or more") if that
// overflows: some broken variants' scenarios have that many schedules.
func satAdd(a, b uint64) uint64 {
	sum, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return math.MaxUint64
	}
	return sum
}

// countString spells a count of schedules, saturated or not.
func countString(n uint64) string {
	if n == math.MaxUint64 {
		return "2^64 or more"
	}
	return fmt.Sprint(n)
}

// parkTrace replays a schedule and describes every step and the state it left.
func parkTrace(sc parkScenario, v parkVariant, sched []uint8) string {
	m := &parkModel{sc: sc, v: v}
	s := m.initial()
	var b strings.Builder
	for _, t := range sched {
		who := fmt.Sprintf("sleeper w%d", t)
		if i := int(t) - sc.sleepers; i >= len(sc.senders) {
			who = fmt.Sprintf("sender to w%d", sc.senders[i-len(sc.senders)])
		} else if i >= 0 {
			who = fmt.Sprintf("sender to w%d", sc.senders[i])
		}
		what := m.step(&s, int(t))
		fmt.Fprintf(&b, "  %-12s %-64s sleepers=%d state=%v work=%v locked=%v inFutex=%v\n",
			who, what, s.sleepers, stateNames(s.state[:sc.sleepers]), s.work[:sc.sleepers], s.locked[:sc.sleepers], s.inFutex[:sc.sleepers])
	}
	for w := range sc.sleepers {
		if s.pc[w] != pcDone {
			fmt.Fprintf(&b, "  end: sleeper w%d is blocked on the channel\n", w)
		}
	}
	return b.String()
}

// stateNames spells worker states for traces.
func stateNames(st []uint32) []string {
	var s []string
	for _, x := range st {
		s = append(s, [...]string{"running", "parked", "woken", "exited", "lent"}[x])
	}
	return s
}

// parkScenarios are the scenarios every variant runs.
var parkScenarios = []parkScenario{
	{name: "1 sleeper, 1 sender", sleepers: 1, senders: []int{0}},
	{name: "1 sleeper, 2 senders", sleepers: 1, senders: []int{0, 0}},
	{name: "2 sleepers, 2 senders to different sleepers", sleepers: 2, senders: []int{0, 1}},
	{name: "2 sleepers, 2 senders to the same sleeper", sleepers: 2, senders: []int{0, 0}},
	{name: "1 sleeper, 1 handoff sender that serves", sleepers: 1, senders: []int{0}, handoff: []uint8{hoServe}},
	{name: "1 sleeper, 1 handoff sender that wakes", sleepers: 1, senders: []int{0}, handoff: []uint8{hoWake}},
	{name: "1 sleeper, a handoff sender that serves and a sender", sleepers: 1, senders: []int{0, 0}, handoff: []uint8{hoServe, hoNone}},
	{name: "1 sleeper, a handoff sender that wakes and a sender", sleepers: 1, senders: []int{0, 0}, handoff: []uint8{hoWake, hoNone}},
	{name: "2 sleepers, handoff senders that serve and wake, to different sleepers", sleepers: 2, senders: []int{0, 1}, handoff: []uint8{hoServe, hoWake}},
	// The two-phase park: the same with sleepers taking the futex phase.
	{name: "1 sleeper in the futex phase, 1 sender", sleepers: 1, senders: []int{0}, futex: []bool{true}},
	{name: "1 sleeper in the futex phase, 2 senders", sleepers: 1, senders: []int{0, 0}, futex: []bool{true}},
	{name: "2 sleepers in the futex phase, 2 senders to different sleepers", sleepers: 2, senders: []int{0, 1}, futex: []bool{true, true}},
	{name: "2 sleepers, one in the futex phase, 2 senders to the one", sleepers: 2, senders: []int{0, 0}, futex: []bool{true, false}},
	{name: "1 sleeper in the futex phase, a handoff sender that wakes and a sender", sleepers: 1, senders: []int{0, 0}, handoff: []uint8{hoWake, hoNone}, futex: []bool{true}},
	{name: "2 sleepers in the futex phase, handoff senders that serve and wake, to different sleepers", sleepers: 2, senders: []int{0, 1}, handoff: []uint8{hoServe, hoWake}, futex: []bool{true, true}},
	// Senders from outside while no processor is free for the owner
	// (defer.go): they may leave the wake-up to the awake worker.
	{name: "1 sleeper, 1 deferring sender", sleepers: 1, senders: []int{0}, handoff: []uint8{hoDefer}},
	{name: "2 sleepers, 1 deferring sender", sleepers: 2, senders: []int{0}, handoff: []uint8{hoDefer}},
	{name: "2 sleepers, 2 deferring senders to the same sleeper", sleepers: 2, senders: []int{0, 0}, handoff: []uint8{hoDefer, hoDefer}},
	{name: "2 sleepers, 2 deferring senders to different sleepers", sleepers: 2, senders: []int{0, 1}, handoff: []uint8{hoDefer, hoDefer}},
	{name: "2 sleepers, a deferring sender and a sender to the same sleeper", sleepers: 2, senders: []int{0, 0}, handoff: []uint8{hoDefer, hoNone}},
	{name: "2 sleepers, one in the futex phase, 1 deferring sender to it", sleepers: 2, senders: []int{0}, handoff: []uint8{hoDefer}, futex: []bool{true, false}},
	// A releaser: a worker ends its visit of a mailbox another worker owns
	// (a helper, or the worker a thief took it from), with envelopes that
	// arrived during the drain left queued (processCurrent).
	{name: "1 sleeper, 1 releaser", sleepers: 1, senders: []int{0}, handoff: []uint8{hoRelease}},
	{name: "1 sleeper in the futex phase, 1 releaser", sleepers: 1, senders: []int{0}, handoff: []uint8{hoRelease}, futex: []bool{true}},
	{name: "2 sleepers, a releaser and a sender to the same sleeper", sleepers: 2, senders: []int{0, 0}, handoff: []uint8{hoRelease, hoNone}},
	{name: "2 sleepers, a releaser and a deferring sender to the same sleeper", sleepers: 2, senders: []int{0, 0}, handoff: []uint8{hoRelease, hoDefer}},
	// Callers that help (help.go): an Ask that borrows the sleeping owner,
	// serves its mailbox and gives it back, racing senders that find the
	// owner lent, and wakers.
	{name: "1 sleeper, 1 helping caller", sleepers: 1, senders: []int{0}, handoff: []uint8{hoHelp}},
	{name: "1 sleeper, 1 helping caller that leaves the visit", sleepers: 1, senders: []int{0}, handoff: []uint8{hoHelpLeave}},
	{name: "1 sleeper, a helping caller and a sender", sleepers: 1, senders: []int{0, 0}, handoff: []uint8{hoHelp, hoNone}},
	{name: "1 sleeper, a helping caller that leaves the visit and a sender", sleepers: 1, senders: []int{0, 0}, handoff: []uint8{hoHelpLeave, hoNone}},
	{name: "1 sleeper, 2 helping callers", sleepers: 1, senders: []int{0, 0}, handoff: []uint8{hoHelp, hoHelpLeave}},
	{name: "1 sleeper in the futex phase, a helping caller and a sender", sleepers: 1, senders: []int{0, 0}, handoff: []uint8{hoHelp, hoNone}, futex: []bool{true}},
	{name: "2 sleepers, a helping caller and a deferring sender to the same sleeper", sleepers: 2, senders: []int{0, 0}, handoff: []uint8{hoHelp, hoDefer}},
	{name: "2 sleepers, a helping caller and a releaser to the same sleeper", sleepers: 2, senders: []int{0, 0}, handoff: []uint8{hoHelp, hoRelease}},
	{name: "1 sleeper, a late helping caller", sleepers: 1, senders: []int{0}, handoff: []uint8{hoHelpLate}},
	{name: "1 sleeper, a helping caller that leaves the visit and a late helping caller", sleepers: 1, senders: []int{0, 0}, handoff: []uint8{hoHelpLeave, hoHelpLate}},
	{name: "1 sleeper in the futex phase, a late helping caller and a sender", sleepers: 1, senders: []int{0, 0}, handoff: []uint8{hoHelpLate, hoNone}, futex: []bool{true}},
	{name: "2 sleepers, a helping caller that leaves the visit and a handoff sender that wakes, to different sleepers", sleepers: 2, senders: []int{0, 1}, handoff: []uint8{hoHelpLeave, hoWake}},
}

// parkScenarioNamed returns the scenario of that name.
func parkScenarioNamed(name string) parkScenario {
	i := slices.IndexFunc(parkScenarios, func(sc parkScenario) bool { return sc.name == name })
	if i < 0 {
		panic("no park scenario " + name)
	}
	return parkScenarios[i]
}

// The real protocol passes every check in every interleaving of every
// scenario, and the interleavings cover every way a thread can end.
func TestParkModel(t *testing.T) {
	var ends uint32
	for _, sc := range parkScenarios {
		o := exploreParkModel(sc, parkReal, false)
		if o.found != 0 {
			for b, sched := range o.first {
				t.Errorf("%s: %s:\n%s", sc.name, b, parkTrace(sc, parkReal, sched))
			}
			t.FailNow()
		}
		require.Zero(t, o.bad, sc.name)
		require.Positive(t, o.interleavings, sc.name)
		t.Logf("%s: %s interleavings (%d states), all checks hold", sc.name, countString(o.interleavings), o.states)
		ends |= o.ends
		if sc.name == "1 sleeper, 1 sender" {
			// Even the smallest scenario reaches every ending of both
			// halves: the search is not vacuous.
			for h := howS3Won; h <= howWoke; h++ {
				require.NotZero(t, o.ends&(1<<h), "%s: no interleaving ends with %q", sc.name, howNames[h])
			}
		}
		if sc.futex == nil {
			require.Zero(t, o.ends&futexHows, "%s: a futex ending without the futex phase", sc.name)
		}
		if !slices.Contains(sc.handoff, hoDefer) {
			require.Zero(t, o.ends&deferHows, "%s: a deferral without a deferring sender", sc.name)
		}
		if !slices.ContainsFunc(sc.handoff, isHelp) {
			require.Zero(t, o.ends&(helpHows|1<<howLendFailed), "%s: a helping caller's ending without one", sc.name)
		}
		if sc.name == "1 sleeper in the futex phase, 1 sender" {
			// With the futex phase, the smallest scenario still reaches
			// every ending, and every way the phase can end: the sleeper
			// may yet sleep on the channel (after a timeout), and a sender
			// signals either phase.
			for h := howS3Won; h < howCount; h++ {
				if h == howAsleep || h == howServed || (deferHows|helpHows|1<<howLendFailed)&(1<<h) != 0 {
					continue
				}
				require.NotZero(t, o.ends&(1<<h), "%s: no interleaving ends with %q", sc.name, howNames[h])
			}
		}
	}
	// Only a sleeper nobody sends to may stay asleep, in the scenario with
	// both senders to the same sleeper; and a sleeper whose message a
	// handoff sender served.
	require.NotZero(t, ends&(1<<howAsleep))
	require.NotZero(t, ends&(1<<howServed), "no interleaving serves a handoff")
	// Deferring senders leave wake-ups to the awake, find flags set, and
	// sleepers leave park for them.
	for h := howDeferred; h <= howS3Deferred; h++ {
		require.NotZero(t, ends&(1<<h), "no interleaving ends with %q", howNames[h])
	}
	// Helping callers serve and give the owner back asleep, or woken.
	for h := howHelped; h <= howHelpWoke; h++ {
		require.NotZero(t, ends&(1<<h), "no interleaving ends with %q", howNames[h])
	}
}

// isHelp reports whether a handoff mode is a helping caller's.
func isHelp(mode uint8) bool { return mode == hoHelp || mode == hoHelpLeave || mode == hoHelpLate }

// The memoised search counts exactly the schedules a plain enumeration
// visits one by one, with the same verdicts and the same first
// counterexamples, for the real protocol and every broken variant.
func TestParkModelStateless(t *testing.T) {
	type run struct {
		sc parkScenario
		v  parkVariant
	}
	var cases []run
	for v := range parkVariant(len(parkVariantNames)) {
		cases = append(cases, run{parkScenarios[0], v})
	}
	// The handoff senders, real and broken.
	cases = append(cases, run{parkScenarios[5], parkReal}, run{parkScenarios[5], brokenHandoffDropped})
	// The futex phase, real and broken.
	fx := parkScenarioNamed("1 sleeper in the futex phase, 1 sender")
	cases = append(cases, run{fx, parkReal}, run{fx, brokenFutexFlagLate})
	if !testing.Short() {
		// About 19 million schedules: 2 seconds, 20 under -race.
		cases = append(cases, run{parkScenarios[1], parkReal})
	}
	for _, c := range cases {
		a := exploreParkModel(c.sc, c.v, false)
		b := exploreParkModel(c.sc, c.v, true)
		name := c.sc.name + ", " + parkVariantNames[c.v]
		require.Equal(t, b.interleavings, a.interleavings, name)
		require.Equal(t, b.bad, a.bad, name)
		require.Equal(t, b.found, a.found, name)
		require.Equal(t, b.first, a.first, name)
		require.Equal(t, b.ends, a.ends, name)
		t.Logf("%s: %d schedules enumerated one by one (%d of them violating), as counted by the memoised search (%d states)",
			name, b.interleavings, b.bad, a.states)
	}
}

// Every broken variant is caught: for each check the variant is expected to
// break, some interleaving of some scenario violates it; the first
// counterexample to each is logged as a trace.
func TestParkModelCatchesBrokenProtocols(t *testing.T) {
	for _, b := range []struct {
		v    parkVariant
		want pmViolation // checks that must be violated in some scenario
	}{
		// The waker's decrement can precede the increment: sleepers
		// undercounts, and a sender then skips P3 while the other worker
		// sleeps (two sleepers needed), or sleepers goes negative.
		{brokenS2BeforeS1, vUndercount | vLostWakeup | vNegative},
		// P2 reads 0 before the sleeper's S1, P1 after its S3.
		{brokenCheckBeforePublish, vLostWakeup},
		// A message published before S1 is seen by nobody.
		{brokenNoRecheck, vLostWakeup},
		// A waker moves the sleeper to woken and decrements between S3's
		// load and its store: two decrements for one park.
		{brokenS3ByStore, vTwiceDec | vNegative | vEndCount},
		// Two wakers both load parked and both store woken, or one stores
		// woken after the sleeper left at S3.
		{brokenWakeByStore, vTwiceOut | vTwiceDec | vNegative | vNotRunning},
		// The Wake lands between S3 and the Wait and is dropped.
		{brokenLossyEvent, vLostWakeup | vAsleepNotParked},
		// The handed-off message waits for a worker that never comes.
		{brokenHandoffDropped, vLostWakeup},
		// A waker between the sleeper's channel-phase check and its late
		// F4 loads inFutex == 1 and only sends FUTEX_WAKE: the sleeper
		// sleeps on the channel with no token, though moved to woken.
		{brokenFutexFlagLate, vLostWakeup | vAsleepNotParked},
		// DA saw the other worker awake, which then parked before D1.
		{brokenDeferNoRecheck, vLostWakeup},
		// The last worker to park misses the flag set before its S1.
		{brokenS3IgnoresDeferred, vLostWakeup},
		// P2 read sleepers before the sleeper's S1 (the unlocking store
		// still buffered), and S3 read the held lock as nothing.
		{brokenS3Unsettled, vLostWakeup},
		// A sender found the flag set before its unlocking store was
		// visible, and the worker serving the flag skipped the held lock.
		{brokenServeUnsettled, vLostWakeup},
		// A sender found the owner lent and did not wake it; the helper
		// gave it back asleep without looking.
		{brokenHelpNoRecheck, vLostWakeup},
		// The helper left the rest of its visit to an owner it did not
		// wake.
		{brokenHelpLeftIgnored, vLostWakeup},
	} {
		name := parkVariantNames[b.v]
		// The deferral's variants run the scenarios with a deferring
		// sender, the others those without.
		deferral := b.v == brokenDeferNoRecheck || b.v == brokenS3IgnoresDeferred || b.v == brokenServeUnsettled
		help := b.v == brokenHelpNoRecheck || b.v == brokenHelpLeftIgnored
		t.Run(name, func(t *testing.T) {
			var found pmViolation
			caught, ran := 0, 0
			for _, sc := range parkScenarios {
				if slices.Contains(sc.handoff, hoDefer) != deferral && !help ||
					help && !slices.ContainsFunc(sc.handoff, isHelp) {
					continue
				}
				ran++
				o := exploreParkModel(sc, b.v, false)
				if o.found == 0 {
					t.Logf("%s: %s interleavings, none violates a check", sc.name, countString(o.interleavings))
					continue
				}
				caught++
				t.Logf("%s: %s of %s interleavings violate: %s", sc.name, countString(o.bad), countString(o.interleavings), o.found)
				for bit := range violationNames {
					v := pmViolation(1 << bit)
					if v&o.found&b.want&^found != 0 {
						t.Logf("first counterexample to %q (%s):\n%s", v, sc.name, parkTrace(sc, b.v, o.first[v]))
					}
				}
				found |= o.found
			}
			require.Positive(t, caught, "the checker accepted a broken protocol")
			require.Equal(t, b.want, found&b.want, "missing: %s", b.want&^found)
			t.Logf("caught in %d of %d scenarios", caught, ran)
		})
	}
}
