package executor

// Regression tests for the memory-safety and message-lifetime issue that
// need the engine's internals; each is named after the bug it guards.

import (
	"context"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actord/actord/internal/copyq"
	"github.com/actord/actord/internal/event"
	"github.com/actord/actord/internal/goid"
	"github.com/actord/actord/stealing"
)

// A pusher that must grow the mailbox's buffer releases the spin lock
// before it allocates: a worker's gulp goes on meanwhile, and every
// envelope lands once, in order.
func TestPushGrowsOutsideTheLock(t *testing.T) {
	m := &mailbox{buf: copyq.New[envelope](1)}
	c := &Cell{}
	var grows atomic.Int64
	var first copyq.Queue[envelope]
	var other atomic.Bool
	testHookGrow = func(mb *mailbox) {
		grows.Add(1)
		assert.Zero(t, mb.word.Load()&wordLocked, "the lock is held across the allocation")
		if other.CompareAndSwap(false, true) {
			// A worker gulps while this pusher allocates.
			done := make(chan int)
			go func() {
				into := copyq.New[envelope](4)
				n, _ := mb.gulp(&into)
				first = into
				mb.release(&copyq.Queue[envelope]{}, false)
				done <- n
			}()
			assert.NotZero(t, <-done)
		}
	}
	defer func() { testHookGrow = nil }()
	for i := 0; i < 100; i++ {
		require.Positive(t, m.push(c, nil, i, 0, 0))
	}
	assert.NotZero(t, grows.Load())
	var rest copyq.Queue[envelope]
	m.gulp(&rest)
	next := 0
	for _, q := range []*copyq.Queue[envelope]{&first, &rest} {
		for e := q.PopRef(); e != nil; e = q.PopRef() {
			assert.Equal(t, next, e.msg.(int), "FIFO")
			next++
		}
	}
	assert.Equal(t, 100, next, "every envelope once")
}

// Undefined park kinds and placements are refused at Start (before the
// fix, Event 7 passed validation and the first park dereferenced a nil
// timer), and the kinds have names users can pass.
func TestConfigRejectsUndefinedKinds(t *testing.T) {
	for _, bad := range []Config{{Park: 7}, {Placement: 9}} {
		_, err := Start(bad)
		assert.ErrorIs(t, err, ErrConfig, "%+v", bad)
	}
	for _, k := range []ParkKind{ParkDefault, ParkChannel, ParkFutex, ParkTwoPhase} {
		e, err := Start(Config{Workers: 1, Park: k})
		require.NoError(t, err, k.String())
		p := &probe{fn: func(*probe) Allocation { return Finished }}
		p.spawn(t, e)
		p.send(t, &probeMsg{})
		require.NoError(t, e.Stop(context.Background()))
	}
}

// With a negative park timeout (sleep until woken), parked workers are
// still woken by senders and every message is delivered.
func TestNegativeParkTimeoutDelivers(t *testing.T) {
	e, err := Start(Config{Workers: 2, ParkTimeout: -1, SpinPasses: 1})
	require.NoError(t, err)
	var got atomic.Int64
	p := finishingProbe(50, &got)
	p.spawn(t, e)
	for i := 0; i < 50; i++ {
		time.Sleep(time.Millisecond) // let the workers park between sends
		p.send(t, &probeMsg{})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, e.Stop(ctx))
	assert.Equal(t, int64(50), got.Load())
}

// Absurd sizes are refused with ErrConfig instead of exhausting threads or
// memory (before the fix, 1<<40 queues or capacity ran the process out of
// memory, and workers past the thread limit crashed it).
func TestConfigRefusesAbsurdSizes(t *testing.T) {
	for _, bad := range []Config{
		{Workers: MaxWorkers + 1},
		{QueueCapacity: math.MaxInt},
		{QueuesPerWorker: math.MaxInt},
		{Queues: math.MaxInt},
		{Workers: 2, SpareQueues: math.MaxInt},
		{Queues: MaxQueues, QueueCapacity: MaxQueueCapacity},
		{SpinPasses: math.MaxInt},
		{LocalBatch: math.MaxInt},
		{Regulps: math.MaxInt},
		{StealAge: 24 * time.Hour},
		{ParkTimeout: 1000 * time.Hour},
		{ParkTimeoutMax: -1},
	} {
		_, err := Start(bad)
		assert.ErrorIs(t, err, ErrConfig, "%+v", bad)
	}
	// Under a lowered thread limit, too many workers are refused up front.
	old := debug.SetMaxThreads(150)
	defer debug.SetMaxThreads(old)
	_, err := Start(Config{Workers: 200})
	assert.ErrorIs(t, err, ErrConfig)
}

// An idle system's cost does not grow with its queue count: once parked,
// workers whose park times out while no other worker is awake go back to
// sleep without scanning their mailboxes (before the fix every timeout
// cost SpinPasses full passes over every slot).
func TestIdleCostIndependentOfQueues(t *testing.T) {
	e, err := Start(Config{Workers: 2, Queues: 100_000, ParkTimeout: time.Millisecond, ParkTimeoutMax: 5 * time.Millisecond})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Stop(context.Background())) }()
	passes := func() (n uint64) {
		for _, w := range e.Stats().Workers {
			n += w.passes
		}
		return n
	}
	deadline := time.Now().Add(10 * time.Second)
	for e.Stats().ParkedWorkers < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	require.Equal(t, 2, e.Stats().ParkedWorkers)
	before := passes()
	time.Sleep(200 * time.Millisecond) // dozens of park timeouts
	assert.LessOrEqual(t, passes()-before, uint64(4), "idle workers kept scanning their queues")
}

// After a burst drains, the buffers it grew are given back once the system
// is idle (before the fix they shrank only after 64 further under-half
// gulps, which an idle system never makes).
func TestIdleReclaimsQueueMemory(t *testing.T) {
	e, err := Start(Config{Workers: 2, Queues: 2, ParkTimeout: time.Millisecond, ParkTimeoutMax: 5 * time.Millisecond})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Stop(context.Background())) }()
	entered, release := make(chan struct{}), make(chan struct{})
	gate := &probe{fn: func(*probe) Allocation { close(entered); <-release; return Finished }}
	gate.spawn(t, e) // ticket 0: mailbox 0
	other := &probe{fn: func(*probe) Allocation { return Finished }}
	other.spawn(t, e) // ticket 1: mailbox 1
	var got atomic.Int64
	const burst = 100_000
	sink := &probe{fn: func(p *probe) Allocation {
		if got.Add(1) == burst {
			return Finished
		}
		return Nodelete
	}}
	sink.spawn(t, e) // ticket 2: mailbox 0, behind the gate
	other.send(t, &probeMsg{})
	gate.send(t, &probeMsg{})
	<-entered
	m := &probeMsg{}
	for i := 0; i < burst; i++ {
		sink.send(t, m)
	}
	require.True(t, e.mailboxes[0].grown(DefaultQueueCapacity), "the burst must grow the queue")
	close(release)
	deadline := time.Now().Add(20 * time.Second)
	grown := func() (n int) {
		for _, mb := range append(e.mailboxes, e.spares...) {
			if mb.grown(DefaultQueueCapacity) {
				n++
			}
		}
		return n
	}
	settled := func() bool {
		for _, w := range e.workers {
			if w.reclaimReq.Load() || w.state.Load() != workerParked {
				return false
			}
		}
		return e.reclaims.Load() > 0
	}
	for (got.Load() < burst || !settled() || grown() > 0) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	require.Equal(t, int64(burst), got.Load())
	assert.Zero(t, grown(), "mailboxes kept their burst buffers")
	for _, w := range e.workers {
		require.Equal(t, workerParked, w.state.Load()) // orders the worker's reclaim before our read
		assert.LessOrEqual(t, w.buf.Cap(), DefaultQueueCapacity, "worker %d kept its burst buffer", w.id)
	}
}

// A send that races a re-spawn of its actor reports ErrTerminated (the
// incarnation it could know has ended), not ErrNotSpawned.
func TestSendRacingRespawnIsTerminated(t *testing.T) {
	p := &probe{}
	p.cell.state.Store(2*cellIncarnOne | cellSpawning) // a second incarnation being spawned
	err := Send(&p.cell, p, &probeMsg{}, probeBehaviour)
	assert.ErrorIs(t, err, ErrTerminated)
	p2 := &probe{}
	p2.cell.state.Store(1*cellIncarnOne | cellSpawning) // the first spawn in progress
	assert.ErrorIs(t, Send(&p2.cell, p2, &probeMsg{}, probeBehaviour), ErrNotSpawned)
}

// sampleMax calls sample in a loop on a goroutine of its own until the
// returned stop is called; stop waits for that goroutine and returns the
// largest value sampled.
func sampleMax(sample func() int64) (stop func() int64) {
	done := make(chan struct{})
	result := make(chan int64)
	go func() {
		var m int64
		for {
			select {
			case <-done:
				result <- m
				return
			default:
			}
			m = max(m, sample())
		}
	}()
	return func() int64 {
		close(done)
		return <-result
	}
}

// sendInBursts spawns n probes on e that each finish at their rounds-th
// message, and sends every probe one message per round, pausing for pause
// after every every-th round so that workers go idle and park. It returns
// the count of deliveries, complete once e has stopped.
func sendInBursts(t *testing.T, e *Executor, n, rounds, every int, pause time.Duration) *atomic.Int64 {
	t.Helper()
	delivered := new(atomic.Int64)
	probes := make([]*probe, n)
	for i := range probes {
		probes[i] = finishingProbe(rounds, delivered)
		probes[i].spawn(t, e)
	}
	m := &probeMsg{}
	for round := 0; round < rounds; round++ {
		for _, p := range probes {
			p.send(t, m)
		}
		if round%every == 0 {
			time.Sleep(pause)
		}
	}
	return delivered
}

// At most half the workers (at least two) spin at any time, under bursts
// that make workers go idle and busy again, with parking forced often.
func TestAtMostHalfTheWorkersSpin(t *testing.T) {
	e, err := Start(Config{Workers: 8, SpinPasses: 4, ParkTimeout: 100 * time.Microsecond, StealAge: -1})
	require.NoError(t, err)
	limit := e.maxSpinners()
	require.Equal(t, int32(4), limit)
	stopSampling := sampleMax(func() int64 { return int64(e.spinning.Load()) })
	delivered := sendInBursts(t, e, 32, 300, 10, 200*time.Microsecond)
	require.NoError(t, e.Stop(context.Background()))
	maxSeen := stopSampling()
	assert.Equal(t, int64(32*300), delivered.Load())
	assert.LessOrEqual(t, maxSeen, int64(limit))
	assert.Zero(t, e.spinning.Load(), "every spinning place given back")
}

// At most GOMAXPROCS-1 workers (Executor.futexSlots) sleep in the futex
// phase of the default park at once, so that a processor stays with the
// rest of the program; with ParkTwoPhase, any number may. Bursts make the
// workers park and wake often; every message is delivered.
func TestFutexPhaseSlots(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("the default park has no futex phase with one processor")
	}
	var inPhase, maxSeen, entered atomic.Int32
	testHookFutexPhase = func(_ *Executor, d int) {
		n := inPhase.Add(int32(d))
		if d > 0 {
			entered.Add(1)
		}
		for m := maxSeen.Load(); n > m && !maxSeen.CompareAndSwap(m, n); m = maxSeen.Load() {
		}
	}
	defer func() { testHookFutexPhase = nil }()
	for _, park := range []ParkKind{ParkDefault, ParkTwoPhase} {
		inPhase.Store(0)
		maxSeen.Store(0)
		entered.Store(0)
		e, err := Start(Config{Workers: 8, SpinPasses: 1, Park: park})
		require.NoError(t, err)
		slots := futexSlots(e.cfg) // not the live count: workers may be in the phase already
		delivered := sendInBursts(t, e, 32, 100, 1, 50*time.Microsecond)
		require.NoError(t, e.Stop(context.Background()))
		assert.Equal(t, int64(32*100), delivered.Load(), "%v", park)
		assert.Positive(t, entered.Load(), "%v: no worker ever took the futex phase", park)
		if park == ParkDefault {
			assert.Equal(t, int32(min(8, runtime.GOMAXPROCS(0)-1)), slots)
			assert.LessOrEqual(t, maxSeen.Load(), slots, "more workers in the futex phase than slots")
		} else {
			assert.Equal(t, int32(8), slots)
		}
		assert.Equal(t, slots, e.futexSlots.Load(), "%v: every slot given back", park)
	}
}

// The futex phase is skipped after futexMissLimit phases in a row ended by
// their timeout, taken again every futexProbeEvery-th park while skipped,
// and wanted again after any short sleep.
func TestFutexPhaseSkippedWhileSleepsOutlastIt(t *testing.T) {
	w := &worker{futexPhase: 50 * time.Microsecond}
	long, short := time.Millisecond, 10*time.Microsecond
	park := func() bool { // one park as park makes it: counted, then the phase
		w.st.Parks++
		return w.futexWanted()
	}
	for i := 0; i < futexMissLimit; i++ {
		require.True(t, park(), "park %d: the phase is skipped before %d misses", i, futexMissLimit)
		w.futexOutcome(true, false, long)
	}
	taken := 0
	for i := 0; i < 4*futexProbeEvery; i++ {
		in := park()
		if in {
			taken++
		}
		w.futexOutcome(in, false, long)
	}
	assert.Equal(t, 4, taken, "probes while skipping")
	// A short sleep, the phase skipped or not, wants the phase back.
	w.futexOutcome(park(), false, short)
	assert.True(t, park(), "a short sleep did not bring the phase back")
	w.futexOutcome(true, true, long) // a phase ended by a wake-up: caught
	assert.Zero(t, w.futexMisses)
}

// A worker parked between messages spaced more widely than the futex phase
// stops taking the phase (most parks sleep on the channel directly), and
// every message is delivered.
func TestFutexPhaseSkippedAtALowRate(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("no futex phase with one processor")
	}
	var entered atomic.Int64
	testHookFutexPhase = func(_ *Executor, delta int) {
		if delta > 0 {
			entered.Add(1)
		}
	}
	defer func() { testHookFutexPhase = nil }()
	e, err := Start(Config{Workers: 1, SpinPasses: 1})
	require.NoError(t, err)
	const n = 48
	var got atomic.Int64
	p := finishingProbe(n, &got)
	p.spawn(t, e)
	// Messages 40 phases apart: a delivery or a wake-up delayed by a
	// loaded machine (other test binaries, the race detector) must not
	// make the next sleep shorter than the phase.
	for i := 0; i < n; i++ {
		time.Sleep(40 * event.TwoPhaseFutex)
		p.send(t, &probeMsg{})
	}
	require.NoError(t, e.Stop(context.Background()))
	assert.Equal(t, int64(n), got.Load())
	parks := e.Stats().Workers[0].Parks
	require.GreaterOrEqual(t, parks, uint64(n/2), "the worker hardly parked")
	assert.Less(t, uint64(entered.Load()), parks/2, "the futex phase was taken at most parks")
}

// A worker that has spun out its budget while another worker's wake-up is in
// flight keeps spinning, up to spinInFlight times its budget, and then
// parks; the count of wake-ups in flight goes back to zero. Worker 1's
// wake-up is held in flight (the hook blocks it before it counts the
// wake-up arrived) until worker 0 has parked again.
func TestSpinWhileWakeInFlight(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("with one processor a spinner could keep the woken worker from running")
	}
	release := make(chan struct{})
	testHookWoken = func(w *worker) {
		if w.id == 1 {
			<-release
		}
	}
	defer func() { testHookWoken = nil }()
	// Mailbox 0 is worker 0's, mailbox 1 worker 1's. No stealing: worker 0
	// cannot take b's mailbox, and a's send wakes worker 1 (no handoff).
	e, err := Start(Config{Workers: 2, Queues: 2, SpinPasses: 1, Steal: stealing.None})
	require.NoError(t, err)
	var got atomic.Int64
	b := finishingProbe(1, &got)
	a := &probe{fn: func(*probe) Allocation {
		require.NoError(t, Send(&b.cell, b, &probeMsg{}, probeBehaviour))
		return Finished
	}}
	a.spawn(t, e) // ticket 0: mailbox 0
	b.spawn(t, e) // ticket 1: mailbox 1
	waitAllParked(t, e)
	before := e.Stats().Workers[0].inFlightSpins
	a.send(t, &probeMsg{})
	// Worker 0 runs a, wakes worker 1, spins, and parks again while
	// worker 1 is still held.
	require.Eventually(t, func() bool {
		return e.workers[0].state.Load() == workerParked && e.waking.Load() == 1
	}, 10*time.Second, 50*time.Microsecond, "worker 0 never parked again")
	spun := e.Stats().Workers[0].inFlightSpins - before
	assert.Positive(t, spun, "worker 0 parked at once although a wake-up was in flight")
	assert.LessOrEqual(t, spun, uint64(spinInFlight*e.cfg.SpinPasses), "spun past the bound")
	close(release)
	waitAllParked(t, e)
	assert.Equal(t, int64(1), got.Load())
	assert.Zero(t, e.waking.Load(), "a wake-up still counted in flight")
	require.NoError(t, e.Stop(context.Background()))
	assert.Zero(t, e.waking.Load())
}

// A spinner that has spun out its budget while its steal attempts see
// another worker's mailboxes waiting keeps spinning, up to spinInFlight
// times its budget, and then parks; it does not when a goroutine is
// waiting for a processor. Worker 0 is stuck in a behaviour with a message
// waiting in its other mailbox (the backlog), which worker 1 watches but
// never steals (the steal age is a minute); worker 1 is woken by a message
// of its own and goes idle after it.
func TestSpinWhileBacklog(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("with one processor two awake workers cannot both hold one")
	}
	var runnable atomic.Uint64
	testHookRunnable = runnable.Load
	defer func() { testHookRunnable = nil }()
	for _, waiting := range []uint64{0, 1} {
		runnable.Store(waiting)
		// Mailboxes 0 and 1 are worker 0's, 2 and 3 worker 1's; no
		// spares, no watcher (it would wake worker 1 again).
		e, err := Start(Config{Workers: 2, Queues: 4, SpareQueues: -1, SpinPasses: 4,
			StealAge: time.Minute, ParkTimeout: -1})
		require.NoError(t, err)
		stuck, release := make(chan struct{}), make(chan struct{})
		blocker := blockingProbe(stuck, release)
		waiter := finishingProbe(1, nil)
		other := finishingProbe(2, nil)
		blocker.spawn(t, e) // ticket 0: mailbox 0
		waiter.spawn(t, e)  // ticket 1: mailbox 1
		other.spawn(t, e)   // ticket 2: mailbox 2
		waitAllParked(t, e)
		blocker.send(t, &probeMsg{})
		<-stuck
		waiter.send(t, &probeMsg{}) // waits behind the blocker: worker 0 does not sleep
		before := e.Stats().Workers[1]
		other.send(t, &probeMsg{}) // wakes worker 1
		require.Eventually(t, func() bool {
			s := e.Stats().Workers[1]
			return e.workers[1].state.Load() == workerParked && s.Parks > before.Parks
		}, 10*time.Second, 50*time.Microsecond, "worker 1 never parked again")
		spun := e.Stats().Workers[1].backlogSpins - before.backlogSpins
		if waiting == 0 {
			assert.Positive(t, spun, "worker 1 parked at its budget although worker 0 had a backlog")
			assert.LessOrEqual(t, spun, uint64(spinInFlight*e.cfg.SpinPasses), "spun past the bound")
		} else {
			assert.Zero(t, spun, "worker 1 spun on while a goroutine waited for a processor")
		}
		close(release)
		other.send(t, &probeMsg{})
		require.NoError(t, e.Stop(context.Background()))
	}
}

// hopActor forwards a hopMsg to one of its peers until the message's hop
// count runs out, counting every delivery; a negative count terminates it.
type hopActor struct {
	cell  Cell
	peers []*hopActor
	got   *atomic.Int64
}

type hopMsg struct {
	Message
	left int
}

func hopBehaviour(a *hopActor, m *hopMsg) Allocation {
	if m.left < 0 {
		return Finished // the end of the test
	}
	a.got.Add(1)
	if m.left > 0 {
		next := a.peers[m.left%len(a.peers)]
		if err := Send(&next.cell, next, &hopMsg{left: m.left - 1}, hopBehaviour); err != nil {
			panic(err)
		}
	}
	return Nodelete
}

// waitAllParked waits until every worker of e is parked, and fails the test
// after 10 s.
func waitAllParked(t *testing.T, e *Executor) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for e.sleepers.Load() != int32(len(e.workers)) {
		if time.Now().After(deadline) {
			t.Fatalf("workers never all parked: %d of %d", e.sleepers.Load(), len(e.workers))
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// Whenever every worker is parked (a quiescent system: nobody is running, so
// no send is in progress and no handoff slot is held), no message waits in
// any mailbox: bursts of chains that cross between workers (so that
// handoffs, futex-phase and channel wake-ups all occur) are each delivered
// completely before the workers all sleep. A lost wake-up would leave a
// message behind with every worker asleep (the watcher sleeps too then),
// and the round would fail. Spinning places are all given back.
func TestNoMessageLeftWhenAllPark(t *testing.T) {
	for _, park := range []ParkKind{ParkDefault, ParkChannel, ParkTwoPhase, ParkFutex} {
		t.Run(park.String(), func(t *testing.T) {
			e, err := Start(Config{Workers: 4, Queues: 8, SpinPasses: 1, Park: park, ParkTimeoutMax: time.Minute})
			require.NoError(t, err)
			var got atomic.Int64
			actors := make([]*hopActor, 24)
			for i := range actors {
				actors[i] = &hopActor{got: &got}
			}
			for i, a := range actors {
				a.peers = []*hopActor{actors[(i+1)%len(actors)], actors[(i+5)%len(actors)], actors[(i+11)%len(actors)]}
				require.NoError(t, Spawn(e, &a.cell, a))
			}
			sent := int64(0)
			for round := 0; round < 60; round++ {
				for i := 0; i < 1+round%5; i++ {
					hops := (round*7 + i) % 13
					a := actors[(round*3+i)%len(actors)]
					require.NoError(t, Send(&a.cell, a, &hopMsg{left: hops}, hopBehaviour))
					sent += int64(hops + 1)
				}
				waitAllParked(t, e)
				// sleepers counts a worker from S1 of park on, before its
				// re-check (S3): one that is about to see a message still
				// counts. A lost wake-up leaves the message undelivered for
				// good (nothing runs; the watcher's reclaim, the only other
				// waker, needs ParkTimeoutMax of idle, far longer than the
				// wait below).
				if n := got.Load(); n != sent {
					t.Logf("round %d: all counted as sleepers with %d of %d delivered", round, n, sent)
				}
				require.Eventually(t, func() bool { return got.Load() == sent }, 10*time.Second, 20*time.Microsecond,
					"round %d: every worker parked with messages undelivered", round)
				waitAllParked(t, e)
				for _, mb := range append(e.mailboxes[:len(e.mailboxes):len(e.mailboxes)], e.spares...) {
					require.Zero(t, mb.queued(), "round %d: every worker parked with a message in a mailbox", round)
				}
				require.Zero(t, e.spinning.Load(), "round %d: a spinning place kept by a parked worker", round)
				// A waker (the watcher's reclaim) may be between its count and
				// its CAS; a count never taken back stays.
				require.Eventually(t, func() bool { return e.waking.Load() == 0 }, 5*time.Second, 50*time.Microsecond,
					"round %d: a wake-up counted in flight while every worker is parked", round)
			}
			for _, a := range actors {
				require.NoError(t, Send(&a.cell, a, &hopMsg{left: -1}, hopBehaviour))
			}
			require.NoError(t, e.Stop(context.Background()))
		})
	}
}

// Under ACTORD_GOID=portable (a CI step) the whole package runs without
// goroutine identities, so that step tests the fallback paths. Reading the
// variable here also makes the test cache tell that run from a plain one.
func TestPortableFallbackInEffect(t *testing.T) {
	if os.Getenv(goid.EnvVar) != goid.EnvPortable {
		t.Skip(goid.EnvVar + " is not " + goid.EnvPortable)
	}
	require.False(t, goid.Supported, "%s=%s, yet goroutine identities are in use", goid.EnvVar, goid.EnvPortable)
}

// Telling a dropped message's requester must not dereference a nil request:
// a nil message reached a behaviour's recovery path through entry points
// that did not check for one, and the worker crashed the process there.
func TestDroppedNilRequest(t *testing.T) {
	type req struct{ Request[int] }
	assert.NotPanics(t, func() { dropped((*req)(nil), ErrTerminated) })
	r := &req{}
	assert.NotPanics(t, func() { dropped(r, ErrTerminated) }, "a request nobody asked is not answered")
}

// A Go function that calls runtime.Goexit (t.FailNow does) still delivers a
// Reply, whose Err says so; the requesting actor used to wait forever.
func TestGoFunctionGoexitReplies(t *testing.T) {
	e, err := Start(Config{Workers: 1})
	require.NoError(t, err)
	g := newGated()
	require.NoError(t, Spawn(e, &g.cell, g))
	replies, err := Bind(&g.cell, g, (*gated).onReply)
	require.NoError(t, err)
	require.NoError(t, Go(replies, func() (int, error) { runtime.Goexit(); return 1, nil }))
	require.NoError(t, Go(replies, func() (int, error) { panic("boom") }))
	waitFor(t, "two replies", func() bool { _, rs := g.count(); return len(rs) == 2 })
	_, rs := g.count()
	var exits, panics int
	for _, r := range rs {
		var pe *PanicError
		require.ErrorAs(t, r.Err, &pe)
		assert.Zero(t, r.Value)
		assert.Equal(t, -1, pe.Worker)
		if pe.Goexit {
			exits++
			assert.Equal(t, "executor: Go function called runtime.Goexit", pe.Error())
		} else {
			panics++
			assert.Equal(t, "executor: Go function panicked: boom", pe.Error())
		}
	}
	assert.Equal(t, 1, exits)
	assert.Equal(t, 1, panics)
	require.NoError(t, SendPill(&g.cell, g, NewPill(Finished)))
	require.NoError(t, e.Stop(context.Background()))
}
