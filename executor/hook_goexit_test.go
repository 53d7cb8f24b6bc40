package executor

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exitHooked is an extended actor (it has a Stopped hook) whose
// termination hooks call runtime.Goexit when named in exitIn. Its
// behaviour returns status, after panicking if boom.
type exitHooked struct {
	cell   Cell
	exitIn []string
	status Allocation
	boom   bool
	mu     sync.Mutex
	ran    []string // the hooks that ran, in order
}

func (a *exitHooked) hook(name string) {
	a.mu.Lock()
	a.ran = append(a.ran, name)
	a.mu.Unlock()
	if slices.Contains(a.exitIn, name) {
		runtime.Goexit()
	}
}

func (a *exitHooked) hooksRan() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.ran)
}

func (a *exitHooked) Stopped(Reason) { a.hook("Stopped") }
func (a *exitHooked) Destroy()       { a.hook("Destroy") }
func (a *exitHooked) Release()       { a.hook("Release") }

func (a *exitHooked) onReq(*greq) Allocation {
	if a.boom {
		panic("boom")
	}
	return a.status // the request is not answered
}

// panicsTo collects the panics OnError is told of.
type panicsTo struct {
	mu sync.Mutex
	pe []*PanicError
}

func (p *panicsTo) onError(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pe = append(p.pe, err.(*PanicError))
}

func (p *panicsTo) goexits() (goexits, panics int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pe := range p.pe {
		if pe.Goexit {
			goexits++
		} else {
			panics++
		}
	}
	return goexits, panics
}

// runtime.Goexit in a termination hook of an extended actor (which
// safeCall cannot stop) does not stop the termination: the later hooks
// run, watchers are notified, a request the behaviour did not answer is
// failed, the Goexit is recorded once, the worker goes on, and Stop finds
// no actor alive. It used to leave the actor ending for ever.
func TestGoexitInTerminationHooks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		exitIn []string
		boom   bool // the behaviour panics: the termination starts in recovered
	}{
		{"Stopped", []string{"Stopped"}, false},
		{"Destroy", []string{"Destroy"}, false},
		{"Release", []string{"Release"}, false},
		{"all three", []string{"Stopped", "Destroy", "Release"}, false},
		{"Stopped after a panic", []string{"Stopped"}, true},
		{"Stopped and Destroy after a panic", []string{"Stopped", "Destroy"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pt panicsTo
			e, err := Start(Config{Workers: 1, Queues: 1, OnError: pt.onError})
			require.NoError(t, err)
			a := &exitHooked{exitIn: tc.exitIn, status: Delete, boom: tc.boom}
			require.NoError(t, Spawn(e, &a.cell, a))
			p, err := Bind(&a.cell, a, (*exitHooked).onReq)
			require.NoError(t, err)
			notice, err := WatchChan(p)
			require.NoError(t, err)

			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a request never failed never is
			defer cancel()
			_, err = Ask(ctx, p, &greq{})
			if tc.boom {
				assert.ErrorIs(t, err, ErrPanic, "the request its behaviour panicked on")
			} else {
				assert.ErrorIs(t, err, ErrTerminated, "the request its actor did not answer")
			}
			tm := notified(t, "watch", notice)
			want := []string{"Stopped", "Destroy", "Release"} // Delete: every hook, Goexit or not
			if tc.boom {
				assert.Equal(t, ReasonPanic, tm.Reason)
				want = []string{"Stopped"} // Finished after a panic: no Destroy, no Release
			} else {
				assert.Equal(t, ReasonNormal, tm.Reason)
			}

			// The worker goes on.
			b := &exitHooked{status: Nodelete}
			require.NoError(t, Spawn(e, &b.cell, b))
			bp, err := Bind(&b.cell, b, (*exitHooked).onReq)
			require.NoError(t, err)
			require.NoError(t, bp.Send(&greq{}))
			require.NoError(t, SendPill(&b.cell, b, NewPill(Finished)))

			stopErr := e.Stop(context.Background())
			assert.NotErrorIs(t, stopErr, ErrActorsAlive, "every actor terminated")
			assert.ErrorIs(t, stopErr, ErrPanic)
			assert.Equal(t, want, a.hooksRan())
			goexits, panics := pt.goexits()
			ran := a.hooksRan()
			wantGoexits := 0
			for _, h := range tc.exitIn {
				if slices.Contains(ran, h) {
					wantGoexits++
				}
			}
			assert.Equal(t, wantGoexits, goexits, "each Goexit recorded once")
			if tc.boom {
				assert.Equal(t, 1, panics, "the behaviour's panic is recorded")
			} else {
				assert.Zero(t, panics)
			}
			assert.Equal(t, uint64(wantGoexits+panics), e.Stats().Total().Panics)
			assert.Zero(t, e.Stats().LiveActors)
		})
	}
}

// stopExiter is extended (Stopped hook) and calls runtime.Goexit in it.
type stopExiter struct {
	cell Cell
	ran  chan struct{}
}

func (a *stopExiter) Stopped(Reason) { close(a.ran); runtime.Goexit() }

// A Stopped hook that a forced Stop runs (on no worker) and that calls
// runtime.Goexit ends a goroutine of the Stop's own, not the caller's:
// Stop returns, and the Goexit is among its errors.
func TestGoexitInStoppedHookAtForcedStop(t *testing.T) {
	e, err := Start(Config{Workers: 1})
	require.NoError(t, err)
	a := &stopExiter{ran: make(chan struct{})}
	require.NoError(t, Spawn(e, &a.cell, a))
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // forced at once: a is alive
	returned := make(chan error, 1)
	go func() {
		defer close(returned)
		returned <- e.Stop(ctx)
	}()
	err, ok := <-returned
	require.True(t, ok, "Stop's goroutine ended without Stop returning")
	<-a.ran
	var pe *PanicError
	require.ErrorAs(t, err, &pe)
	assert.True(t, pe.Goexit)
}

// startExiter calls runtime.Goexit in its Started hook or its Reset
// function (where), and panics on its first message.
type startExiter struct {
	cell  Cell
	where string
	n     int
	gate  chan struct{} // if set, Started waits for it (the test binds and watches first)
}

func (a *startExiter) Started() {
	if a.gate != nil {
		<-a.gate
	}
	if a.where == "Started" {
		runtime.Goexit()
	}
}

func (a *startExiter) reset() {
	if a.where == "Reset" {
		runtime.Goexit()
	}
}

func (a *startExiter) onReq(*greq) Allocation {
	if a.n++; a.n == 1 {
		panic("boom") // Restart: Reset runs
	}
	return Nodelete
}

// runtime.Goexit in a Started hook or a Reset function terminates the
// actor (ReasonPanic) as a panic there does. It used to be taken for a
// behaviour's panic on an internal message (restarting the actor until its
// budget ran out), or, in Reset, to leave the actor suspended for ever.
func TestGoexitInStartedAndReset(t *testing.T) {
	for _, where := range []string{"Started", "Reset"} {
		t.Run(where, func(t *testing.T) {
			var pt panicsTo
			e, err := Start(Config{Workers: 1, OnError: pt.onError})
			require.NoError(t, err)
			a := &startExiter{where: where, gate: make(chan struct{})}
			require.NoError(t, SpawnWith(e, &a.cell, a, SpawnOptions{OnPanic: Restart, Reset: a.reset}))
			p, err := Bind(&a.cell, a, (*startExiter).onReq)
			require.NoError(t, err)
			notice, err := WatchChan(p)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			close(a.gate)
			_, err = Ask(ctx, p, &greq{})
			if where == "Reset" { // the behaviour panicked on it, then Reset ended the actor
				assert.ErrorIs(t, err, ErrPanic)
			} else {
				assert.ErrorIs(t, err, ErrTerminated)
			}
			tm := notified(t, "watch", notice)
			assert.Equal(t, ReasonPanic, tm.Reason)
			var pe *PanicError
			require.ErrorAs(t, tm.Err, &pe)
			assert.True(t, pe.Goexit)
			assert.Equal(t, "executor: "+where+" hook of *executor.startExiter called runtime.Goexit (worker 0)", pe.Error())

			stopErr := e.Stop(context.Background())
			assert.NotErrorIs(t, stopErr, ErrActorsAlive)
			goexits, panics := pt.goexits()
			assert.Equal(t, 1, goexits, "the Goexit, recorded once")
			if where == "Reset" {
				assert.Equal(t, 1, panics, "the behaviour's panic")
			} else {
				assert.Zero(t, panics)
			}
			assert.Zero(t, e.Stats().Total().Restarts-uint64(panics), "no restart but the one the panic asked for")
		})
	}
}

// goexitMsg's Destroy hook calls runtime.Goexit.
type goexitMsg struct{ Message }

func (*goexitMsg) Destroy() { runtime.Goexit() }

// destroyPanicsGoexitMsg is a plain actor whose Destroy hook panics; its behaviour
// gives its message the Destroy status and ends the actor.
type destroyPanicsGoexitMsg struct{ cell Cell }

func (*destroyPanicsGoexitMsg) Destroy() { panic("destroy") }

func (*destroyPanicsGoexitMsg) onMsg(m *goexitMsg) Allocation {
	m.SetAllocation(Destroy)
	return Destroy
}

type bangMsg struct{ Message }

// panicky is a plain actor whose behaviour panics.
type panicky struct{ cell Cell }

func (*panicky) onBang(*bangMsg) Allocation { panic("bang") }

// A runtime.Goexit out of a message's hook that runs after its actor's
// Destroy hook panicked (recovered runs it: skippedMessageDone) ends the
// worker goroutine inside the message hook; the goroutine that resumes
// the worker runs nothing of it, so a behaviour's later panic terminates
// its actor as any behaviour panic does (the worker's mode used to stay
// "in a message hook", and the panicking actor lived on).
func TestGoexitInSkippedMessageHookLeavesNoMode(t *testing.T) {
	var pt panicsTo
	e, err := Start(Config{Workers: 1, Queues: 1, OnError: pt.onError})
	require.NoError(t, err)
	a := &destroyPanicsGoexitMsg{}
	require.NoError(t, Spawn(e, &a.cell, a))
	require.NoError(t, Send(&a.cell, a, &goexitMsg{}, (*destroyPanicsGoexitMsg).onMsg))
	require.Eventually(t, func() bool { return !a.cell.Alive() }, 10*time.Second, time.Millisecond)

	b := &panicky{}
	require.NoError(t, Spawn(e, &b.cell, b))
	require.NoError(t, Send(&b.cell, b, &bangMsg{}, (*panicky).onBang))
	require.Eventually(t, func() bool { return !b.cell.Alive() }, 10*time.Second, time.Millisecond,
		"the behaviour's panic terminates its actor")
	assert.NotErrorIs(t, e.Stop(context.Background()), ErrActorsAlive)
}
