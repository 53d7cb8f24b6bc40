package executor

import (
	"time"

	"github.com/actord/actord/stealing"
)

// The stealing policy: when an idle worker steals, from whom, what, and
// what it gives back. The swap itself is stealing.TrySwapHooked.

// wakeThief wakes one parked worker (the first after w in worker order) so
// that it can steal from w's backlog.
//
// How parked workers take part in stealing:
//  1. A busy worker that, after a pass, still has two or more mailboxes
//     waiting wakes one sleeper (here). The sleeper resumes as a spinning
//     thief, finds a candidate at w, and takes it once it has aged
//     (Config.StealAge). One wake per pass at most, and only while someone
//     sleeps, so a steadily busy system does not churn sleepers.
//  2. A worker stuck in a long behaviour cannot run passes, so it cannot do
//     (1). Its mailboxes are found by any worker that is awake (spinning
//     thieves look every two idle passes), or, when all others sleep, by
//     the watcher (park.go): it looks every Config.ParkTimeout (doubling
//     while it finds nothing, up to ParkTimeoutMax) for an awake worker
//     inside the same mailbox visit as at its previous look, and then
//     wakes one sleeper, which spins and steals what has aged.
//  3. Senders never wake a worker other than their mailbox's owner, and
//     never for stealing: sending stays one load when nobody sleeps.
//
// No thief is woken while every processor runs a goroutine (the runtime's
// count of running goroutines, read here, is GOMAXPROCS at Start or more):
// the thief would wait for a processor behind w or behind the goroutines
// that feed w, such as a producer outside the system, and then take one
// from them, leaving the backlog to grow as fast as it is served (see
// defer.go, whose helpers take such a backlog instead).
func (w *worker) wakeThief() {
	ws := w.e.workers
	if runningGoroutines(&w.running) >= uint64(w.e.procs) {
		return
	}
	for k := 1; k < len(ws); k++ {
		o := ws[(w.id+k)%len(ws)]
		if o.wake() {
			w.st.StealWakeups++
			return
		}
	}
}

// stealHooks keeps mailbox owners exact across a swap: each mailbox's owner
// is written while the mailbox is unreachable through the slots (see
// stealing.Hooks), so a concurrent thief can never overwrite a newer owner
// with an older one. The owner stores pair with the loads of those who
// wake a mailbox's owner (P3 in park.go: notify, wakeOwner,
// processCurrent), of slotOf, and of Stop.
type stealHooks struct{ thief, victim *worker }

func (h stealHooks) Giving(q *mailbox)   { q.owner.Store(int32(h.victim.id)); h.thief.given = q }
func (h stealHooks) Ungiving(q *mailbox) { q.owner.Store(int32(h.thief.id)) }
func (h stealHooks) Taking(q *mailbox)   { q.owner.Store(int32(h.thief.id)); h.thief.taken = q }

// victimStuck reports whether the victim vw has begun no mailbox visit (and
// has not parked) for StealAge or more since the thief recorded its visit
// counter (w.watch, see steal), while it was awake and not spinning: it is
// inside one visit all that time (a long behaviour, or a mailbox re-taken
// batch after batch), stuck as far as its other queues are concerned, and
// must not be given queues with actors on them. The visit may be of any mailbox, one of vw's own or
// one in another worker's slots that vw was handed (handoff.go) or serves
// for a sleeper (defer.go): the counter says so for both, where the
// mailbox's processing bit would be seen only in vw's own slots.
func (w *worker) victimStuck(vw *worker, now time.Duration) bool {
	v := w.watch
	// batchSeq pairs with the victim's stores (noteVisit, park); state
	// and spinningNow with its own stores as it parks, wakes and spins
	// (park.go). Racy looks: a policy, not a correctness matter.
	if v.w != vw || uint32(vw.batchSeq.Load()) != v.seq {
		return false // another victim, or a visit (or a park) since
	}
	if vw.state.Load() != workerRunning || vw.spinningNow.Load() {
		return false // asleep, or idle
	}
	return w.e.ageRule().stuck(v.since, now)
}

// spareRecent is how recently a stuck victim's previous stuck episode must
// have begun for the thief to give it a spare for every candidate it takes
// (see givesSpare), in units of StealAge.
const spareRecent = 10

// givesSpare reports, for a candidate the thief takes from the stuck victim
// vw (victimStuck), whether it gives vw a spare rather than one of its own
// mailboxes. A spare keeps the thief's actors from waiting behind the stuck
// victim, but moves a mailbox with actors to the thief for good. On a quiet
// machine most stuck episodes are a worker's thread off its CPU for a
// millisecond or two, and a spare for each candidate taken during one left
// one worker holding nearly all the mailboxes for the rest of the run
// (docs/design.md, "Stealing"). So only the first candidate of an
// episode (a value of the victim's visit counter) gets a spare, and the
// others are exchanged one for one, unless the victim's previous episode
// began less than spareRecent steal ages before this one: a worker that
// keeps getting stuck (its thread competing for a CPU with other processes,
// or its behaviours long) is better left with fewer mailboxes, and all of
// that episode's candidates get spares. Called by the thief's goroutine
// only, after victimStuck(vw, now) reported true.
func (w *worker) givesSpare(vw *worker, now time.Duration) bool {
	if vw == w.spareTo && w.watch.seq == w.spareSeq {
		return w.spareAll // the same episode
	}
	w.spareAll = vw == w.spareTo && w.e.ageRule().recentEpisode(w.spareAt, now)
	w.spareTo, w.spareSeq, w.spareAt = vw, w.watch.seq, now
	return true
}

// stallDiv divides Config.StealAge into the time after which an awake
// victim that serves nothing is stalled (see victimStalled).
const stallDiv = 16

// beatEvery is how many deliveries a worker makes between stores of its
// beat (see worker.beat): a power of two, so the test is a mask.
const beatEvery = 32

// victimStalled reports whether the victim the thief watches (w.watch: the
// one whose candidates it remembers) is awake but has begun no mailbox
// visit, not slept, and delivered fewer than beatEvery messages, for
// StealAge/stallDiv or more since the thief recorded its counters: it
// serves none of its mailboxes. Its thread is off the CPU (another
// process, the host or the runtime holds it), or it runs one long
// behaviour. Its candidates are then taken once they have waited
// StealAge/stallDiv instead of StealAge (see steal): waiting longer only
// holds their messages up, and a worker that is not running cannot be
// about to serve them.
//
// A parked victim is never stalled: a candidate in its mailboxes has a
// wake-up in flight (the woken worker waits for a processor, often for the
// thief's own), and taking it early would race that worker for its own
// mailboxes as soon as it runs.
func (w *worker) victimStalled(now time.Duration) bool {
	v := w.watch
	vw := v.w
	// batchSeq pairs with the victim's stores (noteVisit, park), beat
	// with its stores every beatEvery deliveries (deliver.go), state with
	// its own stores as it parks and wakes (park.go). Racy looks: a
	// policy, not a correctness matter.
	if vw == nil || uint32(vw.batchSeq.Load()) != v.seq || vw.beat.Load() != v.beat {
		return false // a visit, a sleep or deliveries since
	}
	if vw.state.Load() != workerRunning {
		return false
	}
	return w.e.ageRule().stalled(v.quiet, now)
}

// stallServes is how many of a stalled victim's candidates a thief serves
// in place within StealAge before it takes the next ones (see
// servesInPlace).
const stallServes = 8

// servesInPlace reports whether the thief serves the stalled victim's
// candidate it is about to take where it is, for one visit (w.visit: the
// mailbox stays in the victim's slots, as a handed-off or deferred one
// does), rather than swap it into its own slots; it counts the candidate
// either way. Most stalls on a quiet machine are short: the victim's
// thread waits a moment for a CPU (the runtime handing a locked thread's
// processor around after a yield, another process's time slice).
// Stealing at each of them moved the victim's busiest mailboxes (those with
// messages waiting) to the thief one by one, in exchange for mailboxes of
// the thief's, idle at that moment: the thief ended up with the busy ones,
// and the victim, once running again, idle with nothing old enough to take
// back (docs/design.md, "Stealing"). A victim that stalls often, whose
// thread competes for a CPU all the time, is better left with fewer busy
// mailboxes: once the thief has served stallServes of its candidates
// within StealAge, it takes the next ones. Called by the thief's goroutine
// only.
func (w *worker) servesInPlace(now time.Duration) bool {
	if w.e.ageRule().windowOver(w.stallFrom, now) {
		w.stallFrom, w.stallTakes = now, 0
	}
	w.stallTakes++
	return w.stallTakes <= stallServes
}

// testHookNoStall, if set (by tests only, before Start), turns the stall
// rule off: candidates are taken only once they have aged.
var testHookNoStall bool

// victimWatch is a victim's visit counter and beat as a thief saw them
// (see steal).
type victimWatch struct {
	w     *worker
	seq   uint32        // the low 32 bits of w.batchSeq
	beat  uint32        // w.beat
	since time.Duration // when seq was first seen, since the executor's epoch (victimStuck)
	quiet time.Duration // when seq and beat were first seen together (victimStalled)
}

// candidate is a mailbox a thief saw waiting (see steal).
type candidate struct {
	mb    *mailbox
	word  uint64        // its word when first seen (the gulp sequence matters)
	since time.Duration // when, since the executor's epoch
}

// steal makes one steal attempt: choose a victim,
// scan its slots from a random start for candidates (non-nil, non-empty,
// not being processed), and try ONE wait-free swap with a slot of our own.
// Whatever the outcome, the caller goes back to its own slots. It reports
// whether a non-empty mailbox was taken.
//
// Aging (our addition): a candidate is swapped only once it has been waiting
// for Config.StealAge: the thief remembers every candidate it saw at the
// victim, with its word and the time, and at later attempts checks (one load
// each) which are still candidates with the same gulp sequence, i.e. have
// not been served since. A mailbox its owner serves promptly (the owner is
// busy, not stuck) is left alone, so sequential work such as a chain of
// single messages is not dragged between cores, and a busy but balanced
// system does not churn its queues between workers. A backlog the owner
// cannot keep up with, or mailboxes stuck behind a long behaviour, are
// taken once they have aged: one per attempt, and after a sleep all the
// remembered ones that waited through it, without a new wait each. From a
// stalled victim (awake, but serving nothing: victimStalled) they are taken
// once they have waited StealAge/stallDiv.
// Watching candidates costs the victim only those loads.
//
// steal tells the victim heuristic that this worker looks for work and
// reads the clock; stealAt, given the time, does the rest.
func (w *worker) steal() bool {
	w.e.sel.Attempt(w.id) // this worker is looking for work: not a good victim
	return w.stealAt(time.Since(w.e.epoch))
}

// stealAt makes the steal attempt of steal at now, the time since the
// executor's epoch, in parts: ripeCandidate (the remembered candidates,
// aged by ageRule) and takeRipe (the one ripe), or else chooseVictim,
// watchVictim and scanVictim (new candidates), and trySteal (the swap).
func (w *worker) stealAt(now time.Duration) bool {
	stalled := len(w.cands) > 0 && !testHookNoStall && w.victimStalled(now)
	ready, early := w.ripeCandidate(now, stalled)
	// Candidates still waiting: another worker has a backlog (see
	// spinForBacklog); set again below after a fresh scan.
	w.backlogSeen = ready >= 0 || len(w.cands) > 0
	if ready >= 0 {
		return w.takeRipe(ready, early, now)
	}
	if len(w.cands) > 0 {
		return false // still waiting for them to age
	}
	w.st.StealAttempts++
	vw := w.chooseVictim()
	if vw == nil {
		w.backlogSeen = false
		w.st.StealNoCandidate++
		return false
	}
	w.watchVictim(vw, now)
	if i := w.scanVictim(vw, now); i >= 0 {
		return w.trySteal(i, false) // steal on first sight (StealAge < 0)
	}
	if len(w.cands) == 0 {
		w.st.StealNoCandidate++
	}
	w.backlogSeen = len(w.cands) > 0
	return false
}

// ripeCandidate checks the remembered candidates at now: it forgets those
// served (or emptied) since they were seen, and returns the victim slot
// holding the first that is ripe (ageRule.candidate; stalled says whether
// the watched victim is stalled, see victimStalled), forgotten too as it is
// tried now, and whether it ripened early (at a stalled victim, before
// StealAge); -1 if none. A candidate ripe only early is taken only from the
// watched victim's slots (it may have been stolen meanwhile by a third
// worker), and is kept otherwise.
func (w *worker) ripeCandidate(now time.Duration, stalled bool) (slot int, early bool) {
	e, rule := w.e, w.e.ageRule()
	slot = -1
	keep := w.cands[:0]
	for _, c := range w.cands {
		// Pairs with the unlocking stores of pushers, gulpers and
		// releasers (mailbox.unlock): a racy look, the swap decides.
		word := c.mb.word.Load()
		if !isCandidateWord(word) || word&wordSeqMask != c.word&wordSeqMask {
			continue // served (or emptied) since we saw it
		}
		if slot < 0 {
			if r := rule.candidate(c.since, now, stalled); r != unripe {
				if i := e.slotOf(c.mb, w); i >= 0 && (r == ripe || e.slotWorker[i] == w.watch.w) {
					slot, early = i, r == ripeEarly
					continue // tried now: not kept
				}
			}
		}
		keep = append(keep, c)
	}
	clear(w.cands[len(keep):]) // drop references to mailboxes no longer watched
	w.cands = keep
	return slot, early
}

// takeRipe acts on the ripe candidate in victim slot i (ripeCandidate;
// early: it ripened at a stalled victim): it serves it where it is if
// servesInPlace says so, or else swaps it into this worker's slots,
// giving a stuck victim a spare (victimStuck, givesSpare). It reports
// whether it served or took a non-empty mailbox.
func (w *worker) takeRipe(i int, early bool, now time.Duration) bool {
	e := w.e
	w.st.StealAttempts++
	if early && w.servesInPlace(now) {
		// Served where it is (see servesInPlace). Pairs with the swap's
		// stores (stealing.TrySwapHooked): nil while a thief swaps it.
		if mb := e.slots[i].Load(); mb != nil && w.visit(mb) {
			w.st.StalledSteals++
			return true
		}
		return false
	}
	// A stalled victim is given a spare only once it counts as stuck:
	// most stalls are short (its thread preempted for a moment), and
	// a spare given for each would leave it with fewer queues with
	// actors than before, unbalancing a busy system.
	vw := e.slotWorker[i]
	took := w.trySteal(i, w.victimStuck(vw, now) && w.givesSpare(vw, now))
	if took && early {
		w.st.StalledSteals++
	}
	return took
}

// chooseVictim returns the victim the heuristic (Config.Steal) picks for
// this worker, or nil if it picks none.
func (w *worker) chooseVictim() *worker {
	v := w.e.sel.Victim(w.id, w.rng)
	if v < 0 {
		return nil
	}
	return w.e.workers[v]
}

// watchVictim records at now the visit counter and beat of the victim vw
// about to be scanned (w.watch, read by victimStuck and victimStalled): a
// new visit, or another victim, starts a new watch; the same visit
// delivering since the last look restarts the quiet time only.
func (w *worker) watchVictim(vw *worker, now time.Duration) {
	// visitSeq's loads pair with the victim's stores (noteVisit); beat
	// with its stores every beatEvery deliveries (deliver.go).
	if s, b := vw.visitSeq(), vw.beat.Load(); w.watch.w != vw || w.watch.seq != s {
		w.watch = victimWatch{w: vw, seq: s, beat: b, since: now, quiet: now} // a new visit to watch
	} else if w.watch.beat != b {
		w.watch.beat, w.watch.quiet = b, now // the same visit, delivering
	}
}

// scanVictim scans vw's slots from a random start and remembers every
// candidate (non-empty, not being processed) as seen at now. With a
// negative StealAge (steal on first sight) it remembers none and returns
// the slot of the first instead; otherwise it returns -1.
func (w *worker) scanVictim(vw *worker, now time.Duration) int {
	e := w.e
	span := vw.hi - vw.lo
	start := w.rng.IntN(span)
	for k := 0; k < span; k++ {
		i := vw.lo + (start+k)%span
		// Pairs with the swap's stores (stealing.TrySwapHooked).
		mb := e.slots[i].Load()
		if mb == nil {
			continue // another thief is mid-swap on this slot
		}
		// Pairs with the unlocking stores of pushers, gulpers and
		// releasers (mailbox.unlock): a racy look, the swap decides.
		word := mb.word.Load()
		if isCandidateWord(word) {
			if e.cfg.StealAge < 0 {
				return i
			}
			w.cands = append(w.cands, candidate{mb: mb, word: word, since: now})
		}
	}
	return -1
}

// ripeness is how far a remembered candidate has aged (ageRule.candidate).
type ripeness uint8

const (
	unripe    ripeness = iota // waited too little to be taken
	ripeEarly                 // waited StealAge/stallDiv at a stalled victim, not StealAge
	ripe                      // waited StealAge
)

// ageRule is the stealing policy's clock: how long a candidate, a stuck or
// stalled victim, or a window of the policy must have lasted. Its methods
// are pure functions of the times they are given (durations since the
// executor's epoch) and of age, Config.StealAge (resolved: negative means
// steal on first sight): they read no clock and no shared state, so a test
// drives them with a fake clock.
type ageRule struct{ age time.Duration }

// ageRule returns the executor's ageing rule.
func (e *Executor) ageRule() ageRule { return ageRule{e.cfg.StealAge} }

// candidate says how far a candidate first seen at since has aged at now:
// ripe after the steal age, ripeEarly after a stallDiv'th of it if its
// victim is stalled, unripe before.
func (a ageRule) candidate(since, now time.Duration, stalled bool) ripeness {
	waited := now - since
	switch {
	case waited >= a.age:
		return ripe
	case stalled && waited >= a.age/stallDiv:
		return ripeEarly
	}
	return unripe
}

// stuck reports whether a victim inside the visit it was first seen in at
// since is stuck at now: it has been in it for the steal age (victimStuck).
func (a ageRule) stuck(since, now time.Duration) bool { return now-since >= a.age }

// stalled reports whether a victim quiet (no visit, no sleep, no beat)
// since quiet is stalled at now: quiet for a stallDiv'th of the steal age
// (victimStalled).
func (a ageRule) stalled(quiet, now time.Duration) bool { return now-quiet >= a.age/stallDiv }

// recentEpisode reports whether a stuck episode that began at prev is
// recent at now: less than spareRecent steal ages ago (givesSpare).
func (a ageRule) recentEpisode(prev, now time.Duration) bool { return now-prev < spareRecent*a.age }

// windowOver reports whether the window of servesInPlace that began at
// from is over at now: it lasts one steal age.
func (a ageRule) windowOver(from, now time.Duration) bool { return now-from >= a.age }

// thiefDue reports whether a busy worker that last woke a thief at last
// may wake another at now: at most once per steal age (wakeThiefAt).
func (a ageRule) thiefDue(last, now time.Duration) bool { return now-last >= a.age }

// isCandidate reports whether mb is worth stealing: non-empty and not being
// processed (a racy test; the swap itself is what must be correct). The
// load pairs with the unlocking stores of pushers, gulpers and releasers
// (mailbox.unlock).
func isCandidate(mb *mailbox) bool { return isCandidateWord(mb.word.Load()) }

func isCandidateWord(word uint64) bool {
	return wordLen(word) > 0 && word&wordProcessing == 0
}

// slotOf returns the slot index holding mb if it is in another worker's
// range (the owner field says whose), or -1.
func (e *Executor) slotOf(mb *mailbox, thief *worker) int {
	o := e.workers[mb.owner.Load()] // pairs with stealHooks' stores
	if o == thief {
		return -1
	}
	for i := o.lo; i < o.hi; i++ {
		if e.slots[i].Load() == mb { // pairs with the swap's stores (stealing.TrySwapHooked)
			return i
		}
	}
	return -1
}

// giveSlot returns the own slot to give the victim in a swap. Normally a
// random own mailbox that is not a spare: queues are
// exchanged one for one, so both workers keep as many queues with actors as
// before and a busy, balanced system stays balanced. When the victim is
// stuck in a long behaviour, a spare if w holds one: none of w's actors
// then end up waiting behind the stuck behaviour.
func (w *worker) giveSlot(victimStuck bool) int {
	span := w.hi - w.lo
	start := w.rng.IntN(span)
	fallback := w.lo + start
	for k := 0; k < span; k++ {
		i := w.lo + (start+k)%span
		mb := w.e.slots[i].Load() // pairs with the swap's stores (stealing.TrySwapHooked)
		if mb == nil {
			continue
		}
		if mb.spare == victimStuck {
			return i
		}
	}
	return fallback
}

// trySteal swaps victim slot i (where the candidate was found) with a slot
// of w's own (see giveSlot; victimStuck says whether to give a spare). The swap takes whatever slot i holds at that
// moment (usually the candidate; recorded by the Taking hook), and the
// victim is the worker that owns slot i's range, which never changes.
func (w *worker) trySteal(i int, victimStuck bool) bool {
	e := w.e
	vw := e.slotWorker[i]
	mine := w.giveSlot(victimStuck)
	if !stealing.TrySwapHooked(e.slots, i, mine, stealHooks{thief: w, victim: vw}) {
		w.st.StealFailedSwap++
		return false
	}
	n := w.taken.queued()
	w.taken = nil
	if n == 0 {
		w.st.EmptySteals++
	} else {
		w.st.StealSize.Observe(uint64(n))
		// watchReset pairs with the watcher's Swap (park.go), which
		// restarts its backoff after a steal.
		if e.watchKick != nil && !e.watchReset.Load() {
			e.watchReset.Store(true)
		}
	}
	// The mailbox we gave the victim may hold messages: if the victim
	// sleeps, wake it (the sender's half of the protocol in park.go; the
	// swap published the mailbox). Settled: a push whose lock is held now
	// may have read the owner before the swap (see park.go, P1).
	// sleepers pairs with park's Add (S1).
	if wordLen(w.given.settled()) > 0 && e.sleepers.Load() != 0 {
		vw.wake()
	}
	w.given = nil
	return n > 0
}
