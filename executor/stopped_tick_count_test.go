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
