package executor

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actord/actord/internal/event"
	"github.com/actord/actord/internal/goid"
)

// deferServed sums the mailboxes workers served for deferred wake-ups.
func deferServed(e *Executor) uint64 {
	return workerSum(e, func(w *WorkerStats) uint64 { return w.DeferredServes })
}

// scratchWorkers returns a scratch executor with n workers (not started)
// and procs processors; worker 1 and above are parked, with parkable
// events, and counted in sleepers.
func scratchWorkers(n int, procs int32) *Executor {
	x := &Executor{procs: procs}
	for i := range n {
		w := &worker{e: x, id: i}
		w.ev.Init(event.KindChan)
		if i > 0 {
			w.state.Store(workerParked)
			x.sleepers.Add(1)
		}
		x.workers = append(x.workers, w)
	}
	return x
}

// The rule of defer.go in isolation: a push from outside into a parked
// worker's mailbox leaves the wake-up to the awake workers when no processor
// is free for the owner, and sets the owner's flag once.
func TestDeferWakeRule(t *testing.T) {
	x := scratchWorkers(2, 2) // worker 0 awake, worker 1 parked
	o := x.workers[1]
	assert.True(t, x.deferWake(o), "2 processors: the sender's and the awake worker's")
	assert.True(t, o.deferred.Load())
	assert.EqualValues(t, 1, x.deferred.Load())
	assert.True(t, x.deferWake(o), "the flag already set")
	assert.EqualValues(t, 1, x.deferred.Load(), "a flag counts once")

	x = scratchWorkers(2, 3)
	assert.False(t, x.deferWake(x.workers[1]), "a processor to spare for the owner")
	assert.False(t, x.workers[1].deferred.Load())

	x = scratchWorkers(2, 2)
	x.workers[0].state.Store(workerParked)
	x.sleepers.Add(1)
	assert.False(t, x.deferWake(x.workers[1]), "nobody awake")
	assert.Zero(t, x.deferred.Load())

	// keepWake needs the watcher, which rescues a deferred mailbox whose
	// helper is stuck.
	x = scratchWorkers(2, 2)
	assert.False(t, x.keepWake(nil, x.workers[1], nil), "no watcher")
	assert.False(t, x.workers[1].deferred.Load())
}

// twoProcs skips the test where goroutine identities (which the deferral
// needs) are not supported, and runs it with two processors: the rule's
// condition on a two-processor machine.
func twoProcs(t *testing.T) {
	t.Helper()
	if !goid.Supported {
		t.Skip("the deferral needs goroutine identities")
	}
	prev := runtime.GOMAXPROCS(2)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
}

// deferSetup starts an executor of two workers with one mailbox each on
// two processors (the rule's condition on a two-processor machine), with a
// park timeout of parkTimeout, and spawns a ticker on worker 0 (mailbox 0)
// and sink on worker 1 (mailbox 1). The ticker keeps worker 0 awake, making
// passes, by sending itself a message from each of its behaviours until
// stop is set, when it finishes (after hold is set, each behaviour first
// waits for gate).
// Mailboxes are not stolen (the steal age is the longest). It returns once
// worker 1 is parked.
func deferSetup(t *testing.T, parkTimeout time.Duration, sink *probe) (e *Executor, stop func(), hold func(bool), gate chan struct{}) {
	t.Helper()
	twoProcs(t)
	// Mailboxes stay where they are placed: with the longest steal age a
	// worker slowed down by a loaded machine is not robbed of the ticker.
	e, err := Start(Config{Workers: 2, Queues: 2, ParkTimeout: parkTimeout, ParkTimeoutMax: parkTimeout, StealAge: MaxStealAge})
	require.NoError(t, err)
	var stopped, held atomic.Bool
	gate = make(chan struct{})
	m := &probeMsg{}
	ticker := &probe{}
	ticker.fn = func(p *probe) Allocation {
		if held.Load() {
			<-gate
		}
		if stopped.Load() {
			// The ticker always has one message of its own in flight:
			// it finishes on the first after stop (a pill sent by stop
			// could come before that message, which would then reach a
			// finished actor).
			return Finished
		}
		p.send(t, m)
		return Nodelete
	}
	ticker.spawn(t, e) // ticket 0: mailbox 0, worker 0
	sink.spawn(t, e)   // ticket 1: mailbox 1, worker 1
	ticker.send(t, m)
	require.Eventually(t, func() bool { return e.workers[1].state.Load() == workerParked }, 5*time.Second, 100*time.Microsecond)
	stop = func() {
		stopped.Store(true)
		finishProbes(t, sink)
		require.NoError(t, e.Stop(context.Background()))
	}
	return e, stop, held.Store, gate
}

// finishProbes sends a pill to each probe, so that Stop finds no actor alive.
func finishProbes(t *testing.T, ps ...*probe) {
	t.Helper()
	for _, p := range ps {
		require.NoError(t, SendPill(&p.cell, p, NewPill(Finished)))
	}
}

// A goroutine outside the system sending to a parked worker's actor while
// the other worker is awake and no processor is free for the parked one:
// the awake worker serves the message, and the parked worker is not woken.
// With a processor idle when the helper gets to the flag (the producer has
// stopped), a helper with work of its own wakes the owner instead. The
// runtime's count of running goroutines is the test's.
func TestDeferredWakeupServedByTheAwakeWorker(t *testing.T) {
	for _, idle := range []bool{false, true} {
		running := uint64(2) // every processor running
		if idle {
			running = 1
		}
		testHookRunning = func() uint64 { return running }
		const n = 100
		var got atomic.Int64
		sink := &probe{fn: func(*probe) Allocation { got.Add(1); return Nodelete }}
		e, stop, hold, gate := deferSetup(t, time.Second, sink)
		// Worker 0 waits inside a ticker behaviour while the messages are
		// sent, so that its helping takes them all at once: a helper
		// whose visit ends with more messages arriving wakes the owner,
		// as any releaser does (processCurrent), which a loaded machine
		// would otherwise make happen here.
		hold(true)
		gate <- struct{}{}
		before := e.Stats().Workers[1]
		m := &probeMsg{}
		for range n {
			sink.send(t, m)
		}
		assert.True(t, e.workers[1].deferred.Load(), "the sends woke worker 1")
		hold(false)
		close(gate)
		require.Eventually(t, func() bool { return got.Load() == n }, 5*time.Second, 100*time.Microsecond)
		after := e.Stats().Workers[1]
		stop()
		testHookRunning = nil
		if idle {
			// The ticker's own mailbox always has work waiting.
			assert.Greater(t, after.WakeupsBySender, before.WakeupsBySender, "a processor idle: the owner was not woken")
			continue
		}
		assert.Positive(t, deferServed(e), "no mailbox served for a deferred wake-up")
		assert.Equal(t, before.WakeupsBySender, after.WakeupsBySender, "the parked worker was woken")
		assert.Equal(t, before.MessagesProcessed(), after.MessagesProcessed(), "the parked worker ran messages")
	}
}

// A deferred mailbox that has gathered a backlog by the time its helper
// gets to it makes the helper wake the owner instead.
func TestDeferredBacklogWakesTheOwner(t *testing.T) {
	// Every processor running, as the runtime counts them: the backlog,
	// not an idle processor, is what must make the helper wake the owner.
	testHookRunning = func() uint64 { return 2 }
	defer func() { testHookRunning = nil }()
	var got atomic.Int64
	sink := &probe{fn: func(*probe) Allocation { got.Add(1); return Nodelete }}
	e, stop, hold, gate := deferSetup(t, time.Second, sink)
	hold(true)
	gate <- struct{}{} // worker 0 is inside a ticker behaviour, waiting for the gate
	before := e.Stats().Workers[1]
	m := &probeMsg{}
	for range helpBacklog {
		sink.send(t, m)
	}
	assert.True(t, e.workers[1].deferred.Load(), "the sends woke worker 1")
	hold(false)
	close(gate)
	require.Eventually(t, func() bool { return got.Load() == helpBacklog }, 5*time.Second, 100*time.Microsecond)
	after := e.Stats().Workers[1]
	stop()
	// (On a loaded machine the woken owner may also steal the ticker's
	// mailbox, or the helper the owner's, once aged: only the wake-up is
	// certain.)
	assert.Greater(t, after.WakeupsBySender, before.WakeupsBySender, "the helper did not wake the owner")
}

// A deferred mailbox whose only possible helper is stuck in a long
// behaviour is rescued by the watcher, which wakes the owner.
func TestDeferredWakeupRescuedByTheWatcher(t *testing.T) {
	var got atomic.Int64
	sink := &probe{fn: func(*probe) Allocation { got.Add(1); return Nodelete }}
	e, stop, hold, gate := deferSetup(t, time.Millisecond, sink)
	hold(true)
	gate <- struct{}{} // worker 0 is stuck in a ticker behaviour until the gate closes
	before := e.Stats().Workers[1]
	sink.send(t, &probeMsg{})
	require.Eventually(t, func() bool { return got.Load() == 1 }, 5*time.Second, 100*time.Microsecond,
		"the message waits for the stuck worker")
	hold(false)
	close(gate)
	stop()
	assert.Greater(t, e.Stats().Workers[1].WakeupsByTimeout, before.WakeupsByTimeout, "the watcher did not wake the owner")
}

// Floods from outside into actors on both workers, on two processors: every
// message is delivered exactly once and in the order it was sent, and some
// of them were served for deferred wake-ups (a flood gives the awake worker
// plenty of them; a busy machine gets up to ten floods to show one).
func TestDeferredFloodsDeliverInOrder(t *testing.T) {
	twoProcs(t)
	const actors, n = 8, 5000
	served := uint64(0)
	for try := 0; try < 10 && served == 0; try++ {
		e, err := Start(Config{Workers: 2, Queues: 4})
		require.NoError(t, err)
		sinks := make([]*seqSink, actors)
		msgs := make([][]seqMsg, actors)
		for i := range sinks {
			sinks[i] = &seqSink{}
			require.NoError(t, Spawn(e, &sinks[i].cell, sinks[i]))
			msgs[i] = make([]seqMsg, n)
		}
		for k := range n {
			for i, s := range sinks {
				msgs[i][k].n = k
				require.NoError(t, Send(&s.cell, s, &msgs[i][k], (*seqSink).receive))
			}
		}
		for _, s := range sinks {
			require.NoError(t, SendPill(&s.cell, s, NewPill(Finished)))
		}
		require.NoError(t, e.Stop(context.Background()))
		for i, s := range sinks {
			require.Equal(t, n, s.next, "sink %d: messages lost", i)
			require.Zero(t, s.outOfOrder, "sink %d: messages out of order", i)
		}
		served = deferServed(e)
	}
	assert.Positive(t, served, "floods from outside never left a wake-up to the awake worker")
}

// seqSink checks that it receives 0, 1, 2, ... and terminates after the
// flood of TestDeferredFloodsDeliverInOrder.
type seqSink struct {
	cell       Cell
	next       int
	outOfOrder int
}

type seqMsg struct {
	Message
	n int
}

func (s *seqSink) receive(m *seqMsg) Allocation {
	if m.n != s.next {
		s.outOfOrder++
	}
	s.next++
	return Nodelete
}

// A busy worker wakes a thief only while some processor is idle: with every
// processor running a goroutine the thief would wait for one.
func TestWakeThiefNeedsAnIdleProcessor(t *testing.T) {
	var running atomic.Uint64
	testHookRunning = running.Load
	defer func() { testHookRunning = nil }()
	x := scratchWorkers(2, 2)
	busy, sleeper := x.workers[0], x.workers[1]
	running.Store(2)
	busy.wakeThief()
	assert.Equal(t, uint32(workerParked), sleeper.state.Load(), "a thief woken with every processor running")
	assert.Zero(t, busy.st.StealWakeups)
	running.Store(1)
	busy.wakeThief()
	assert.Equal(t, uint32(workerWoken), sleeper.state.Load(), "no thief woken with a processor idle")
	assert.EqualValues(t, 1, busy.st.StealWakeups)
}

// startWithIdleProcessor starts two workers on two processors whose
// watcher looks only every hour (never, during a test) and whose thieves
// never take an aged
// mailbox, with the runtime reporting one goroutine running (the sender
// waits: a processor idle) until the test ends.
func startWithIdleProcessor(t *testing.T) *Executor {
	t.Helper()
	twoProcs(t)
	testHookRunning = func() uint64 { return 1 }
	t.Cleanup(func() { testHookRunning = nil })
	e, err := Start(Config{Workers: 2, Queues: 4, ParkTimeout: time.Hour, ParkTimeoutMax: time.Hour, StealAge: MaxStealAge})
	require.NoError(t, err)
	return e
}

// A helper whose pass runs long behaviours looks at the deferred flags
// between two mailbox visits, not only at the end of its pass: a burst sent
// from outside, after which the sender waits (a processor idle), wakes the
// parked owner after the helper's current visit. Worker 0 runs a behaviour
// on mailbox 0 and then one on mailbox 1 that blocks until the test ends;
// the watcher does not look, so neither the pass's end nor the watcher can
// be what serves the message sent meanwhile to worker 1's actor.
func TestDeferredWakeupLookedAtDuringAPass(t *testing.T) {
	e := startWithIdleProcessor(t)
	started, release, block := make(chan struct{}), make(chan struct{}), make(chan struct{})
	first := blockingProbe(started, release)
	second := &probe{fn: func(*probe) Allocation {
		<-block
		return Finished
	}}
	var got atomic.Int64
	sink := &probe{fn: func(*probe) Allocation { got.Add(1); return Finished }}
	first.spawn(t, e)  // ticket 0: mailbox 0, worker 0
	second.spawn(t, e) // ticket 1: mailbox 1, worker 0
	sink.spawn(t, e)   // ticket 2: mailbox 2, worker 1
	require.Eventually(t, func() bool { return e.sleepers.Load() == 2 }, 5*time.Second, 100*time.Microsecond)
	first.send(t, &probeMsg{})
	<-started // worker 0 is inside first's behaviour, worker 1 parked
	second.send(t, &probeMsg{})
	sink.send(t, &probeMsg{})
	assert.True(t, e.workers[1].deferred.Load(), "the send woke worker 1")
	close(release) // worker 0 ends its visit of mailbox 0, then blocks in second's behaviour
	require.Eventually(t, func() bool { return got.Load() == 1 }, 10*time.Second, 100*time.Microsecond,
		"the deferred message waited for the helper's pass to end")
	close(block)
	require.NoError(t, e.Stop(context.Background()))
	assert.Positive(t, e.Stats().Workers[1].WakeupsBySender, "worker 1 was not woken")
}

// A helper in the middle of a batch of long behaviours (tasks sent from
// outside, after which the sender waits: a processor idle) wakes the parked
// owner of a deferred mailbox between two deliveries, without waiting for
// the batch to end (wakeDeferred). Worker 0's batch holds eight messages
// for one actor: the first waits until the deferred message has been sent,
// the next six compute for 40 µs each, and the last computes until the
// deferred message has been delivered, which only worker 1 can then do, or
// for 10 s: the watcher does not look, and the end of the batch comes only
// after those 10 s.
func TestDeferredWakeupLookedAtDuringABatch(t *testing.T) {
	e := startWithIdleProcessor(t)
	var got atomic.Int64
	started, sent := make(chan struct{}), make(chan struct{})
	timedOut := false
	compute := func(until func() bool, most time.Duration) bool {
		for start := time.Now(); !until(); {
			if time.Since(start) >= most {
				return false
			}
		}
		return true
	}
	tasks := &probe{fn: func(p *probe) Allocation {
		switch p.calls++; {
		case p.calls == 1:
			close(started)
			<-sent
		case p.calls < 8:
			deadline := time.Now().Add(40 * time.Microsecond)
			compute(func() bool { return !time.Now().Before(deadline) }, time.Second)
		default:
			timedOut = !compute(func() bool { return got.Load() == 1 }, 10*time.Second)
			return Finished
		}
		return Nodelete
	}}
	sink := &probe{fn: func(*probe) Allocation { got.Add(1); return Finished }}
	tasks.spawn(t, e) // ticket 0: mailbox 0, worker 0
	tasks2 := &probe{fn: func(*probe) Allocation { return Finished }}
	tasks2.spawn(t, e) // ticket 1: mailbox 1, worker 0 (unused)
	sink.spawn(t, e)   // ticket 2: mailbox 2, worker 1
	require.Eventually(t, func() bool { return e.sleepers.Load() == 2 }, 5*time.Second, 100*time.Microsecond)
	for range 8 {
		tasks.send(t, &probeMsg{})
	}
	<-started // worker 0 is inside the batch, worker 1 parked
	sink.send(t, &probeMsg{})
	assert.True(t, e.workers[1].deferred.Load(), "the send woke worker 1")
	close(sent)
	require.Eventually(t, func() bool { return got.Load() == 1 }, 20*time.Second, 100*time.Microsecond)
	tasks2.send(t, &probeMsg{})
	require.NoError(t, e.Stop(context.Background()))
	assert.False(t, timedOut, "the deferred message waited for the helper's batch to end")
	assert.Positive(t, e.Stats().Workers[1].WakeupsBySender, "worker 1 was not woken")
}

// A spinner that serves a deferred mailbox and gets stuck in one of its
// behaviours is no longer counted as spinning: the watcher sees it stuck and
// wakes the parked owner for a second message deferred meanwhile. (A stuck
// helper still marked as spinning left the transfer-leader program of
// bench/compare waiting forever.)
func TestDeferredHelperStuckIsSeenByTheWatcher(t *testing.T) {
	twoProcs(t)
	// Long spins: worker 0 is still spinning when the test sends to worker
	// 1's actors.
	e, err := Start(Config{Workers: 2, Queues: 4, SpinPasses: MaxSpinPasses, ParkTimeout: time.Millisecond,
		ParkTimeoutMax: time.Millisecond, StealAge: MaxStealAge})
	require.NoError(t, err)
	release, blocked := make(chan struct{}), make(chan struct{})
	var got atomic.Int64
	ranOn := atomic.Int64{}
	count := func(*probe) Allocation { got.Add(1); return Finished }
	kick, filler, other := &probe{fn: count}, &probe{fn: count}, &probe{fn: count}
	blocker := &probe{fn: func(*probe) Allocation {
		ranOn.Store(int64(runningWorker().id))
		close(blocked)
		<-release
		return Finished
	}}
	kick.spawn(t, e)                                                                                           // ticket 0: mailbox 0, worker 0
	filler.spawn(t, e)                                                                                         // ticket 1: mailbox 1, worker 0
	blocker.spawn(t, e)                                                                                        // ticket 2: mailbox 2, worker 1
	other.spawn(t, e)                                                                                          // ticket 3: mailbox 3, worker 1
	require.Eventually(t, func() bool { return e.sleepers.Load() == 2 }, 60*time.Second, 100*time.Microsecond) // long: both must be parked at one poll, which a loaded machine makes rare
	kick.send(t, &probeMsg{})                                                                                  // worker 0 wakes, runs it, and spins
	require.Eventually(t, func() bool { return got.Load() == 1 }, 5*time.Second, 100*time.Microsecond)
	blocker.send(t, &probeMsg{}) // deferred to the spinning worker 0, which gets stuck in it
	<-blocked
	require.EqualValues(t, 0, ranOn.Load(), "the blocking message was not deferred to the spinner")
	other.send(t, &probeMsg{}) // deferred too: only the watcher can get it served
	require.Eventually(t, func() bool { return got.Load() == 2 }, 5*time.Second, 100*time.Microsecond,
		"the watcher took the stuck helper for a spinner")
	close(release)
	finishProbes(t, filler)
	require.NoError(t, e.Stop(context.Background()))
}
