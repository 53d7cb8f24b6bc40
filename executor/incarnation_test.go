package executor

// Regression test for the incarnation's range: a port, timer or watch of
// one incarnation never reaches another, however many times the actor is
// spawned again.

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// endProbe ends p with a pill and waits (bounded yields) until it is dead.
func endProbe(t *testing.T, p *probe) {
	t.Helper()
	require.NoError(t, SendPill(&p.cell, p, NewPill(Finished)))
	for j := 0; p.cell.Alive(); j++ {
		require.Less(t, j, 10_000_000, "the pill did not end the actor")
		runtime.Gosched()
	}
}

// The incarnation used to wrap after the last one: the following spawns
// took incarnation 0, then 1 again, and a port bound to the first
// incarnation delivered to the new actor. The test moves the dead cell on
// to the incarnation before the last (as if it had been spawned that many
// times) instead of re-spawning it MaxIncarnations times.
func TestIncarnationWrapDoesNotReachStalePorts(t *testing.T) {
	e, err := Start(Config{Workers: 1})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	defer e.Stop(ctx)

	var got atomic.Int64
	p := &probe{fn: func(*probe) Allocation { got.Add(1); return Nodelete }}
	p.spawn(t, e)
	first, err := Bind(&p.cell, p, probeBehaviour)
	require.NoError(t, err)
	endProbe(t, p)

	st := p.cell.state.Load()
	p.cell.state.Store(cellIncarnLast - cellIncarnOne | st&(cellIncarnOne-1))
	spawned, refused := 0, 0
	for i := 0; i < 4; i++ {
		if err := Spawn(e, &p.cell, p); err != nil {
			require.ErrorIs(t, err, ErrIncarnationsExhausted)
			assert.False(t, p.cell.Alive())
			refused++
			continue
		}
		spawned++
		require.ErrorIs(t, first.Send(&probeMsg{}), ErrTerminated,
			"a port of the first incarnation reached incarnation %#x", incOf(p.cell.state.Load()))
		last, err := Bind(&p.cell, p, probeBehaviour)
		require.NoError(t, err)
		require.NoError(t, last.Send(&probeMsg{}))
		endProbe(t, p)
		require.ErrorIs(t, last.Send(&probeMsg{}), ErrTerminated)
	}
	assert.Equal(t, 1, spawned, "the last incarnation is spawned")
	assert.Equal(t, 3, refused, "a cell past its last incarnation is refused")
	assert.EqualValues(t, 1, got.Load(), "only the last incarnation's own port delivered")
	require.NoError(t, e.Stop(ctx))
}
