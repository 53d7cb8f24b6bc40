package actortest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/actortest"
)

// A probe that watches an actor which the test ends with a pill in its last
// statement (a deferred SendPill, say) receives the *Terminated notice:
// the probe outlives the actors under test, and the notice, sent while the
// cleanups run, is not left undelivered. The race (the notice against the
// probe's own end) hits in some rounds only; every round must be clean.
func TestProbeWatchingActorEndedByDeferredPill(t *testing.T) {
	for round := range 50 {
		f := &fakeTB{}
		sys := actortest.Start(f)
		probe := actortest.NewProbe[actor.Terminated](f, sys)
		c, err := actor.Spawn(sys, &Counter{})
		require.NoError(t, err)
		p, err := actor.Bind(c, (*Counter).OnAdd)
		require.NoError(t, err)
		require.NoError(t, actor.Watch(p, probe.Port()))
		func() {
			defer func() { require.NoError(t, actor.SendPill(c, actor.FinishedMsg)) }()
		}()
		f.finish()
		fatals, errs, _ := f.get()
		require.Empty(t, fatals, "round %d", round)
		require.Empty(t, errs, "round %d", round)
		require.Len(t, probe.Received(), 1, "round %d: the probe received the notice", round)
	}
}

// A panic that supervision handled fails the test even when the test stops
// the system itself: Stop does not report it, so the test cannot see it in
// Stop's result, and the cleanup checks it.
func TestHandledPanicThenOwnStopFailsTest(t *testing.T) {
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprint("allow=", allow), func(t *testing.T) {
			f := &fakeTB{}
			sys := actortest.StartWith(f, actortest.Policy{AllowPanics: allow})
			b, err := actor.Spawn(sys, &boom{}, actor.WithRestart(nil, actor.Budget{MaxRestarts: -1}))
			require.NoError(t, err)
			require.NoError(t, actor.Send(b, &kick{}, (*boom).onKick))
			require.NoError(t, actor.SendPill(b, actor.FinishedMsg)) // after the restart: the actor ends cleanly
			require.NoError(t, sys.Stop(context.Background()), "the test's own Stop: clean, the panic was handled")
			f.finish()
			_, errs, _ := f.get()
			if allow {
				assert.Empty(t, errs)
			} else {
				require.Len(t, errs, 1)
				assert.Contains(t, errs[0], "1 behaviours or hooks panicked")
			}
		})
	}
}
