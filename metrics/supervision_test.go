package metrics

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/actord/actord/actor"
)

// fragile panics on crash messages and blocks on gate messages until their
// channel is closed (so that a test can fill its mailbox).
type fragile struct {
	actor.Actor
	ticks atomic.Int32
}

type crash struct{ actor.Message }

type gate struct {
	actor.Message
	entered chan struct{}
	open    chan struct{}
}

type tick struct{ actor.Message }

func (f *fragile) crash(*crash) actor.Allocation { panic("crash") }

func (f *fragile) gate(g *gate) actor.Allocation {
	close(g.entered)
	<-g.open
	return actor.Nodelete
}

func (f *fragile) tick(*tick) actor.Allocation {
	f.ticks.Add(1)
	return actor.Nodelete
}

// resumer is a supervisor that resumes every failure it is given.
type resumer struct {
	actor.Actor
	decided chan error
}

func (r *resumer) failure(f *actor.Failure) actor.Allocation {
	r.decided <- f.Resume()
	return actor.Nodelete
}

// TestRealSupervision drives every supervision and flow-control counter on
// a real system and checks the exported values: a restart, then an
// exhausted budget (seen by a watch), a resume, an escalation, and one
// overflow of each policy of a full bounded mailbox.
func TestRealSupervision(t *testing.T) {
	c := NewCollector()
	sys, err := actor.Start(actor.WithWorkers(2), actor.WithErrorHandler(func(error) {}))
	require.NoError(t, err)
	c.Attach(sys)

	// Restart, then past the budget (one restart a minute): terminated.
	r, err := actor.Spawn(sys, &fragile{}, actor.WithRestart(nil, actor.Budget{MaxRestarts: 1, Within: time.Minute}))
	require.NoError(t, err)
	rp, err := actor.Bind(r, (*fragile).crash)
	require.NoError(t, err)
	watched, err := actor.WatchChan(rp)
	require.NoError(t, err)
	require.NoError(t, rp.Send(&crash{}))
	require.NoError(t, rp.Send(&crash{}))
	select {
	case n := <-watched:
		require.Equal(t, actor.ReasonBudget, n.Reason)
	case <-time.After(10 * time.Second):
		t.Fatal("no Terminated notice for the actor past its budget")
	}

	// Resume.
	s, err := actor.Spawn(sys, &fragile{}, actor.WithResume())
	require.NoError(t, err)
	require.NoError(t, actor.Send(s, &crash{}, (*fragile).crash))

	// Escalate to a supervisor that resumes.
	sup, err := actor.Spawn(sys, &resumer{decided: make(chan error, 1)})
	require.NoError(t, err)
	supPort, err := actor.Bind(sup, (*resumer).failure)
	require.NoError(t, err)
	e, err := actor.Spawn(sys, &fragile{}, actor.WithEscalate(supPort, nil))
	require.NoError(t, err)
	require.NoError(t, actor.Send(e, &crash{}, (*fragile).crash))
	require.NoError(t, <-sup.decided)

	// A bounded mailbox (bound 1) per policy, held full by a gate.
	for _, o := range []actor.Overflow{actor.Reject, actor.DropNewest, actor.DropOldest} {
		b, err := actor.Spawn(sys, &fragile{}, actor.WithMailbox(1, o))
		require.NoError(t, err)
		g := &gate{entered: make(chan struct{}), open: make(chan struct{})}
		require.NoError(t, actor.Send(b, g, (*fragile).gate))
		<-g.entered
		require.NoError(t, actor.Send(b, &tick{}, (*fragile).tick)) // fills the mailbox
		err = actor.Send(b, &tick{}, (*fragile).tick)
		if o == actor.Reject {
			require.ErrorIs(t, err, actor.ErrMailboxFull)
		} else {
			require.NoError(t, err)
		}
		close(g.open)
		// Pills count as messages (a full mailbox would refuse or drop
		// this one): wait for the tick that stayed queued.
		require.Eventually(t, func() bool { return b.ticks.Load() == 1 }, 10*time.Second, time.Millisecond)
		require.NoError(t, actor.SendPill(b, actor.FinishedMsg))
	}

	for _, a := range []*fragile{s, e} {
		require.NoError(t, actor.SendPill(a, actor.FinishedMsg))
	}
	require.NoError(t, actor.SendPill(sup, actor.FinishedMsg))
	// Stop may report the panic that exhausted the budget (ErrPanic);
	// nothing else.
	if err := sys.Stop(context.Background()); err != nil {
		require.ErrorIs(t, err, actor.ErrPanic)
		require.False(t, errors.Is(err, actor.ErrUndelivered), "%v", err)
		require.False(t, errors.Is(err, actor.ErrActorsAlive), "%v", err)
	}

	f := gather(t, c)
	sum := func(name string) float64 {
		total := 0.0
		for _, m := range f[name].Metric {
			total += m.GetCounter().GetValue()
		}
		return total
	}
	require.Equal(t, 1.0, sum("actord_restarts_total"))
	require.Equal(t, 1.0, sum("actord_restart_budget_exhausted_total"))
	require.Equal(t, 1.0, sum("actord_resumes_total"))
	require.Equal(t, 1.0, sum("actord_escalations_total"))
	require.Equal(t, 4.0, sum("actord_panics_total"), "four panics: restart, budget, resume, escalation")
	require.Equal(t, 1.0, value(t, f, "actord_watch_notifications_total"))
	for _, r := range []string{"reject", "drop_newest", "drop_oldest"} {
		require.Equal(t, 1.0, value(t, f, "actord_mailbox_overflows_total", "reason", r), r)
	}
}
