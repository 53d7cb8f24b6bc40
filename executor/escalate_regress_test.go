package executor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keepingSup keeps every Failure it receives undecided.
type keepingSup struct {
	cell Cell
	kept chan *Failure
}

func (s *keepingSup) onFailure(f *Failure) Allocation {
	s.kept <- f
	return Nodelete
}

// An escalated actor whose supervisor received its Failure, kept it
// undecided and terminated later (a pill, or a Stop of its own) terminates
// (ReasonPanic), as WithEscalate documents; the panic reaches Stop. It used
// to stay suspended for ever, and Stop ended only by force. A supervisor
// that decides its Failures keeps nothing of them.
func TestEscalationWhoseSupervisorTerminatesUndecidedTerminates(t *testing.T) {
	e, err := Start(Config{Workers: 2, OnError: func(error) {}})
	require.NoError(t, err)
	s := &keepingSup{kept: make(chan *Failure, 4)}
	require.NoError(t, Spawn(e, &s.cell, s))
	sp, err := Bind(&s.cell, s, (*keepingSup).onFailure)
	require.NoError(t, err)

	// A Failure decided before its supervisor ends: the actor goes on.
	d := &boomer{}
	require.NoError(t, SpawnWith(e, &d.cell, d, SpawnOptions{OnPanic: Escalate, Supervisor: sp}))
	dp, err := Bind(&d.cell, d, (*boomer).onTick)
	require.NoError(t, err)
	require.NoError(t, dp.Send(&gtick{}))
	require.NoError(t, (<-s.kept).Resume())

	b := &boomer{}
	require.NoError(t, SpawnWith(e, &b.cell, b, SpawnOptions{OnPanic: Escalate, Supervisor: sp}))
	bp, err := Bind(&b.cell, b, (*boomer).onTick)
	require.NoError(t, err)
	gone, err := WatchChan(bp)
	require.NoError(t, err)
	require.NoError(t, bp.Send(&gtick{}))
	f := <-s.kept // received, and left undecided
	select {
	case tm := <-gone:
		t.Fatalf("terminated before its supervisor did: %+v", tm)
	default:
	}
	require.NoError(t, SendPill(&s.cell, s, NewPill(Finished)))
	tm := notified(t, "the escalated actor", gone)
	assert.Equal(t, ReasonPanic, tm.Reason)
	assert.ErrorIs(t, f.Resume(), ErrReplied, "the Failure was not decided by its supervisor's end")
	assert.True(t, dp.Alive(), "the actor whose Failure was decided terminated")

	require.NoError(t, SendPill(&d.cell, d, NewPill(Finished)))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = e.Stop(ctx)
	assert.ErrorIs(t, err, ErrPanic)
	assert.NotErrorIs(t, err, ErrActorsAlive)
}
