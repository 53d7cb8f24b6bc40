package actor_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/actord/actord/actor"
)

type stuckWatchMsg struct{ actor.Message }

// stuckWatchActor's behaviour outlasts a forced Stop's one-second grace
// and leaves the actor alive; its Stopped hook records what it saw.
type stuckWatchActor struct {
	actor.Actor
	running atomic.Bool
	stopped atomic.Bool
	reason  atomic.Value
}

func (a *stuckWatchActor) on(*stuckWatchMsg) actor.Allocation {
	a.running.Store(true)
	time.Sleep(1300 * time.Millisecond)
	a.running.Store(false)
	return actor.Nodelete
}

func (a *stuckWatchActor) Stopped(r actor.Reason) {
	a.reason.Store(r)
	a.stopped.Store(true)
}

// A forced Stop that gives up on a worker stuck in an extended actor's
// behaviour leaves that actor's end to the worker: once the behaviour has
// returned, its Stopped hook runs (ReasonStopped), then Alive reports
// false, then its watchers are told ReasonStopped.
func TestForcedStopStuckActorWatchedAfterHook(t *testing.T) {
	sys, err := actor.Start(actor.WithWorkers(1))
	if err != nil {
		t.Fatal(err)
	}
	a := &stuckWatchActor{}
	if _, err := actor.Spawn(sys, a); err != nil {
		t.Fatal(err)
	}
	p, err := actor.Bind(a, (*stuckWatchActor).on)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := actor.WatchChan(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Send(&stuckWatchMsg{}); err != nil {
		t.Fatal(err)
	}
	for !a.running.Load() {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- sys.Stop(ctx) }()
	var tm *actor.Terminated
	select {
	case tm = <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher was never told")
	}
	running, hooked, alive := a.running.Load(), a.stopped.Load(), p.Alive()
	if running || !hooked || alive {
		t.Fatalf("watcher told %v while behaviour running=%v, Stopped hook ran=%v, Alive=%v; want false, true, false",
			tm.Reason, running, hooked, alive)
	}
	if tm.Reason != actor.ReasonStopped || !errors.Is(tm.Err, actor.ErrStopped) {
		t.Fatalf("watcher told %v (%v), want ReasonStopped (ErrStopped)", tm.Reason, tm.Err)
	}
	if r, _ := a.reason.Load().(actor.Reason); r != actor.ReasonStopped {
		t.Fatalf("Stopped hook got %v, want ReasonStopped", r)
	}
	if err := <-stopped; !errors.Is(err, actor.ErrActorsAlive) {
		t.Fatalf("Stop: %v, want ErrActorsAlive", err)
	}
}
