package executor

import (
	"context"
	"errors"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stopHooked's Stopped hook records whether its actor already counted as
// terminated (Alive false) while it ran, and may call Stop.
type stopHooked struct {
	cell       Cell
	aliveInRun atomic.Int32 // 1: Alive was true in the hook, 2: false
	e          *Executor
	stopErr    chan error // if set, the hook calls Stop and sends its error
}

func (a *stopHooked) Stopped(Reason) {
	if a.cell.Alive() {
		a.aliveInRun.Store(1)
	} else {
		a.aliveInRun.Store(2)
	}
	if a.stopErr != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		a.stopErr <- a.e.Stop(ctx)
	}
}

// After a forced Stop, an actor still alive counts as terminated (Alive
// false, and it may be spawned elsewhere) only once its Stopped hook has
// run: Alive used to turn false when the workers exited, before the hooks,
// so the hook could run concurrently with the actor's next incarnation.
func TestForcedStopRunsHooksBeforeAliveTurnsFalse(t *testing.T) {
	e, err := Start(Config{Workers: 1})
	require.NoError(t, err)
	a := &stopHooked{}
	require.NoError(t, Spawn(e, &a.cell, a))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, e.Stop(ctx), ErrActorsAlive)
	assert.Equal(t, int32(1), a.aliveInRun.Load(), "the Stopped hook ran after Alive reported false")
	assert.False(t, a.cell.Alive())
	assert.Zero(t, e.Stats().LiveActors, "the actor counts as terminated")
	e2, err := Start(Config{Workers: 1})
	require.NoError(t, err)
	require.NoError(t, Spawn(e2, &a.cell, a), "spawned elsewhere after the forced stop")
	require.NoError(t, SendPill(&a.cell, a, NewPill(Finished)))
	require.NoError(t, e2.Stop(context.Background()))
}

// A Stopped hook that the forced Stop runs (on Stop's goroutine) and that
// calls Stop gets ErrStopInBehaviour, as from a behaviour; it used to wait
// for the Stop in progress, that is for itself.
func TestStopFromAHookTheStopRuns(t *testing.T) {
	e, err := Start(Config{Workers: 1})
	require.NoError(t, err)
	a := &stopHooked{e: e, stopErr: make(chan error, 1)}
	require.NoError(t, Spawn(e, &a.cell, a))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, e.Stop(ctx), ErrActorsAlive)
	assert.ErrorIs(t, <-a.stopErr, ErrStopInBehaviour)
	assert.ErrorIs(t, e.Stop(context.Background()), ErrStopped, "a Stop after it returned")
}

// The zero Executor is "not started": Spawn and Stop say so instead of
// panicking.
func TestZeroExecutor(t *testing.T) {
	var e Executor
	a := &stopHooked{}
	assert.ErrorIs(t, Spawn(&e, &a.cell, a), ErrNotStarted)
	assert.ErrorIs(t, SpawnWith(&e, &a.cell, a, SpawnOptions{MailboxBound: 1}), ErrNotStarted)
	assert.ErrorIs(t, e.Stop(context.Background()), ErrNotStarted)
	assert.NotPanics(t, func() { _ = e.Stats() })
}

type exitGate struct {
	cell  Cell
	began chan struct{} // if set, closed when the first message's behaviour begins
	gate  chan struct{}
	n     int
}

func onExitGate(a *exitGate, _ *gtick) Allocation {
	a.n++
	switch a.n {
	case 1:
		if a.began != nil {
			close(a.began)
		}
		<-a.gate
	case 2:
		runtime.Goexit()
	}
	return Nodelete
}

var queuedAtStopRe = regexp.MustCompile(`(\d+) still queued at stop`)

// queuedAtStop reads, from Stop's error, the messages still queued at the
// end.
func queuedAtStop(err error) uint64 {
	if err == nil {
		return 0
	}
	m := queuedAtStopRe.FindStringSubmatch(err.Error())
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseUint(m[1], 10, 64)
	return n
}

// A behaviour that calls runtime.Goexit as a clean Stop begins: the rest
// of its batch is counted as dead letters (its actor has terminated), not
// as dropped at a forced stop, and the statistics add up (sent = processed
// + dead letters + dropped + queued). OnError, which runs on the worker
// while Goexit unwinds, waits until Stop has set shutdown, so that the
// worker's exit happens during the stop.
func TestGoexitAtCleanStopAccounting(t *testing.T) {
	var e *Executor
	var armed atomic.Bool
	var ready = make(chan struct{})
	e, err := Start(Config{Workers: 1, Queues: 1, OnError: func(error) {
		<-ready
		for armed.Load() && !e.shutdown.Load() {
			time.Sleep(time.Millisecond)
		}
	}})
	close(ready)
	require.NoError(t, err)
	a := &exitGate{began: make(chan struct{}), gate: make(chan struct{})}
	require.NoError(t, Spawn(e, &a.cell, a))
	// The first message is gulped alone, the four others together once it
	// returns: the Goexit leaves three messages in the batch. (Sent at
	// once, any of them could be gulped with the first, leaving the rest
	// in the mailbox, counted as queued at stop.)
	require.NoError(t, Send(&a.cell, a, &gtick{}, onExitGate))
	<-a.began
	for range 4 {
		require.NoError(t, Send(&a.cell, a, &gtick{}, onExitGate))
	}
	armed.Store(true)
	done := make(chan error)
	go func() { done <- e.Stop(context.Background()) }()
	close(a.gate) // message 1 returns, message 2 calls Goexit: the actor terminates
	err = <-done
	assert.NotErrorIs(t, err, ErrActorsAlive)
	var pe *PanicError
	require.True(t, errors.As(err, &pe))
	assert.True(t, pe.Goexit)
	st := e.Stats()
	tot := st.Total()
	assert.Zero(t, tot.Dropped, "a clean stop drops nothing from batches")
	assert.Equal(t, uint64(3), tot.DeadLetters, "the three messages after the Goexit")
	assert.Equal(t, st.MessagesSent, tot.MessagesProcessed()+tot.DeadLetters+tot.Dropped+queuedAtStop(err))
}

type askedPanics struct{ cell Cell }

func onAskedPanics(*askedPanics, *greq) Allocation { panic("behaviour panics") }

// An AskFunc function that panics when the request ends is recorded, not
// left to unwind its caller: here a worker failing the request inside its
// recovery from the panicking behaviour, where the panic killed the
// process.
func TestAskFuncFunctionPanics(t *testing.T) {
	e, err := Start(Config{Workers: 1, OnError: func(error) {}})
	require.NoError(t, err)
	a := &askedPanics{}
	require.NoError(t, Spawn(e, &a.cell, a))
	p, err := Bind(&a.cell, a, onAskedPanics)
	require.NoError(t, err)
	called := make(chan error, 1)
	require.NoError(t, AskFunc(p, &greq{}, 0, func(_ int, err error) {
		called <- err
		panic("f panics on the error")
	}))
	assert.ErrorIs(t, <-called, ErrPanic)
	waitFor(t, "both panics recorded", func() bool { return e.Stats().Total().Panics >= 1 })
	err = e.Stop(context.Background())
	var found bool
	for _, x := range unwrapAll(err) {
		var pe *PanicError
		if errors.As(x, &pe) && pe.fn == "AskFunc function" {
			found = true
			assert.Equal(t, "executor: AskFunc function panicked: f panics on the error", pe.Error())
		}
	}
	assert.True(t, found, "the function's panic is an error of Stop: %v", err)
}

// unwrapAll returns the errors joined in err (errors.Join), or err alone.
func unwrapAll(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// destroyPanics answers nothing and terminates; its Destroy hook panics.
type destroyPanics struct{ cell Cell }

func (*destroyPanics) Destroy()                        { panic("actor hook") }
func onDestroyPanics(*destroyPanics, *greq) Allocation { return Delete }

// A request whose receiver terminates without answering ends with
// ErrTerminated even when the actor's Destroy hook panics: the panic used to
// skip the request's failure, and the asker waited for its context.
func TestRequestFailedWhenActorHookPanics(t *testing.T) {
	e, err := Start(Config{Workers: 1, OnError: func(error) {}})
	require.NoError(t, err)
	a := &destroyPanics{}
	require.NoError(t, Spawn(e, &a.cell, a))
	p, err := Bind(&a.cell, a, onDestroyPanics)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = Ask(ctx, p, &greq{})
	assert.ErrorIs(t, err, ErrTerminated)
	assert.ErrorIs(t, e.Stop(context.Background()), ErrPanic)
}

// Stats.MessagesSent never decreases between snapshots of a running
// system, also while control envelopes (drain tokens of bounded actors)
// are sent: a snapshot used to subtract controls whose pushes it had not
// counted, and a Prometheus counter went back. At the end, quiet, it is
// exact: what was delivered.
func TestMessagesSentNeverDecreases(t *testing.T) {
	e, err := Start(Config{Workers: 2})
	require.NoError(t, err)
	sinks := make([]*countSink, 8)
	for i := range sinks {
		sinks[i] = &countSink{}
		require.NoError(t, SpawnWith(e, &sinks[i].cell, sinks[i], SpawnOptions{MailboxBound: 1 << 20, Overflow: DropOldest}))
	}
	stop := make(chan struct{})
	var sent atomic.Uint64
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				s := sinks[(g+i)%len(sinks)]
				if Send(&s.cell, s, &item{}, (*countSink).onItem) == nil {
					sent.Add(1)
				}
			}
		})
	}
	var prev uint64
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		n := e.Stats().MessagesSent
		require.GreaterOrEqual(t, n, prev, "MessagesSent went back")
		prev = n
	}
	close(stop)
	wg.Wait()
	for _, s := range sinks {
		require.NoError(t, SendPill(&s.cell, s, NewPill(Finished)))
	}
	require.NoError(t, e.Stop(context.Background()))
	var delivered uint64
	for _, s := range sinks {
		delivered += uint64(s.n.Load())
	}
	st := e.Stats()
	assert.Zero(t, st.MailboxDroppedOldest)
	assert.Equal(t, sent.Load()+uint64(len(sinks)), st.MessagesSent, "sends and pills")
	assert.Equal(t, sent.Load(), delivered)
}

// countSink counts what it receives.
type countSink struct {
	cell Cell
	n    atomic.Int64
}

func (s *countSink) onItem(*item) Allocation {
	s.n.Add(1)
	return Nodelete
}

// Control envelopes (a drain token, a Started hook's start) are not
// messages: one still queued at Stop, or dropped from a batch at a forced
// stop, is not reported undelivered, and the statistics add up. One used to
// be counted among "still queued at stop" (and the dead letters of a
// batch), so that a stop reported an undelivered message nobody sent.
func TestControlsNotCountedUndelivered(t *testing.T) {
	e, err := Start(Config{Workers: 1, Queues: 2, Placement: PlaceGlobal})
	require.NoError(t, err)
	g := newGated()
	require.NoError(t, Spawn(e, &g.cell, g))
	hp, err := Bind(&g.cell, g, (*gated).onHold)
	require.NoError(t, err)
	require.NoError(t, hp.Send(&hold{}))
	<-g.began           // the only worker is held
	a := &startExiter{} // extended (Started), with a private queue (Restart)
	require.NoError(t, SpawnWith(e, &a.cell, a, SpawnOptions{OnPanic: Restart}))
	require.NotEqual(t, g.cell.mb.Load(), a.cell.mb.Load(), "a must have a mailbox of its own")
	p, err := Bind(&a.cell, a, (*startExiter).onReq)
	require.NoError(t, err)
	require.NoError(t, p.Send(&greq{})) // queued privately; a drain token in the mailbox

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // forced: a is alive
	done := make(chan error)
	go func() { done <- e.Stop(ctx) }()
	for !e.shutdown.Load() {
		time.Sleep(time.Millisecond)
	}
	close(g.gate)
	err = <-done
	require.ErrorIs(t, err, ErrActorsAlive)
	st := e.Stats()
	tot := st.Total()
	assert.Equal(t, uint64(1), queuedAtStop(err), "the request, not the start and drain tokens")
	assert.Equal(t, st.MessagesSent, tot.MessagesProcessed()+tot.DeadLetters+tot.Dropped+queuedAtStop(err))
}
