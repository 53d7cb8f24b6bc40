package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/actord/actord/actor"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRun: the program's story, with a short idle time.
func TestRun(t *testing.T) { require.NoError(t, run(20*time.Millisecond)) }

// TestCartsSurvivePassivation: users add items while their carts
// passivate and come back; no item is lost or added twice, and every end
// is a passivation.
func TestCartsSurvivePassivation(t *testing.T) {
	var ends, others atomic.Int32
	s, err := newShop(2*time.Millisecond, func(_ string, why actor.Reason) {
		ends.Add(1)
		if why != actor.ReasonPassivated {
			others.Add(1)
		}
	})
	require.NoError(t, err)
	ctx := context.Background()
	const users, items = 8, 50
	var wg sync.WaitGroup
	for u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range items {
				assert.NoError(t, s.add(ctx, fmt.Sprint("u", u), fmt.Sprint(i)))
				if i%5 == 0 {
					time.Sleep(5 * time.Millisecond) // long enough to passivate
				}
			}
		}()
	}
	wg.Wait()
	for u := range users {
		got, err := s.list(ctx, fmt.Sprint("u", u))
		require.NoError(t, err)
		want := make([]string, items)
		for i := range want {
			want[i] = fmt.Sprint(i)
		}
		assert.Equal(t, want, got, "user u%d", u)
	}
	require.Eventually(t, func() bool { st, err := s.sys.Stats(); return err == nil && st.LiveActors == 0 }, 10*time.Second, time.Millisecond)
	require.NoError(t, s.sys.Stop(ctx))
	assert.Positive(t, ends.Load())
	assert.Zero(t, others.Load())
}
