package executor

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/actord/actord/internal/goid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A worker stuck in a behaviour of a mailbox that lies in another worker's
// slots (one handed to it, see handoff.go) is stuck all the same: a thief
// that takes the queue waiting behind it gives it a spare, not a queue with
// actors, which would wait behind the behaviour in turn. Worker 0 runs a
// starter (mailbox 0) whose message to the blocker (mailbox 2, worker 1's)
// is handed off, so worker 0 runs the blocker, which blocks; a message to
// the waiter (mailbox 1, worker 0's) then waits until worker 1, woken by
// the watcher, steals mailbox 1.
func TestThiefGivesSpareToWorkerStuckElsewhere(t *testing.T) {
	if !goid.Supported {
		t.Skip("the handoff needs goroutine identities")
	}
	// On a loaded machine the watcher may wake worker 1 before worker 0
	// has run the handed-off blocker (worker 0 preempted for a park
	// timeout), and worker 1 then runs it: such an attempt sets nothing
	// up, and the test tries again.
	for attempt := 0; attempt < 20; attempt++ {
		if stuckElsewhere(t) {
			return
		}
	}
	t.Fatal("the blocker was never handed to worker 0 in 20 attempts")
}

// stuckElsewhere runs one attempt of TestThiefGivesSpareToWorkerStuckElsewhere
// and reports whether the blocker ran on worker 0 (if not, nothing was
// checked).
func stuckElsewhere(t *testing.T) bool {
	// The stall rule would take the waiter's mailbox before worker 0
	// counts as stuck, exchanging one queue for another: this tests the
	// stuck rule alone.
	testHookNoStall = true
	defer func() { testHookNoStall = false }()
	e, err := Start(Config{Workers: 2, Queues: 4, SpareQueues: 1,
		StealAge: 2 * time.Millisecond, ParkTimeout: time.Millisecond})
	require.NoError(t, err)
	stuck, release := make(chan *worker, 1), make(chan struct{})
	blocker := &probe{fn: func(*probe) Allocation {
		stuck <- e.current()
		<-release
		return Finished
	}}
	starter := &probe{fn: func(*probe) Allocation {
		require.NoError(t, Send(&blocker.cell, blocker, &probeMsg{}, probeBehaviour))
		return Finished
	}}
	delivered := make(chan *worker, 1)
	waiter := reportingProbe(e, delivered)
	starter.spawn(t, e) // ticket 0: mailbox 0, worker 0
	waiter.spawn(t, e)  // ticket 1: mailbox 1, worker 0
	blocker.spawn(t, e) // ticket 2: mailbox 2, worker 1
	waitAllParked(t, e)
	starter.send(t, &probeMsg{})
	if (<-stuck).id != 0 {
		close(release)
		waiter.send(t, &probeMsg{})
		require.NoError(t, e.Stop(context.Background()))
		return false
	}
	waiter.send(t, &probeMsg{})
	select {
	case w := <-delivered:
		assert.Equal(t, 1, w.id, "the waiter ran on the stuck worker")
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter's message was never stolen from the stuck worker")
	}
	// The thief gave worker 0 its spare for mailbox 1: worker 0 holds both.
	spares := 0
	for i := e.workers[0].lo; i < e.workers[0].hi; i++ {
		if e.slots[i].Load().spare {
			spares++
		}
	}
	assert.Equal(t, 2, spares, "the stuck worker was given a queue with actors")
	close(release)
	require.NoError(t, e.Stop(context.Background()))
	return true
}

// victimStuck's rule, on a stopped executor's workers: a victim is stuck
// once its visit counter has stayed the same for StealAge while it was
// awake and not spinning; a visit or a sleep advances the counter.
func TestVictimStuckRule(t *testing.T) {
	e, err := Start(Config{Workers: 2, StealAge: time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, e.Stop(context.Background()))
	thief, vw := e.workers[0], e.workers[1]
	vw.state.Store(workerRunning)
	vw.spinningNow.Store(false)
	vw.batchSeq.Store(7<<32 | 40)
	thief.watch = victimWatch{w: vw, seq: 40, since: 0}
	age := e.cfg.StealAge
	assert.False(t, thief.victimStuck(vw, age-1), "not yet StealAge")
	assert.True(t, thief.victimStuck(vw, age), "the same visit for StealAge")
	assert.False(t, thief.victimStuck(e.workers[0], age), "another victim than the one watched")
	vw.spinningNow.Store(true)
	assert.False(t, thief.victimStuck(vw, age), "spinning: idle, not stuck")
	vw.spinningNow.Store(false)
	vw.state.Store(workerParked)
	assert.False(t, thief.victimStuck(vw, age), "asleep")
	vw.state.Store(workerRunning)
	vw.batchSeq.Store(42)
	assert.False(t, thief.victimStuck(vw, age), "a visit (or a sleep) since")
}

// A sleep advances the visit counter, so that a victim that slept and woke
// between a thief's looks, without a visit, does not look stuck.
func TestSleepAdvancesVisitCounter(t *testing.T) {
	e, err := Start(Config{Workers: 2})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Stop(context.Background())) }()
	waitAllParked(t, e)
	w := e.workers[0]
	seq, parks := w.batchSeq.Load(), e.Stats().Workers[0].Parks
	require.True(t, w.wake())
	require.Eventually(t, func() bool {
		return w.state.Load() == workerParked && e.Stats().Workers[0].Parks > parks
	}, 10*time.Second, 50*time.Microsecond, "worker 0 never parked again")
	assert.NotEqual(t, seq, w.batchSeq.Load(), "a sleep left the visit counter as it was")
}

// The visit counter's lazy stores (noteVisit, visitSeq), on a stopped
// executor's worker: visits that nobody has looked at since the last store
// skip it, a reader's look makes the next visit store, and a change of the
// batch size is always stored (Stop reports it).
func TestVisitCounterStoresAfterALook(t *testing.T) {
	e, err := Start(Config{Workers: 1})
	require.NoError(t, err)
	require.NoError(t, e.Stop(context.Background()))
	w := e.workers[0]
	visit := func(gulped int) uint64 {
		w.seq += 2
		w.gulped = gulped
		w.noteVisit()
		return w.batchSeq.Load()
	}
	first := visit(1)
	assert.Equal(t, uint64(1), first>>32, "the batch size")
	assert.Equal(t, first, visit(1), "a visit nobody looked for was stored")
	s := w.visitSeq()
	assert.Equal(t, uint32(first), s, "a look returns the stored counter")
	assert.Equal(t, uint32(first), w.seenSeq.Load())
	second := visit(1)
	assert.NotEqual(t, uint32(first), uint32(second), "the first visit after a look left the counter as it was")
	assert.Equal(t, uint32(w.seq), uint32(second))
	assert.Equal(t, second, visit(1), "a second visit after one look was stored")
	third := visit(5)
	assert.Equal(t, uint64(5), third>>32, "a new batch size was not stored")
	assert.Equal(t, uint32(w.seq), uint32(third))

	// A reader that recorded an older value over a newer one (a slower
	// reader) is repaired by the next look of a reader holding the newer.
	w.seenSeq.Store(uint32(first))
	assert.Equal(t, third, visit(5), "stored although the look recorded was stale")
	assert.Equal(t, uint32(third), w.visitSeq())
	assert.NotEqual(t, third, visit(5), "the visit after the repairing look was not stored")
}

// The stall rule's cases: an awake victim that has begun no visit, not
// slept and delivered no beat's worth of messages for StealAge/stallDiv.
func TestVictimStalledRule(t *testing.T) {
	e, err := Start(Config{Workers: 2, StealAge: 16 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, e.Stop(context.Background()))
	thief, vw := e.workers[0], e.workers[1]
	vw.state.Store(workerRunning)
	vw.batchSeq.Store(7<<32 | 40)
	vw.beat.Store(64)
	thief.watch = victimWatch{w: vw, seq: 40, beat: 64, since: 0, quiet: 0}
	stall := e.cfg.StealAge / stallDiv
	assert.False(t, thief.victimStalled(stall-1), "not yet StealAge/stallDiv")
	assert.True(t, thief.victimStalled(stall), "nothing served for StealAge/stallDiv")
	vw.spinningNow.Store(true)
	assert.True(t, thief.victimStalled(stall), "spinning with a candidate waiting: off the CPU")
	vw.spinningNow.Store(false)
	vw.state.Store(workerParked)
	assert.False(t, thief.victimStalled(stall), "asleep: a wake-up is in flight")
	vw.state.Store(workerRunning)
	vw.beat.Store(96)
	assert.False(t, thief.victimStalled(stall), "deliveries since: serving a long visit")
	vw.beat.Store(64)
	vw.batchSeq.Store(42)
	assert.False(t, thief.victimStalled(stall), "a visit (or a sleep) since")
	thief.watch = victimWatch{}
	assert.False(t, thief.victimStalled(stall), "no victim watched")
}

func TestGivesSpareRule(t *testing.T) {
	e, err := Start(Config{Workers: 3, StealAge: 16 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, e.Stop(context.Background()))
	thief, vw, other := e.workers[0], e.workers[1], e.workers[2]
	age := e.cfg.StealAge
	episode := func(seq uint32) { thief.watch = victimWatch{w: vw, seq: seq} }
	now := time.Hour
	episode(40)
	assert.True(t, thief.givesSpare(vw, now), "the first candidate of an episode: a spare")
	assert.False(t, thief.givesSpare(vw, now+1), "the same episode: one for one")
	episode(42)
	now += spareRecent * age
	assert.True(t, thief.givesSpare(vw, now), "a later episode: a spare for its first")
	assert.False(t, thief.givesSpare(vw, now+1), "and one for one after it")
	episode(44)
	now += spareRecent*age - 1
	assert.True(t, thief.givesSpare(vw, now), "an episode soon after the last one")
	assert.True(t, thief.givesSpare(vw, now+1), "the victim keeps getting stuck: spares for all")
	thief.watch = victimWatch{w: other, seq: 44}
	assert.True(t, thief.givesSpare(other, now+2), "another victim's first episode")
	assert.False(t, thief.givesSpare(other, now+3), "not recent for that victim")
}

func TestServesInPlaceRule(t *testing.T) {
	e, err := Start(Config{Workers: 2, StealAge: 16 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, e.Stop(context.Background()))
	w := e.workers[0]
	now := time.Hour
	for i := 0; i < stallServes; i++ {
		assert.True(t, w.servesInPlace(now+time.Duration(i)), "candidate %d within StealAge: served in place", i)
	}
	assert.False(t, w.servesInPlace(now+e.cfg.StealAge-1), "more than stallServes within StealAge: taken")
	assert.False(t, w.servesInPlace(now+e.cfg.StealAge-1), "and the next ones too")
	assert.True(t, w.servesInPlace(now+e.cfg.StealAge), "a new window: served in place again")
}

// A thief takes a candidate early from a victim stuck in one behaviour: with
// a steal age of a second, the message to the stuck worker's other actor is
// delivered, by a steal counted as from a stalled victim, while the
// behaviour still blocks. Without the stall rule it would wait the whole
// second, and no such steal would be counted.
func TestStealsEarlyFromStalledVictim(t *testing.T) {
	// Mailboxes 0 and 1 are worker 0's, 2 and 3 worker 1's.
	e, err := Start(Config{Workers: 2, Queues: 4, StealAge: time.Second})
	require.NoError(t, err)
	started, release := make(chan struct{}), make(chan struct{})
	idle0, idle1 := finishingProbe(1, nil), finishingProbe(1, nil)
	blocker := blockingProbe(started, release)
	var got atomic.Int64
	target := finishingProbe(1, &got)
	spawnOnTickets(t, e, idle0, idle1, blocker, target) // blocker and target on worker 1
	blocker.send(t, &probeMsg{})
	<-started
	if e.workers[blocker.cell.mb.Load().owner.Load()] != e.workers[target.cell.mb.Load().owner.Load()] {
		close(release)
		t.Fatal("the blocker and the target are on different workers")
	}
	target.send(t, &probeMsg{})
	// The watcher wakes worker 0 (worker 1 is stuck); it remembers the
	// target's mailbox and takes it once it has waited StealAge/stallDiv.
	ok := assert.Eventually(t, func() bool { return got.Load() == 1 }, 10*time.Second, 100*time.Microsecond,
		"the target's message was not delivered while the blocker blocked")
	close(release)
	idle0.send(t, &probeMsg{})
	idle1.send(t, &probeMsg{})
	require.NoError(t, e.Stop(context.Background()))
	if ok {
		assert.Positive(t, workerSum(e, func(w *WorkerStats) uint64 { return w.StalledSteals }),
			"delivered, but not by a steal from the stalled victim")
		// The first candidates of a stall are served in place: the
		// target's mailbox stays with the stalled worker.
		assert.Equal(t, blocker.cell.mb.Load().owner.Load(), target.cell.mb.Load().owner.Load(),
			"the stalled worker's mailbox was moved to the thief")
	}
}
