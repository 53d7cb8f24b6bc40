package executor

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A worker stuck in an actor's termination hook (Stopped, Destroy) is stuck
// as it is in a long behaviour: the hooks run inside the mailbox visit that
// delivered the terminating message (drainBatch, terminate, terminateExt),
// so the visit counter (batchSeq) stays the same, the watcher wakes the
// parked worker, and a message to an actor on another mailbox of the stuck
// worker is stolen and delivered while the hook blocks. A message to an
// actor on the same mailbox waits for the hook to return: the mailbox is
// being processed, and nobody else may serve it (the exclusivity rule).
// An actor spawned by a behaviour running on the stuck worker lands on
// that worker's mailboxes round-robin from its first (PlaceLocal), here
// the blocker's own: it waits too, by the same rule, not by a fault of
// the stuck-worker detection.

// blockGate is what a blocking actor of these tests shares: entered is
// closed when the blocking code (a behaviour or a hook) begins, release
// ends it.
type blockGate struct {
	entered, release chan struct{}
}

func (g *blockGate) block() {
	close(g.entered)
	<-g.release
}

// blockInBehaviour blocks in its behaviour, then finishes.
type blockInBehaviour struct {
	cell Cell
	blockGate
}

func blockInBehaviourB(a *blockInBehaviour, _ *probeMsg) Allocation { a.block(); return Finished }

// blockInStopped finishes at its first message; its Stopped hook blocks.
type blockInStopped struct {
	cell Cell
	blockGate
}

func (a *blockInStopped) Stopped(Reason)                        { a.block() }
func blockInStoppedB(a *blockInStopped, _ *probeMsg) Allocation { return Finished }

// blockInDestroy returns Destroy at its first message; its Destroy hook
// blocks.
type blockInDestroy struct {
	cell Cell
	blockGate
}

func (a *blockInDestroy) Destroy()                              { a.block() }
func blockInDestroyB(a *blockInDestroy, _ *probeMsg) Allocation { return Destroy }

func TestStuckInTerminationHookIsStuck(t *testing.T) {
	kinds := []struct {
		name  string
		spawn func(t *testing.T, e *Executor, g blockGate) (send func() error)
	}{
		{"behaviour", func(t *testing.T, e *Executor, g blockGate) func() error {
			a := &blockInBehaviour{blockGate: g}
			require.NoError(t, Spawn(e, &a.cell, a))
			return func() error { return Send(&a.cell, a, &probeMsg{}, blockInBehaviourB) }
		}},
		{"Stopped", func(t *testing.T, e *Executor, g blockGate) func() error {
			a := &blockInStopped{blockGate: g}
			require.NoError(t, Spawn(e, &a.cell, a))
			return func() error { return Send(&a.cell, a, &probeMsg{}, blockInStoppedB) }
		}},
		{"Destroy", func(t *testing.T, e *Executor, g blockGate) func() error {
			a := &blockInDestroy{blockGate: g}
			require.NoError(t, Spawn(e, &a.cell, a))
			return func() error { return Send(&a.cell, a, &probeMsg{}, blockInDestroyB) }
		}},
	}
	for _, k := range kinds {
		for _, pl := range []yPlace{otherMailbox, sameMailbox, spawnedLocally} {
			t.Run(fmt.Sprintf("%s/%s", k.name, pl), func(t *testing.T) {
				stuckInHook(t, k.spawn, pl)
			})
		}
	}
}

// yPlace is where stuckInHook places the receiver Y.
type yPlace uint8

const (
	otherMailbox   yPlace = iota // worker 0's other mailbox (mailbox 1)
	sameMailbox                  // the blocker's mailbox (mailbox 0)
	spawnedLocally               // spawned by a behaviour on worker 0 (PlaceLocal): its first mailbox, the blocker's
)

func (p yPlace) String() string {
	return [...]string{"another mailbox", "the same mailbox", "spawned by a behaviour"}[p]
}

// stuckInHook runs one case of TestStuckInTerminationHookIsStuck: two
// workers with two mailboxes each; the blocker X on mailbox 0 (worker 0),
// the receiver Y where pl says. A behaviour's spawn places its actor on
// the next mailbox, round-robin from the first, of the worker running it:
// the first actor spawned by a behaviour on worker 0 shares mailbox 0 with
// X, and waits for X's hook as an actor placed there by ticket does.
func stuckInHook(t *testing.T, spawnX func(*testing.T, *Executor, blockGate) func() error, pl yPlace) {
	e, err := Start(Config{Workers: 2, Queues: 4})
	require.NoError(t, err)
	g := blockGate{entered: make(chan struct{}), release: make(chan struct{})}
	delivered := make(chan *worker, 1)
	sendX := spawnX(t, e, g) // ticket 0: mailbox 0, worker 0
	y := reportingProbe(e, delivered)
	var fillers []*probe
	switch pl {
	case otherMailbox:
		y.spawn(t, e) // ticket 1: mailbox 1, worker 0
	case sameMailbox:
		for i := 1; i < 4; i++ { // tickets 1-3: mailboxes 1-3
			p := &probe{fn: func(*probe) Allocation { return Finished }}
			p.spawn(t, e)
			fillers = append(fillers, p)
		}
		y.spawn(t, e) // ticket 4: mailbox 0, with X
	case spawnedLocally:
		// The parent's mailbox belongs to worker 0, but worker 1, woken
		// by the send or looking for work, may steal it and run the
		// parent: its spawn then lands on worker 1's first mailbox. Such
		// a Y is set aside (finished at the end) and the parent asked
		// again; worker 1's spawns do not move worker 0's round-robin, so
		// the first spawn that worker 0 runs lands on mailbox 0.
		spawned := make(chan error, 1)
		next := y
		parent := &probe{fn: func(*probe) Allocation {
			spawned <- Spawn(e, &next.cell, next)
			return Nodelete
		}}
		parent.spawn(t, e) // ticket 1: mailbox 1, worker 0
		fillers = append(fillers, parent)
		for attempt := 0; ; attempt++ {
			require.Less(t, attempt, 100, "worker 0 never ran the parent")
			waitAllParked(t, e)
			parent.send(t, &probeMsg{})
			require.NoError(t, <-spawned)
			if next.cell.mb.Load() == e.mailboxes[0] {
				break
			}
			fillers = append(fillers, next) // run on worker 1: set aside
			y = reportingProbe(e, delivered)
			next = y
		}
	}
	same := pl != otherMailbox
	require.Equal(t, same, y.cell.mb.Load() == e.mailboxes[0], "Y's mailbox")
	waitAllParked(t, e)
	require.NoError(t, sendX())
	select {
	case <-g.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the blocker never ran")
	}
	y.send(t, &probeMsg{})
	wait := 5 * time.Second
	if same {
		wait = 500 * time.Millisecond // long enough for a thief (StealAge: 1 ms) to act
	}
	select {
	case w := <-delivered:
		if same {
			t.Errorf("Y, on the blocker's mailbox, ran on worker %d while the blocker held it", w.id)
		}
	case <-time.After(wait):
		if !same {
			t.Errorf("Y's message, on another mailbox of the stuck worker, was not delivered in 5 s")
		}
	}
	close(g.release)
	if same {
		select {
		case <-delivered:
		case <-time.After(10 * time.Second):
			t.Error("Y's message was not delivered after the blocker returned")
		}
	}
	finishProbes(t, fillers...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, e.Stop(ctx))
}
