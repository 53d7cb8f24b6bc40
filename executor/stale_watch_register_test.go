package executor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stopSink is a plain sink whose outer value has a Stopped hook: spawned as
// its embedded plainSink it is a plain actor, spawned as itself an extended
// one (from its spawn), on the same cell.
type stopSink struct {
	plainSink
	stopped chan Reason
}

func (s *stopSink) Stopped(r Reason) { s.stopped <- r }

// forceStop stops e by force: some actor is alive, and the context ends
// after 20ms.
func forceStop(t *testing.T, e *Executor) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, e.Stop(ctx), ErrActorsAlive)
}

// A watch through a port of a plain incarnation, delayed just before it
// registers its extension (a hook there) while that incarnation ends and the
// next one is spawned extended (registered at its spawn), must leave the
// next incarnation's registry entry alone. The stale watch used to replace
// the entry with its own, and then, its CAS failing, delete it: a forced
// Stop then never finished the next incarnation (no Stopped hook, its
// watchers never told, its private queue never closed), and a send to it
// after the Stop returned nil, its message lost.
func TestStaleWatchKeepsNextIncarnationRegistered(t *testing.T) {
	e, err := Start(Config{Workers: 2})
	require.NoError(t, err)
	o := &stopSink{stopped: make(chan Reason, 4)}
	require.NoError(t, Spawn(e, &o.cell, &o.plainSink)) // incarnation 1: plain
	p1, err := Bind(&o.cell, &o.plainSink, (*plainSink).onItem)
	require.NoError(t, err)
	var p2 Port[*item]
	var ch2 <-chan *Terminated
	hits := 0
	testHookWatchRegister = func() {
		hits++
		testHookWatchRegister = nil
		require.NoError(t, SendPill(&o.cell, &o.plainSink, NewPill(Finished)))
		waitFor(t, "incarnation 1 ends", func() bool { return !p1.Alive() })
		// Incarnation 2: extended (a Stopper, supervised: a private
		// queue), registered at its spawn.
		require.NoError(t, SpawnWith(e, &o.cell, o, SpawnOptions{OnPanic: Restart}))
		var err error
		p2, err = Bind(&o.cell, o, (*stopSink).onItem)
		require.NoError(t, err)
		ch2, err = WatchChan(p2)
		require.NoError(t, err)
		require.True(t, registered(e, &o.cell))
	}
	defer func() { testHookWatchRegister = nil }()
	ch1, err := WatchChan(p1)
	require.NoError(t, err)
	require.Equal(t, 1, hits)
	// Spawned again since: nothing recorded why incarnation 1 ended.
	assert.Equal(t, ReasonUnknown, notified(t, "the stale watch", ch1).Reason)
	assert.True(t, p2.Alive())
	assert.True(t, registered(e, &o.cell), "the stale watch unregistered the next incarnation")

	forceStop(t, e)
	select {
	case r := <-o.stopped:
		assert.Equal(t, ReasonStopped, r)
	default:
		t.Error("incarnation 2's Stopped hook did not run at the forced Stop")
	}
	select {
	case tm := <-ch2:
		assert.Equal(t, ReasonStopped, tm.Reason)
	case <-time.After(2 * time.Second):
		t.Error("incarnation 2's watcher was never told")
	}
	before := e.Stats().MessagesSent
	assert.ErrorIs(t, p2.Send(&item{}), ErrStopped)
	assert.Equal(t, before, e.Stats().MessagesSent, "a refused send is counted sent")
}

// A send to an extended actor whose private queue no forced Stop closed (it
// was not in the registry when the Stop took it; here the test takes it
// out) finds the queue open and the mailboxes closed: its drain token is
// refused, and nobody would drain the queue. The send used to return nil,
// its message lost, counted sent. It reports ErrStopped, the message stays
// the sender's (not counted sent), and the queue is closed: later sends
// report ErrStopped too.
func TestSendToUnregisteredQueueAfterForcedStop(t *testing.T) {
	e, err := Start(Config{Workers: 2})
	require.NoError(t, err)
	a := &plainSink{}
	require.NoError(t, SpawnWith(e, &a.cell, a, SpawnOptions{OnPanic: Restart}))
	p, err := Bind(&a.cell, a, (*plainSink).onItem)
	require.NoError(t, err)
	x := a.cell.ext.Load()
	require.NotNil(t, x)
	require.NotNil(t, x.pq)
	e.unextended(&a.cell, x) // a registration the Stop does not see
	forceStop(t, e)
	before := e.Stats().MessagesSent
	assert.ErrorIs(t, p.Send(&item{}), ErrStopped)
	assert.ErrorIs(t, p.Send(&item{}), ErrStopped)
	assert.Equal(t, before, e.Stats().MessagesSent, "a refused send is counted sent")
	x.pq.mu.Lock()
	closed, n := x.pq.closed, x.pq.ring.n
	x.pq.mu.Unlock()
	assert.True(t, closed, "the queue nobody drains is left open")
	assert.Zero(t, n)
}

// abandon, on the queue a forced Stop left open, takes the caller's message
// back and returns the ones queued after it, for the caller to drop; on a
// closed queue it does nothing (the closer took and counted them).
func TestAbandonTakesTheSendersMessageBack(t *testing.T) {
	var q privQueue
	var c Cell
	mine, other := &item{}, &item{}
	env := envelope{cell: &c, msg: mine, want: 1}
	require.Equal(t, putKick, q.offer(&env, 0, Reject, false).res)
	later := envelope{cell: &c, msg: other, want: 1}
	require.Equal(t, putQueued, q.offer(&later, 0, Reject, false).res)
	rest, ok := q.abandon(&env)
	assert.True(t, ok)
	require.Len(t, rest, 1)
	assert.Same(t, other, rest[0].msg)
	assert.True(t, q.closed)
	rest, ok = q.abandon(&env)
	assert.False(t, ok)
	assert.Empty(t, rest)
	assert.Equal(t, putClosed, q.offer(&env, 0, Reject, false).res)
}

// A Spawn of an extended actor from a goroutine outside the system that
// has counted its actor live (enter) when a forced Stop takes the registry
// of extended actors (the hook runs the whole Stop there) fails with
// ErrStopped and leaves nothing behind. It used to succeed and register the
// actor after the Stop had taken the registry: nothing ever finished it
// (no Stopped hook, watchers never told, its private queue never closed,
// so messages sent to it were neither delivered nor counted).
func TestSpawnRacingForcedStopFails(t *testing.T) {
	e, err := Start(Config{Workers: 2})
	require.NoError(t, err)
	o := &stopSink{stopped: make(chan Reason, 4)}
	hits := 0
	testHookSpawnRegister = func() {
		hits++
		testHookSpawnRegister = nil
		forceStop(t, e) // our spawn counts as a live actor: the Stop is forced
	}
	defer func() { testHookSpawnRegister = nil }()
	err = SpawnWith(e, &o.cell, o, SpawnOptions{OnPanic: Restart}) // a Stopper with a private queue
	require.Equal(t, 1, hits)
	require.ErrorIs(t, err, ErrStopped)
	assert.False(t, registered(e, &o.cell), "registered after the forced Stop took the registry")
	_, err = Bind(&o.cell, o, (*stopSink).onItem)
	assert.Error(t, err, "Bind to the actor whose spawn failed")
	assert.Equal(t, int64(0), e.live(), "the failed spawn is still counted live")
	select {
	case r := <-o.stopped:
		t.Errorf("Stopped hook ran (%v) for an actor whose spawn failed", r)
	default:
	}
	assert.Equal(t, uint64(0), e.Stats().Total().ActorsCreated)
}
