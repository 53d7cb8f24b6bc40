package executor

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keeper keeps every request it receives without answering; an end
// message terminates it.
type keeper struct {
	cell Cell
	kept chan *greq
}

type kend struct{ Message }

func (k *keeper) onReq(r *greq) Allocation {
	k.kept <- r
	return Nodelete
}

func (k *keeper) onEnd(*kend) Allocation { return Finished }

// TestStopFromTimerGoroutineDoesNotDeadlock: an AskFunc function that its
// timeout calls on the timer goroutine calls Stop. Stop must not wait for
// the timer goroutine (itself): it returns ErrStopInBehaviour, as from a
// behaviour, and a later Stop from outside stops the system.
func TestStopFromTimerGoroutineDoesNotDeadlock(t *testing.T) {
	e, err := Start(Config{Workers: 1, Queues: 1})
	require.NoError(t, err)
	k := &keeper{kept: make(chan *greq, 1)}
	require.NoError(t, Spawn(e, &k.cell, k))
	p, err := Bind(&k.cell, k, (*keeper).onReq)
	require.NoError(t, err)
	got := make(chan error, 1)
	require.NoError(t, AskFunc(p, &greq{}, time.Millisecond, func(_ int, err error) {
		// The actor is alive: this Stop is forced when ctx ends, and
		// then closes the timer set.
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		got <- e.Stop(ctx)
	}))
	<-k.kept // the actor keeps the request: only its timeout ends it
	select {
	case err := <-got:
		assert.ErrorIs(t, err, ErrStopInBehaviour)
	case <-time.After(30 * time.Second):
		t.Fatal("Stop called on the timer goroutine did not return: it waits for itself")
	}
	require.NoError(t, Send(&k.cell, k, &kend{}, (*keeper).onEnd))
	assert.NoError(t, e.Stop(context.Background()))
}

// ender ends on its first request, without answering, after its gate
// opens; onMsg takes plain messages.
type ender struct {
	cell  Cell
	began chan struct{}
	gate  chan struct{}
}

type emsg struct{ Message }

func (a *ender) onReq(*greq) Allocation {
	a.began <- struct{}{}
	<-a.gate
	return Finished
}

func (a *ender) onMsg(*emsg) Allocation { return Nodelete }

// TestStopUndeliveredMatchesStatsDeadLetters: a message queued for an
// actor that then terminates, still queued when a clean Stop closes the
// mailboxes, was sent to a terminated actor: Stop reports it as such, and
// Stats counts it among the dead letters, so that every message is in
// exactly one counter. The AskFunc function of the terminating request
// runs on the worker after the actor is gone; it holds the worker until
// Stop has decided, so that the message is still queued then.
func TestStopUndeliveredMatchesStatsDeadLetters(t *testing.T) {
	e, err := Start(Config{Workers: 1, Queues: 1})
	require.NoError(t, err)
	a := &ender{began: make(chan struct{}, 1), gate: make(chan struct{})}
	require.NoError(t, Spawn(e, &a.cell, a))
	reqs, err := Bind(&a.cell, a, (*ender).onReq)
	require.NoError(t, err)
	asked := make(chan error, 1)
	require.NoError(t, AskFunc(reqs, &greq{}, 0, func(_ int, err error) {
		for !e.shutdown.Load() { // Stop has decided: no actor is alive
			time.Sleep(time.Millisecond)
		}
		asked <- err
	}))
	<-a.began
	require.NoError(t, Send(&a.cell, a, &emsg{}, (*ender).onMsg)) // queued behind the request
	stopped := make(chan error, 1)
	go func() { stopped <- e.Stop(context.Background()) }()
	close(a.gate)
	assert.ErrorIs(t, <-asked, ErrTerminated)
	err = <-stopped
	require.ErrorIs(t, err, ErrUndelivered)
	assert.Contains(t, err.Error(), "1 messages (1 sent to terminated actors, 0 still queued at stop")
	assert.EqualValues(t, 1, e.Stats().Total().DeadLetters, "Stats.DeadLetters counts what Stop reports sent to terminated actors")
}

// flusher is an idle actor whose Stopped hook must run (to flush state).
type flusher struct {
	cell    Cell
	stopped chan Reason
}

func (f *flusher) Stopped(why Reason) { f.stopped <- why }

func (f *flusher) onTick(*gtick) Allocation { return Nodelete }

// TestForcedStopRunsStoppedHooksOfIdleActors: a forced Stop whose worker
// is stuck in another actor's behaviour past the grace still runs the
// Stopped hook of an idle actor before it returns, and its watchers are
// told after the hook.
func TestForcedStopRunsStoppedHooksOfIdleActors(t *testing.T) {
	e, err := Start(Config{Workers: 1})
	require.NoError(t, err)
	s := newGated()
	require.NoError(t, Spawn(e, &s.cell, s))
	f := &flusher{stopped: make(chan Reason, 1)}
	require.NoError(t, Spawn(e, &f.cell, f))
	fp, err := Bind(&f.cell, f, (*flusher).onTick)
	require.NoError(t, err)
	require.NoError(t, Send(&f.cell, f, &gtick{}, (*flusher).onTick)) // it has run: idle now
	watch, err := WatchChan(fp)
	require.NoError(t, err)
	require.NoError(t, Send(&s.cell, s, &hold{}, (*gated).onHold))
	<-s.began
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = e.Stop(ctx) // forced; the worker stays stuck past the grace
	require.ErrorIs(t, err, ErrActorsAlive)
	select {
	case why := <-f.stopped:
		assert.Equal(t, ReasonStopped, why)
	default:
		t.Error("Stop returned without running the idle actor's Stopped hook")
	}
	select {
	case tm := <-watch:
		assert.Equal(t, ReasonStopped, tm.Reason)
	default:
		t.Error("Stop returned without notifying the idle actor's watcher")
	}
	close(s.gate)
}

// starterActor has a Started hook: its spawn queues a control envelope.
type starterActor struct{ cell Cell }

func (*starterActor) Started() {}

// TestStatsQueuedMessagesCountsUserMessagesOnly: QueuedMessages counts the
// messages waiting for actors, those in the private queues of bounded
// actors included, and not the executor's control envelopes (a Started
// hook's start, a private queue's drain token).
func TestStatsQueuedMessagesCountsUserMessagesOnly(t *testing.T) {
	e, s, _, ticks := heldGated(t, SpawnOptions{})
	require.NoError(t, ticks.Send(&gtick{})) // one user message in the mailbox
	st := &starterActor{}
	require.NoError(t, Spawn(e, &st.cell, st)) // a start envelope
	b := newGated()
	require.NoError(t, SpawnWith(e, &b.cell, b, SpawnOptions{MailboxBound: 8}))
	bt, err := Bind(&b.cell, b, (*gated).onTick)
	require.NoError(t, err)
	for range 3 {
		require.NoError(t, bt.Send(&gtick{})) // its private queue, and one drain token
	}
	assert.Equal(t, 4, e.Stats().QueuedMessages)
	close(s.gate)
	require.NoError(t, Send(&s.cell, s, &kendG{}, (*gated).onEnd))
	require.NoError(t, Send(&b.cell, b, &kendG{}, (*gated).onEnd))
	require.NoError(t, Send(&st.cell, st, &kendG{}, (*starterActor).onEnd))
	require.NoError(t, e.Stop(context.Background()))
	assert.Equal(t, 0, e.Stats().QueuedMessages)
}

type kendG struct{ Message }

func (*gated) onEnd(*kendG) Allocation        { return Finished }
func (*starterActor) onEnd(*kendG) Allocation { return Finished }

// TestSendEveryQueuesAtMostTwoAndNothingAfterStop: a periodic timer whose
// actor is slower than its period (here held in a behaviour for many
// periods) does not pile its firings up in the mailbox: at most one waits
// there, beside the one being delivered. And once Timer.Stop has returned
// true, the firing still queued is not delivered.
func TestSendEveryQueuesAtMostTwoAndNothingAfterStop(t *testing.T) {
	e, s, _, ticks := heldGated(t, SpawnOptions{})
	tm, err := SendEvery(ticks, time.Millisecond, &gtick{})
	require.NoError(t, err)
	time.Sleep(50 * time.Millisecond) // many periods while the actor is held
	assert.LessOrEqual(t, e.Stats().QueuedMessages, 1, "firings queued behind a held behaviour")
	require.True(t, tm.Stop())
	close(s.gate)
	require.NoError(t, Send(&s.cell, s, &kendG{}, (*gated).onEnd))
	require.NoError(t, e.Stop(context.Background()))
	n, _ := s.count()
	assert.Zero(t, n, "firings delivered after Timer.Stop returned true")
}

// stuckFlusher is an extended actor (a Stopped hook) whose behaviour can
// be held; hook and behaviour both write n, so that -race reports them
// running at once.
type stuckFlusher struct {
	cell    Cell
	n       int
	began   chan struct{}
	gate    chan struct{}
	stopped chan Reason
}

func (f *stuckFlusher) Stopped(why Reason) { f.n++; f.stopped <- why }

func (f *stuckFlusher) onHold(*hold) Allocation {
	f.began <- struct{}{}
	<-f.gate
	f.n++
	return Nodelete
}

// TestForcedStopSkipsTheHookOfTheActorItGaveUpOn: when the behaviour a
// forced Stop gives up on belongs to an actor with a Stopped hook, that
// hook does not run beside the behaviour: its worker runs it once the
// behaviour returns; the other idle actors' hooks run at the Stop.
func TestForcedStopSkipsTheHookOfTheActorItGaveUpOn(t *testing.T) {
	e, err := Start(Config{Workers: 1})
	require.NoError(t, err)
	f := &stuckFlusher{began: make(chan struct{}, 1), gate: make(chan struct{}), stopped: make(chan Reason, 1)}
	require.NoError(t, Spawn(e, &f.cell, f))
	idle := &flusher{stopped: make(chan Reason, 1)}
	require.NoError(t, Spawn(e, &idle.cell, idle))
	require.NoError(t, Send(&f.cell, f, &hold{}, (*stuckFlusher).onHold))
	<-f.began
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, e.Stop(ctx), ErrActorsAlive)
	select {
	case <-idle.stopped:
	default:
		t.Error("the idle actor's Stopped hook did not run")
	}
	select {
	case <-f.stopped:
		t.Error("the Stopped hook of the actor whose behaviour is still running ran")
	default:
	}
	close(f.gate)
	for f.cell.Alive() { // false once its worker has ended it, after the behaviour returns
		time.Sleep(time.Millisecond)
	}
	select {
	case why := <-f.stopped: // its worker ran it once the behaviour returned, before Alive turned false
		require.Equal(t, ReasonStopped, why)
	default:
		t.Error("the Stopped hook of the actor whose behaviour was running did not run after it")
	}
}

// counted ends after its tenth message.
type counted struct {
	cell Cell
	n    int
}

func (c *counted) onMsg(*emsg) Allocation {
	if c.n++; c.n == 10 {
		return Finished
	}
	return Nodelete
}

var deadAtStopRe = regexp.MustCompile(`(\d+) sent to terminated actors`)

// TestStopUndeliveredMatchesStatsDeadLettersRace: sixteen actors end while
// goroutines send to them, and a clean Stop follows at once. Whatever the
// interleaving, Stop reports nothing still queued (every actor had ended),
// and as many messages sent to terminated actors as Stats counts dead
// letters.
func TestStopUndeliveredMatchesStatsDeadLettersRace(t *testing.T) {
	for range 20 {
		e, err := Start(Config{Workers: 2})
		require.NoError(t, err)
		as := make([]*counted, 16)
		for i := range as {
			as[i] = &counted{}
			require.NoError(t, Spawn(e, &as[i].cell, as[i]))
		}
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range 64 {
					a := as[(g*7+k)%len(as)]
					_ = Send(&a.cell, a, &emsg{}, (*counted).onMsg) // ErrTerminated once it has ended
				}
			}()
		}
		wg.Wait()
		for _, a := range as { // make sure each ends
			for Send(&a.cell, a, &emsg{}, (*counted).onMsg) == nil {
			}
		}
		err = e.Stop(context.Background())
		assert.Zero(t, queuedAtStop(err), "messages still queued after every actor ended: %v", err)
		var dead uint64
		if m := deadAtStopRe.FindStringSubmatch(fmt.Sprint(err)); m != nil {
			dead, _ = strconv.ParseUint(m[1], 10, 64)
		}
		require.Equal(t, e.Stats().Total().DeadLetters, dead, "Stop's dead letters and Stats': %v", err)
	}
}
