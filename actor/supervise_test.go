package actor_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/executor"
)

// job is a numbered message from a numbered sender; boom makes the
// behaviour panic.
type job struct {
	actor.Message
	from, seq int
	boom      bool
}

// flaky counts jobs into shared counters (which survive its restarts) and
// panics on boom jobs.
type flaky struct {
	actor.Actor
	local    int            // reset by a restart
	got      []atomic.Int32 // got[from*perSender+seq]: deliveries
	last     []int          // last seq per sender (per-sender FIFO)
	fifoBad  *atomic.Int32
	resets   atomic.Int32
	done     *sync.WaitGroup
	stamp    chan time.Time // if set, receives the time of each delivery
	perSend  int
	wantBoom bool
}

func (f *flaky) onJob(m *job) actor.Allocation {
	if f.stamp != nil {
		f.stamp <- time.Now()
	}
	if m.boom {
		panic("boom")
	}
	if m.seq <= f.last[m.from] {
		f.fifoBad.Add(1)
	}
	f.last[m.from] = m.seq
	f.local++
	f.got[m.from*f.perSend+m.seq].Add(1)
	if f.done != nil {
		f.done.Done()
	}
	return actor.Nodelete
}

func newFlaky(senders, perSender int) *flaky {
	f := &flaky{got: make([]atomic.Int32, senders*perSender), last: make([]int, senders), fifoBad: new(atomic.Int32), perSend: perSender}
	for i := range f.last {
		f.last[i] = -1
	}
	return f
}

// stopAfterPanics stops sys, accepting the panics the test provoked.
func stopAfterPanics(t *testing.T, sys *actor.System) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := sys.Stop(ctx)
	for _, e := range unwrapJoin(err) {
		if !errors.Is(e, actor.ErrPanic) && !errors.Is(e, actor.ErrActorsAlive) && !errors.Is(e, actor.ErrUndelivered) {
			t.Errorf("Stop: %v", e)
		}
	}
}

func unwrapJoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

func TestRestartKeepsQueuedMessages(t *testing.T) {
	const senders, per, every = 4, 3000, 97
	sys := start(t, actor.WithWorkers(2))
	defer stop(t, sys)
	f := newFlaky(senders, per)
	var done sync.WaitGroup
	f.done = &done
	booms := 0
	for s := 0; s < senders; s++ {
		for i := 0; i < per; i++ {
			if i%every != every-1 {
				done.Add(1)
			} else {
				booms++
			}
		}
	}
	_, err := actor.Spawn(sys, f, actor.WithRestart(func() { f.local = 0; f.resets.Add(1) }, actor.Budget{MaxRestarts: -1}))
	require.NoError(t, err)
	var wg sync.WaitGroup
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				require.NoError(t, actor.Send(f, &job{from: s, seq: i, boom: i%every == every-1}, (*flaky).onJob))
			}
		}()
	}
	wg.Wait()
	done.Wait()
	for s := 0; s < senders; s++ {
		for i := 0; i < per; i++ {
			want := int32(1)
			if i%every == every-1 {
				want = 0
			}
			require.Equal(t, want, f.got[s*per+i].Load(), "sender %d message %d", s, i)
		}
	}
	assert.Zero(t, f.fifoBad.Load(), "per-sender FIFO across restarts")
	assert.EqualValues(t, booms, f.resets.Load())
	st, err := sys.Stats()
	require.NoError(t, err)
	assert.EqualValues(t, booms, st.Total().Restarts)
	assert.EqualValues(t, booms, st.Total().Panics)
	require.NoError(t, actor.SendPill(f, actor.FinishedMsg))
}

func TestRestartBudgetExhaustedTerminates(t *testing.T) {
	sys := start(t, actor.WithWorkers(2))
	f := newFlaky(1, 10)
	_, err := actor.Spawn(sys, f, actor.WithRestart(nil, actor.Budget{MaxRestarts: 2, Within: time.Hour}))
	require.NoError(t, err)
	p, err := actor.Bind(f, (*flaky).onJob)
	require.NoError(t, err)
	gone, err := actor.WatchChan(p)
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		require.NoError(t, p.Send(&job{seq: i, boom: true}))
	}
	tm := <-gone
	assert.Equal(t, actor.ReasonBudget, tm.Reason)
	assert.True(t, errors.Is(tm.Err, actor.ErrPanic), "%v", tm.Err)
	assert.Same(t, f, tm.Actor)
	assert.ErrorIs(t, p.Send(&job{seq: 4}), actor.ErrTerminated)
	st, _ := sys.Stats()
	assert.EqualValues(t, 2, st.Total().Restarts)
	assert.EqualValues(t, 1, st.Total().BudgetExhausted)
	// A panic that terminated the actor is an error of Stop; the two
	// restarted ones are not.
	err = sys.Stop(context.Background())
	require.ErrorIs(t, err, actor.ErrPanic)
	assert.Len(t, unwrapJoin(err), 1, "%v", err)
}

func TestPillPassesAFullBound(t *testing.T) {
	for _, ov := range []actor.Overflow{actor.Reject, actor.DropNewest, actor.DropOldest} {
		t.Run(ov.String(), func(t *testing.T) {
			sys := start(t, actor.WithWorkers(1))
			defer stopAfterPanics(t, sys) // the job sent after the pill is a dead letter
			s := &bsink{gate: make(chan struct{}), entered: make(chan struct{}, 10)}
			_, err := actor.Spawn(sys, s, actor.WithMailbox(2, ov))
			require.NoError(t, err)
			p := mustBind(t, s, (*bsink).onJob)
			require.NoError(t, p.Send(&job{}))
			<-s.entered
			require.NoError(t, actor.SendPill(s, actor.FinishedMsg))
			require.NoError(t, p.Send(&job{})) // the mailbox is full: [pill, job]
			p.Send(&job{})                     // refused or dropped: never the pill (the job after it is dropped)
			close(s.gate)
			gone, _ := actor.WatchChan(p)
			assert.Equal(t, actor.ReasonNormal, (<-gone).Reason)
		})
	}
}

func TestRestartBackoff(t *testing.T) {
	const lo = 40 * time.Millisecond
	sys := start(t, actor.WithWorkers(2))
	defer stopAfterPanics(t, sys)
	f := newFlaky(1, 10)
	f.stamp = make(chan time.Time, 10)
	_, err := actor.Spawn(sys, f, actor.WithRestart(nil, actor.Budget{MaxRestarts: 5, MinBackoff: lo, MaxBackoff: 2 * lo}))
	require.NoError(t, err)
	// boom, ok, boom, ok, boom, ok: pauses lo, 2lo, 2lo (capped).
	for i := 0; i < 6; i++ {
		require.NoError(t, actor.Send(f, &job{seq: i, boom: i%2 == 0}, (*flaky).onJob))
	}
	var ts []time.Time
	for i := 0; i < 6; i++ {
		ts = append(ts, <-f.stamp)
	}
	// Lower bounds only (a loaded machine may add delay, never remove it);
	// the timer may fire up to its resolution early relative to time.Now
	// taken in the behaviour, hence 90%.
	for i, want := range []time.Duration{lo, 2 * lo, 2 * lo} {
		assert.GreaterOrEqual(t, ts[2*i+1].Sub(ts[2*i]), want*9/10, "pause after panic %d", i+1)
	}
}

// supervisor decides failures with a scripted list of decisions.
type supervisor struct {
	actor.Actor
	plan     []string
	failures chan *actor.Failure
}

func (s *supervisor) onFailure(f *actor.Failure) actor.Allocation {
	d := s.plan[0]
	s.plan = s.plan[1:]
	var err error
	switch d {
	case "resume":
		err = f.Resume()
	case "restart":
		err = f.Restart()
	case "stop":
		err = f.Stop()
	}
	if err != nil {
		panic(err)
	}
	if !errors.Is(f.Resume(), actor.ErrReplied) {
		panic("a second decision was accepted")
	}
	s.failures <- f
	return actor.Nodelete
}

func TestEscalate(t *testing.T) {
	sys := start(t, actor.WithWorkers(2))
	defer stopAfterPanics(t, sys)
	sup := &supervisor{plan: []string{"resume", "restart", "stop"}, failures: make(chan *actor.Failure, 3)}
	_, err := actor.Spawn(sys, sup)
	require.NoError(t, err)
	sp, err := actor.Bind(sup, (*supervisor).onFailure)
	require.NoError(t, err)
	f := newFlaky(1, 20)
	var done sync.WaitGroup
	f.done = &done
	f.local = 5
	resets := 0
	_, err = actor.Spawn(sys, f, actor.WithEscalate(sp, func() { f.local = 0; resets++ }))
	require.NoError(t, err)
	p, _ := actor.Bind(f, (*flaky).onJob)
	gone, _ := actor.WatchChan(p)
	// ok, boom (resume), ok, boom (restart), ok, boom (stop), ok (dead letter)
	done.Add(3)
	for i := 0; i < 7; i++ {
		err := p.Send(&job{seq: i, boom: i%2 == 1})
		if i == 6 && errors.Is(err, actor.ErrTerminated) {
			continue // the stop came first (a slow sender): refused, not a dead letter
		}
		require.NoError(t, err)
	}
	done.Wait()
	for i := 0; i < 3; i++ {
		fl := <-sup.failures
		assert.Same(t, f, fl.Err.Actor)
		assert.Equal(t, "boom", fl.Err.Value)
	}
	tm := <-gone
	assert.Equal(t, actor.ReasonPanic, tm.Reason)
	assert.Equal(t, 1, resets)
	for i := 0; i < 7; i++ {
		want := int32(0)
		if i%2 == 0 && i < 6 {
			want = 1
		}
		assert.Equal(t, want, f.got[i].Load(), "message %d", i)
	}
	st, _ := sys.Stats()
	assert.EqualValues(t, 3, st.Total().Escalations)
}

func TestResumeKeepsState(t *testing.T) {
	sys := start(t, actor.WithWorkers(1))
	defer stopAfterPanics(t, sys)
	f := newFlaky(1, 10)
	var done sync.WaitGroup
	f.done = &done
	_, err := actor.Spawn(sys, f, actor.WithResume())
	require.NoError(t, err)
	done.Add(4)
	for i := 0; i < 6; i++ {
		require.NoError(t, actor.Send(f, &job{seq: i, boom: i == 1 || i == 3}, (*flaky).onJob))
	}
	done.Wait()
	n, err := actor.Ask(context.Background(), mustBind(t, f, (*flaky).onCount), &countReq{})
	require.NoError(t, err)
	assert.Equal(t, 4, n, "state kept across resumes")
	st, _ := sys.Stats()
	assert.EqualValues(t, 2, st.Total().Resumes)
	require.NoError(t, actor.SendPill(f, actor.FinishedMsg))
}

type countReq struct{ actor.Request[int] }

func (f *flaky) onCount(m *countReq) actor.Allocation { m.Reply(f.local); return actor.Nodelete }

func mustBind[TA, TM any, A actor.Ref[TA], M actor.Msg[TM]](t *testing.T, a A, fn func(A, M) actor.Allocation) actor.Port[M] {
	t.Helper()
	p, err := actor.Bind(a, fn)
	require.NoError(t, err)
	return p
}

// noticeCounter counts Terminated notices per actor.
type noticeCounter struct {
	actor.Actor
	mu      sync.Mutex
	n       map[any]int
	reasons map[any]actor.Reason
}

func (c *noticeCounter) onTerminated(m *actor.Terminated) actor.Allocation {
	c.mu.Lock()
	c.n[m.Actor]++
	c.reasons[m.Actor] = m.Reason
	c.mu.Unlock()
	return actor.Nodelete
}

func TestWatchExactlyOnce(t *testing.T) {
	sys := start(t, actor.WithWorkers(2))
	defer stopAfterPanics(t, sys)
	nc := &noticeCounter{n: map[any]int{}, reasons: map[any]actor.Reason{}}
	_, err := actor.Spawn(sys, nc)
	require.NoError(t, err)
	np := mustBind(t, nc, (*noticeCounter).onTerminated)

	// Watches racing with termination, by pill and by panic: every watch
	// gets exactly one notice.
	const rounds, watchers = 200, 6
	var targets []*flaky
	for r := 0; r < rounds; r++ {
		f := newFlaky(1, 1)
		_, err := actor.Spawn(sys, f)
		require.NoError(t, err)
		targets = append(targets, f)
		p := mustBind(t, f, (*flaky).onJob)
		var wg sync.WaitGroup
		for w := 0; w < watchers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				assert.NoError(t, actor.Watch(p, np))
			}()
		}
		if r%2 == 0 {
			require.NoError(t, actor.SendPill(f, actor.FinishedMsg))
		} else {
			require.NoError(t, p.Send(&job{boom: true}))
		}
		wg.Wait()
	}
	require.Eventually(t, func() bool {
		nc.mu.Lock()
		defer nc.mu.Unlock()
		total := 0
		for _, v := range nc.n {
			total += v
		}
		return total >= rounds*watchers
	}, 10*time.Second, time.Millisecond)
	time.Sleep(20 * time.Millisecond) // a duplicate would arrive now
	nc.mu.Lock()
	defer nc.mu.Unlock()
	known := 0
	for _, f := range targets {
		known += nc.n[f]
	}
	unknown := nc.n[nil] // watches that began after the end of a plain, unwatched actor: nothing recorded who
	assert.Equal(t, rounds*watchers, known+unknown)
	for i, f := range targets {
		if nc.n[f] == 0 {
			continue
		}
		want := actor.ReasonNormal
		if i%2 == 1 {
			want = actor.ReasonPanic
		}
		assert.Equal(t, want, nc.reasons[f], "target %d", i)
	}
	st, _ := sys.Stats()
	assert.EqualValues(t, rounds*watchers, st.WatchNotices)
}

func TestWatchAlreadyTerminated(t *testing.T) {
	sys := start(t, actor.WithWorkers(2))
	defer stopAfterPanics(t, sys)
	f := newFlaky(1, 1)
	_, err := actor.Spawn(sys, f)
	require.NoError(t, err)
	p := mustBind(t, f, (*flaky).onJob)
	first, _ := actor.WatchChan(p)
	require.NoError(t, p.Send(&job{boom: true}))
	tm := <-first
	assert.Equal(t, actor.ReasonPanic, tm.Reason)
	assert.Same(t, f, tm.Actor)
	late, err := actor.WatchChan(p)
	require.NoError(t, err)
	tm = <-late
	assert.Equal(t, actor.ReasonPanic, tm.Reason)
	assert.ErrorIs(t, tm.Err, actor.ErrPanic)

	// A plain actor nobody watched: the reason comes from its state word.
	g := newFlaky(1, 1)
	_, err = actor.Spawn(sys, g)
	require.NoError(t, err)
	q := mustBind(t, g, (*flaky).onJob)
	require.NoError(t, actor.SendPill(g, actor.FinishedMsg))
	require.Eventually(t, func() bool { return !g.Alive() }, 5*time.Second, time.Millisecond)
	ch, _ := actor.WatchChan(q)
	assert.Equal(t, actor.ReasonNormal, (<-ch).Reason)
}

// lifecycle records its hooks in order.
type lifecycle struct {
	actor.Actor
	mu  sync.Mutex
	log []string
	end chan struct{}
}

func (l *lifecycle) add(s string) { l.mu.Lock(); l.log = append(l.log, s); l.mu.Unlock() }

func (l *lifecycle) Started()                 { l.add("started") }
func (l *lifecycle) Stopped(why actor.Reason) { l.add("stopped:" + why.String()) }
func (l *lifecycle) Destroy()                 { l.add("destroy") }
func (l *lifecycle) Release()                 { l.add("release"); close(l.end) }
func (l *lifecycle) onJob(m *job) actor.Allocation {
	l.add("job")
	if m.boom {
		return actor.Delete
	}
	return actor.Nodelete
}

func TestLifecycleHookOrder(t *testing.T) {
	sys := start(t, actor.WithWorkers(2))
	defer stopAfterPanics(t, sys)
	l := &lifecycle{end: make(chan struct{})}
	_, err := actor.Spawn(sys, l)
	require.NoError(t, err)
	p := mustBind(t, l, (*lifecycle).onJob)
	gone, _ := actor.WatchChan(p)
	require.NoError(t, p.Send(&job{}))
	require.NoError(t, p.Send(&job{boom: true}))
	<-l.end
	<-gone
	l.mu.Lock()
	defer l.mu.Unlock()
	assert.Equal(t, []string{"started", "job", "job", "stopped:normal", "destroy", "release"}, l.log)
}

func TestStartedRunsWithoutMessages(t *testing.T) {
	sys := start(t, actor.WithWorkers(1))
	defer stopAfterPanics(t, sys)
	l := &lifecycle{end: make(chan struct{})}
	_, err := actor.Spawn(sys, l)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.log) == 1 && l.log[0] == "started"
	}, 5*time.Second, time.Millisecond)
	require.NoError(t, actor.SendPill(l, actor.DeleteMsg))
	<-l.end
}

func TestForcedStopNotifiesWatchers(t *testing.T) {
	sys, err := actor.Start(actor.WithWorkers(1))
	require.NoError(t, err)
	l := &lifecycle{end: make(chan struct{})}
	_, err = actor.Spawn(sys, l)
	require.NoError(t, err)
	ch, _ := actor.WatchChan(mustBind(t, l, (*lifecycle).onJob))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, sys.Stop(ctx), actor.ErrActorsAlive)
	tm := <-ch
	assert.Equal(t, actor.ReasonStopped, tm.Reason)
	assert.ErrorIs(t, tm.Err, actor.ErrStopped)
	l.mu.Lock()
	assert.Contains(t, l.log, "stopped:system_stopped")
	l.mu.Unlock()
}

// bsink counts what it receives; gate, if set, holds each delivery. With
// last set (one entry per sender), it also checks what a bounded mailbox
// must keep whatever it drops: each sender's jobs arrive in the order sent,
// none twice (seq strictly increasing per sender, counted in disorder), and
// never on two workers at once (counted in overlaps).
type bsink struct {
	actor.Actor
	n        atomic.Int64
	gate     chan struct{}
	entered  chan struct{}
	last     []int        // per sender: the last seq received (behaviours only)
	got      [][]int      // per sender: every seq received, in order (behaviours only)
	running  atomic.Bool  // true while a behaviour runs
	overlaps atomic.Int64 // behaviours that found another one running
	disorder atomic.Int64 // jobs not after their sender's previous one
}

func (s *bsink) onJob(m *job) actor.Allocation {
	if !s.running.CompareAndSwap(false, true) {
		s.overlaps.Add(1)
	}
	defer s.running.Store(false)
	if s.gate != nil {
		s.entered <- struct{}{}
		<-s.gate
	}
	if s.last != nil {
		if m.seq <= s.last[m.from] {
			s.disorder.Add(1)
		}
		s.last[m.from] = m.seq
		s.got[m.from] = append(s.got[m.from], m.seq)
	}
	s.n.Add(1)
	return actor.Nodelete
}

// Sixteen senders flood a bounded actor under each overflow policy: what is
// delivered plus what the bound refused or dropped is exactly what was sent,
// each sender's jobs arrive in order and at most once, under Reject exactly
// the jobs not refused arrive, and the actor never runs on two workers at
// once.
func TestBoundedMailboxCountsExactly(t *testing.T) {
	for _, ov := range []actor.Overflow{actor.Reject, actor.DropNewest, actor.DropOldest} {
		t.Run(ov.String(), func(t *testing.T) {
			const senders, per, bound = 16, 2000, 32
			sys := start(t, actor.WithWorkers(2)) // stopped below, before the checks
			s := &bsink{last: make([]int, senders+1), got: make([][]int, senders+1)}
			_, err := actor.Spawn(sys, s, actor.WithMailbox(bound, ov))
			require.NoError(t, err)
			var refused atomic.Int64
			accepted := make([][]int, senders) // per sender: the seqs a send accepted
			var wg sync.WaitGroup
			for i := 0; i < senders; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := 1; j <= per; j++ {
						err := actor.Send(s, &job{from: i, seq: j}, (*bsink).onJob)
						if errors.Is(err, actor.ErrMailboxFull) {
							refused.Add(1)
						} else if assert.NoError(t, err) {
							accepted[i] = append(accepted[i], j)
						}
					}
				}()
			}
			wg.Wait()
			st, err := sys.Stats()
			require.NoError(t, err)
			lost := refused.Load()
			switch ov {
			case actor.Reject:
				assert.EqualValues(t, lost, st.MailboxRejected)
				assert.Zero(t, st.MailboxDroppedNewest+st.MailboxDroppedOldest)
			case actor.DropNewest:
				assert.Zero(t, lost)
				lost = int64(st.MailboxDroppedNewest)
			case actor.DropOldest:
				assert.Zero(t, lost)
				lost = int64(st.MailboxDroppedOldest)
			}
			require.Eventually(t, func() bool { return s.n.Load()+lost == senders*per }, 10*time.Second, time.Millisecond)
			require.NoError(t, actor.SendContext(context.Background(), s, &job{from: senders, seq: 1}, (*bsink).onJob))
			require.Eventually(t, func() bool { return s.n.Load()+lost == senders*per+1 }, 10*time.Second, time.Millisecond)
			require.NoError(t, actor.SendPill(s, actor.FinishedMsg))
			stop(t, sys) // the behaviours' writes are read below
			assert.Zero(t, s.overlaps.Load(), "the actor ran on two workers at once")
			assert.Zero(t, s.disorder.Load(), "a sender's jobs arrived out of order or twice")
			if ov == actor.Reject {
				for i := 0; i < senders; i++ {
					assert.Equal(t, accepted[i], s.got[i], "sender %d: the jobs delivered are not exactly those accepted", i)
				}
			}
		})
	}
}

func TestSendContextWaitsForRoom(t *testing.T) {
	sys := start(t, actor.WithWorkers(2))
	defer stop(t, sys)
	s := &bsink{gate: make(chan struct{}), entered: make(chan struct{}, 10)}
	_, err := actor.Spawn(sys, s, actor.WithMailbox(2, actor.Reject))
	require.NoError(t, err)
	p := mustBind(t, s, (*bsink).onJob)
	require.NoError(t, p.Send(&job{})) // delivered: blocks in the gate
	<-s.entered
	require.NoError(t, p.Send(&job{}))
	require.NoError(t, p.Send(&job{}))
	assert.ErrorIs(t, p.Send(&job{}), actor.ErrMailboxFull)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err = p.SendContext(ctx, &job{})
	assert.ErrorIs(t, err, actor.ErrMailboxFull)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	res := make(chan error, 1)
	go func() { res <- p.SendContext(context.Background(), &job{}) }()
	s.gate <- struct{}{} // the first delivery ends, the next begins: room for one
	assert.NoError(t, <-res)
	close(s.gate)
	require.NoError(t, actor.SendPill(s, actor.FinishedMsg)) // pills pass the bound
}

// WithMailbox refuses a bound below 1: zero is the executor's "unbounded",
// and an unset bound silently gave an unbounded mailbox.
func TestWithMailboxBoundRange(t *testing.T) {
	sys := start(t)
	defer stop(t, sys)
	for _, bound := range []int{0, -1, executor.MaxMailboxBound + 1} {
		_, err := actor.Spawn(sys, &flaky{}, actor.WithMailbox(bound, actor.Reject))
		assert.ErrorIs(t, err, actor.ErrConfig, "bound %d", bound)
	}
	f, err := actor.Spawn(sys, &flaky{}, actor.WithMailbox(1, actor.Reject))
	require.NoError(t, err)
	require.NoError(t, actor.SendPill(f, actor.FinishedMsg))
}

type boomer struct{ actor.Actor }

type boomMsg struct{ actor.Message }

func (b *boomer) onBoom(*boomMsg) actor.Allocation { panic("boom") }

// decider decides every failure with one directive, or terminates
// without deciding ("none").
type decider struct {
	actor.Actor
	how string
}

func (d *decider) onFailure(f *actor.Failure) actor.Allocation {
	switch d.how {
	case "resume":
		_ = f.Resume()
	case "stop":
		_ = f.Stop()
	case "none":
		return actor.Finished // the failure is decided Terminate for us
	}
	return actor.Nodelete
}

// An escalated panic reaches Stop exactly when it terminated its actor: a
// supervisor's Failure.Stop, or a supervisor that ends without deciding.
// It reached only OnError, as a handled panic, so a run whose actor died of
// a panic stopped clean.
func TestEscalatedPanicThatTerminatesReachesStop(t *testing.T) {
	for _, how := range []string{"stop", "none", "resume"} {
		t.Run(how, func(t *testing.T) {
			var onError atomic.Int32
			sys, err := actor.Start(actor.WithWorkers(1), actor.WithErrorHandler(func(error) { onError.Add(1) }))
			require.NoError(t, err)
			sup := &decider{how: how}
			_, err = actor.Spawn(sys, sup)
			require.NoError(t, err)
			sp := mustBind(t, sup, (*decider).onFailure)
			b := &boomer{}
			_, err = actor.Spawn(sys, b, actor.WithEscalate(sp, nil))
			require.NoError(t, err)
			p := mustBind(t, b, (*boomer).onBoom)
			gone, err := actor.WatchChan(p)
			require.NoError(t, err)
			require.NoError(t, p.Send(&boomMsg{}))
			if how == "resume" {
				require.Eventually(t, func() bool { return onError.Load() == 1 }, 10*time.Second, time.Millisecond)
				require.NoError(t, actor.SendPill(b, actor.FinishedMsg))
			}
			tm := <-gone
			if how != "none" {
				require.NoError(t, actor.SendPill(sup, actor.FinishedMsg))
			}
			err = sys.Stop(context.Background())
			assert.Equal(t, int32(1), onError.Load(), "OnError sees the panic once")
			if how == "resume" {
				assert.Equal(t, actor.ReasonNormal, tm.Reason)
				assert.NoError(t, err, "a handled panic is not an error of Stop")
				return
			}
			assert.Equal(t, actor.ReasonPanic, tm.Reason)
			var pe *actor.PanicError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, "boom", pe.Value)
			assert.Len(t, unwrapJoin(err), 1, "reported once")
		})
	}
}
