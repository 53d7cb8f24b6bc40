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

// TestStoppedTickDiscardIsCounted: a periodic firing queued when its
// timer's Stop returns true is discarded when its turn comes: no
// behaviour runs, so it is not a processed message; it counts in
// WorkerStats.TimersDiscarded, and in neither TimersFired nor TimersDead.
// Every message sent is in exactly one of processed, dead letters and
// discarded.
func TestStoppedTickDiscardIsCounted(t *testing.T) {
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
	assert.Equal(t, uint64(1), tot.TimersDiscarded, "the discarded firing")
	assert.Zero(t, tot.Dropped, "nothing dropped by a forced stop")
	assert.Zero(t, tot.DeadLetters)
	assert.Equal(t, uint64(3), st.MessagesSent, "the hold, the firing and the pill")
	assert.Equal(t, st.MessagesSent, tot.MessagesProcessed()+tot.DeadLetters+tot.TimersDiscarded,
		"every message sent in exactly one of processed, dead letters, discarded")
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
	assert.Equal(t, st.MessagesSent, tot.MessagesProcessed()+tot.DeadLetters+tot.Dropped+tot.TimersDiscarded)
	assert.Zero(t, st.TimersFired, "the dead firing of a stopped timer counted fired")
	assert.Zero(t, st.TimersDead, "the dead firing of a stopped timer counted dead")
}

func (g *gated) onHoldThenEnd(*hold) Allocation {
	g.began <- struct{}{}
	<-g.gate
	return Finished
}

// tickFwd receives a SendEvery's request and forwards it through a port to
// its replier, then ends.
type tickFwd struct {
	cell Cell
	to   Port[*greq]
}

func (f *tickFwd) onReq(r *greq) Allocation {
	if f.to.Send(r) != nil {
		return Nodelete
	}
	return Finished
}

// reqKeeper keeps the requests it receives (answers none).
type reqKeeper struct{ cell Cell }

func (*reqKeeper) onReq(*greq) Allocation { return Nodelete }

// TestForwardedTickRequestNotFailed: a request that a SendEvery delivers,
// forwarded through a port by the behaviour receiving it, which then ends
// its actor, is not failed by that end: the replier it was forwarded to
// answers it. (handedOver does not mark such a delivery, whose message is
// the timer's tick; but the tick is not a request type, so the worker never
// fails what a tick delivers: mayBeRequest is false for it.) Plain and
// extended receivers.
func TestForwardedTickRequestNotFailed(t *testing.T) {
	for _, o := range []SpawnOptions{{}, {MailboxBound: 4}} { // plain, extended
		forwardTickRequest(t, o)
	}
}

func forwardTickRequest(t *testing.T, o SpawnOptions) {
	e, err := Start(Config{Workers: 2})
	require.NoError(t, err)
	k := &reqKeeper{}
	require.NoError(t, Spawn(e, &k.cell, k))
	kp, err := Bind(&k.cell, k, (*reqKeeper).onReq)
	require.NoError(t, err)
	g := newGated()
	require.NoError(t, Spawn(e, &g.cell, g))
	gp, err := Bind(&g.cell, g, (*gated).onReq) // replies 1
	require.NoError(t, err)
	f := &tickFwd{to: gp}
	require.NoError(t, SpawnWith(e, &f.cell, f, o))
	fp, err := Bind(&f.cell, f, (*tickFwd).onReq)
	require.NoError(t, err)

	// The request gets its requester from AskFunc (k keeps it), then the
	// periodic timer sends it to f, which forwards it to g and ends.
	r := &greq{}
	res := make(chan error, 2)
	require.NoError(t, AskFunc(kp, r, 0, func(v int, err error) {
		if err == nil && v != 1 {
			t.Errorf("answer %d", v)
		}
		res <- err
	}))
	tm, err := SendEvery(fp, time.Millisecond, r)
	require.NoError(t, err)
	select {
	case err := <-res:
		assert.NoError(t, err, "the forwarded request was failed")
	case <-time.After(20 * time.Second):
		t.Fatal("the request was never answered")
	}
	waitFor(t, "the forwarder's end", func() bool { return !f.cell.Alive() })
	waitFor(t, "the timer's cancellation", func() bool { return e.Stats().TimersPending == 0 })
	assert.False(t, tm.Stop(), "the timer outlived its actor")
	require.NoError(t, SendPill(&k.cell, k, NewPill(Finished)))
	require.NoError(t, SendPill(&g.cell, g, NewPill(Finished)))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = e.Stop(ctx) // a firing may have been a dead letter
	assert.Empty(t, res, "the request was completed twice")
}
