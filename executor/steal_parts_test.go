package executor

import (
	"context"
	"testing"
	"time"

	"github.com/actord/actord/stealing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The parts of worker.steal, each alone: the ageing rule on a fake clock,
// and the candidate scan, the victim watch, the ripe-candidate check and
// the swap on a stopped executor's workers and mailboxes, with the clock
// passed in. A mailbox is made a candidate by storing a word with a length
// (the stopped executor's mailboxes are closed: nothing pushes or gulps).

// stoppedForSteal starts and stops an executor of two workers with four
// queues (two each) and random victims, the thief's only victim being the
// other worker, and returns it with the thief and the victim.
func stoppedForSteal(t *testing.T, age time.Duration) (e *Executor, thief, vw *worker) {
	t.Helper()
	e, err := Start(Config{Workers: 2, Queues: 4, SpareQueues: 1, StealAge: age, Steal: stealing.Random})
	require.NoError(t, err)
	require.NoError(t, e.Stop(context.Background()))
	return e, e.workers[0], e.workers[1]
}

// makeCandidate gives mb a word that says n envelopes wait, not being
// processed, at gulp sequence seq.
func makeCandidate(mb *mailbox, n int, seq uint64) {
	mb.word.Store(wordClosed | uint64(n)<<wordLenShift | seq<<wordSeqShift&wordSeqMask)
}

// victimMailboxes returns the non-spare mailboxes in vw's slots and their
// slot indices.
func victimMailboxes(e *Executor, vw *worker) (mbs []*mailbox, slots []int) {
	for i := vw.lo; i < vw.hi; i++ {
		if mb := e.slots[i].Load(); mb != nil && !mb.spare {
			mbs, slots = append(mbs, mb), append(slots, i)
		}
	}
	return mbs, slots
}

// The ageing rule on a fake clock: every decision is a function of the
// times it is given and the steal age alone.
func TestAgeRuleFakeClock(t *testing.T) {
	const age = 16 * time.Millisecond
	a := ageRule{age}
	since := 3 * time.Hour // any epoch-relative time: only differences count
	for _, c := range []struct {
		waited  time.Duration
		stalled bool
		want    ripeness
	}{
		{0, false, unripe},
		{age/stallDiv - 1, true, unripe},
		{age / stallDiv, true, ripeEarly},
		{age / stallDiv, false, unripe},
		{age - 1, true, ripeEarly},
		{age - 1, false, unripe},
		{age, false, ripe},
		{age, true, ripe},
		{time.Hour, false, ripe},
	} {
		assert.Equal(t, c.want, a.candidate(since, since+c.waited, c.stalled),
			"a candidate waiting %v, victim stalled %v", c.waited, c.stalled)
	}

	assert.False(t, a.stuck(since, since+age-1), "in one visit for less than the steal age")
	assert.True(t, a.stuck(since, since+age), "in one visit for the steal age")
	assert.False(t, a.stalled(since, since+age/stallDiv-1), "quiet for less than a stallDiv'th")
	assert.True(t, a.stalled(since, since+age/stallDiv), "quiet for a stallDiv'th of the steal age")
	assert.True(t, a.recentEpisode(since, since+spareRecent*age-1), "an episode that began just within spareRecent steal ages")
	assert.False(t, a.recentEpisode(since, since+spareRecent*age), "an episode spareRecent steal ages ago")
	assert.False(t, a.windowOver(since, since+age-1))
	assert.True(t, a.windowOver(since, since+age))
	assert.False(t, a.thiefDue(since, since+age-1), "a thief woken less than a steal age ago")
	assert.True(t, a.thiefDue(since, since+age))
	assert.True(t, a.thiefDue(-age, 0), "a worker's first wake (thiefWoken 0 at the epoch's start) is due at the steal age")

	// Steal on first sight, and a zero steal age (as after resolving, never
	// seen by workers, but the rule is total).
	for _, age := range []time.Duration{-1, 0} {
		a := ageRule{age}
		assert.Equal(t, ripe, a.candidate(since, since, false), "steal age %v: ripe at first sight", age)
		assert.True(t, a.stuck(since, since))
		assert.True(t, a.thiefDue(since, since))
	}
}

// scanVictim remembers each of the victim's candidates as seen now, and
// none of its empty or processed mailboxes; with a negative steal age it
// remembers none and names the first instead.
func TestScanVictimRemembersCandidates(t *testing.T) {
	e, thief, vw := stoppedForSteal(t, 16*time.Millisecond)
	mbs, slots := victimMailboxes(e, vw)
	require.Len(t, mbs, 2)
	makeCandidate(mbs[0], 3, 5)
	mbs[1].word.Store(wordClosed | wordLenOne | wordProcessing) // being processed: no candidate
	now := time.Hour
	assert.Equal(t, -1, thief.scanVictim(vw, now))
	require.Len(t, thief.cands, 1)
	assert.Equal(t, candidate{mb: mbs[0], word: mbs[0].word.Load(), since: now}, thief.cands[0])

	mbs[1].word.Store(wordClosed) // empty
	thief.cands = nil
	assert.Equal(t, -1, thief.scanVictim(vw, now))
	assert.Len(t, thief.cands, 1, "an empty mailbox is no candidate")

	e, thief, vw = stoppedForSteal(t, -1)
	mbs, slots = victimMailboxes(e, vw)
	makeCandidate(mbs[1], 1, 0)
	assert.Equal(t, slots[1], thief.scanVictim(vw, time.Hour), "steal on first sight names the candidate's slot")
	assert.Empty(t, thief.cands, "and remembers nothing")
}

// watchVictim starts a new watch at a new victim or a new visit, restarts
// the quiet time only when the same visit delivered since, and otherwise
// keeps the times of the first look.
func TestWatchVictim(t *testing.T) {
	_, thief, vw := stoppedForSteal(t, 16*time.Millisecond)
	vw.batchSeq.Store(7<<32 | 40)
	vw.beat.Store(64)
	t0 := time.Hour
	thief.watchVictim(vw, t0)
	assert.Equal(t, victimWatch{w: vw, seq: 40, beat: 64, since: t0, quiet: t0}, thief.watch, "a new victim")
	thief.watchVictim(vw, t0+1)
	assert.Equal(t, victimWatch{w: vw, seq: 40, beat: 64, since: t0, quiet: t0}, thief.watch, "the same visit, nothing delivered")
	vw.beat.Store(96)
	thief.watchVictim(vw, t0+2)
	assert.Equal(t, victimWatch{w: vw, seq: 40, beat: 96, since: t0, quiet: t0 + 2}, thief.watch, "the same visit, delivering")
	vw.batchSeq.Store(7<<32 | 42)
	thief.watchVictim(vw, t0+3)
	assert.Equal(t, victimWatch{w: vw, seq: 42, beat: 96, since: t0 + 3, quiet: t0 + 3}, thief.watch, "a new visit")
	assert.Equal(t, uint32(42), vw.seenSeq.Load(), "the look is recorded for the victim's next visit (visitSeq)")
}

// chooseVictim returns the worker the heuristic picks: with two workers
// and random victims, always the other one; with one worker there is no
// selector, so steal is never called (see loop), and no victim is chosen.
func TestChooseVictim(t *testing.T) {
	_, thief, vw := stoppedForSteal(t, 16*time.Millisecond)
	for range 10 {
		assert.Same(t, vw, thief.chooseVictim())
	}
	assert.Same(t, thief, vw.chooseVictim())
}

// ripeCandidate forgets candidates served since they were seen, keeps
// those still unripe, and returns the slot of the first ripe one, which it
// forgets too; a candidate ripe only early (a stalled victim) is taken only
// from the watched victim's slots.
func TestRipeCandidateFakeClock(t *testing.T) {
	const age = 16 * time.Millisecond
	e, thief, vw := stoppedForSteal(t, age)
	mbs, slots := victimMailboxes(e, vw)
	makeCandidate(mbs[0], 1, 5)
	makeCandidate(mbs[1], 2, 9)
	t0 := time.Hour
	thief.watchVictim(vw, t0)
	require.Equal(t, -1, thief.scanVictim(vw, t0))
	require.Len(t, thief.cands, 2)

	slot, _ := thief.ripeCandidate(t0+age-1, false)
	assert.Equal(t, -1, slot, "nothing ripe before the steal age")
	assert.Len(t, thief.cands, 2, "unripe candidates are kept")

	slot, early := thief.ripeCandidate(t0+age/stallDiv, true)
	assert.True(t, early, "ripe early at a stalled victim")
	assert.Contains(t, slots, slot)
	assert.Len(t, thief.cands, 1, "the candidate tried is forgotten")

	thief.watch = victimWatch{} // the victim is no longer the one watched
	slot, _ = thief.ripeCandidate(t0+age/stallDiv, true)
	assert.Equal(t, -1, slot, "ripe early, but not in the watched victim's slots")
	assert.Len(t, thief.cands, 1, "and kept")

	left := thief.cands[0].mb
	left.word.Store(left.word.Load() + 1<<wordSeqShift) // gulped and refilled since
	slot, _ = thief.ripeCandidate(t0+age, false)
	assert.Equal(t, -1, slot)
	assert.Empty(t, thief.cands, "a candidate served since it was seen is forgotten")
}

// stealAt on a fake clock: the first attempt scans the victim and
// remembers its candidate, attempts before the steal age has passed take
// nothing, and the first at the steal age swaps the candidate into the
// thief's slots and gives the victim one of the thief's mailboxes.
func TestStealAtAgesCandidatesFakeClock(t *testing.T) {
	const age = 16 * time.Millisecond
	e, thief, vw := stoppedForSteal(t, age)
	mbs, _ := victimMailboxes(e, vw)
	for _, mb := range mbs {
		mb.word.Store(wordClosed)
	}
	cand := mbs[1]
	makeCandidate(cand, 4, 1)
	t0 := time.Hour
	attempts := thief.st.StealAttempts

	assert.False(t, thief.stealAt(t0), "the first look remembers")
	assert.True(t, thief.backlogSeen, "a candidate waits at another worker")
	require.Len(t, thief.cands, 1)
	assert.Equal(t, attempts+1, thief.st.StealAttempts)

	for _, now := range []time.Duration{t0 + 1, t0 + age/2, t0 + age - 1} {
		assert.False(t, thief.stealAt(now), "at %v: too young", now-t0)
		assert.Len(t, thief.cands, 1)
		assert.True(t, thief.backlogSeen)
	}
	assert.Equal(t, attempts+1, thief.st.StealAttempts, "waiting for a candidate to age is no attempt")

	assert.True(t, thief.stealAt(t0+age), "taken at the steal age")
	assert.Equal(t, attempts+2, thief.st.StealAttempts)
	assert.Empty(t, thief.cands)
	assert.Equal(t, int32(thief.id), cand.owner.Load(), "the candidate's owner is the thief")
	found := false
	for i := thief.lo; i < thief.hi; i++ {
		found = found || e.slots[i].Load() == cand
	}
	assert.True(t, found, "the candidate is in the thief's slots")
	for i := vw.lo; i < vw.hi; i++ {
		if mb := e.slots[i].Load(); mb != nil {
			assert.Equal(t, int32(vw.id), mb.owner.Load(), "every mailbox in the victim's slots is the victim's")
		}
	}
	assert.Nil(t, thief.given)
	assert.Nil(t, thief.taken)

	// Nothing left at the victim: a fresh scan finds no candidate.
	noCand := thief.st.StealNoCandidate
	assert.False(t, thief.stealAt(t0+2*age))
	assert.False(t, thief.backlogSeen)
	assert.Equal(t, noCand+1, thief.st.StealNoCandidate)
}

// takeRipe swaps a ripe candidate in and gives the victim a mailbox with
// actors, not a spare, when the victim is not stuck; and when the victim is
// stuck (one visit for the steal age, awake, not spinning), a spare.
func TestTakeRipeGivesSpareOnlyToStuckVictim(t *testing.T) {
	const age = 16 * time.Millisecond
	for _, stuck := range []bool{false, true} {
		e, thief, vw := stoppedForSteal(t, age)
		mbs, slots := victimMailboxes(e, vw)
		makeCandidate(mbs[0], 1, 0)
		t0 := time.Hour
		vw.batchSeq.Store(7<<32 | 40)
		thief.watchVictim(vw, t0)
		if stuck {
			vw.state.Store(workerRunning)
		}
		require.True(t, thief.takeRipe(slots[0], false, t0+age), "stuck %v", stuck)
		given := e.slots[slots[0]].Load()
		assert.Equal(t, stuck, given.spare, "stuck %v: a spare given", stuck)
		assert.Equal(t, int32(vw.id), given.owner.Load())
		vw.state.Store(workerExited)
	}
}
