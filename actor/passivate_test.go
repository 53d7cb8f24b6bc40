package actor_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actord/actord/actor"
)

// dozer is a passivating actor that tells its ends on a channel and
// counts, per name, its live incarnations and the notes it received.
type dozer struct {
	actor.Actor
	name  int
	st    *dozers
	got   int
	begun bool
}

type dozers struct {
	live     []atomic.Int32 // incarnations alive per name: Started +1, Stopped -1
	overlaps atomic.Int32   // a Started that found another incarnation of its name alive
	ends     chan actor.Reason
	passive  atomic.Int32 // ends with ReasonPassivated
	mu       sync.Mutex
	recv     map[int][]*dozer // memo id -> the incarnations that received it
}

func newDozers(names int) *dozers {
	return &dozers{live: make([]atomic.Int32, names), ends: make(chan actor.Reason, 1<<16), recv: map[int][]*dozer{}}
}

var (
	_ actor.Starter = (*dozer)(nil)
	_ actor.Stopper = (*dozer)(nil)
)

func (s *dozer) Started() {
	if s.st.live[s.name].Add(1) != 1 {
		s.st.overlaps.Add(1)
	}
}

func (s *dozer) Stopped(why actor.Reason) {
	if s.st.live[s.name].Add(-1) != 0 {
		s.st.overlaps.Add(1)
	}
	if why == actor.ReasonPassivated {
		s.st.passive.Add(1)
	}
	select {
	case s.st.ends <- why:
	default:
	}
}

type memo struct {
	actor.Message
	id int
}

func (s *dozer) onMemo(m *memo) actor.Allocation {
	s.got++
	s.st.mu.Lock()
	s.st.recv[m.id] = append(s.st.recv[m.id], s)
	s.st.mu.Unlock()
	return actor.Nodelete
}

func startPassSys(t *testing.T) *actor.System {
	t.Helper()
	sys, err := actor.Start()
	require.NoError(t, err)
	return sys
}

// TestPassivationIdle: an idle actor ends after about d, its Stopped hook
// and its watchers get ReasonPassivated, sends to it fail afterwards, and
// its entity name is released for the next incarnation.
func TestPassivationIdle(t *testing.T) {
	sys := startPassSys(t)
	const d = 40 * time.Millisecond
	st := newDozers(1)
	es := actor.NewEntities(sys, func(string) *dozer { return &dozer{st: st} }, actor.WithPassivation(d))
	ctx := context.Background()
	begin := time.Now()
	a, err := es.Get(ctx, "a")
	require.NoError(t, err)
	p, err := actor.Bind(a, (*dozer).onMemo)
	require.NoError(t, err)
	w, err := actor.WatchChan(p)
	require.NoError(t, err)

	select {
	case why := <-st.ends:
		assert.Equal(t, actor.ReasonPassivated, why)
		assert.Equal(t, "passivated", why.String())
	case <-time.After(10 * time.Second):
		t.Fatal("the idle actor was not passivated")
	}
	assert.GreaterOrEqual(t, time.Since(begin), d, "passivated before d")
	select {
	case n := <-w:
		assert.Equal(t, actor.ReasonPassivated, n.Reason)
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher was not told")
	}
	assert.Eventually(t, func() bool { return !a.Alive() }, 10*time.Second, time.Millisecond)
	assert.ErrorIs(t, actor.Send(a, &memo{}, (*dozer).onMemo), actor.ErrTerminated, "a stale pointer")
	assert.ErrorIs(t, p.Send(&memo{}), actor.ErrTerminated, "a stale port")

	b, err := es.Get(ctx, "a") // the name was released: the next incarnation
	require.NoError(t, err)
	assert.NotSame(t, a, b)
	assert.True(t, b.Alive())
	require.NoError(t, sys.Stop(ctx))
	assert.Zero(t, st.overlaps.Load())
}

// TestPassivationBusy: an actor receiving messages more often than d is
// not passivated; once they stop, it is.
func TestPassivationBusy(t *testing.T) {
	sys := startPassSys(t)
	const d = 250 * time.Millisecond
	st := newDozers(1)
	a, err := actor.Spawn(sys, &dozer{st: st}, actor.WithPassivation(d))
	require.NoError(t, err)
	for i := 0; i < 100; i++ { // a second or more, a message every 10ms
		require.NoError(t, actor.Send(a, &memo{id: i}, (*dozer).onMemo))
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case why := <-st.ends:
		t.Fatalf("a busy actor ended: %v", why)
	default:
	}
	select {
	case why := <-st.ends:
		assert.Equal(t, actor.ReasonPassivated, why)
	case <-time.After(10 * time.Second):
		t.Fatal("not passivated once idle")
	}
	require.NoError(t, sys.Stop(context.Background()))
	assert.Len(t, st.recv, 100)
}

// TestPassivationRacingMessages: messages sent while the actors decide to
// passivate (d tiny, sends at random moments) are each delivered exactly
// once: a send that a stale incarnation accepted reaches that incarnation,
// and one it refused (ErrTerminated) is sent again through the Entities to
// the next. Stop reports no undelivered message. With a bounded mailbox the
// same holds through the private queue.
func TestPassivationRacingMessages(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []actor.SpawnOption
	}{
		{"shared", []actor.SpawnOption{actor.WithPassivation(2 * time.Millisecond)}},
		{"bounded", []actor.SpawnOption{actor.WithPassivation(2 * time.Millisecond), actor.WithMailbox(1<<20, actor.Reject)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sys := startPassSys(t)
			const names, senders, per = 8, 8, 300
			st := newDozers(names)
			es := actor.NewEntities(sys, func(n string) *dozer { return &dozer{st: st, name: int(n[0] - 'a')} }, tc.opts...)
			ctx := context.Background()
			var direct sync.Map // id -> the incarnation that accepted it
			var refused atomic.Int32
			var wg sync.WaitGroup
			for g := range senders {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(g), 7))
					for i := range per {
						id := g*per + i
						name := string(rune('a' + r.IntN(names)))
						a, err := es.Get(ctx, name)
						if !assert.NoError(t, err) {
							return
						}
						time.Sleep(time.Duration(r.IntN(3000)) * time.Microsecond)
						err = actor.Send(a, &memo{id: id}, (*dozer).onMemo)
						if err == nil {
							direct.Store(id, a)
							continue
						}
						if !assert.ErrorIs(t, err, actor.ErrTerminated) {
							return
						}
						refused.Add(1)
						assert.NoError(t, actor.EntitySend(ctx, es, name, &memo{id: id}, (*dozer).onMemo))
					}
				}()
			}
			wg.Wait()
			const total = senders * per
			require.Eventually(t, func() bool {
				st.mu.Lock()
				defer st.mu.Unlock()
				return len(st.recv) == total
			}, 20*time.Second, time.Millisecond)
			require.NoError(t, sys.Stop(ctx), "no message undelivered")
			st.mu.Lock()
			defer st.mu.Unlock()
			for id := range total {
				got := st.recv[id]
				require.Len(t, got, 1, "memo %d", id)
				if a, ok := direct.Load(id); ok {
					assert.Same(t, a, got[0], "memo %d went to the incarnation that accepted it", id)
				}
			}
			assert.Zero(t, st.overlaps.Load())
			assert.Positive(t, st.passive.Load(), "some entities passivated")
			t.Logf("passivations %d, sends refused by a passivated incarnation %d", st.passive.Load(), refused.Load())
		})
	}
}

// TestPassivationEntitiesStress: 64 goroutines get-or-create and send to
// the same 100 names while the entities passivate: one live incarnation
// per name at any time (the entities count themselves), every message
// delivered exactly once.
func TestPassivationEntitiesStress(t *testing.T) {
	sys := startPassSys(t)
	const names, senders, per = 100, 64, 150
	st := newDozers(names)
	es := actor.NewEntities(sys, func(n string) *dozer {
		var i int
		for _, c := range n {
			i = i*10 + int(c-'0')
		}
		return &dozer{st: st, name: i}
	}, actor.WithPassivation(3*time.Millisecond))
	ctx := context.Background()
	names10 := make([]string, names)
	for i := range names10 {
		names10[i] = itoa(i)
	}
	var wg sync.WaitGroup
	for g := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 11))
			for i := range per {
				name := names10[r.IntN(names)]
				var err error
				if r.IntN(2) == 0 {
					err = actor.EntitySend(ctx, es, name, &memo{id: g*per + i}, (*dozer).onMemo)
				} else { // Get + Send, again after ErrTerminated: what EntitySend does
					for {
						var a *dozer
						if a, err = es.Get(ctx, name); err != nil {
							break
						}
						if err = actor.Send(a, &memo{id: g*per + i}, (*dozer).onMemo); !errors.Is(err, actor.ErrTerminated) {
							break
						}
					}
				}
				if !assert.NoError(t, err) {
					return
				}
				if r.IntN(2) == 0 {
					time.Sleep(time.Duration(r.IntN(4000)) * time.Microsecond)
				}
			}
		}()
	}
	wg.Wait()
	const total = senders * per
	require.Eventually(t, func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		return len(st.recv) == total
	}, 30*time.Second, time.Millisecond)
	require.NoError(t, sys.Stop(ctx))
	st.mu.Lock()
	defer st.mu.Unlock()
	for id := range total {
		require.Len(t, st.recv[id], 1, "memo %d", id)
	}
	assert.Zero(t, st.overlaps.Load(), "two incarnations of a name alive at once")
	assert.Positive(t, st.passive.Load())
	t.Logf("passivations: %d", st.passive.Load())
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// TestPassivationConfig: a duration that is not positive is refused.
func TestPassivationConfig(t *testing.T) {
	sys := startPassSys(t)
	defer sys.Stop(context.Background())
	_, err := actor.Spawn(sys, &dozer{st: newDozers(1)}, actor.WithPassivation(0))
	assert.ErrorIs(t, err, actor.ErrConfig)
	_, err = actor.Spawn(sys, &dozer{st: newDozers(1)}, actor.WithPassivation(-time.Second))
	assert.ErrorIs(t, err, actor.ErrConfig)
}
