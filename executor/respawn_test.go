package executor

// Regression tests for an actor re-spawned into another executor while a
// send to it is in flight: everything a push does after it (the wake-up,
// the handoff slot and next hint, the deep-mailbox and control counts)
// belongs to the executor of the mailbox pushed into, never to whichever
// executor the cell names by then.

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actord/actord/internal/erased"
)

var erasedProbe = erased.Erase(probeBehaviour)

// waitSleeper waits (a bounded number of yields) until e has a parked
// worker, and reports whether it has.
func waitSleeper(e *Executor) bool {
	for i := 0; i < 1_000_000; i++ {
		if e.sleepers.Load() != 0 {
			return true
		}
		runtime.Gosched()
	}
	return false
}

// The seam, deterministically: a push into a mailbox of an 8-worker
// executor whose cell meanwhile names a 1-worker executor (the actor ended
// and was re-spawned there) wakes the mailbox's own executor. Re-deriving
// the executor from the cell indexed the 1-worker executor's workers with
// the mailbox's owner (index out of range).
func TestRespawnIntoAnotherSystemWhileSending(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e1, err := Start(Config{Workers: 8})
	require.NoError(t, err)
	defer e1.Stop(ctx)
	e2, err := Start(Config{Workers: 1})
	require.NoError(t, err)
	defer e2.Stop(ctx)

	var got atomic.Int64
	p := &probe{fn: func(*probe) Allocation { got.Add(1); return Nodelete }}
	p.spawn(t, e2) // the cell now names e2
	var mb *mailbox
	for _, m := range e1.mailboxes {
		if m.owner.Load() >= int32(len(e2.workers)) {
			mb = m
			break
		}
	}
	require.NotNil(t, mb, "a mailbox of e1 owned by a worker e2 does not have")
	require.True(t, waitSleeper(e1), "no worker of e1 parked")
	require.True(t, waitSleeper(e2), "no worker of e2 parked")

	// A sender that saw the incarnation alive on mb (in e1) pushes there
	// after the re-spawn: its envelope is for an earlier incarnation.
	st := p.cell.state.Load()
	require.NoError(t, pushTo(&p.cell, mb, 0, st-cellIncarnOne, erasedProbe, &probeMsg{}))
	// e1's worker was woken and dropped the stale envelope as a dead letter.
	require.Eventually(t, func() bool { return e1.Stats().Total().DeadLetters == 1 }, 10*time.Second, time.Millisecond)
	assert.Zero(t, got.Load(), "the stale envelope reached the new incarnation")
	require.NoError(t, SendPill(&p.cell, p, NewPill(Finished)))
	require.NoError(t, e2.Stop(ctx))
	err = e1.Stop(ctx) // reports the stale envelope, a dead letter of e1
	require.ErrorIs(t, err, ErrUndelivered)
	assert.Contains(t, err.Error(), "1 sent to terminated actors")
	assert.Zero(t, e1.deepQueues.Load())
	assert.Zero(t, e2.deepQueues.Load())
}

// The same race, as a program: senders in flight to one actor that is
// ended and re-spawned, in turn, into an 8-worker and a 1-worker
// executor. Bounded; correct whether or not the race hits, it fails (a
// crash of a sender) only on the bug.
func TestRespawnBetweenSystemsWithSendersInFlight(t *testing.T) {
	e1, err := Start(Config{Workers: 8})
	require.NoError(t, err)
	e2, err := Start(Config{Workers: 1})
	require.NoError(t, err)

	p := &probe{fn: func(*probe) Allocation { return Nodelete }}
	pill := NewPill(Finished)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for s := 0; s < 2; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := &probeMsg{}
			for !stop.Load() {
				_ = Send(&p.cell, p, m, probeBehaviour) // refused while it is between incarnations
			}
		}()
	}
	deadline := time.Now().Add(2 * time.Second)
	for i := 0; i < 20_000 && time.Now().Before(deadline); i++ {
		e := e1
		if i%2 == 1 {
			e = e2
		}
		require.NoError(t, Spawn(e, &p.cell, p))
		require.NoError(t, SendPill(&p.cell, p, pill))
		for j := 0; p.cell.Alive(); j++ {
			require.Less(t, j, 10_000_000, "the pill did not end the actor")
			runtime.Gosched()
		}
	}
	stop.Store(true)
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, e := range []*Executor{e1, e2} {
		_ = e.Stop(ctx) // stale envelopes may be queued: counted, not an error here
		assert.Zero(t, e.deepQueues.Load())
	}
}

// The seam from inside a behaviour: a behaviour of a 2-worker executor
// pushes into a mailbox of another executor (a send that loaded the
// mailbox before the actor was re-spawned here) while the other worker
// sleeps. The mailbox's own executor serves it. Re-deriving the executor
// from the cell made the sender's worker take the other system's mailbox
// into its handoff slot (or wake one of its own workers), and serve it.
func TestRespawnIntoAnotherSystemKeepsHandoffInItsSystem(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e1, err := Start(Config{Workers: 2})
	require.NoError(t, err)
	defer e1.Stop(ctx)
	e2, err := Start(Config{Workers: 2})
	require.NoError(t, err)
	defer e2.Stop(ctx)

	var got atomic.Int64
	p := &probe{fn: func(*probe) Allocation { got.Add(1); return Nodelete }}
	p.spawn(t, e2) // the cell now names e2
	require.True(t, waitSleeper(e1), "no worker of e1 parked")
	var pushErr error
	pushed := make(chan struct{})
	sender := &probe{fn: func(*probe) Allocation {
		defer close(pushed)
		w := runningWorker()
		other := e2.workers[1-w.id]
		for i := 0; other.state.Load() != workerParked; i++ {
			if i == 1_000_000 {
				pushErr = assert.AnError // the other worker never parked: nothing to test
				return Finished
			}
			runtime.Gosched()
		}
		var mb *mailbox // a mailbox of e1 whose owner index is the parked worker's
		for _, m := range e1.mailboxes {
			if m.owner.Load() == int32(other.id) {
				mb = m
				break
			}
		}
		st := p.cell.state.Load()
		pushErr = pushTo(&p.cell, mb, 0, st-cellIncarnOne, erasedProbe, &probeMsg{})
		return Finished
	}}
	sender.spawn(t, e2)
	sender.send(t, &probeMsg{})
	<-pushed
	require.NoError(t, pushErr)
	require.Eventually(t, func() bool { return e1.Stats().Total().DeadLetters == 1 }, 10*time.Second, time.Millisecond,
		"the envelope was not served by its mailbox's executor")
	assert.Zero(t, e2.Stats().Total().DeadLetters, "a worker of e2 served a mailbox of e1")
	assert.Zero(t, got.Load())
	require.NoError(t, SendPill(&p.cell, p, NewPill(Finished)))
	require.NoError(t, e2.Stop(ctx))
	require.ErrorIs(t, e1.Stop(ctx), ErrUndelivered)
}
