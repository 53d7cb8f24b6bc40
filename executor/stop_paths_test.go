package executor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keeper keeps every request it receives without answering; an end
// message terminates it.
type keeper struct {
	cell Cell
	kept chan *greq
}

type kend struct{ Message }

func (k *keeper) onReq(r *greq) Allocation {
	k.kept <- r
	return Nodelete
}

func (k *keeper) onEnd(*kend) Allocation { return Finished }

// TestStopFromTimerGoroutineDoesNotDeadlock: an AskFunc function that its
// timeout calls on the timer goroutine calls Stop. Stop must not wait for
// the timer goroutine (itself): it returns ErrStopInBehaviour, as from a
// behaviour, and a later Stop from outside stops the system.
func TestStopFromTimerGoroutineDoesNotDeadlock(t *testing.T) {
	e, err := Start(Config{Workers: 1, Queues: 1})
	require.NoError(t, err)
	k := &keeper{kept: make(chan *greq, 1)}
	require.NoError(t, Spawn(e, &k.cell, k))
	p, err := Bind(&k.cell, k, (*keeper).onReq)
	require.NoError(t, err)
	got := make(chan error, 1)
	require.NoError(t, AskFunc(p, &greq{}, time.Millisecond, func(_ int, err error) {
		// The actor is alive: this Stop is forced when ctx ends, and
		// then closes the timer set.
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		got <- e.Stop(ctx)
	}))
	<-k.kept // the actor keeps the request: only its timeout ends it
	select {
	case err := <-got:
		assert.ErrorIs(t, err, ErrStopInBehaviour)
	case <-time.After(30 * time.Second):
		t.Fatal("Stop called on the timer goroutine did not return: it waits for itself")
	}
	require.NoError(t, Send(&k.cell, k, &kend{}, (*keeper).onEnd))
	assert.NoError(t, e.Stop(context.Background()))
}
