package actor_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/actord/actord/actor"
)

type hookBoundMsg struct{ actor.Message }

type hookBoundBusy struct{ actor.Actor }

func (a *hookBoundBusy) on(*hookBoundMsg) actor.Allocation {
	time.Sleep(300 * time.Millisecond)
	return actor.Nodelete
}

// hookBoundSlow's Stopped hook outlasts a forced Stop's one-second bound.
type hookBoundSlow struct {
	actor.Actor
	returned atomic.Bool
}

func (a *hookBoundSlow) on(*hookBoundMsg) actor.Allocation { return actor.Nodelete }

func (a *hookBoundSlow) Stopped(actor.Reason) {
	time.Sleep(2500 * time.Millisecond)
	a.returned.Store(true)
}

// A forced Stop waits for the Stopped hooks of idle actors at most its
// one-second grace, then returns an error naming the hooks still running;
// such a hook goes on, its actor is alive until it returns, and its
// watchers are told after that (hook, then Alive false, then watchers).
func TestForcedStopBoundsStoppedHooks(t *testing.T) {
	sys, err := actor.Start(actor.WithWorkers(2))
	if err != nil {
		t.Fatal(err)
	}
	b, h := &hookBoundBusy{}, &hookBoundSlow{}
	if _, err := actor.Spawn(sys, b); err != nil {
		t.Fatal(err)
	}
	if _, err := actor.Spawn(sys, h); err != nil {
		t.Fatal(err)
	}
	hp, err := actor.Bind(h, (*hookBoundSlow).on)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := actor.WatchChan(hp)
	if err != nil {
		t.Fatal(err)
	}
	if err := actor.Send(b, &hookBoundMsg{}, (*hookBoundBusy).on); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	err = sys.Stop(ctx)
	took := time.Since(t0)
	if took > 2*time.Second {
		t.Fatalf("Stop returned after %v, want at most about its one-second grace after its context ended: %v", took, err)
	}
	if !errors.Is(err, actor.ErrActorsAlive) || !strings.Contains(err.Error(), "1 Stopped hooks still running") ||
		!strings.Contains(err.Error(), "hookBoundSlow") {
		t.Fatalf("Stop: %v; want ErrActorsAlive naming 1 Stopped hook still running, of a *hookBoundSlow", err)
	}
	// Its end has begun: sends fail as to any actor whose hooks run.
	if err := hp.Send(&hookBoundMsg{}); !errors.Is(err, actor.ErrTerminated) {
		t.Fatalf("a send to the actor whose hook runs: %v, want ErrTerminated", err)
	}
	if h.returned.Load() || !hp.Alive() {
		t.Fatalf("after Stop: hook returned=%v, Alive=%v; want false, true", h.returned.Load(), hp.Alive())
	}
	select {
	case tm := <-ch:
		returned, alive := h.returned.Load(), hp.Alive()
		if !returned || alive || tm.Reason != actor.ReasonStopped {
			t.Fatalf("watcher told %v with hook returned=%v, Alive=%v; want ReasonStopped, true, false", tm.Reason, returned, alive)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher was never told")
	}
}
