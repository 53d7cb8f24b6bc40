package actor_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/actortest"
	"github.com/actord/actord/executor"
	"github.com/actord/actord/stealing"
)

// A timer stress: many actors on workers that steal and park often, each
// with a periodic timer to itself (except the doomed ones), and one-shot
// timers set by goroutines outside the system and by behaviours, each with
// its own id. Some actors terminate while timers to them are pending.
// Every one-shot is delivered exactly once or counted dead (TimersDead),
// never both; no actor ever runs on two workers at once; nothing is
// pending after Stop.

type shot struct {
	actor.Message
	id   int64
	hops int // one-shots the receiving behaviour sets in turn
}

type tickle struct{ actor.Message }

type timedActor struct {
	actor.Actor
	h       *timerHarness
	running atomic.Bool
	rng     *rand.Rand
	ticks   int
}

type timerHarness struct {
	actors   []*timedActor
	ports    []actor.Port[*shot]
	nextID   atomic.Int64
	set      atomic.Int64 // one-shots set (SendAfter returned nil)
	refused  atomic.Int64 // one-shots SendAfter refused (their actor had terminated)
	overlaps atomic.Int64
	mu       sync.Mutex
	got      map[int64]int // one-shot id -> deliveries
}

func (a *timedActor) enter() {
	if !a.running.CompareAndSwap(false, true) {
		a.h.overlaps.Add(1)
	}
}

func (a *timedActor) onShot(m *shot) actor.Allocation {
	a.enter()
	defer a.running.Store(false)
	a.h.mu.Lock()
	a.h.got[m.id]++
	a.h.mu.Unlock()
	for range m.hops {
		a.h.setShot(a.rng, 0) // from a behaviour: the worker's own timers
	}
	return actor.Nodelete
}

func (a *timedActor) onTick(*tickle) actor.Allocation {
	a.enter()
	defer a.running.Store(false)
	a.ticks++
	return actor.Nodelete
}

// setShot sets a one-shot timer to a random actor, with up to hops more
// set by its receiver.
func (h *timerHarness) setShot(rng *rand.Rand, hops int) {
	to := rng.IntN(len(h.ports))
	d := time.Duration(1+rng.IntN(3000)) * time.Microsecond // > 0: a timer (d <= 0 sends at once)
	_, err := actor.SendAfter(h.ports[to], d, &shot{id: h.nextID.Add(1), hops: hops})
	switch {
	case err == nil:
		h.set.Add(1)
	case err == actor.ErrTerminated:
		h.refused.Add(1)
	default:
		panic(err)
	}
}

func TestTimerStress(t *testing.T) {
	const actors, doomed, setters, perSetter = 24, 4, 3, 5000
	sys, err := actor.Start(actor.WithConfig(executor.Config{Workers: 4, QueuesPerWorker: 2, SpinPasses: 2,
		ParkTimeout: 200 * time.Microsecond, Steal: stealing.LongestVictim}))
	require.NoError(t, err)
	h := &timerHarness{got: map[int64]int{}}
	var tickers []actor.Timer
	for i := range actors {
		a := &timedActor{h: h, rng: rand.New(rand.NewPCG(uint64(i), 3))}
		_, err := actor.Spawn(sys, a)
		require.NoError(t, err)
		p, err := actor.Bind(a, (*timedActor).onShot)
		require.NoError(t, err)
		h.actors, h.ports = append(h.actors, a), append(h.ports, p)
		if i >= doomed {
			tp, err := actor.Bind(a, (*timedActor).onTick)
			require.NoError(t, err)
			tk, err := actor.SendEvery(tp, time.Duration(1+i%3)*time.Millisecond, &tickle{})
			require.NoError(t, err)
			tickers = append(tickers, tk)
		}
	}
	var wg sync.WaitGroup
	for s := range setters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(s), 5))
			for i := range perSetter {
				h.setShot(rng, rng.IntN(2))
				if s == 0 && i == perSetter/2 {
					for _, a := range h.actors[:doomed] { // terminate with timers pending to them
						if err := actor.SendPill(a, actor.FinishedMsg); err != nil {
							panic(err)
						}
					}
				}
				if i%64 == 0 {
					time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond) // let workers park
				}
			}
		}()
	}
	wg.Wait()
	// Every one-shot set, including those behaviours set in turn, is
	// either delivered or counted dead once the last has had time to fire.
	// A one-shot that fired into a doomed actor's mailbox behind its pill
	// is a dead letter of that actor (counted in DeadLetters, as any
	// message queued behind a pill); one that fired after the actor
	// terminated is a dead timer.
	var delivered, dead int64
	settled := func() bool {
		h.mu.Lock()
		delivered = int64(len(h.got))
		h.mu.Unlock()
		st := actortest.MustStats(sys)
		dead = int64(st.TimersDead + st.Total().DeadLetters)
		return delivered+dead == h.set.Load()
	}
	deadline := time.Now().Add(30 * time.Second)
	for !settled() {
		require.True(t, time.Now().Before(deadline), "one-shots set %d, delivered %d, dead %d", h.set.Load(), delivered, dead)
		time.Sleep(time.Millisecond)
	}
	for _, tk := range tickers {
		assert.True(t, tk.Stop(), "a periodic timer of a live actor was not pending")
	}
	for _, a := range h.actors[doomed:] {
		require.NoError(t, actor.SendPill(a, actor.FinishedMsg))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stopErr := sys.Stop(ctx)

	st := actortest.MustStats(sys)
	if st.Total().DeadLetters > 0 { // one-shots behind a doomed actor's pill: reported by Stop
		require.ErrorIs(t, stopErr, actor.ErrUndelivered)
		require.NotErrorIs(t, stopErr, actor.ErrPanic)
	} else {
		require.NoError(t, stopErr)
	}
	assert.Zero(t, h.overlaps.Load(), "an actor ran on two workers at once")
	for id, n := range h.got {
		require.Equal(t, 1, n, "one-shot %d delivered %d times", id, n)
	}
	tot := st.Total()
	assert.EqualValues(t, h.set.Load(), int64(len(h.got))+int64(st.TimersDead+tot.DeadLetters), "one-shots: delivered + dead = set")
	assert.Positive(t, st.TimersDead+tot.DeadLetters+uint64(h.refused.Load()), "no timer outlived its actor")
	assert.Zero(t, st.TimersPending)
	ticks := 0
	for _, a := range h.actors[doomed:] {
		ticks += a.ticks
	}
	assert.EqualValues(t, st.TimersFired, int64(len(h.got))+int64(ticks+int(tot.DeadLetters)), "every firing delivered once or a dead letter: one-shots and ticks")
	t.Logf("one-shots set %d (refused %d), delivered %d, dead timers %d, dead letters %d; ticks %d; steals %d",
		h.set.Load(), h.refused.Load(), len(h.got), st.TimersDead, tot.DeadLetters, ticks, tot.Steals())
}
