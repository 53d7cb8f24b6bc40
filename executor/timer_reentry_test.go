package executor

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gated is an actor for the tests of code that a timer's firing runs:
// onHold holds its worker until gate closes, so that its mailbox fills.
type gated struct {
	cell    Cell
	began   chan struct{}
	gate    chan struct{}
	mu      sync.Mutex
	ticks   int
	replies []*Reply[int]
}

type hold struct{ Message }
type gtick struct{ Message }
type greq struct{ Request[int] }

func newGated() *gated { return &gated{began: make(chan struct{}, 1), gate: make(chan struct{})} }

func (g *gated) onHold(*hold) Allocation {
	g.began <- struct{}{}
	<-g.gate
	return Nodelete
}

func (g *gated) onTick(*gtick) Allocation {
	g.mu.Lock()
	g.ticks++
	g.mu.Unlock()
	return Nodelete
}

func (g *gated) onReq(r *greq) Allocation {
	_ = r.Reply(1)
	return Nodelete
}

func (g *gated) onReply(r *Reply[int]) Allocation {
	g.mu.Lock()
	g.replies = append(g.replies, r)
	g.mu.Unlock()
	return Nodelete
}

func (g *gated) count() (ticks int, replies []*Reply[int]) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ticks, append([]*Reply[int](nil), g.replies...)
}

// heldGated starts a one-worker executor and spawns a gated actor with
// options o, its ports for requests and ticks bound, and holds its worker
// in onHold (until s.gate closes), so that its mailbox fills.
func heldGated(t *testing.T, o SpawnOptions) (e *Executor, s *gated, reqs Port[*greq], ticks Port[*gtick]) {
	t.Helper()
	e, err := Start(Config{Workers: 1, Queues: 1})
	require.NoError(t, err)
	s = newGated()
	require.NoError(t, SpawnWith(e, &s.cell, s, o))
	reqs, err = Bind(&s.cell, s, (*gated).onReq)
	require.NoError(t, err)
	ticks, err = Bind(&s.cell, s, (*gated).onTick)
	require.NoError(t, err)
	require.NoError(t, Send(&s.cell, s, &hold{}, (*gated).onHold))
	<-s.began
	return e, s, reqs, ticks
}

// returns fails the test if f does not return within 20s: a deadlocked
// timer set never does, however slow the machine.
func returns(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("%s did not return: the timer set is deadlocked\n%s", what, buf[:runtime.Stack(buf, true)])
	}
}

// A firing that drops, from a full DropOldest mailbox, an AskAsync request
// with a timeout completes the request, which stops the request's timeout:
// a Timer.Stop on the timer goroutine, inside the firing. It used to wait
// for the mutex that the firing held, and every later timer call (and
// Stop) hung.
func TestTimerFiringStopsATimer(t *testing.T) {
	e, err := Start(Config{Workers: 1, Queues: 1})
	require.NoError(t, err)
	s, r := newGated(), newGated()
	require.NoError(t, SpawnWith(e, &s.cell, s, SpawnOptions{MailboxBound: 1, Overflow: DropOldest}))
	require.NoError(t, Spawn(e, &r.cell, r))
	reqs, err := Bind(&s.cell, s, (*gated).onReq)
	require.NoError(t, err)
	ticks, err := Bind(&s.cell, s, (*gated).onTick)
	require.NoError(t, err)
	replies, err := Bind(&r.cell, r, (*gated).onReply)
	require.NoError(t, err)

	require.NoError(t, Send(&s.cell, s, &hold{}, (*gated).onHold))
	<-s.began
	require.NoError(t, AskAsync(reqs, &greq{}, replies, time.Hour)) // fills the mailbox
	_, err = SendAfter(ticks, time.Millisecond, &gtick{})
	require.NoError(t, err)
	waitFor(t, "the request's drop", func() bool { return e.Stats().MailboxDroppedOldest == 1 })
	returns(t, "SendAfter and Stop", func() {
		tm, err := SendAfter(ticks, time.Hour, &gtick{})
		assert.NoError(t, err)
		assert.True(t, tm.Stop())
	})
	assert.Zero(t, e.Stats().AsksPending)
	checkTimers(t, &e.timers)
	close(s.gate) // the one worker is free for the reply and the tick
	waitFor(t, "the dropped request's reply", func() bool { _, rs := r.count(); return len(rs) == 1 })
	_, rs := r.count()
	assert.ErrorIs(t, rs[0].Err, ErrMailboxFull)
	waitFor(t, "the tick", func() bool { n, _ := s.count(); return n == 1 })
	require.NoError(t, SendPill(&s.cell, s, NewPill(Finished)))
	require.NoError(t, SendPill(&r.cell, r, NewPill(Finished)))
	returns(t, "Stop", func() { assert.NoError(t, e.Stop(context.Background())) })
}

// An AskFunc function that its timeout calls (on the timer goroutine) may
// set and stop timers: it is not a blocking call.
func TestTimeoutFunctionSetsATimer(t *testing.T) {
	e, s, reqs, ticks := heldGated(t, SpawnOptions{})

	type outcome struct {
		askErr, setErr error
		stopped        bool
	}
	got := make(chan outcome, 1)
	require.NoError(t, AskFunc(reqs, &greq{}, time.Millisecond, func(_ int, err error) {
		tm, serr := SendAfter(ticks, time.Hour, &gtick{})
		_, serr2 := SendAfter(ticks, time.Millisecond, &gtick{})
		got <- outcome{askErr: err, setErr: errors.Join(serr, serr2), stopped: tm.Stop()}
	}))
	var o outcome
	returns(t, "the timeout's function", func() { o = <-got })
	assert.ErrorIs(t, o.askErr, context.DeadlineExceeded)
	assert.NoError(t, o.setErr)
	assert.True(t, o.stopped)
	close(s.gate)
	waitFor(t, "the tick set by the function", func() bool { n, _ := s.count(); return n == 1 })
	checkTimers(t, &e.timers)
	require.NoError(t, SendPill(&s.cell, s, NewPill(Finished)))
	returns(t, "Stop", func() { assert.NoError(t, e.Stop(context.Background())) })
}

// A timer stopped during its own firing, by code the firing ran, is left
// alone by fire afterwards: here a periodic timer whose message, in a full
// DropOldest mailbox, drops a request whose AskFunc function stops that
// periodic timer. Its Stop returned true: the firing it queued is not
// delivered.
func TestTimerStoppedDuringItsFiring(t *testing.T) {
	e, s, reqs, ticks := heldGated(t, SpawnOptions{MailboxBound: 1, Overflow: DropOldest})

	perc := make(chan Timer, 1) // the periodic timer, for f
	stopped := make(chan bool, 1)
	// The request fills the mailbox; the periodic timer's first firing
	// drops it, and its function stops the timer being fired.
	require.NoError(t, AskFunc(reqs, &greq{}, 0, func(_ int, err error) {
		assert.ErrorIs(t, err, ErrMailboxFull)
		stopped <- (<-perc).Stop()
	}))
	ts := &e.timers
	per, err := SendEvery(ticks, time.Millisecond, &gtick{})
	require.NoError(t, err)
	perc <- per
	var ok bool
	returns(t, "the firing", func() { ok = <-stopped })
	assert.True(t, ok, "the timer was pending during its own firing")
	checkTimers(t, ts)
	s1 := e.Stats()
	assert.Zero(t, s1.TimersPending)
	assert.Zero(t, s1.TimersFired, "its firing is queued, not delivered")
	close(s.gate)
	waitFor(t, "the queued firing's turn", func() bool { return e.Stats().QueuedMessages == 0 })
	require.NoError(t, SendPill(&s.cell, s, NewPill(Finished)))
	require.NoError(t, e.Stop(context.Background()))
	n, _ := s.count()
	assert.Zero(t, n, "the stopped periodic timer delivered")
	assert.Zero(t, e.Stats().TimersFired)
}

// A periodic timer whose firing a full Reject mailbox refuses goes on: only
// Stop, its actor's termination or the system's stop cancel it. The
// refused firing is counted dead, as a one-shot's is.
func TestTimerRefusedFiringGoesOn(t *testing.T) {
	e, s, _, ticks := heldGated(t, SpawnOptions{MailboxBound: 1, Overflow: Reject})
	require.NoError(t, ticks.Send(&gtick{})) // fills the mailbox
	per, err := SendEvery(ticks, time.Millisecond, &gtick{})
	require.NoError(t, err)
	one, err := SendAfter(ticks, time.Millisecond, &gtick{})
	require.NoError(t, err)
	waitFor(t, "refused firings", func() bool { return e.Stats().TimersDead >= 2 })
	assert.False(t, one.Stop(), "the refused one-shot is over")
	st := e.Stats()
	assert.Equal(t, int64(1), st.TimersPending, "the periodic timer is pending")
	// A firing in progress counts its refusal, then its death: a snapshot
	// between the two differs by one; between firings they are equal.
	waitFor(t, "every dead firing a refused one", func() bool {
		st := e.Stats()
		return st.MailboxRejected == st.TimersDead
	})
	close(s.gate)
	waitFor(t, "a periodic tick delivered", func() bool { n, _ := s.count(); return n >= 2 })
	assert.True(t, per.Stop(), "a refused firing cancelled the periodic timer")
	require.NoError(t, SendPill(&s.cell, s, NewPill(Finished)))
	require.NoError(t, e.Stop(context.Background()))
}

// When an AskFunc's timeout fires while its send is failing, the request's
// end is reported once: to f (the timeout), and AskFunc returns nil. The
// send is held at the mailbox's lock until f has been called, then fails
// because the mailbox is closed.
func TestAskFuncTimeoutDuringFailingSend(t *testing.T) {
	e, err := Start(Config{Workers: 1, Queues: 1})
	require.NoError(t, err)
	s := newGated()
	require.NoError(t, Spawn(e, &s.cell, s))
	reqs, err := Bind(&s.cell, s, (*gated).onReq)
	require.NoError(t, err)
	mb := s.cell.mb.Load()
	w := mb.lock()
	called := make(chan error, 2)
	res := make(chan error, 1)
	go func() {
		res <- AskFunc(reqs, &greq{}, time.Millisecond, func(_ int, err error) { called <- err })
	}()
	assert.ErrorIs(t, <-called, context.DeadlineExceeded)
	mb.unlock(w | wordClosed) // the send, waiting for the lock, now fails
	assert.NoError(t, <-res, "AskFunc reported the request's end a second time")
	assert.Empty(t, called, "f was called twice")
	assert.Zero(t, e.Stats().AsksPending)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_ = e.Stop(ctx) // the closed mailbox's actor cannot terminate cleanly
}
