package executor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gatedSup is a supervisor that stops every failing actor it is told of;
// onHold (from gated) holds its worker.
type gatedSup struct {
	gated
	failures chan *Failure
}

func (s *gatedSup) onHold(*hold) Allocation { return s.gated.onHold(nil) }

func (s *gatedSup) onFailure(f *Failure) Allocation {
	s.failures <- f
	_ = f.Stop()
	return Nodelete
}

// boomer panics on every message.
type boomer struct{ cell Cell }

func (b *boomer) onTick(*gtick) Allocation { panic("boom") }

// notified waits up to 20s for a watch's notice: a notice that never comes
// never does, however slow the machine.
func notified(t *testing.T, what string, ch <-chan *Terminated) *Terminated {
	t.Helper()
	select {
	case tm := <-ch:
		return tm
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: no Terminated notice", what)
		return nil
	}
}

// A Failure that no supervisor decides terminates its actor (ReasonPanic):
// one dropped by the supervisor's bound, or one left queued when the
// supervisor terminates. It used to stay suspended for ever, and Stop could
// only end by force.
func TestUndecidedFailureTerminatesTheActor(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts SpawnOptions
		// fill makes the Failure undeliverable while the supervisor is
		// held in onHold.
		fill func(t *testing.T, s *gatedSup, hold Port[*hold])
	}{
		{"supervisor terminates first", SpawnOptions{}, func(t *testing.T, s *gatedSup, _ Port[*hold]) {
			require.NoError(t, SendPill(&s.cell, s, NewPill(Finished)))
		}},
		{"bounded supervisor drops it", SpawnOptions{MailboxBound: 1, Overflow: DropNewest}, func(t *testing.T, s *gatedSup, h Port[*hold]) {
			require.NoError(t, h.Send(&hold{}))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Start(Config{Workers: 2})
			require.NoError(t, err)
			s := &gatedSup{gated: *newGated(), failures: make(chan *Failure, 1)}
			s.began = make(chan struct{}, 2)
			require.NoError(t, SpawnWith(e, &s.cell, s, tc.opts))
			sp, err := Bind(&s.cell, s, (*gatedSup).onFailure)
			require.NoError(t, err)
			hp, err := Bind(&s.cell, s, (*gatedSup).onHold)
			require.NoError(t, err)
			require.NoError(t, hp.Send(&hold{}))
			<-s.began // the supervisor is held
			tc.fill(t, s, hp)

			b := &boomer{}
			require.NoError(t, SpawnWith(e, &b.cell, b, SpawnOptions{OnPanic: Escalate, Supervisor: sp}))
			bp, err := Bind(&b.cell, b, (*boomer).onTick)
			require.NoError(t, err)
			gone, err := WatchChan(bp)
			require.NoError(t, err)
			require.NoError(t, bp.Send(&gtick{}))
			waitFor(t, "the escalation", func() bool { return e.Stats().Total().Escalations == 1 })
			close(s.gate)
			tm := notified(t, "the escalated actor", gone)
			assert.Equal(t, ReasonPanic, tm.Reason)
			assert.Empty(t, s.failures, "the supervisor received the Failure")
			if s.cell.Alive() {
				require.NoError(t, SendPill(&s.cell, s, NewPill(Finished)))
			}
			// A clean stop, which reports the panic that terminated the
			// actor; a Failure left queued is a dead letter.
			err = e.Stop(context.Background())
			assert.ErrorIs(t, err, ErrPanic)
			assert.NotErrorIs(t, err, ErrActorsAlive)
		})
	}
}

// A message whose Destroy hook panics, delivered from a private queue (a
// bounded actor's), does not stall the queue: the messages after it are
// delivered. The panic used to unwind the drain with the queue marked
// scheduled and no drain token queued.
func TestMessageHookPanicInPrivateQueue(t *testing.T) {
	e, err := Start(Config{Workers: 1, OnError: func(error) {}})
	require.NoError(t, err)
	s := &hookSink{got: make(chan int, 10)}
	require.NoError(t, SpawnWith(e, &s.cell, s, SpawnOptions{MailboxBound: 8}))
	p, err := Bind(&s.cell, s, (*hookSink).onMsg)
	require.NoError(t, err)
	for i := range 3 {
		require.NoError(t, p.Send(&hookMsg{n: i}))
	}
	for i := range 3 {
		select {
		case n := <-s.got:
			assert.Equal(t, i, n)
		case <-time.After(20 * time.Second):
			t.Fatalf("message %d never delivered (alive: %v)", i, s.cell.Alive())
		}
	}
	require.NoError(t, SendPill(&s.cell, s, NewPill(Finished)))
	err = e.Stop(context.Background())
	assert.ErrorIs(t, err, ErrPanic, "the hook's panic is an error of Stop")
	assert.NotErrorIs(t, err, ErrActorsAlive)
}

type hookMsg struct {
	Message
	n int
}

func (m *hookMsg) Destroy() {
	if m.n == 0 {
		panic("message hook")
	}
}

type hookSink struct {
	cell Cell
	got  chan int
}

func (s *hookSink) onMsg(m *hookMsg) Allocation {
	s.got <- m.n
	m.SetAllocation(Destroy)
	return Nodelete
}

// A Watch of a plain actor that begins after a forced Stop (a worker is
// still stuck in a behaviour, so the executor has not closed) is notified
// once the worker exits. The Stop had taken the registry of extended
// actors, and nothing finished an extension registered after it.
func TestWatchAfterForcedStop(t *testing.T) {
	e, err := Start(Config{Workers: 1})
	require.NoError(t, err)
	s := newGated()
	require.NoError(t, Spawn(e, &s.cell, s))
	i := newGated()
	require.NoError(t, Spawn(e, &i.cell, i))
	ip, err := Bind(&i.cell, i, (*gated).onTick)
	require.NoError(t, err)
	require.NoError(t, Send(&s.cell, s, &hold{}, (*gated).onHold))
	<-s.began
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, e.Stop(ctx), ErrActorsAlive) // forced; the worker is stuck
	ch, err := WatchChan(ip)
	require.NoError(t, err)
	close(s.gate) // the worker exits; the executor closes
	tm := notified(t, "the watch begun after the forced Stop", ch)
	assert.Equal(t, ReasonStopped, tm.Reason)
	select {
	case <-ch:
		t.Error("a second notice")
	default:
	}
}

// A send that queues a request in a terminating actor's private queue, and
// then fails (the actor is ending), reports the request's end once: the
// termination drops the queued request, which completes it (f is called),
// and AskFunc then returns nil; or AskFunc returns the error and f is never
// called.
func TestAskFuncIntoTerminatingBoundedActor(t *testing.T) {
	e, err := Start(Config{Workers: 2})
	require.NoError(t, err)
	b := &stopGated{entered: make(chan struct{}), gate: make(chan struct{})}
	require.NoError(t, SpawnWith(e, &b.cell, b, SpawnOptions{MailboxBound: 4}))
	p, err := Bind(&b.cell, b, (*stopGated).onReq)
	require.NoError(t, err)
	require.NoError(t, SendPill(&b.cell, b, NewPill(Finished)))
	<-b.entered // its Stopped hook runs: the actor is ending, its queue still open
	called := make(chan error, 2)
	aerr := AskFunc(p, &greq{}, 0, func(_ int, err error) { called <- err })
	close(b.gate)
	require.NoError(t, e.Stop(context.Background()))
	if aerr != nil {
		assert.ErrorIs(t, aerr, ErrTerminated)
		assert.Empty(t, called, "AskFunc returned an error and called f")
	} else {
		require.Len(t, called, 1)
		assert.ErrorIs(t, <-called, ErrTerminated)
	}
}

// stopGated's Stopped hook waits for gate.
type stopGated struct {
	cell          Cell
	entered, gate chan struct{}
}

func (b *stopGated) Stopped(Reason) {
	close(b.entered)
	<-b.gate
}

func (b *stopGated) onReq(r *greq) Allocation {
	_ = r.Reply(1)
	return Nodelete
}

// A Watch through a port of an ended incarnation, racing that incarnation's
// end and a re-spawn with options (the race is made certain by a hook
// between watch's load of the word and its load of the extension), is
// notified, and leaves the new incarnation's extension alone. It used to
// replace that extension with one built for the old incarnation: the old
// watch was never notified, and the new incarnation lost its private queue
// (its bound) and its watchers.
func TestWatchRacingRespawn(t *testing.T) {
	e, err := Start(Config{Workers: 2})
	require.NoError(t, err)
	opts := SpawnOptions{MailboxBound: 4}
	a := &boundedSink{}
	require.NoError(t, SpawnWith(e, &a.cell, a, opts))
	old, err := Bind(&a.cell, a, (*boundedSink).onItem)
	require.NoError(t, err)
	var newWatch <-chan *Terminated
	testHookWatch = func() {
		testHookWatch = nil // once, and before the WatchChan below
		require.NoError(t, SendPill(&a.cell, a, NewPill(Finished)))
		waitFor(t, "the old incarnation's end", func() bool { return !old.Alive() })
		require.NoError(t, SpawnWith(e, &a.cell, a, opts))
		np, err := Bind(&a.cell, a, (*boundedSink).onItem)
		require.NoError(t, err)
		newWatch, err = WatchChan(np)
		require.NoError(t, err)
	}
	defer func() { testHookWatch = nil }()
	oldWatch, err := WatchChan(old)
	require.NoError(t, err)
	notified(t, "the old incarnation's watch", oldWatch)
	x := a.cell.ext.Load()
	require.NotNil(t, x)
	assert.Equal(t, incOf(a.cell.state.Load()), x.inc, "the new incarnation's extension was replaced")
	assert.NotNil(t, x.pq, "the new incarnation lost its private queue")
	require.NoError(t, SendPill(&a.cell, a, NewPill(Finished)))
	notified(t, "the new incarnation's watch", newWatch)
	require.NoError(t, e.Stop(context.Background()))
}
