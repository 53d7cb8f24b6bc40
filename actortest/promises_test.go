package actortest_test

import (
	"testing"

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
