package executor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lateNote is a message sent to an actor after its pill.
type lateNote struct{ Message }

// deadGated's onWait blocks until its gate is closed.
type deadGated struct {
	cell Cell
	gate chan struct{}
}

type deadWait struct{ Message }

func (g *deadGated) onWait(*deadWait) Allocation { <-g.gate; return Nodelete }
func (g *deadGated) onNote(*lateNote) Allocation { return Nodelete }

// Stop's ErrUndelivered error names the type of a message that was sent to
// an actor that terminated before receiving it, so that a test failing on
// it says which message was lost.
func TestUndeliveredNamesMessageType(t *testing.T) {
	e, err := Start(Config{Workers: 1})
	require.NoError(t, err)
	g := &deadGated{gate: make(chan struct{})}
	require.NoError(t, Spawn(e, &g.cell, g))
	require.NoError(t, Send(&g.cell, g, &deadWait{}, (*deadGated).onWait))
	require.NoError(t, SendPill(&g.cell, g, NewPill(Finished)))
	require.NoError(t, Send(&g.cell, g, &lateNote{}, (*deadGated).onNote)) // queued behind the pill
	close(g.gate)
	err = e.Stop(context.Background())
	require.ErrorIs(t, err, ErrUndelivered)
	assert.Contains(t, err.Error(), "1 sent to terminated actors")
	assert.Contains(t, err.Error(), "*executor.lateNote")
}
