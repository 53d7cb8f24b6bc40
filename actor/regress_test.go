package actor_test

// Regression tests for the memory-safety and message-lifetime issue: each
// test is named after the bug it guards and failed on the engine before the
// fix.

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/executor"
)

// --- 1. Type confusion through embedding --------------------------------

type baseActor struct {
	actor.Actor
	name string
	seen chan *baseActor
}

type hello struct{ actor.Message }

func (b *baseActor) onHello(*hello) actor.Allocation {
	b.seen <- b
	return actor.Nodelete
}

type derivedActor struct {
	pad [4]uint64
	baseActor
	tail string
}

func (d *derivedActor) onHello(*hello) actor.Allocation {
	d.seen <- &d.baseActor
	return actor.Finished
}

// Spawning a struct that embeds an actor type, then sending to the embedded
// actor with the embedded type's behaviour, must call that behaviour with
// the embedded actor's own address (before the fix it received the outer
// object's address typed as the embedded type, and read garbage).
func TestSendToEmbeddedActorDeliversToNamedPointer(t *testing.T) {
	sys := start(t)
	d := &derivedActor{pad: [4]uint64{1, 2, 3, 4}, tail: "tail"}
	d.name = "base"
	d.seen = make(chan *baseActor, 2)
	_, err := actor.Spawn(sys, d)
	require.NoError(t, err)

	require.NoError(t, actor.Send(&d.baseActor, &hello{}, (*baseActor).onHello))
	got := <-d.seen
	assert.Same(t, &d.baseActor, got, "the behaviour receives the pointer the sender named")
	assert.Equal(t, "base", got.name)

	// The outer type's own behaviour, on the same cell, still gets the outer object.
	require.NoError(t, actor.Send(d, &hello{}, (*derivedActor).onHello))
	assert.Same(t, &d.baseActor, <-d.seen)
	stop(t, sys)
	assert.False(t, d.Alive())
}

// --- 2. Race on a forwarded message's status -----------------------------

// pooledMsg is a message from a pool; it counts its releases.
type pooledMsg struct {
	actor.Message
	hops     int
	inPool   atomic.Bool
	releases *atomic.Int64
	pool     *sync.Pool
}

func (m *pooledMsg) Release() {
	if !m.inPool.CompareAndSwap(false, true) {
		panic("pooled message released twice")
	}
	m.releases.Add(1)
	m.pool.Put(m)
}

type stage struct {
	actor.Actor
	next *stage // nil for the last stage
	done chan struct{}
	n    int
}

func (s *stage) onMsg(m *pooledMsg) actor.Allocation {
	m.hops++ // the message is ours: write it
	if s.next != nil {
		if err := actor.Send(s.next, m, (*stage).onMsg); err != nil {
			panic(err)
		}
		// Moved: from here the message is the next stage's, which may
		// release it at any moment. The executor must not touch it.
		return actor.Nodelete
	}
	m.SetAllocation(actor.Delete) // the last stage gives it back
	s.n++
	if s.n == cap(s.done) {
		close(s.done)
	}
	return actor.Nodelete
}

// A pooled message forwarded through a pipeline of stages on different
// workers is released exactly once, by the last stage, and no worker reads
// or writes it after forwarding it (run under -race: before the fix the
// first worker read the status while the next receiver wrote it, and the
// message could be released twice).
func TestForwardedPooledMessageRace(t *testing.T) {
	const stages, msgs = 4, 3000
	sys := start(t, actor.WithWorkers(4))
	var releases atomic.Int64
	pool := &sync.Pool{}
	pool.New = func() any { return &pooledMsg{releases: &releases, pool: pool} }
	done := make(chan struct{}, msgs)
	all := make([]*stage, stages)
	for i := stages - 1; i >= 0; i-- {
		all[i] = &stage{}
		if i < stages-1 {
			all[i].next = all[i+1]
		} else {
			all[i].done = done
		}
		_, err := actor.Spawn(sys, all[i])
		require.NoError(t, err)
	}
	for i := 0; i < msgs; i++ {
		m := pool.Get().(*pooledMsg)
		m.inPool.Store(false)
		m.hops = 0
		require.NoError(t, actor.Send(all[0], m, (*stage).onMsg))
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("pipeline did not finish")
	}
	for _, s := range all {
		require.NoError(t, actor.SendPill(s, actor.FinishedMsg))
	}
	stop(t, sys)
	assert.Equal(t, int64(msgs), releases.Load(), "every message released exactly once")
}

// --- 3 and 4. Respawn while Release runs; recovered after the dead store --

// pooledActor hands itself to a new owner in its Release hook, then (if told
// to) panics.
type pooledActor struct {
	actor.Actor
	handoff chan *pooledActor
	panicAt bool
	got     int
}

func (p *pooledActor) onNum(*num) actor.Allocation {
	p.got++
	return actor.Delete
}

func (p *pooledActor) Release() {
	panicking := p.panicAt // read before the hand-off: the object is not ours after it
	p.handoff <- p
	if panicking {
		panic("release panics after the hand-off")
	}
}

// The goroutine that receives an actor from its Release hook may spawn it
// again at once, while Release is still returning: the executor touches
// nothing of the actor after the dead store, so the new incarnation runs
// normally. With a Release that then panics, at the same time as the
// re-spawn, the panic report names the actor from the copy taken before the
// dead store (before the fix, recovered read the cell's object field while
// the re-spawn wrote it: a data race under -race).
func TestRespawnWhileReleaseRuns(t *testing.T) {
	for _, panicking := range []bool{false, true} {
		sys := start(t, actor.WithWorkers(2))
		var reports []error
		var mu sync.Mutex
		p := &pooledActor{handoff: make(chan *pooledActor, 1), panicAt: panicking}
		_, err := actor.Spawn(sys, p)
		require.NoError(t, err)
		require.NoError(t, actor.Send(p, &num{}, (*pooledActor).onNum))
		q := <-p.handoff
		q.panicAt = false // the next incarnation's Release does not panic
		_, err = actor.Spawn(sys, q)
		require.NoError(t, err, "the owner Release handed it to may spawn it at once")
		require.NoError(t, actor.Send(q, &num{}, (*pooledActor).onNum))
		<-q.handoff
		err = sys.Stop(context.Background())
		mu.Lock()
		reports = append(reports, err)
		mu.Unlock()
		assert.Equal(t, 2, p.got)
		if panicking {
			var pe *actor.PanicError
			require.ErrorAs(t, err, &pe)
			assert.Same(t, p, pe.Actor, "the report names the actor that was released")
		} else {
			assert.NoError(t, err)
		}
	}
}

// --- 5. Shutdown checked before every pass -------------------------------

type sink struct {
	actor.Actor
	n atomic.Int64
}

func (s *sink) onNum(*num) actor.Allocation {
	s.n.Add(1)
	return actor.Nodelete
}

// A forced Stop ends the workers even while goroutines keep sending to a
// live actor: no worker keeps gulping past the grace period (before the
// fix, every pass found work, the shutdown flag was only checked after an
// empty pass, and Stop reported a worker "still running a behaviour").
func TestForcedStopUnderContinuousSends(t *testing.T) {
	sys := start(t, actor.WithWorkers(2))
	s, _ := actor.Spawn(sys, &sink{})
	var wg sync.WaitGroup
	quit := make(chan struct{})
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := &num{}
			for {
				select {
				case <-quit:
					return
				default:
				}
				if err := actor.Send(s, m, (*sink).onNum); err != nil {
					assert.ErrorIs(t, err, actor.ErrStopped)
					return
				}
			}
		}()
	}
	for s.n.Load() < 1000 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := sys.Stop(ctx)
	close(quit)
	wg.Wait()
	require.ErrorIs(t, err, actor.ErrActorsAlive)
	assert.NotContains(t, err.Error(), "still running a behaviour", "every worker left at the stop")
	assert.False(t, s.Alive())
}

// --- 6. Stats read from inside a behaviour ------------------------------

type statsReader struct {
	actor.Actor
	sys  *actor.System
	seen chan uint64
}

func (s *statsReader) onNum(*num) actor.Allocation {
	st, err := s.sys.Stats()
	if err != nil {
		panic(err)
	}
	tot := st.Total()
	s.seen <- tot.MessagesProcessed()
	return actor.Nodelete
}

// Stats called from a behaviour never publishes its worker's half-done
// batch: messages processed never goes down between snapshots (before the
// fix, dead letters earlier in the same batch were published without the
// batch's gulp and the counter dropped, which Prometheus reads as a reset).
func TestStatsMonotonicFromBehaviour(t *testing.T) {
	sys := start(t, actor.WithWorkers(1), actor.WithQueues(1))
	r, _ := actor.Spawn(sys, &recorder{})
	for i := 0; i < 20; i++ {
		require.NoError(t, actor.Send(r, &num{v: i}, (*recorder).onNum))
	}
	reader, _ := actor.Spawn(sys, &statsReader{sys: sys, seen: make(chan uint64, 1)})
	require.NoError(t, actor.Send(reader, &num{}, (*statsReader).onNum))
	<-reader.seen
	st, err := sys.Stats()
	require.NoError(t, err)
	tot := st.Total()
	before := tot.MessagesProcessed()
	require.GreaterOrEqual(t, before, uint64(21))

	// One batch: a blocker holds the worker while the rest is queued
	// behind it: a pill for r, 100 messages r never receives (dead
	// letters), then the reader.
	release := make(chan struct{})
	b, _ := actor.Spawn(sys, &blocker{release: release})
	require.NoError(t, actor.Send(b, &num{}, (*blocker).onNum))
	require.NoError(t, actor.SendPill(r, actor.FinishedMsg))
	for i := 0; i < 100; i++ {
		require.NoError(t, actor.Send(r, &num{}, (*recorder).onNum))
	}
	require.NoError(t, actor.Send(reader, &num{}, (*statsReader).onNum))
	close(release)
	inside := <-reader.seen
	assert.GreaterOrEqual(t, inside, before, "messages processed went down")
	require.NoError(t, actor.SendPill(reader, actor.FinishedMsg))
	err = sys.Stop(context.Background())
	require.ErrorIs(t, err, actor.ErrUndelivered)
}

// --- 10. SpinPasses = 1 must not turn stealing off -----------------------

type gate struct {
	actor.Actor
	entered chan struct{}
	release chan struct{}
}

func (g *gate) onNum(*num) actor.Allocation {
	close(g.entered)
	<-g.release
	return actor.Finished
}

// With one spin pass, a worker still steals before parking: an actor on
// another mailbox of a worker stuck in a long behaviour is served by the
// other worker (before the fix, thieves only tried on even idle passes and
// parked after one, so it never was).
func TestSpinPassesOneKeepsStealing(t *testing.T) {
	sys := start(t, actor.WithWorkers(2), actor.WithQueues(4), actor.WithIdle(1, 0))
	// Spawned from outside: tickets 0 and 1, both on worker 0's mailboxes.
	g, _ := actor.Spawn(sys, &gate{entered: make(chan struct{}), release: make(chan struct{})})
	r, _ := actor.Spawn(sys, &recorder{finishAt: 1})
	require.NoError(t, actor.Send(g, &num{}, (*gate).onNum))
	<-g.entered
	require.NoError(t, actor.Send(r, &num{v: 7}, (*recorder).onNum))
	deadline := time.Now().Add(20 * time.Second)
	for r.Alive() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	assert.False(t, r.Alive(), "the actor behind the stuck worker was never served")
	close(g.release)
	stop(t, sys)
	assert.Equal(t, []int{7}, r.got)
}

// --- 12. Concurrent Stop -------------------------------------------------

// Every caller of a Stop in progress waits for it and gets its outcome
// (before the fix, later callers got ErrStopped at once while actors still
// ran); a call after it returned gets ErrStopped.
func TestConcurrentStopCallersWaitForSameOutcome(t *testing.T) {
	sys := start(t, actor.WithWorkers(2))
	s, _ := actor.Spawn(sys, &blocker{release: make(chan struct{})})
	require.NoError(t, actor.Send(s, &num{}, (*blocker).onNum))
	const callers = 4
	errs := make(chan error, callers)
	returned := make(chan struct{}, callers)
	for i := 0; i < callers; i++ {
		go func() {
			errs <- sys.Stop(context.Background())
			returned <- struct{}{}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	assert.Empty(t, returned, "a Stop returned while an actor was alive")
	assert.True(t, s.Alive())
	close(s.release)
	for i := 0; i < callers; i++ {
		assert.NoError(t, <-errs)
	}
	assert.ErrorIs(t, sys.Stop(context.Background()), actor.ErrStopped)

	// A waiting caller whose own context ends gets a distinct error, and
	// the Stop in progress goes on. The first caller is given a head start
	// to begin the stop; should the second still begin it (a stalled
	// machine), it runs the stop itself, forced by its context, and the
	// scenario is tried again with a longer head start.
	for headStart := 10 * time.Millisecond; ; headStart *= 4 {
		sys = start(t, actor.WithWorkers(1))
		s, _ = actor.Spawn(sys, &blocker{release: make(chan struct{})})
		require.NoError(t, actor.Send(s, &num{}, (*blocker).onNum))
		first := make(chan error, 1)
		go func() { first <- sys.Stop(context.Background()) }()
		time.Sleep(headStart)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		err := sys.Stop(ctx)
		cancel()
		require.ErrorIs(t, err, actor.ErrActorsAlive)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		close(s.release)
		ran := !strings.Contains(err.Error(), "the Stop in progress")
		if !ran {
			assert.NoError(t, <-first, "the Stop in progress did not go on")
			return
		}
		<-first // the forced stop's outcome
		require.Less(t, headStart, 10*time.Second, "the first Stop never began first")
	}
}

// --- 13. Actors alive at a forced Stop ----------------------------------

// An actor still alive when a Stop's context ends counts as terminated once
// Stop has returned, and may be spawned into a new system (before the fix
// it stayed Alive forever and Spawn returned ErrAlreadySpawned).
func TestForcedStopReleasesActors(t *testing.T) {
	sys := start(t, actor.WithWorkers(1))
	r, _ := actor.Spawn(sys, &recorder{})
	require.NoError(t, actor.Send(r, &num{v: 1}, (*recorder).onNum))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, sys.Stop(ctx), actor.ErrActorsAlive)
	assert.False(t, r.Alive())
	assert.ErrorIs(t, actor.Send(r, &num{}, (*recorder).onNum), actor.ErrStopped)

	sys2 := start(t, actor.WithWorkers(1))
	_, err := actor.Spawn(sys2, r)
	require.NoError(t, err)
	r.finishAt = 2
	require.NoError(t, actor.Send(r, &num{v: 2}, (*recorder).onNum))
	stop(t, sys2)
	assert.Equal(t, []int{1, 2}, r.got)
}

// --- 17. Smaller ones ---------------------------------------------------

// Stats and Config on a nil or zero System report ErrNotStarted instead of
// panicking, and Start ignores nil options instead of calling them.
func TestZeroSystemAndNilOption(t *testing.T) {
	var zero actor.System
	for _, s := range []*actor.System{nil, &zero} {
		_, err := s.Stats()
		assert.ErrorIs(t, err, actor.ErrNotStarted)
		_, err = s.Config()
		assert.ErrorIs(t, err, actor.ErrNotStarted)
	}
	sys, err := actor.Start(nil, actor.WithWorkers(1), nil)
	require.NoError(t, err)
	stop(t, sys)
}

// A forced Stop while a worker is stuck in a behaviour reports the batch
// that worker still holds under ErrUndelivered (before the fix that batch
// was left out of the error and only appeared later in the statistics).
func TestForcedStopCountsStuckBatch(t *testing.T) {
	sys := start(t, actor.WithWorkers(1), actor.WithQueues(1))
	release := make(chan struct{})
	entered := make(chan struct{})
	g, _ := actor.Spawn(sys, &gate{entered: entered, release: release})
	r, _ := actor.Spawn(sys, &recorder{})
	// While h holds the worker, queue g's message and five for r: the
	// worker re-takes them as one batch of 6 when h returns, and g then
	// holds it.
	h, _ := actor.Spawn(sys, &gate{entered: make(chan struct{}), release: make(chan struct{})})
	require.NoError(t, actor.Send(h, &num{}, (*gate).onNum))
	<-h.entered
	require.NoError(t, actor.Send(g, &num{}, (*gate).onNum))
	for i := 0; i < 5; i++ {
		require.NoError(t, actor.Send(r, &num{}, (*recorder).onNum))
	}
	close(h.release)
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err := sys.Stop(ctx)
	close(release)
	require.ErrorIs(t, err, actor.ErrUndelivered)
	assert.Contains(t, err.Error(), "batch of 6 messages")
	// The stuck worker exits once the behaviour returns.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		st, _ := sys.Stats()
		if st.Total().Dropped == 5 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	st, _ := sys.Stats()
	assert.Equal(t, uint64(5), st.Total().Dropped)
}

// Spawn racing Stop is linearizable: once any Spawn has returned
// ErrStopped, every later Spawn does too (before the fix, Stop could reopen
// after a racing Spawn had already been told the system stopped).
func TestSpawnRacingStop(t *testing.T) {
	for round := 0; round < 10; round++ {
		sys := start(t, actor.WithWorkers(2))
		var stopped atomic.Bool
		var wg sync.WaitGroup
		var violations atomic.Int64
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					seen := stopped.Load()
					r, err := actor.Spawn(sys, &recorder{})
					if err == nil {
						if seen {
							violations.Add(1)
						}
						_ = actor.SendPill(r, actor.FinishedMsg)
						// One actor at a time per spawner: spawners that
						// outpace the workers (as they do under -race)
						// would keep actors alive for ever, and Stop,
						// which waits for every actor, with them.
						for r.Alive() {
							runtime.Gosched()
						}
						continue
					}
					if !errors.Is(err, actor.ErrStopped) {
						t.Errorf("unexpected error %v", err)
						return
					}
					stopped.Store(true)
					return
				}
			}()
		}
		require.NoError(t, sys.Stop(context.Background()))
		wg.Wait()
		assert.Zero(t, violations.Load(), "a Spawn succeeded after another was told the system stopped")
	}
}

type msgHookPanics struct {
	actor.Message
}

func (*msgHookPanics) Destroy() { panic("message hook") }

type survivor struct {
	actor.Actor
	n int
}

func (s *survivor) onMsg(m *msgHookPanics) actor.Allocation {
	s.n++
	m.SetAllocation(actor.Destroy)
	return actor.Nodelete
}

// A panicking message hook is reported but does not terminate the
// receiving actor, whose behaviour completed.
func TestPanickingMessageHookKeepsActor(t *testing.T) {
	sys := start(t, actor.WithWorkers(1))
	s, _ := actor.Spawn(sys, &survivor{})
	require.NoError(t, actor.Send(s, &msgHookPanics{}, (*survivor).onMsg))
	require.NoError(t, actor.Send(s, &msgHookPanics{}, (*survivor).onMsg))
	require.NoError(t, actor.SendPill(s, actor.FinishedMsg))
	err := sys.Stop(context.Background())
	var pe *executor.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Nil(t, pe.Actor)
	assert.IsType(t, &msgHookPanics{}, pe.Message)
	assert.Equal(t, 2, s.n, "the actor went on after the first hook panicked")
	assert.NotErrorIs(t, err, actor.ErrUndelivered)
}

// Sends and poison pills allocate nothing once the queue has grown (the
// typed entry points and the pill's shared behaviour need no allocation).
func TestSendAndPillDoNotAllocate(t *testing.T) {
	sys := start(t, actor.WithWorkers(1))
	rs := make([]*recorder, 202)
	for i := range rs {
		rs[i], _ = actor.Spawn(sys, &recorder{})
	}
	m := &num{}
	sends := testing.AllocsPerRun(200, func() { _ = actor.Send(rs[0], m, (*recorder).onNum) })
	i := 1
	pills := testing.AllocsPerRun(200, func() { _ = actor.SendPill(rs[i], actor.FinishedMsg); i++ })
	require.NoError(t, actor.SendPill(rs[0], actor.FinishedMsg))
	stop(t, sys)
	assert.Zero(t, sends, "allocations per Send")
	assert.Zero(t, pills, "allocations per SendPill")
}

// --- Misuse that crashed the process or was accepted silently ------------

type pointerEmbed struct {
	*actor.Actor
}

func (*pointerEmbed) onNum(*num) actor.Allocation { return actor.Nodelete }

// A nil message or request through SendContext, a timer, an ask or Go
// panics in the caller with the package's prefix. Before the fix SendAfter
// and SendEvery delivered the nil message, and a request behaviour that
// then panicked crashed the process: the recovery path told the nil
// request's requester it was dropped. (Port.Send does not check: see
// TestNilRequestThroughPortIsRecovered.)
func TestNilMessagesPanicAtTheCaller(t *testing.T) {
	sys := start(t)
	defer stop(t, sys)
	a, _ := actor.Spawn(sys, &account{})
	dep, err := actor.Bind(a, (*account).onDeposit)
	require.NoError(t, err)
	get, err := actor.Bind(a, (*account).onGet)
	require.NoError(t, err)
	reply, err := actor.Bind(&replySink{}, (*replySink).onReply)
	require.ErrorIs(t, err, actor.ErrNotSpawned) // a zero reply port is enough below: the nil is checked first
	ctx := context.Background()

	assert.PanicsWithValue(t, "executor: SendContext with a nil message", func() { _ = dep.SendContext(ctx, nil) })
	assert.PanicsWithValue(t, "actor: SendAfter with a nil message", func() { _, _ = actor.SendAfter(dep, time.Hour, nil) })
	assert.PanicsWithValue(t, "actor: SendAfter with a nil message", func() { _, _ = actor.SendAfter(dep, 0, nil) })
	assert.PanicsWithValue(t, "actor: SendEvery with a nil message", func() { _, _ = actor.SendEvery(dep, time.Hour, nil) })
	assert.PanicsWithValue(t, "actor: Ask with a nil request", func() { _, _ = actor.Ask(ctx, get, nil) })
	assert.PanicsWithValue(t, "actor: AskAsync with a nil request", func() { _ = actor.AskAsync(get, nil, reply, 0) })
	assert.PanicsWithValue(t, "actor: AskFunc with a nil request or function", func() { _ = actor.AskFunc(get, nil, 0, func(int, error) {}) })
	assert.PanicsWithValue(t, "actor: AskFunc with a nil request or function", func() { _ = actor.AskFunc(get, &getBalance{}, 0, nil) })
	assert.PanicsWithValue(t, "actor: Go with a nil function", func() { _ = actor.Go[int](reply, nil) })
	assert.PanicsWithValue(t, "executor: SendAfter or SendEvery with a nil message", func() { _, _ = executor.SendAfter(dep, time.Hour, nil) })
	assert.PanicsWithValue(t, "executor: Ask with a nil request", func() { _, _ = executor.Ask(ctx, get, nil) })
	assert.PanicsWithValue(t, "executor: AskAsync or AskFunc with a nil request", func() { _ = executor.AskAsync(get, nil, reply, 0) })
	assert.PanicsWithValue(t, "executor: Go with a nil function", func() { _ = executor.Go[int](reply, nil) })

	// Nothing was delivered: the account still answers, with its balance.
	bal, err := actor.Ask(ctx, get, &getBalance{})
	require.NoError(t, err)
	assert.Zero(t, bal)
	require.NoError(t, actor.SendPill(a, actor.FinishedMsg))
}

// A nil request through a port reaches its behaviour, which panics on it:
// the panic is recovered like any other and the process goes on. Before
// the fix the recovery path dereferenced the nil request to tell its
// requester, on the worker, outside any recovery, and the process died.
func TestNilRequestThroughPortIsRecovered(t *testing.T) {
	panics := make(chan error, 1)
	sys := start(t, actor.WithErrorHandler(func(err error) { panics <- err }))
	a, _ := actor.Spawn(sys, &account{})
	get, err := actor.Bind(a, (*account).onGet)
	require.NoError(t, err)
	require.NoError(t, get.Send(nil))
	var pe *actor.PanicError
	require.ErrorAs(t, <-panics, &pe)
	assert.Nil(t, pe.Message.(*getBalance))
	for a.Alive() {
		time.Sleep(time.Millisecond)
	}
	assert.ErrorIs(t, sys.Stop(context.Background()), actor.ErrPanic)
}

type replySink struct{ actor.Actor }

func (*replySink) onReply(*actor.Reply[int]) actor.Allocation { return actor.Nodelete }

// An actor type that embeds *actor.Actor has its cell outside the actor:
// Spawn and Bind refuse it with the actor package's message (before, the
// engine's "executor:" message surfaced through the actor API).
func TestPointerEmbeddedActorRefused(t *testing.T) {
	sys := start(t)
	defer stop(t, sys)
	p := &pointerEmbed{Actor: &actor.Actor{}}
	msg := "actor: Spawn: the actor type embeds *actor.Actor; embed actor.Actor by value"
	assert.PanicsWithValue(t, msg, func() { _, _ = actor.Spawn(sys, p) })
	assert.PanicsWithValue(t, msg, func() { _, _ = actor.Spawn(sys, p, actor.WithResume()) })
	assert.PanicsWithValue(t, "actor: Bind: the actor type embeds *actor.Actor; embed actor.Actor by value",
		func() { _, _ = actor.Bind(p, (*pointerEmbed).onNum) })
}

// Watch with a zero notify port reports ErrNotSpawned: before, it returned
// nil and the notification was lost.
func TestWatchWithZeroNotifyPort(t *testing.T) {
	sys := start(t)
	defer stop(t, sys)
	a, _ := actor.Spawn(sys, &account{})
	dep, err := actor.Bind(a, (*account).onDeposit)
	require.NoError(t, err)
	assert.ErrorIs(t, actor.Watch(dep, actor.Port[*actor.Terminated]{}), actor.ErrNotSpawned)
	require.NoError(t, actor.SendPill(a, actor.FinishedMsg))
}

// Watch with a notify port whose actor has terminated reports ErrTerminated:
// before, it returned nil and the notice was lost.
func TestWatchWithTerminatedNotifyPort(t *testing.T) {
	sys := start(t)
	defer stop(t, sys)
	a, _ := actor.Spawn(sys, &account{})
	dep, err := actor.Bind(a, (*account).onDeposit)
	require.NoError(t, err)
	w, _ := actor.Spawn(sys, &noticeCounter{n: map[any]int{}, reasons: map[any]actor.Reason{}})
	notify, err := actor.Bind(w, (*noticeCounter).onTerminated)
	require.NoError(t, err)
	require.NoError(t, actor.SendPill(w, actor.FinishedMsg))
	require.Eventually(t, func() bool { return !w.Alive() }, 20*time.Second, time.Millisecond)
	assert.ErrorIs(t, actor.Watch(dep, notify), actor.ErrTerminated)
	require.NoError(t, actor.SendPill(a, actor.FinishedMsg))
}

// gatedWorker holds its worker in onJob until gate is closed.
type gatedWorker struct {
	actor.Actor
	began chan struct{}
	gate  chan struct{}
}

type gatedJob struct{ actor.Message }

func (w *gatedWorker) onJob(*gatedJob) actor.Allocation {
	select {
	case w.began <- struct{}{}:
	default:
	}
	<-w.gate
	return actor.Nodelete
}

// A SendContext waiting for room in a bounded mailbox when a forced Stop
// ends its actor returns ErrStopped, and so does a send after Stop, as
// System.Stop documents: both returned ErrTerminated (the stop closes the
// private queue of an actor that never terminated on its own).
func TestSendsAfterForcedStopReportStopped(t *testing.T) {
	sys := start(t, actor.WithWorkers(1))
	w := &gatedWorker{began: make(chan struct{}, 1), gate: make(chan struct{})}
	_, err := actor.Spawn(sys, w, actor.WithMailbox(1, actor.Reject))
	require.NoError(t, err)
	jp := mustBind(t, w, (*gatedWorker).onJob)
	require.NoError(t, jp.Send(&gatedJob{}))
	<-w.began                                // the worker is held
	require.NoError(t, jp.Send(&gatedJob{})) // the mailbox is full
	waiting := make(chan error, 1)
	// It waits for room, or, if it comes after the stop has closed the
	// mailbox, fails at once: ErrStopped either way.
	go func() { waiting <- jp.SendContext(context.Background(), &gatedJob{}) }()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // forced
	stopped := make(chan error, 1)
	go func() { stopped <- sys.Stop(ctx) }()
	select {
	case err := <-waiting:
		assert.ErrorIs(t, err, actor.ErrStopped, "the waiting SendContext")
	case <-time.After(20 * time.Second):
		t.Fatal("SendContext still waiting after a forced Stop")
	}
	require.ErrorIs(t, <-stopped, actor.ErrActorsAlive)
	assert.ErrorIs(t, jp.Send(&gatedJob{}), actor.ErrStopped, "a send after Stop")
	assert.ErrorIs(t, jp.SendContext(context.Background(), &gatedJob{}), actor.ErrStopped)
	close(w.gate)
}
