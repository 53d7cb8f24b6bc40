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

// rdozer is a dozer (see passivate_test.go) that panics at some messages,
// after recording them, and is restarted (WithRestart, its state kept):
// its Started hook runs again at a restart, so it counts the incarnation
// alive once.
type rdozer struct {
	dozer
	counted bool
	booms   *atomic.Int64
}

type boomMemo struct {
	actor.Message
	id int
}

func (r *rdozer) Started() {
	if !r.counted {
		r.counted = true
		r.dozer.Started()
	}
}

func (r *rdozer) onBoom(m *boomMemo) actor.Allocation {
	r.onMemo(&memo{id: m.id})
	r.booms.Add(1)
	panic("boom")
}

// TestEntitiesStressPassivationAndRestart: 64 goroutines get-or-create and
// send to 100 names while the entities passivate (3 ms idle) and panic at
// one message in 16, restarted by supervision: at no time are two
// incarnations of a name alive (the entities count themselves), and every
// message is received exactly once (a panicking one too: it was received,
// then the behaviour panicked), none lost to a passivation or a restart.
func TestEntitiesStressPassivationAndRestart(t *testing.T) {
	sys, err := actor.Start(actor.WithErrorHandler(func(error) {}))
	require.NoError(t, err)
	const names, senders, per = 100, 64, 100
	st := newDozers(names)
	var booms atomic.Int64
	es := actor.NewEntities(sys, func(n string) *rdozer {
		var i int
		for _, c := range n {
			i = i*10 + int(c-'0')
		}
		return &rdozer{dozer: dozer{st: st, name: i}, booms: &booms}
	}, actor.WithPassivation(3*time.Millisecond), actor.WithRestart(nil, actor.Budget{MaxRestarts: 1 << 20}))
	ctx := context.Background()
	var wg sync.WaitGroup
	var sendErrs atomic.Int64
	for g := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 17))
			for i := range per {
				name, id := itoa(r.IntN(names)), g*per+i
				var err error
				if r.IntN(16) == 0 {
					err = actor.EntitySend(ctx, es, name, &boomMemo{id: id}, (*rdozer).onBoom)
				} else {
					err = actor.EntitySend(ctx, es, name, &memo{id: id}, (*rdozer).onMemo)
				}
				if err != nil {
					sendErrs.Add(1)
					t.Errorf("EntitySend: %v", err)
					return
				}
				if r.IntN(2) == 0 {
					time.Sleep(time.Duration(r.IntN(4000)) * time.Microsecond)
				}
			}
		}()
	}
	wg.Wait()
	require.Zero(t, sendErrs.Load())
	const total = senders * per
	require.Eventually(t, func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		return len(st.recv) == total
	}, 30*time.Second, time.Millisecond)
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := sys.Shutdown(sctx); err != nil && !errors.Is(err, actor.ErrPanic) {
		t.Fatalf("Shutdown: %v", err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for id := range total {
		require.Len(t, st.recv[id], 1, "message %d", id)
	}
	assert.Zero(t, st.overlaps.Load(), "two incarnations of a name alive at once")
	assert.Positive(t, st.passive.Load(), "no passivation")
	assert.Positive(t, booms.Load(), "no restart")
	stats, _ := sys.Stats()
	assert.Equal(t, uint64(booms.Load()), stats.Total().Restarts, "every panic restarted its entity")
	assert.Equal(t, uint64(st.passive.Load()), stats.Total().Passivations, "Stats counts every passivation")
	t.Logf("passivations %d, restarts %d", st.passive.Load(), booms.Load())
}
