package executor

// Regression tests for the message accounting of Stats across a Stop.

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gatedMsg's Destroy hook (run by the worker after the behaviour that
// receives it, with SetAllocation(Destroy)) says it runs on in and waits
// for gate.
type gatedMsg struct {
	Message
	in, gate chan struct{}
}

func (m *gatedMsg) Destroy() {
	close(m.in)
	<-m.gate
}

func gatedBehaviour(p *probe, m *gatedMsg) Allocation {
	m.SetAllocation(Destroy)
	return Finished
}

// A message that Stop finds queued for an actor that had terminated is a
// dead letter (WorkerStats.DeadLetters), which no worker took: it must not
// come off MessagesProcessed, so that after a clean stop MessagesSent =
// MessagesProcessed + DeadLetters. MessagesProcessed subtracted it from
// what the workers took, one short per such letter (a behaviour that ran
// went uncounted). The letter is left for Stop deterministically: the
// one worker is held in a message hook that runs after its actor
// terminated (so Stop proceeds) until Stop has set shutdown, after which
// the worker takes nothing more.
func TestDeadLettersFoundAtStopAreNotSubtractedFromProcessed(t *testing.T) {
	e, err := Start(Config{Workers: 1, QueuesPerWorker: 1})
	require.NoError(t, err)

	// b: ended by a pill; a send to it was in flight (it loaded b's state
	// word while b was alive, and pushes after b ended).
	b := &probe{fn: func(*probe) Allocation { return Nodelete }}
	b.spawn(t, e)
	stale := b.cell.state.Load()
	require.NoError(t, SendPill(&b.cell, b, NewPill(Finished)))
	for i := 0; b.cell.Alive() && i < 1_000_000; i++ {
		runtime.Gosched()
	}
	require.False(t, b.cell.Alive())

	// k: its one message ends it; the message's Destroy hook then holds
	// the worker.
	k := &probe{}
	k.spawn(t, e)
	m := &gatedMsg{in: make(chan struct{}), gate: make(chan struct{})}
	require.NoError(t, Send(&k.cell, k, m, gatedBehaviour))
	<-m.in

	// The in-flight send lands now: the worker is held, so it is queued.
	require.NoError(t, pushTo(&b.cell, b.cell.mb.Load(), 0, stale, erasedProbe, &probeMsg{}))

	stopped := make(chan error, 1)
	go func() { stopped <- e.Stop(context.Background()) }()
	for i := 0; !e.shutdown.Load() && i < 10_000_000; i++ {
		runtime.Gosched()
	}
	require.True(t, e.shutdown.Load(), "Stop did not begin")
	close(m.gate) // the worker returns and, seeing shutdown, takes nothing more
	select {
	case err = <-stopped:
	case <-time.After(20 * time.Second):
		t.Fatal("Stop did not return")
	}
	require.ErrorIs(t, err, ErrUndelivered)
	assert.Contains(t, err.Error(), "1 sent to terminated actors", "Stop found the letter queued")

	st := e.Stats()
	tot := st.Total()
	assert.Equal(t, uint64(3), st.MessagesSent, "the pill, k's message, the stale send")
	assert.Equal(t, uint64(1), tot.DeadLetters)
	assert.Equal(t, uint64(2), tot.MessagesProcessed(), "the pill and k's message ran")
	assert.Equal(t, st.MessagesSent, tot.MessagesProcessed()+tot.DeadLetters)
}
