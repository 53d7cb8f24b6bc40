package executor

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actord/actord/internal/event"
	"github.com/actord/actord/internal/goid"
	"github.com/actord/actord/stealing"
)

// workerSum sums f over the workers' statistics.
func workerSum(e *Executor, f func(*WorkerStats) uint64) uint64 {
	var n uint64
	for _, w := range e.Stats().Workers {
		n += f(&w)
	}
	return n
}

// handoffs sums the handoffs the workers served themselves.
func handoffs(e *Executor) uint64 {
	return workerSum(e, func(w *WorkerStats) uint64 { return w.handoffs })
}

// A chain of messages between actors on different workers stays on the
// awake worker: with the other worker parked, the sender serves the
// receiver's mailbox itself instead of waking it, and every message is
// delivered once.
func TestHandoffKeepsAChainOnTheAwakeWorker(t *testing.T) {
	// Mailbox 0 belongs to worker 0, mailbox 1 to worker 1; one spin pass,
	// so that the idle worker parks at once.
	e, err := Start(Config{Workers: 2, Queues: 2, SpinPasses: 1})
	require.NoError(t, err)
	const hops = 2000
	var a, b *probe
	m := &probeMsg{}
	pass := func(to *probe) func(*probe) Allocation {
		return func(p *probe) Allocation {
			p.calls++
			// Read before sending: once sent to, to may run at once on
			// the other worker (always so without handoffs).
			n := p.calls + to.calls
			if n < hops {
				require.NoError(t, Send(&to.cell, to, m, probeBehaviour))
			}
			if n >= hops-1 {
				return Finished // to will not answer again
			}
			return Nodelete
		}
	}
	a, b = &probe{}, &probe{}
	a.fn, b.fn = pass(b), pass(a)
	a.spawn(t, e) // ticket 0: mailbox 0
	b.spawn(t, e) // ticket 1: mailbox 1
	a.send(t, m)
	require.NoError(t, e.Stop(context.Background()))
	assert.Equal(t, hops, a.calls+b.calls)
	if goid.Supported {
		assert.Positive(t, handoffs(e), "no handoff: every hop woke the other worker")
	}
}

// A behaviour that hands a message off and then blocks until that very
// message has been received does not hang: the watcher sees its worker
// stuck and wakes the sleeping owner, which finds the message.
func TestHandoffSenderBlocksUntilReceived(t *testing.T) {
	e, err := Start(Config{Workers: 2, Queues: 2, SpinPasses: 1, ParkTimeout: time.Millisecond})
	require.NoError(t, err)
	received := make(chan struct{})
	b := &probe{fn: func(*probe) Allocation { close(received); return Finished }}
	a := &probe{fn: func(*probe) Allocation {
		require.NoError(t, Send(&b.cell, b, &probeMsg{}, probeBehaviour))
		<-received // blocks its worker: only the owner of b's mailbox can run b
		return Finished
	}}
	a.spawn(t, e)                // mailbox 0, worker 0
	b.spawn(t, e)                // mailbox 1, worker 1
	for e.sleepers.Load() != 2 { // let both workers park
		time.Sleep(100 * time.Microsecond)
	}
	a.send(t, &probeMsg{})
	require.NoError(t, e.Stop(context.Background()))
	if goid.Supported {
		// The sender handed the message off instead of waking worker 1:
		// the watcher did.
		assert.Positive(t, e.Stats().Workers[1].WakeupsByTimeout)
	}
}

// A handoff is served by the sending worker only while it has nothing else
// to do: when the rest of its pass finds another of its own mailboxes
// waiting, it wakes the handed-off mailbox's owner instead, which runs the
// message; when nothing else waits, it runs the message itself.
func TestHandoffWakesOwnerWhenOwnWorkWaits(t *testing.T) {
	if !goid.Supported {
		t.Skip("handoffs need the goroutine identity")
	}
	for _, ownWork := range []bool{true, false} {
		// Mailboxes 0 and 1 are worker 0's, 2 and 3 worker 1's. Steals
		// never age in time, so only the owner or the handoff runs b; the
		// watcher exists (handoffs need it) but never looks during the
		// test, so it cannot wake worker 1 while worker 0's thread is
		// descheduled with the message in its slot.
		e, err := Start(Config{Workers: 2, Queues: 4, SpinPasses: 1, StealAge: MaxStealAge, ParkTimeout: time.Hour, ParkTimeoutMax: time.Hour})
		require.NoError(t, err)
		ranOn := make(chan int, 1)
		b := &probe{fn: func(*probe) Allocation { ranOn <- e.current().id; return Finished }}
		x := finishingProbe(1, nil)
		a := &probe{fn: func(*probe) Allocation {
			if ownWork {
				assert.NoError(t, Send(&x.cell, x, &probeMsg{}, probeBehaviour)) // a later slot of this worker
			}
			assert.NoError(t, Send(&b.cell, b, &probeMsg{}, probeBehaviour)) // worker 1, parked: handed off
			return Finished
		}}
		a.spawn(t, e) // ticket 0: mailbox 0
		x.spawn(t, e) // ticket 1: mailbox 1
		b.spawn(t, e) // ticket 2: mailbox 2
		waitAllParked(t, e)
		a.send(t, &probeMsg{})
		on := <-ranOn
		if !ownWork {
			require.NoError(t, Send(&x.cell, x, &probeMsg{}, probeBehaviour))
		}
		require.NoError(t, e.Stop(context.Background()))
		if ownWork {
			assert.Equal(t, 1, on, "own work waited, yet the sender ran the handed-off message")
			assert.Zero(t, handoffs(e))
		} else {
			assert.Equal(t, 0, on, "nothing else waited, yet the owner was woken")
			assert.Equal(t, uint64(1), handoffs(e))
		}
	}
}

// Without a watcher (stealing off) nothing could rescue a slot held by a
// blocked behaviour, so senders always wake the owner: the same program
// completes, and no handoff is served.
func TestNoHandoffWithoutWatcher(t *testing.T) {
	e, err := Start(Config{Workers: 2, Queues: 2, SpinPasses: 1, Steal: stealing.None})
	require.NoError(t, err)
	require.Nil(t, e.watchKick)
	received := make(chan struct{})
	b := &probe{fn: func(*probe) Allocation { close(received); return Finished }}
	a := &probe{fn: func(*probe) Allocation {
		require.NoError(t, Send(&b.cell, b, &probeMsg{}, probeBehaviour))
		<-received
		return Finished
	}}
	a.spawn(t, e)
	b.spawn(t, e)
	for e.sleepers.Load() != 2 {
		time.Sleep(100 * time.Microsecond)
	}
	a.send(t, &probeMsg{})
	require.NoError(t, e.Stop(context.Background()))
	assert.Zero(t, handoffs(e))
}

// Workers parked with ParkTwoPhase are woken in either phase (in the futex,
// or on the channel after it): sends spaced shorter and longer than
// event.TwoPhaseFutex are all delivered, and a chain between two workers
// completes.
func TestParkTwoPhaseDelivers(t *testing.T) {
	e, err := Start(Config{Workers: 2, Queues: 2, SpinPasses: 1, Park: ParkTwoPhase})
	require.NoError(t, err)
	const n = 60
	p := finishingProbe(n, nil)
	p.spawn(t, e)
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			time.Sleep(10 * time.Microsecond)
		} else {
			time.Sleep(event.TwoPhaseFutex + time.Millisecond)
		}
		p.send(t, &probeMsg{})
	}
	require.NoError(t, e.Stop(context.Background()))
	assert.Equal(t, n, p.calls)
}

// A worker serving a chain between two workers follows it without passes
// (see "Following the chain" in handoff.go), but only maxFollows times per
// pass: a message to another of its mailboxes, sent from outside while the
// chain goes on, is delivered before the chain ends. The chain is a
// ping-pong between the worker's own mailbox and the sleeping worker's, or
// one among the sleeping worker's mailboxes alone (handed off at every
// hop).
//
// The bound is checked in every attempt. That the chain is followed at all
// needs the sleeping worker to stay asleep: on a loaded machine the watcher
// may see worker 0 stuck (its thread descheduled) and wake worker 1, which
// then runs the chain among its own mailboxes, where nothing is handed off.
// So the setup is tried again, up to 20 times, until an attempt follows it.
func TestFollowTheChainIsBounded(t *testing.T) {
	if !goid.Supported {
		t.Skip("handoffs need the goroutine identity")
	}
	for _, among := range []string{"both workers", "the sleeper's mailboxes"} {
		followed := false
		for attempt := 0; attempt < 20 && !followed; attempt++ {
			followed = followChain(t, among) > 0
		}
		assert.True(t, followed, "%s: the chain was never followed in 20 attempts", among)
	}
}

// followChain runs one attempt of TestFollowTheChainIsBounded and returns
// the mailboxes visited by following the chain.
func followChain(t *testing.T, among string) uint64 {
	// Mailboxes 0 and 1 are worker 0's, 2 and 3 worker 1's; steals never
	// age, so worker 1 takes nothing and the chain stays on worker 0.
	e, err := Start(Config{Workers: 2, Queues: 4, SpareQueues: -1, SpinPasses: 1, StealAge: MaxStealAge})
	require.NoError(t, err)
	var stop, ended atomic.Bool
	var hops atomic.Int64
	m := &probeMsg{}
	pass := func(to **probe) func(*probe) Allocation {
		return func(p *probe) Allocation {
			hops.Add(1)
			if ended.Load() {
				return Finished // the other end has finished
			}
			// The last hop: the other end finishes on it. ended is set
			// before the send, so that the other end, which may run on
			// the other worker as soon as it is sent, sees it.
			last := stop.Load()
			if last {
				ended.Store(true)
			}
			require.NoError(t, Send(&(*to).cell, *to, m, probeBehaviour))
			if last {
				return Finished
			}
			return Nodelete
		}
	}
	var a, b, c *probe
	a, b, c = &probe{}, &probe{}, &probe{}
	if among == "both workers" {
		a.fn, b.fn = pass(&b), pass(&a)
		c = finishingProbe(1, nil)
	} else {
		// a, on worker 0, starts the chain between b and c.
		a.fn = func(*probe) Allocation {
			require.NoError(t, Send(&b.cell, b, m, probeBehaviour))
			return Finished
		}
		b.fn, c.fn = pass(&c), pass(&b)
	}
	var got atomic.Int64
	x := finishingProbe(1, &got)
	spawnOnTickets(t, e, a, x, b, c) // a and x on worker 0, b and c on worker 1
	a.send(t, m)
	// A worker that follows a chain publishes its statistics only between
	// passes: wait for hops, and count follows at the end.
	require.Eventually(t, func() bool { return hops.Load() > 1000 }, 10*time.Second, 50*time.Microsecond,
		"%s: the chain did not start (%d hops)", among, hops.Load())
	x.send(t, &probeMsg{})
	assert.Eventually(t, func() bool { return got.Load() == 1 }, 10*time.Second, 50*time.Microsecond,
		"%s: the chain kept its worker from another mailbox", among)
	stop.Store(true)
	if among == "both workers" {
		c.send(t, &probeMsg{}) // c is not in the chain: finish it
	}
	require.NoError(t, e.Stop(context.Background()))
	return follows(e)
}

// spawnOnTickets spawns ps in order, so that the i-th takes placement
// ticket i (mailbox i of a fresh executor placing globally), and waits until
// every worker is parked.
func spawnOnTickets(t *testing.T, e *Executor, ps ...*probe) {
	t.Helper()
	for _, p := range ps {
		p.spawn(t, e)
	}
	waitAllParked(t, e)
}

// follows sums the mailboxes the workers visited by following a chain.
func follows(e *Executor) uint64 {
	return workerSum(e, func(w *WorkerStats) uint64 { return w.follows })
}
