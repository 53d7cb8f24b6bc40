package actor_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actord/actord/actor"
)

// entityCounts is what the entities of the stress test check themselves:
// the live incarnations per name (Started adds one, Stopped takes it
// back), and how often each request was received.
type entityCounts struct {
	live      []atomic.Int32
	overlaps  atomic.Int32 // a Started that found another incarnation of its name alive
	received  []atomic.Int32
	stoppedIn time.Duration // how long Stopped takes, to widen the ending window
}

type entity struct {
	actor.Actor
	idx     int
	c       *entityCounts
	started bool // Started runs again after a restart: one count per incarnation
}

var (
	_ actor.Starter = (*entity)(nil)
	_ actor.Stopper = (*entity)(nil)
)

func (e *entity) Started() {
	if e.started {
		return
	}
	e.started = true
	if e.c.live[e.idx].Add(1) != 1 {
		e.c.overlaps.Add(1)
	}
}

func (e *entity) Stopped(actor.Reason) {
	if e.c.stoppedIn > 0 {
		time.Sleep(e.c.stoppedIn)
	}
	e.c.live[e.idx].Add(-1)
}

// hit is a request with a unique id; end makes the entity terminate
// itself after replying, boom makes it panic (it is restarted).
type hit struct {
	actor.Request[int]
	id   int
	end  bool
	boom bool
}

func (e *entity) onHit(m *hit) actor.Allocation {
	e.c.received[m.id].Add(1)
	if m.boom {
		panic("boom")
	}
	_ = m.Reply(m.id)
	if m.end {
		return actor.Finished
	}
	return actor.Nodelete
}

// TestEntitiesGetOrCreateStress: 64 goroutines ask 100 entities through
// Get (EntityPort) while the entities terminate themselves, after replying
// to some requests and at pills sent by the askers, and are spawned again,
// and panic on others and are restarted (those asks fail with ErrPanic):
// each name has at most one live incarnation at any time (checked by the
// entities in their hooks), and every request is received, and answered,
// exactly once (a request that fails with ErrTerminated was never received,
// and is asked again).
func TestEntitiesGetOrCreateStress(t *testing.T) {
	const names, goroutines = 100, 64
	perG := 150
	if testing.Short() {
		perG = 30
	}
	sys := start(t, actor.WithWorkers(2), actor.WithErrorHandler(func(error) {}))
	c := &entityCounts{live: make([]atomic.Int32, names), received: make([]atomic.Int32, goroutines*perG),
		stoppedIn: 20 * time.Microsecond}
	var spawned atomic.Int32
	es := actor.NewEntities(sys, func(name string) *entity {
		spawned.Add(1)
		var idx int
		fmt.Sscanf(name, "e%d", &idx)
		return &entity{idx: idx, c: c}
	}, actor.WithRestart(nil, actor.Budget{MaxRestarts: -1}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var answered sync.Map // id -> struct{}: a second answer is a failure
	var retries atomic.Int32
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perG; i++ {
				id := g*perG + i
				name := fmt.Sprintf("e%d", (g*7+i*13)%names)
				for {
					p, err := actor.EntityPort(ctx, es, name, (*entity).onHit)
					if !assert.NoError(t, err) {
						return
					}
					boom := i%10 == 4
					v, err := actor.Ask(ctx, p, &hit{id: id, end: i%10 == 9, boom: boom})
					if errors.Is(err, actor.ErrTerminated) {
						retries.Add(1)
						continue // never received: ask the next incarnation
					}
					if boom {
						if !assert.ErrorIs(t, err, actor.ErrPanic) || !assert.NotErrorIs(t, err, actor.ErrTerminated) {
							return
						}
					} else if !assert.NoError(t, err) || !assert.Equal(t, id, v) {
						return
					}
					if _, dup := answered.LoadOrStore(id, struct{}{}); dup {
						t.Errorf("request %d answered twice", id)
					}
					break
				}
				if i%25 == 24 {
					if a, err := es.Get(ctx, name); err == nil {
						_ = actor.SendPill(a, actor.FinishedMsg)
					}
				}
			}
		}()
	}
	wg.Wait()
	assert.Zero(t, c.overlaps.Load(), "a Started found another live incarnation of its name")
	for id := range c.received {
		if n := c.received[id].Load(); n != 1 {
			t.Errorf("request %d received %d times", id, n)
		}
	}
	n := 0
	answered.Range(func(any, any) bool { n++; return true })
	assert.Equal(t, goroutines*perG, n)
	for i := 0; i < names; i++ { // Stop waits for every actor to end
		a := must(es.Get(ctx, fmt.Sprintf("e%d", i)))
		require.NoError(t, actor.SendPill(a, actor.FinishedMsg))
	}
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer stopCancel()
	if err := sys.Stop(stopCtx); err != nil {
		// Requests queued behind an entity's end are counted undelivered
		// (and were asked again); nothing else may be reported.
		for _, e := range unwrapJoin(err) {
			assert.ErrorIs(t, e, actor.ErrUndelivered)
		}
	}
	for i := range c.live {
		assert.Zero(t, c.live[i].Load(), "entity %d still counted live after Stop", i)
	}
	t.Logf("%d incarnations, %d asks again after ErrTerminated", spawned.Load(), retries.Load())
	assert.Greater(t, int(spawned.Load()), names, "the entities ended and were spawned again")
}

// slowStop is an entity whose Stopped hook waits for release.
type slowStop struct {
	actor.Actor
	release chan struct{}
	stopped chan struct{}
}

func (s *slowStop) Stopped(actor.Reason) {
	close(s.stopped)
	<-s.release
}

func (s *slowStop) onGreet(m *greet) actor.Allocation {
	_ = m.Reply("hello, " + m.Who)
	return actor.Nodelete
}

// TestEntitiesGetWaitsForEnd: a Get that finds its entity terminating
// (its Stopped hook running) waits for the end, bounded by its context,
// then gets a new incarnation.
func TestEntitiesGetWaitsForEnd(t *testing.T) {
	sys := start(t, actor.WithWorkers(2))
	defer stop(t, sys)
	es := actor.NewEntities(sys, func(string) *slowStop {
		return &slowStop{release: make(chan struct{}), stopped: make(chan struct{})}
	})
	ctx := context.Background()
	first, err := es.Get(ctx, "a")
	require.NoError(t, err)
	again, err := es.Get(ctx, "a")
	require.NoError(t, err)
	assert.Same(t, first, again, "a live entity is returned, not spawned again")
	require.NoError(t, actor.SendPill(first, actor.FinishedMsg))
	<-first.stopped // terminating: sends fail, Stopped runs

	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err = es.Get(short, "a")
	require.ErrorIs(t, err, context.DeadlineExceeded, "the context bounds the wait")
	assert.Contains(t, err.Error(), `"a"`)

	got := make(chan *slowStop, 1)
	go func() {
		s, err := es.Get(ctx, "a")
		assert.NoError(t, err)
		got <- s
	}()
	select {
	case <-got:
		t.Fatal("Get returned while the entity's Stopped hook ran")
	case <-time.After(20 * time.Millisecond):
	}
	close(first.release)
	second := <-got
	assert.NotSame(t, first, second)
	assert.True(t, second.Alive())
	v, err := actor.Ask(ctx, must(actor.EntityPort(ctx, es, "a", (*slowStop).onGreet)), &greet{Who: "b"})
	require.NoError(t, err)
	assert.Equal(t, "hello, b", v)
	close(second.release)
	require.NoError(t, actor.SendPill(second, actor.FinishedMsg))
}

func must[V any](v V, err error) V {
	if err != nil {
		panic(err)
	}
	return v
}

// getter asks an entity set from a behaviour.
type getter struct {
	actor.Actor
	es  *actor.Entities[slowStop, *slowStop]
	out chan error
}

type getIt struct {
	actor.Message
	name string
}

func (g *getter) onGet(m *getIt) actor.Allocation {
	_, err := g.es.Get(context.Background(), m.name)
	g.out <- err
	return actor.Nodelete
}

// TestEntitiesGetInBehaviour: from a behaviour, Get spawns and returns
// entities, but does not wait for one that is terminating (ErrTerminated).
func TestEntitiesGetInBehaviour(t *testing.T) {
	// One queue per worker: two mailboxes.
	sys := start(t, actor.WithWorkers(2), actor.WithQueuesPerWorker(1))
	defer stop(t, sys)
	es := actor.NewEntities(sys, func(string) *slowStop {
		return &slowStop{release: make(chan struct{}), stopped: make(chan struct{})}
	})
	g := must(actor.Spawn(sys, &getter{es: es, out: make(chan error, 1)}))
	require.NoError(t, actor.Send(g, &getIt{name: "b"}, (*getter).onGet))
	require.NoError(t, <-g.out, "Get spawns from a behaviour")
	b := must(es.Get(context.Background(), "b"))
	close(b.release)
	require.NoError(t, actor.SendPill(b, actor.FinishedMsg))
	require.NoError(t, actor.SendPill(g, actor.FinishedMsg))
	// Spawned from here, one after the other, the entity and a second
	// getter take consecutive tickets: they are on different mailboxes,
	// one per worker, so that the entity's Stopped hook, which blocks its
	// worker, does not hold the getter up.
	a, err := es.Get(context.Background(), "a")
	require.NoError(t, err)
	g2 := must(actor.Spawn(sys, &getter{es: es, out: make(chan error, 1)}))
	require.NoError(t, actor.SendPill(a, actor.FinishedMsg))
	<-a.stopped
	require.NoError(t, actor.Send(g2, &getIt{name: "a"}, (*getter).onGet))
	assert.ErrorIs(t, <-g2.out, actor.ErrTerminated)
	close(a.release)
	require.NoError(t, actor.SendPill(g2, actor.FinishedMsg))
	a2, err := es.Get(context.Background(), "a")
	require.NoError(t, err)
	close(a2.release)
	require.NoError(t, actor.SendPill(a2, actor.FinishedMsg))
}

// TestEntitiesSpawnErrors: a Get that spawns returns Spawn's errors; a
// factory's panic goes up through the Get that called it.
func TestEntitiesSpawnErrors(t *testing.T) {
	sys := start(t, actor.WithWorkers(1))
	bad := actor.NewEntities(sys, func(string) *greeter { return &greeter{} }, actor.WithMailbox(0, actor.Reject))
	_, err := bad.Get(context.Background(), "x")
	assert.ErrorIs(t, err, actor.ErrConfig)

	n := 0
	flaky := actor.NewEntities(sys, func(string) *greeter {
		if n++; n == 1 {
			panic("factory failed")
		}
		return &greeter{}
	})
	assert.PanicsWithValue(t, "factory failed", func() { flaky.Get(context.Background(), "x") })
	g, err := flaky.Get(context.Background(), "x")
	require.NoError(t, err, "the name is free again after the panic")
	require.NoError(t, actor.SendPill(g, actor.FinishedMsg))

	stop(t, sys)
	es := actor.NewEntities(sys, func(string) *greeter { return &greeter{} })
	_, err = es.Get(context.Background(), "x")
	assert.ErrorIs(t, err, actor.ErrStopped)
	var zero *actor.System
	_, err = actor.NewEntities(zero, func(string) *greeter { return &greeter{} }).Get(context.Background(), "x")
	assert.ErrorIs(t, err, actor.ErrNotStarted)
}

// TestEntitiesConcurrentCreate: concurrent Gets of a new name spawn one actor.
func TestEntitiesConcurrentCreate(t *testing.T) {
	sys := start(t, actor.WithWorkers(2))
	defer stop(t, sys)
	var made atomic.Int32
	es := actor.NewEntities(sys, func(string) *greeter {
		made.Add(1)
		time.Sleep(time.Millisecond) // a slow factory: the others wait for it
		return &greeter{}
	})
	var wg sync.WaitGroup
	got := make([]*greeter, 32)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = must(es.Get(context.Background(), "one"))
		}()
	}
	wg.Wait()
	assert.EqualValues(t, 1, made.Load())
	for _, g := range got {
		assert.Same(t, got[0], g)
	}
	require.NoError(t, actor.SendPill(got[0], actor.FinishedMsg))
}
