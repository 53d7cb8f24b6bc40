package executor

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countYields counts the yields of senders to the workers they woke (see
// wakeBySender) until the test ends.
func countYields(t *testing.T) *atomic.Int64 {
	var n atomic.Int64
	testHookYield = func(*worker) { n.Add(1) }
	t.Cleanup(func() { testHookYield = nil })
	return &n
}

// waitThreadless waits until w sleeps without its thread.
func waitThreadless(t *testing.T, w *worker) {
	t.Helper()
	require.Eventually(t, func() bool { return w.threadless.Load() }, 10*time.Second, 50*time.Microsecond,
		"worker %d never slept without its thread", w.id)
}

// sendToThreadless waits until e's workers are parked and its worker 0
// sleeps without its thread, then calls send and waits until got reaches
// want.
func sendToThreadless(t *testing.T, e *Executor, send func(), got *atomic.Int64, want int64) {
	t.Helper()
	waitAllParked(t, e)
	waitThreadless(t, e.workers[0])
	send()
	require.Eventually(t, func() bool { return got.Load() == want }, 10*time.Second, 50*time.Microsecond)
}

// A sender outside the system that wakes a worker sleeping without its
// thread yields to it, and kicks the watcher afterwards: the blocker it
// woke then blocks, and the watcher, kicked by the sender once it ran
// again, wakes worker 1 to steal the waiter's mailbox (all workers slept
// before, so nothing else would have started the watcher).
func TestOutsideSenderYieldsToThreadlessWorker(t *testing.T) {
	twoProcs(t)
	yields := countYields(t)
	var timerless atomic.Bool // the watcher's latest wait is for a kick alone
	testHookWatcherWait = func(_ *Executor, tl bool) { timerless.Store(tl) }
	t.Cleanup(func() { testHookWatcherWait = nil })
	e, err := Start(Config{Workers: 2, Queues: 4, StealAge: time.Millisecond,
		ParkTimeout: time.Millisecond, ParkTimeoutMax: 2 * time.Millisecond})
	require.NoError(t, err)
	stuck, release := make(chan struct{}), make(chan struct{})
	blocker := blockingProbe(stuck, release)
	delivered := make(chan *worker, 1)
	waiter := reportingProbe(e, delivered)
	blocker.spawn(t, e) // ticket 0: mailbox 0, worker 0
	waiter.spawn(t, e)  // ticket 1: mailbox 1, worker 0
	waitAllParked(t, e)
	waitThreadless(t, e.workers[0])
	// The watcher sees everyone asleep (its interval is at most 2 ms) and
	// waits for a kick without a timer: only the sender's kick can wake it.
	require.Eventually(t, timerless.Load, 10*time.Second, 50*time.Microsecond, "the watcher kept a timer")
	blocker.send(t, &probeMsg{})
	<-stuck
	assert.EqualValues(t, 1, yields.Load(), "the sender did not yield to the worker it woke")
	waiter.send(t, &probeMsg{}) // waits behind the blocker: worker 0 is awake
	select {
	case w := <-delivered:
		assert.Equal(t, 1, w.id, "the waiter ran on the stuck worker")
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher was never kicked: the waiter's mailbox was not stolen")
	}
	close(release)
	require.NoError(t, e.Stop(context.Background()))
	assert.EqualValues(t, 1, yields.Load())
}

// Senders that are behaviours never yield (their worker's thread is locked
// to it), and with a single processor nobody does (a producer would yield
// at every message, where a batch should gather).
func TestSendersThatDoNotYield(t *testing.T) {
	twoProcs(t)
	yields := countYields(t)
	// No watcher, so that a behaviour's send wakes the owner itself
	// instead of handing the mailbox off (see handoff.go).
	e, err := Start(Config{Workers: 2, Queues: 2, ParkTimeout: -1})
	require.NoError(t, err)
	var got atomic.Int64
	far := finishingProbe(1, &got) // ticket 0: mailbox 0, worker 0
	far.spawn(t, e)
	near := &probe{fn: func(*probe) Allocation { // ticket 1: mailbox 1, worker 1
		require.NoError(t, Send(&far.cell, far, &probeMsg{}, probeBehaviour))
		return Finished
	}}
	near.spawn(t, e)
	waitAllParked(t, e)
	waitThreadless(t, e.workers[0])
	waitThreadless(t, e.workers[1])
	near.send(t, &probeMsg{}) // from outside: yields to worker 1
	require.Eventually(t, func() bool { return got.Load() == 1 }, 10*time.Second, 50*time.Microsecond)
	assert.EqualValues(t, 1, yields.Load(), "a behaviour's send yielded")
	require.NoError(t, e.Stop(context.Background()))

	runtime.GOMAXPROCS(1)
	e, err = Start(Config{Workers: 2, Queues: 2})
	require.NoError(t, err)
	one := finishingProbe(1, &got)
	one.spawn(t, e)
	sendToThreadless(t, e, func() { one.send(t, &probeMsg{}) }, &got, 2)
	require.NoError(t, e.Stop(context.Background()))
	assert.EqualValues(t, 1, yields.Load(), "a sender yielded with one processor")
}

// A behaviour of one executor sending to an actor of another, whose worker
// sleeps without its thread, does not yield either: it is a worker, locked
// to its thread.
func TestSenderFromAnotherSystemDoesNotYield(t *testing.T) {
	twoProcs(t)
	other, err := Start(Config{Workers: 1})
	require.NoError(t, err)
	defer func() { require.NoError(t, other.Stop(context.Background())) }()
	e, err := Start(Config{Workers: 2, Queues: 2})
	require.NoError(t, err)
	var toE atomic.Int64 // yields to e's workers (the test's own send to other may yield)
	testHookYield = func(w *worker) {
		if w.e == e {
			toE.Add(1)
		}
	}
	t.Cleanup(func() { testHookYield = nil })
	var got atomic.Int64
	target := finishingProbe(1, &got) // ticket 0: mailbox 0, e's worker 0
	target.spawn(t, e)
	sender := &probe{fn: func(*probe) Allocation {
		require.NoError(t, Send(&target.cell, target, &probeMsg{}, probeBehaviour))
		return Finished
	}}
	sender.spawn(t, other)
	sendToThreadless(t, e, func() { sender.send(t, &probeMsg{}) }, &got, 1)
	require.NoError(t, e.Stop(context.Background()))
	assert.Zero(t, toE.Load(), "a worker of another executor yielded")
}
