package actor_test

import (
	"context"
	"fmt"
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

// panicky panics on every kick; resets counts its Reset calls.
type panicky struct {
	actor.Actor
	resets atomic.Int32
}

type poke struct{ actor.Message }

func (*panicky) onPoke(*poke) actor.Allocation { panic("poke") }

// Budget{MaxRestarts: NoRestarts} allows no restart: the first panic
// terminates the actor with ReasonBudget, without running Reset, and Stop
// reports the panic. (MaxRestarts 0 is the default budget: 10 restarts.)
func TestBudgetNoRestartsTerminatesAtFirstPanic(t *testing.T) {
	sys, err := actor.Start(actor.WithWorkers(1), actor.WithErrorHandler(func(error) {}))
	require.NoError(t, err)
	a := &panicky{}
	_, err = actor.Spawn(sys, a, actor.WithRestart(func() { a.resets.Add(1) }, actor.Budget{MaxRestarts: actor.NoRestarts, Within: time.Minute}))
	require.NoError(t, err)
	p, err := actor.Bind(a, (*panicky).onPoke)
	require.NoError(t, err)
	ch, err := actor.WatchChan(p)
	require.NoError(t, err)
	require.NoError(t, actor.Send(a, &poke{}, (*panicky).onPoke))
	_ = actor.SendPill(a, actor.FinishedMsg) // ends a restarted actor (ReasonNormal); refused once it has terminated
	term := <-ch
	assert.Equal(t, actor.ReasonBudget, term.Reason, "terminated by the first panic")
	assert.Zero(t, a.resets.Load(), "no restart: Reset never ran")
	st, err := sys.Stats()
	require.NoError(t, err)
	assert.Zero(t, st.Total().Restarts)
	assert.Equal(t, uint64(1), st.Total().BudgetExhausted)
	assert.ErrorIs(t, sys.Stop(context.Background()), actor.ErrPanic, "the panic terminated the actor: Stop reports it")

	// MaxRestarts 0 is the default, 10 restarts, for a Budget that sets
	// other fields too.
	sys, err = actor.Start(actor.WithWorkers(1), actor.WithErrorHandler(func(error) {}))
	require.NoError(t, err)
	b := &panicky{}
	_, err = actor.Spawn(sys, b, actor.WithRestart(func() { b.resets.Add(1) }, actor.Budget{MaxRestarts: 0, Within: time.Hour}))
	require.NoError(t, err)
	pb, err := actor.Bind(b, (*panicky).onPoke)
	require.NoError(t, err)
	ch, err = actor.WatchChan(pb)
	require.NoError(t, err)
	for range 11 {
		require.NoError(t, actor.Send(b, &poke{}, (*panicky).onPoke))
	}
	assert.Equal(t, actor.ReasonBudget, (<-ch).Reason)
	assert.Equal(t, int32(10), b.resets.Load())
	assert.ErrorIs(t, sys.Stop(context.Background()), actor.ErrPanic)
}

// A MinBackoff above a MaxBackoff other than 0 (no cap) is refused.
func TestBudgetMinBackoffAboveMaxBackoffRefused(t *testing.T) {
	sys, err := actor.Start(actor.WithWorkers(1))
	require.NoError(t, err)
	_, err = actor.Spawn(sys, &panicky{}, actor.WithRestart(nil, actor.Budget{MinBackoff: time.Second, MaxBackoff: time.Millisecond}))
	require.ErrorIs(t, err, actor.ErrConfig)
	assert.Contains(t, err.Error(), "MinBackoff")
	a, err := actor.Spawn(sys, &panicky{}, actor.WithRestart(nil, actor.Budget{MinBackoff: time.Second}))
	require.NoError(t, err, "MaxBackoff 0: no cap")
	require.NoError(t, actor.SendPill(a, actor.FinishedMsg))
	require.NoError(t, sys.Stop(context.Background()))
}

// badStart's Started hook panics on its run number failAt (1: the first).
type badStart struct {
	actor.Actor
	gate         chan struct{} // the first Started waits for it
	runs, failAt int
	resets       atomic.Int32
	got          atomic.Int32
}

func (b *badStart) Started() {
	if b.runs == 0 {
		<-b.gate
	}
	b.runs++
	if b.runs == b.failAt {
		panic("cannot start")
	}
}

func (b *badStart) onPoke(m *poke) actor.Allocation {
	if b.got.Add(1) == 1 && b.failAt > 1 {
		panic("poke") // restart: Started runs again
	}
	return actor.Nodelete
}

// A panic in the Started hook terminates the actor (ReasonPanic) whatever
// its directive, WithRestart included: the hook runs before the first
// message and after each restart, and a start that fails is not retried.
// Reset does not run for it; the messages still queued are dead letters;
// Stop reports the panic.
func TestStartedPanicUnderRestartTerminates(t *testing.T) {
	for _, failAt := range []int{1, 2} { // at the spawn, after a restart
		t.Run(fmt.Sprint("run=", failAt), func(t *testing.T) {
			sys, err := actor.Start(actor.WithWorkers(1), actor.WithErrorHandler(func(error) {}))
			require.NoError(t, err)
			b := &badStart{failAt: failAt, gate: make(chan struct{})}
			_, err = actor.Spawn(sys, b, actor.WithRestart(func() { b.resets.Add(1) }, actor.Budget{MaxRestarts: -1}))
			require.NoError(t, err)
			p, err := actor.Bind(b, (*badStart).onPoke)
			require.NoError(t, err)
			ch, err := actor.WatchChan(p)
			require.NoError(t, err)
			require.NoError(t, p.Send(&poke{}))
			require.NoError(t, p.Send(&poke{}))
			close(b.gate)
			assert.Equal(t, actor.ReasonPanic, (<-ch).Reason)
			assert.Equal(t, int32(failAt-1), b.resets.Load(), "Reset ran for the behaviour's panic only")
			assert.Equal(t, int32(failAt-1), b.got.Load(), "no message after the failed start")
			err = sys.Stop(context.Background())
			assert.ErrorIs(t, err, actor.ErrUndelivered, "the messages queued behind the failed start")
			var pe *actor.PanicError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, "cannot start", pe.Value)
		})
	}
}
