package executor

import (
	"context"
	"testing"
	"time"

	"github.com/actord/actord/stealing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The parts of worker.pass, each alone, on a stopped executor's workers and
// mailboxes (closed: nothing pushes or gulps), with the clock passed in
// where a part reads one. A mailbox's state is set by storing its word.
// (The unlocked tests that choose a slot stay in pass's loop, see there;
// mailbox.gulp has its own tests.)

// stoppedForPass starts and stops an executor of two workers with four
// queues (two each) and returns it.
func stoppedForPass(t *testing.T, age time.Duration) *Executor {
	t.Helper()
	e, err := Start(Config{Workers: 2, Queues: 4, StealAge: age, Steal: stealing.Random})
	require.NoError(t, err)
	require.NoError(t, e.Stop(context.Background()))
	return e
}

// lookDeferred, on a fake clock, serves the deferred wake-ups at most
// every deferLookEvery.
func TestLookDeferredFakeClock(t *testing.T) {
	e := stoppedForPass(t, 0)
	w, o := e.workers[0], e.workers[1]
	t0 := time.Hour
	w.deferLook = t0
	o.deferred.Store(true)
	e.deferred.Store(1)
	assert.Zero(t, w.lookDeferred(t0+deferLookEvery-1))
	assert.True(t, o.deferred.Load(), "looked sooner than deferLookEvery after the last look")
	assert.Equal(t, t0, w.deferLook)
	// o is not parked (it exited): taking its flag is all that serving
	// does, and no mailbox is served.
	assert.Zero(t, w.lookDeferred(t0+deferLookEvery))
	assert.False(t, o.deferred.Load(), "not served deferLookEvery after the last look")
	assert.Zero(t, e.deferred.Load())
	assert.Equal(t, t0+deferLookEvery, w.deferLook, "the look's time recorded")
}

// wakeThiefAt, on a fake clock, wakes a sleeper at most once per steal
// age.
func TestWakeThiefAtFakeClock(t *testing.T) {
	const age = 16 * time.Millisecond
	e := stoppedForPass(t, age)
	w, sleeper := e.workers[0], e.workers[1]
	testHookRunning = func() uint64 { return 0 } // processors to spare
	defer func() { testHookRunning = nil }()
	park := func() {
		sleeper.state.Store(workerParked)
		e.sleepers.Store(1)
	}
	defer func() {
		sleeper.state.Store(workerExited)
		e.sleepers.Store(0)
	}()
	t0 := time.Hour
	w.thiefWoken = t0 - age
	wakes := w.st.StealWakeups
	park()
	assert.True(t, w.wakeThiefAt(t0), "a steal age after the last wake")
	assert.Equal(t, workerWoken, sleeper.state.Load(), "the sleeper woken")
	assert.Equal(t, wakes+1, w.st.StealWakeups)
	assert.Equal(t, t0, w.thiefWoken)

	park()
	assert.False(t, w.wakeThiefAt(t0+age-1), "less than a steal age after the last wake")
	assert.Equal(t, workerParked, sleeper.state.Load())
	assert.Equal(t, t0, w.thiefWoken)
	assert.True(t, w.wakeThiefAt(t0+age))
	assert.Equal(t, workerWoken, sleeper.state.Load())
	assert.Equal(t, wakes+2, w.st.StealWakeups)

	// Every processor busy: due, but nobody is woken (see wakeThief).
	testHookRunning = func() uint64 { return uint64(e.procs) }
	park()
	assert.True(t, w.wakeThiefAt(t0+2*age))
	assert.Equal(t, workerParked, sleeper.state.Load())
	assert.Equal(t, wakes+2, w.st.StealWakeups)
}

// checkBacklog wakes a thief only when someone sleeps and at least two
// owned mailboxes are waiting.
func TestCheckBacklog(t *testing.T) {
	e := stoppedForPass(t, time.Millisecond)
	w := e.workers[0]
	testHookRunning = func() uint64 { return 0 }
	defer func() { testHookRunning = nil }()
	defer e.sleepers.Store(0)
	w.thiefWoken = -time.Hour // due whatever the clock says
	a, b := e.slots[w.lo].Load(), e.slots[w.lo+1].Load()
	a.word.Store(wordClosed | wordLenOne)
	b.word.Store(wordClosed)
	e.sleepers.Store(1)
	assert.False(t, w.checkBacklog(), "one mailbox waiting is no backlog")
	b.word.Store(wordClosed | wordLenOne | wordProcessing)
	assert.False(t, w.checkBacklog(), "a mailbox being processed is not waiting")
	b.word.Store(wordClosed | wordLenOne)
	e.sleepers.Store(0)
	assert.False(t, w.checkBacklog(), "a backlog, but nobody sleeps")
	assert.Equal(t, -time.Hour, w.thiefWoken)
	e.sleepers.Store(1)
	assert.True(t, w.checkBacklog(), "a backlog and a sleeper")
	assert.Greater(t, w.thiefWoken, time.Duration(0), "the wake's time recorded")
}

// resolveHandoff, at the end of a pass: after a pass whose only work was
// the visit before the handoff (busy 1, nothing deferred served), the
// handed-off mailbox is served here without a look at the own mailboxes;
// after more work, an own mailbox waiting again makes the worker wake the
// handoff's owner instead.
func TestResolveHandoff(t *testing.T) {
	e := stoppedForPass(t, 0)
	w, owner := e.workers[0], e.workers[1]
	e.shutdown.Store(false) // as while running
	defer e.shutdown.Store(true)
	defer e.sleepers.Store(0)
	defer owner.state.Store(workerExited)
	mine, handed := e.slots[w.lo].Load(), e.slots[owner.lo].Load()
	mine.word.Store(wordClosed | wordLenOne) // an own mailbox waiting again
	// Being processed elsewhere: serving it here takes nothing (a missed
	// gulp), and leaves its owner asleep.
	handed.word.Store(wordClosed | wordLenOne | wordProcessing)
	for _, c := range []struct {
		busy, served int
		wakes        bool
	}{
		{1, 0, false}, // idle: served here, no look at the own mailboxes
		{2, 0, true},  // other work this pass: the own mailbox is seen
		{1, 1, true},  // deferred ones served: likewise
	} {
		owner.state.Store(workerParked)
		e.sleepers.Store(1)
		w.handoff = handed
		w.resolveHandoff(c.busy, c.served)
		assert.Nil(t, w.handoff, "busy %d served %d: the slot resolved", c.busy, c.served)
		assert.Equal(t, c.wakes, owner.state.Load() == workerWoken, "busy %d served %d: the owner woken", c.busy, c.served)
	}
}
