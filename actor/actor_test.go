package actor_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/actord/actord/actortest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/internal/testwatch"
	"github.com/actord/actord/stealing"
)

// TestMain checks, after the tests, that no goroutine outlives its system's
// Stop. Not when fuzzing (go test -fuzz): the fuzzing engine's own
// goroutines may still be running when m.Run returns in the coordinating
// process.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.fuzz"); f != nil && f.Value.String() != "" {
		os.Exit(m.Run())
	}
	testwatch.Arm() // goleak.VerifyTestMain exits: the watchdog is never disarmed
	goleak.VerifyTestMain(m)
}

// start starts a system and stops it at the end of the test, requiring a clean stop.
func start(t *testing.T, opts ...actor.Option) *actor.System {
	t.Helper()
	sys, err := actor.Start(opts...)
	require.NoError(t, err)
	return sys
}

func stop(t *testing.T, sys *actor.System) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, sys.Stop(ctx))
}

// recorder is an actor that records what it receives.
type recorder struct {
	actor.Actor
	got      []int
	finishAt int // return Finished after this many messages (0: never)
}

type num struct {
	actor.Message
	v int
}

func (r *recorder) onNum(m *num) actor.Allocation {
	r.got = append(r.got, m.v)
	if r.finishAt > 0 && len(r.got) == r.finishAt {
		return actor.Finished
	}
	return actor.Nodelete
}

func TestFIFOFromOneSender(t *testing.T) {
	for _, workers := range []int{1, 2, 4} {
		t.Run(fmt.Sprint(workers), func(t *testing.T) {
			sys := start(t, actor.WithWorkers(workers))
			const n = 10000
			r, err := actor.Spawn(sys, &recorder{finishAt: n})
			require.NoError(t, err)
			msgs := make([]num, n)
			for i := range msgs {
				msgs[i].v = i
				require.NoError(t, actor.Send(r, &msgs[i], (*recorder).onNum))
			}
			stop(t, sys)
			require.Len(t, r.got, n)
			for i, v := range r.got {
				require.Equal(t, i, v)
			}
		})
	}
}

func TestSendErrors(t *testing.T) {
	sys := start(t)
	r, _ := actor.Spawn(sys, &recorder{})

	// Never spawned.
	var lone recorder
	assert.ErrorIs(t, actor.Send(&lone, &num{}, (*recorder).onNum), actor.ErrNotSpawned)

	// Terminated: the pill is received, later sends fail and nothing is delivered.
	require.NoError(t, actor.Send(r, &num{v: 1}, (*recorder).onNum))
	require.NoError(t, actor.SendPill(r, actor.FinishedMsg))
	stop(t, sys)
	assert.ErrorIs(t, actor.Send(r, &num{v: 2}, (*recorder).onNum), actor.ErrTerminated)
	assert.ErrorIs(t, actor.SendPill(r, actor.DeleteMsg), actor.ErrTerminated)
	assert.Equal(t, []int{1}, r.got)
}

func TestSpawnErrors(t *testing.T) {
	_, err := actor.Spawn(nil, &recorder{})
	assert.ErrorIs(t, err, actor.ErrNotStarted)
	var zero actor.System
	_, err = actor.Spawn(&zero, &recorder{})
	assert.ErrorIs(t, err, actor.ErrNotStarted)
	assert.ErrorIs(t, zero.Stop(context.Background()), actor.ErrNotStarted)

	sys := start(t)
	r, err := actor.Spawn(sys, &recorder{})
	require.NoError(t, err)
	_, err = actor.Spawn(sys, r)
	assert.ErrorIs(t, err, actor.ErrAlreadySpawned)
	require.NoError(t, actor.SendPill(r, actor.FinishedMsg))
	stop(t, sys)

	_, err = actor.Spawn(sys, &recorder{})
	assert.ErrorIs(t, err, actor.ErrStopped)
	assert.ErrorIs(t, sys.Stop(context.Background()), actor.ErrStopped)

	assert.PanicsWithValue(t, "actor: Spawn of a nil actor", func() {
		var p *recorder
		actor.Spawn(sys, p)
	})
	assert.Panics(t, func() { actor.Send[recorder, num](nil, &num{}, (*recorder).onNum) })
}

func TestConfigErrors(t *testing.T) {
	_, err := actor.Start(actor.WithWorkers(4), actor.WithQueues(3))
	require.ErrorIs(t, err, actor.ErrConfig)
	assert.Contains(t, err.Error(), "3 queues for 4 workers")
	_, err = actor.Start(actor.WithWorkers(-1))
	assert.ErrorIs(t, err, actor.ErrConfig)
	_, err = actor.Start(actor.WithQueueCapacity(-1))
	assert.ErrorIs(t, err, actor.ErrConfig)
	// Exactly one queue per worker is fine.
	sys := start(t, actor.WithWorkers(4), actor.WithQueues(4))
	stop(t, sys)
}

func TestSendToStoppedSystem(t *testing.T) {
	sys := start(t)
	r, _ := actor.Spawn(sys, &recorder{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := sys.Stop(ctx) // r never terminates
	require.ErrorIs(t, err, actor.ErrActorsAlive)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "1 actors still alive")
	// The system is gone: sends to its actors fail rather than vanish.
	assert.ErrorIs(t, actor.Send(r, &num{}, (*recorder).onNum), actor.ErrStopped)
}

func TestStopReportsUndeliveredMessages(t *testing.T) {
	sys := start(t, actor.WithWorkers(1))
	r, _ := actor.Spawn(sys, &recorder{})
	// A blocker keeps the worker busy until everything below is queued, so
	// the three messages behind the pill are certainly queued before it is
	// received. They can never be delivered.
	release := make(chan struct{})
	b, _ := actor.Spawn(sys, &blocker{release: release})
	require.NoError(t, actor.Send(b, &num{}, (*blocker).onNum))
	require.NoError(t, actor.Send(r, &num{v: 1}, (*recorder).onNum))
	require.NoError(t, actor.SendPill(r, actor.FinishedMsg))
	for i := 0; i < 3; i++ {
		require.NoError(t, actor.Send(r, &num{v: 2}, (*recorder).onNum))
	}
	close(release)
	err := sys.Stop(context.Background())
	require.ErrorIs(t, err, actor.ErrUndelivered)
	assert.Contains(t, err.Error(), "3 messages")
	assert.Equal(t, []int{1}, r.got)
}

type blocker struct {
	actor.Actor
	release chan struct{}
}

func (b *blocker) onNum(*num) actor.Allocation {
	<-b.release
	return actor.Finished
}

type panicker struct {
	actor.Actor
	n int
}

type boom struct{ actor.Message }

func (p *panicker) onBoom(*boom) actor.Allocation {
	p.n++
	panic(fmt.Sprintf("boom %d", p.n))
}

func TestPanicInBehaviour(t *testing.T) {
	var mu sync.Mutex
	var handled []error
	sys := start(t, actor.WithWorkers(2), actor.WithErrorHandler(func(err error) {
		mu.Lock()
		handled = append(handled, err)
		mu.Unlock()
	}))
	p, _ := actor.Spawn(sys, &panicker{})
	r, _ := actor.Spawn(sys, &recorder{finishAt: 100})
	require.NoError(t, actor.Send(p, &boom{}, (*panicker).onBoom))
	for i := 0; i < 100; i++ { // the other actor and the workers keep going
		require.NoError(t, actor.Send(r, &num{v: i}, (*recorder).onNum))
	}
	err := sys.Stop(context.Background())
	require.ErrorIs(t, err, actor.ErrPanic)
	var pe *actor.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "boom 1", pe.Value)
	assert.Same(t, p, pe.Actor.(*panicker))
	assert.Contains(t, string(pe.Stack), "onBoom", "the stack shows the panicking behaviour")
	assert.Contains(t, err.Error(), "panicked")
	assert.Len(t, r.got, 100)
	assert.False(t, p.Alive())
	mu.Lock()
	assert.Len(t, handled, 1)
	mu.Unlock()
	assert.ErrorIs(t, actor.Send(p, &boom{}, (*panicker).onBoom), actor.ErrTerminated)
}

type exiter struct{ actor.Actor }

func (*exiter) onNum(*num) actor.Allocation {
	runtime.Goexit()
	return actor.Nodelete
}

func TestGoexitInBehaviour(t *testing.T) {
	sys := start(t, actor.WithWorkers(1))
	x, _ := actor.Spawn(sys, &exiter{})
	r, _ := actor.Spawn(sys, &recorder{finishAt: 10})
	require.NoError(t, actor.Send(x, &num{}, (*exiter).onNum))
	for i := 0; i < 10; i++ { // served by the worker's replacement goroutine
		require.NoError(t, actor.Send(r, &num{v: i}, (*recorder).onNum))
	}
	err := sys.Stop(context.Background())
	var pe *actor.PanicError
	require.ErrorAs(t, err, &pe)
	assert.True(t, pe.Goexit)
	assert.Contains(t, err.Error(), "Goexit")
	assert.Len(t, r.got, 10)
}

type stopper struct {
	actor.Actor
	sys *actor.System
	err error
}

func (s *stopper) onNum(*num) actor.Allocation {
	s.err = s.sys.Stop(context.Background())
	return actor.Finished
}

func TestStopInsideBehaviour(t *testing.T) {
	sys := start(t)
	s, _ := actor.Spawn(sys, &stopper{sys: sys})
	require.NoError(t, actor.Send(s, &num{}, (*stopper).onNum))
	stop(t, sys)
	assert.ErrorIs(t, s.err, actor.ErrStopInBehaviour)
}

// hooked counts its hooks; it is used as both an actor and a message type.
type hooked struct {
	actor.Actor
	actor.Message
	destroyed, released int
	status              actor.Allocation
}

func (h *hooked) Destroy() { h.destroyed++ }
func (h *hooked) Release() { h.released++ }

func (h *hooked) onNum(*num) actor.Allocation { return h.status }

type hookedMsg struct {
	actor.Message
	destroyed, released int
}

func (h *hookedMsg) Destroy() { h.destroyed++ }
func (h *hookedMsg) Release() { h.released++ }

type plain struct {
	actor.Actor
	set actor.Allocation // the status its behaviour sets on the message
}

func (p *plain) onHooked(m *hookedMsg) actor.Allocation {
	m.SetAllocation(p.set)
	return actor.Nodelete
}

func TestAllocationStatuses(t *testing.T) {
	cases := []struct {
		status              actor.Allocation
		destroyed, released int
	}{
		{actor.Delete, 1, 1},
		{actor.Destroy, 1, 0},
		{actor.Finished, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.status.String(), func(t *testing.T) {
			sys := start(t)
			// Actor status, returned by the behaviour.
			h, _ := actor.Spawn(sys, &hooked{status: tc.status})
			require.NoError(t, actor.Send(h, &num{}, (*hooked).onNum))
			// The same status through the matching poison pill.
			pills := map[actor.Allocation]*actor.Pill{actor.Delete: actor.DeleteMsg, actor.Destroy: actor.DestroyMsg, actor.Finished: actor.FinishedMsg}
			h2, _ := actor.Spawn(sys, &hooked{})
			require.NoError(t, actor.SendPill(h2, pills[tc.status]))
			// Message status, set by the receiving behaviour.
			p, _ := actor.Spawn(sys, &plain{set: tc.status})
			m := &hookedMsg{}
			assert.Panics(t, func() { m.SetAllocation(tc.status) }, "only the receiving behaviour may set it")
			require.NoError(t, actor.Send(p, m, (*plain).onHooked))
			require.NoError(t, actor.SendPill(p, actor.FinishedMsg))
			stop(t, sys)
			for _, x := range []*hooked{h, h2} {
				assert.Equal(t, tc.destroyed, x.destroyed, "actor Destroy hook")
				assert.Equal(t, tc.released, x.released, "actor Release hook")
				assert.False(t, x.Alive())
			}
			assert.Equal(t, tc.destroyed, m.destroyed, "message Destroy hook")
			assert.Equal(t, tc.released, m.released, "message Release hook")
			assert.Equal(t, actor.Nodelete, m.Allocation(), "a status belongs to one delivery")
		})
	}
}

func TestRespawnDestroyedActor(t *testing.T) {
	sys := start(t)
	r := &recorder{finishAt: 1}
	for i := 0; i < 3; i++ {
		_, err := actor.Spawn(sys, r)
		for errors.Is(err, actor.ErrAlreadySpawned) { // the previous termination is not over yet
			time.Sleep(50 * time.Microsecond)
			_, err = actor.Spawn(sys, r)
		}
		require.NoError(t, err)
		require.NoError(t, actor.Send(r, &num{v: i}, (*recorder).onNum))
		for r.Alive() {
			time.Sleep(time.Millisecond)
		}
		r.got = nil
	}
	stop(t, sys)
}

func TestStartStopCycles(t *testing.T) {
	for cycle := 0; cycle < 20; cycle++ {
		sys := start(t, actor.WithWorkers(1+cycle%4))
		r, _ := actor.Spawn(sys, &recorder{finishAt: 100})
		for i := 0; i < 100; i++ {
			require.NoError(t, actor.Send(r, &num{v: i}, (*recorder).onNum))
		}
		stop(t, sys)
		require.Len(t, r.got, 100)
	}
	// goleak (TestMain) checks that no worker goroutine outlives its Stop.
}

func TestTwoSystemsAtOnce(t *testing.T) {
	a, b := start(t, actor.WithWorkers(2)), start(t, actor.WithWorkers(2))
	ra, _ := actor.Spawn(a, &recorder{finishAt: 1000})
	rb, _ := actor.Spawn(b, &recorder{finishAt: 1000})
	for i := 0; i < 1000; i++ {
		require.NoError(t, actor.Send(ra, &num{v: i}, (*recorder).onNum))
		require.NoError(t, actor.Send(rb, &num{v: i}, (*recorder).onNum))
	}
	stop(t, a)
	stop(t, b)
	assert.Len(t, ra.got, 1000)
	assert.Len(t, rb.got, 1000)
}

// forwarder sends what it receives on to the next actor: messages sent from
// inside behaviours, across systems boundaries too.
type forwarder struct {
	actor.Actor
	next *recorder
	n    int
}

func (f *forwarder) onNum(m *num) actor.Allocation {
	if err := actor.Send(f.next, m, (*recorder).onNum); err != nil {
		panic(err)
	}
	f.n++
	if f.n == 1000 {
		return actor.Finished
	}
	return actor.Nodelete
}

func TestSendFromBehaviourToOtherSystem(t *testing.T) {
	a, b := start(t), start(t)
	r, _ := actor.Spawn(b, &recorder{finishAt: 1000})
	f, _ := actor.Spawn(a, &forwarder{next: r})
	for i := 0; i < 1000; i++ {
		require.NoError(t, actor.Send(f, &num{v: i}, (*forwarder).onNum))
	}
	stop(t, a)
	stop(t, b)
	require.Len(t, r.got, 1000)
	for i, v := range r.got {
		require.Equal(t, i, v, "FIFO through a forwarder")
	}
}

func TestStealingOptions(t *testing.T) {
	for _, h := range []stealing.Heuristic{stealing.None, stealing.Random, stealing.LongestVictim} {
		sys := start(t, actor.WithStealing(h), actor.WithWorkers(3))
		assert.Equal(t, h, actortest.MustConfig(sys).Steal)
		stop(t, sys)
	}
}

func TestStatsCountWork(t *testing.T) {
	sys := start(t, actor.WithWorkers(2))
	r, _ := actor.Spawn(sys, &recorder{finishAt: 500})
	for i := 0; i < 500; i++ {
		require.NoError(t, actor.Send(r, &num{v: i}, (*recorder).onNum))
	}
	stop(t, sys)
	st := actortest.MustStats(sys)
	tot := st.Total()
	assert.Equal(t, uint64(1), tot.ActorsCreated)
	assert.Equal(t, uint64(1), tot.ActorsTerminated)
	assert.Equal(t, uint64(500), st.MessagesSent)
	assert.Equal(t, uint64(500), tot.MessagesProcessed())
	assert.Equal(t, uint64(500), tot.GulpSize.Sum)
	assert.GreaterOrEqual(t, tot.GulpSize.Count, uint64(1))
	assert.Zero(t, st.LiveActors)
	assert.Zero(t, st.QueuedMessages)
}

func TestErrorsAreWrapped(t *testing.T) {
	_, err := actor.Start(actor.WithQueues(1), actor.WithWorkers(2))
	assert.True(t, errors.Is(err, actor.ErrConfig))
	assert.True(t, strings.HasPrefix(err.Error(), "executor: invalid configuration"))
}

// The send from a parked system: every worker is asleep (tiny spin, no
// timeout), and each message must still be delivered, many times in a row.
func TestSendWakesParkedWorkers(t *testing.T) {
	sys := start(t, actor.WithWorkers(4), actor.WithIdle(1, -1))
	r, _ := actor.Spawn(sys, &recorder{finishAt: 300})
	for i := 0; i < 300; i++ {
		// Wait until all workers are parked before each send.
		deadline := time.Now().Add(20 * time.Second)
		parked := actortest.MustStats(sys).ParkedWorkers
		for parked < 4 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Microsecond)
			parked = actortest.MustStats(sys).ParkedWorkers
		}
		require.Equal(t, 4, parked, "workers parked before send %d", i)
		require.NoError(t, actor.Send(r, &num{v: i}, (*recorder).onNum))
		deadline = time.Now().Add(20 * time.Second)
		for !delivered(sys, uint64(i+1)) {
			if time.Now().After(deadline) {
				t.Fatalf("message %d not delivered to the parked system", i)
			}
			time.Sleep(10 * time.Microsecond)
		}
	}
	stop(t, sys)
	require.Len(t, r.got, 300)
	assert.NotZero(t, actortest.MustStats(sys).Total().WakeupsBySender)
}

func delivered(sys *actor.System, n uint64) bool {
	st := actortest.MustStats(sys)
	t := st.Total()
	return t.MessagesProcessed() >= n
}

// An actor spawned again after it terminated must not receive the messages
// still queued for its previous incarnation: they are dead letters (reported
// by Stop), never delivered to the new incarnation, and never run on another
// worker at the same time as it.
type reborn struct {
	actor.Actor
	in, overlap, probes atomic.Int32
}

type rebornProbe struct{ actor.Message }

func (a *reborn) enter() {
	if a.in.Add(1) > 1 {
		a.overlap.Add(1)
	}
}

func (a *reborn) onProbe(*rebornProbe) actor.Allocation {
	a.enter()
	a.probes.Add(1)
	time.Sleep(time.Millisecond)
	a.in.Add(-1)
	return actor.Nodelete
}

func (a *reborn) onLong(*rebornProbe) actor.Allocation {
	a.enter()
	time.Sleep(50 * time.Millisecond)
	a.in.Add(-1)
	return actor.Finished
}

type sleeper struct{ actor.Actor }

func (*sleeper) nap(m *num) actor.Allocation {
	time.Sleep(time.Duration(m.v) * time.Millisecond)
	return actor.Nodelete
}

// held is a message whose behaviour blocks until open is closed.
type held struct {
	actor.Message
	open chan struct{}
}

func (*sleeper) hold(m *held) actor.Allocation {
	<-m.open
	return actor.Nodelete
}

func TestRespawnDoesNotReceiveOldMessages(t *testing.T) {
	sys := start(t, actor.WithWorkers(2), actor.WithQueues(2), actor.WithStealing(stealing.None))
	a, _ := actor.Spawn(sys, &reborn{}) // ticket 0: mailbox 0
	other, _ := actor.Spawn(sys, &sleeper{})
	b, _ := actor.Spawn(sys, &sleeper{}) // ticket 2: mailbox 0, like a
	require.NoError(t, actor.SendPill(other, actor.FinishedMsg))
	// Mailbox 0 gets: a hold, released once the probes are sent (so
	// everything below is accepted while a is alive), a's Destroy pill, a
	// nap, then 20 probes for a.
	open := make(chan struct{})
	require.NoError(t, actor.Send(b, &held{open: open}, (*sleeper).hold))
	require.NoError(t, actor.SendPill(a, actor.DestroyMsg))
	require.NoError(t, actor.Send(b, &num{v: 20}, (*sleeper).nap))
	for i := 0; i < 20; i++ {
		require.NoError(t, actor.Send(a, &rebornProbe{}, (*reborn).onProbe))
	}
	close(open)
	require.NoError(t, actor.SendPill(b, actor.FinishedMsg))
	// The next incarnation (ticket 3: mailbox 1), as soon as the old one's
	// termination is over (Spawn refuses while it is not).
	var err error
	for _, err = actor.Spawn(sys, a); errors.Is(err, actor.ErrAlreadySpawned); _, err = actor.Spawn(sys, a) {
		time.Sleep(50 * time.Microsecond)
	}
	require.NoError(t, err)
	require.NoError(t, actor.Send(a, &rebornProbe{}, (*reborn).onLong))
	err = sys.Stop(context.Background())
	require.ErrorIs(t, err, actor.ErrUndelivered)
	assert.Contains(t, err.Error(), "20 messages")
	assert.Zero(t, a.probes.Load(), "old incarnation's messages delivered to the new one")
	assert.Zero(t, a.overlap.Load(), "one actor ran on two workers at once")
}

func TestManyGoexits(t *testing.T) {
	sys := start(t, actor.WithWorkers(1))
	for i := 0; i < 20; i++ { // far more than the identity table's size
		x, err := actor.Spawn(sys, &exiter{})
		require.NoError(t, err)
		require.NoError(t, actor.Send(x, &num{}, (*exiter).onNum))
	}
	r, err := actor.Spawn(sys, &recorder{finishAt: 5})
	require.NoError(t, err)
	for i := 0; i < 5; i++ {
		require.NoError(t, actor.Send(r, &num{v: i}, (*recorder).onNum))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = sys.Stop(ctx)
	require.ErrorIs(t, err, actor.ErrPanic)
	require.NotErrorIs(t, err, actor.ErrActorsAlive)
	assert.Len(t, r.got, 5)
}

// slowHooks blocks in its Destroy hook until released, then panics.
type slowHooks struct {
	actor.Actor
	inHook, release chan struct{}
}

func (s *slowHooks) Destroy() {
	close(s.inHook)
	<-s.release
	panic("hook failed")
}

func TestSpawnRefusedWhileHooksRun(t *testing.T) {
	sys := start(t)
	s := &slowHooks{inHook: make(chan struct{}), release: make(chan struct{})}
	_, err := actor.Spawn(sys, s)
	require.NoError(t, err)
	require.NoError(t, actor.SendPill(s, actor.DestroyMsg))
	<-s.inHook
	// Its termination is not over: Alive reports true until Destroy has
	// returned (the documented order), and Spawn refuses it meanwhile.
	assert.True(t, s.Alive())
	_, err = actor.Spawn(sys, s)
	assert.ErrorIs(t, err, actor.ErrAlreadySpawned, "its termination is not over")
	assert.ErrorIs(t, actor.SendPill(s, actor.FinishedMsg), actor.ErrTerminated)
	close(s.release)
	require.Eventually(t, func() bool { return !s.Alive() }, 20*time.Second, time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = sys.Stop(ctx) // the live count is right: no context timeout
	require.ErrorIs(t, err, actor.ErrPanic)
	require.NotErrorIs(t, err, actor.ErrActorsAlive)
}

func TestPanickingErrorHandler(t *testing.T) {
	sys := start(t, actor.WithErrorHandler(func(error) { panic("handler") }))
	p, _ := actor.Spawn(sys, &panicker{})
	r, _ := actor.Spawn(sys, &recorder{finishAt: 10})
	require.NoError(t, actor.Send(p, &boom{}, (*panicker).onBoom))
	for i := 0; i < 10; i++ {
		require.NoError(t, actor.Send(r, &num{v: i}, (*recorder).onNum))
	}
	err := sys.Stop(context.Background())
	require.ErrorIs(t, err, actor.ErrPanic)
	assert.Contains(t, err.Error(), "handler")
	assert.Len(t, r.got, 10, "the process and the other actors survived")
}
