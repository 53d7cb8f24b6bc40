package actor_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actord/actord/actor"
)

// echoReq asks an echoer for its N back.
type echoReq struct {
	actor.Request[int]
	N int
}

// echoer replies to echoReq and counts what it received.
type echoer struct {
	actor.Actor
	got atomic.Int32
}

func (e *echoer) onEcho(r *echoReq) actor.Allocation {
	e.got.Add(1)
	_ = r.Reply(r.N)
	return actor.Nodelete
}

// AskAsync with the zero replyTo port is refused: its reply would have
// nowhere to go. Nothing is sent.
func TestAskAsyncZeroReplyToRefused(t *testing.T) {
	sys, err := actor.Start(actor.WithWorkers(1))
	require.NoError(t, err)
	e, err := actor.Spawn(sys, &echoer{})
	require.NoError(t, err)
	p, err := actor.Bind(e, (*echoer).onEcho)
	require.NoError(t, err)

	err = actor.AskAsync(p, &echoReq{N: 1}, actor.Port[*actor.Reply[int]]{}, 0)
	require.ErrorIs(t, err, actor.ErrNotSpawned)
	assert.Contains(t, err.Error(), "replyTo")
	err = actor.AskAsync(p, &echoReq{N: 2}, actor.Port[*actor.Reply[int]]{}, time.Second)
	require.ErrorIs(t, err, actor.ErrNotSpawned)

	// The echoer received neither request: a request it does receive
	// (through Ask) is its first.
	v, err := actor.Ask(context.Background(), p, &echoReq{N: 3})
	require.NoError(t, err)
	assert.Equal(t, 3, v)
	assert.Equal(t, int32(1), e.got.Load())
	st, err := sys.Stats()
	require.NoError(t, err)
	assert.Zero(t, st.AsksPending, "a refused request is not pending")
	require.NoError(t, actor.SendPill(e, actor.FinishedMsg))
	require.NoError(t, sys.Stop(context.Background()))
}
