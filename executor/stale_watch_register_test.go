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
