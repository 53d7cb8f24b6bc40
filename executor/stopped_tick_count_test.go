package executor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests of how a periodic timer's firing is counted when the timer is
// stopped while the firing is queued, and of a request sent by SendEvery
// and forwarded by the behaviour receiving it.

// tickQueuedFor waits until the periodic timer tm has a firing queued
// (tickQueued set on its tick).
func tickQueuedFor(t *testing.T, tm Timer) {
	t.Helper()
	waitFor(t, "a queued firing", func() bool {
		tm.ts.mu.Lock()
		defer tm.ts.mu.Unlock()
		tk := tm.ts.at(tm.idx).msg.(*periodicTick)
		return tk.state.Load()&tickQueued != 0
	})
}

// TestStoppedTickDiscardIsDropped: a periodic firing queued when its
// timer's Stop returns true is discarded when its turn comes: no
// behaviour runs, so it is not a processed message; it counts as dropped
// (WorkerStats.Dropped), and in neither TimersFired nor TimersDead. Every
// message sent is in exactly one of processed, dead letters and dropped.
func TestStoppedTickDiscardIsDropped(t *testing.T) {
	e, s, _, ticks := heldGated(t, SpawnOptions{})
	tm, err := SendEvery(ticks, time.Millisecond, &gtick{})
	require.NoError(t, err)
	tickQueuedFor(t, tm)
	require.True(t, tm.Stop())
	close(s.gate)
	require.NoError(t, SendPill(&s.cell, s, NewPill(Finished)))
	require.NoError(t, e.Stop(context.Background()))

	n, _ := s.count()
	require.Zero(t, n, "a firing was delivered after Timer.Stop returned true")
	st := e.Stats()
	tot := st.Total()
	assert.Equal(t, uint64(2), tot.MessagesProcessed(), "behaviours run: the hold and the pill")
	assert.Equal(t, uint64(1), tot.Dropped, "the discarded firing")
	assert.Zero(t, tot.DeadLetters)
	assert.Equal(t, uint64(3), st.MessagesSent, "the hold, the firing and the pill")
	assert.Equal(t, st.MessagesSent, tot.MessagesProcessed()+tot.DeadLetters+tot.Dropped,
		"every message sent in exactly one of processed, dead letters, dropped")
	assert.Zero(t, st.TimersFired, "the discarded firing counted fired")
	assert.Zero(t, st.TimersDead, "the discarded firing counted dead")
}

// TestStoppedTickLostAtForcedStopIsNotFired: a firing queued when its
// timer's Stop returns true, then dropped by a forced Stop before its turn,
// counts in neither TimersFired nor TimersDead.
func TestStoppedTickLostAtForcedStopIsNotFired(t *testing.T) {
	e, s, _, ticks := heldGated(t, SpawnOptions{})
	tm, err := SendEvery(ticks, time.Millisecond, &gtick{})
	require.NoError(t, err)
	tickQueuedFor(t, tm)
	require.True(t, tm.Stop())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, e.Stop(ctx), ErrActorsAlive) // drops the queued firing
	close(s.gate)
	for s.cell.Alive() { // false once the worker exits, after the behaviour returns
		time.Sleep(time.Millisecond)
	}
	n, _ := s.count()
	require.Zero(t, n, "a firing was delivered after Timer.Stop returned true")
	st := e.Stats()
	assert.Zero(t, st.TimersFired, "the dropped firing of a stopped timer counted fired")
	assert.Zero(t, st.TimersDead, "the dropped firing of a stopped timer counted dead")
}

// TestStoppedTickDeadLetterIsNotFired: likewise for a firing that becomes
// a dead letter (its actor ended before its turn) after its timer's Stop
// returned true; it is counted as a dead letter, not as processed.
func TestStoppedTickDeadLetterIsNotFired(t *testing.T) {
	e, err := Start(Config{Workers: 1, Queues: 1})
	require.NoError(t, err)
	s := newGated()
	require.NoError(t, Spawn(e, &s.cell, s))
	ticks, err := Bind(&s.cell, s, (*gated).onTick)
	require.NoError(t, err)
	require.NoError(t, Send(&s.cell, s, &hold{}, (*gated).onHoldThenEnd))
	<-s.began
	tm, err := SendEvery(ticks, time.Millisecond, &gtick{})
	require.NoError(t, err)
	tickQueuedFor(t, tm)
	require.True(t, tm.Stop())
	close(s.gate) // the actor ends; the queued firing is a dead letter
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.ErrorIs(t, e.Stop(ctx), ErrUndelivered)
	n, _ := s.count()
	require.Zero(t, n)
	st := e.Stats()
	tot := st.Total()
	assert.Equal(t, uint64(1), tot.MessagesProcessed(), "behaviours run: the hold")
	assert.Equal(t, uint64(1), tot.DeadLetters, "the firing")
	assert.Equal(t, st.MessagesSent, tot.MessagesProcessed()+tot.DeadLetters+tot.Dropped)
	assert.Zero(t, st.TimersFired, "the dead firing of a stopped timer counted fired")
	assert.Zero(t, st.TimersDead, "the dead firing of a stopped timer counted dead")
}

func (g *gated) onHoldThenEnd(*hold) Allocation {
	g.began <- struct{}{}
	<-g.gate
	return Finished
}
