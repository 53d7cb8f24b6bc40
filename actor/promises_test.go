package actor_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/executor"
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

// Register on a stopped system is refused (ErrStopped), even with a live
// port of another system, and creates no registry that would keep the
// stopped executor reachable while that port lives. A name registered just
// before its system stopped is dropped, with the executor, by the next
// system that registers its first name, whatever its port.
func TestRegisterOnStoppedSystemRefused(t *testing.T) {
	live := namesSystem(t)
	_, gp, _ := spawnGreeter(t, live) // alive until the end of the test

	refused := func() weak.Pointer[executor.Executor] {
		sys, err := actor.Start(actor.WithWorkers(1))
		require.NoError(t, err)
		require.NoError(t, sys.Stop(context.Background()))
		err = actor.Register(sys, "greeter", gp)
		require.ErrorIs(t, err, actor.ErrStopped)
		_, err = actor.Lookup[*greet](sys, "greeter")
		require.ErrorIs(t, err, actor.ErrNoName)
		return weak.Make(sys.Executor())
	}()
	stoppedAfter := func() weak.Pointer[executor.Executor] {
		sys, err := actor.Start(actor.WithWorkers(1))
		require.NoError(t, err)
		require.NoError(t, actor.Register(sys, "greeter", gp), "a running system: the port of another system may be named")
		require.NoError(t, actor.Register(sys, "greeter2", gp))
		require.NoError(t, sys.Stop(context.Background()))
		_, err = actor.Lookup[*greet](sys, "greeter")
		require.ErrorIs(t, err, actor.ErrNoName, "a stopped system has no names, whatever their ports")
		require.ErrorIs(t, actor.Unregister(sys, "greeter"), actor.ErrNoName)
		return weak.Make(sys.Executor())
	}()

	other := namesSystem(t)
	require.NoError(t, actor.Register(other, "greeter", gp)) // other's first name: sweeps the rest
	require.Eventually(t, func() bool {
		runtime.GC()
		return refused.Value() == nil && stoppedAfter.Value() == nil
	}, 10*time.Second, 10*time.Millisecond, "a stopped system's executor is still reachable while a port it named lives")
	require.True(t, gp.Alive())
}
