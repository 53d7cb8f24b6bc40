package executor

import (
	"context"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actord/actord/internal/copyq"
)

// floodYield returns once the mailbox it waits on is gulped, or closed.
func TestFloodYieldEnds(t *testing.T) {
	for _, end := range []string{"gulp", "close"} {
		m := &mailbox{buf: copyq.New[envelope](floodLimit)}
		c := &Cell{}
		for i := 0; i < floodLimit; i++ {
			require.True(t, m.push(c, nil, nil, 0, 0))
		}
		done := make(chan struct{})
		go func() {
			floodYield(m, m.word.Load())
			close(done)
		}()
		if end == "gulp" {
			into := copyq.New[envelope](1)
			n, _ := m.gulp(&into)
			assert.Equal(t, floodLimit, n)
		} else {
			m.close()
		}
		<-done
	}
}

// A goroutine outside the system flooding one actor on one worker and one
// processor does not grow the actor's mailbox far beyond floodLimit: it
// yields to the worker at each flood point, and the worker takes the
// backlog in gulps of about floodLimit.
func TestFloodFromOutsideIsBounded(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	e, err := Start(Config{Workers: 1})
	require.NoError(t, err)
	const n = 64 * floodLimit
	p := finishingProbe(n, nil)
	p.spawn(t, e)
	m := &probeMsg{}
	for i := 0; i < n; i++ {
		p.send(t, m)
	}
	require.NoError(t, e.Stop(context.Background()))
	g := e.Stats().Total().GulpSize
	assert.Equal(t, uint64(n), g.Sum)
	// Buckets above (2^(i-2), 2^(i-1)]: nothing above 4*floodLimit (the
	// bound is a policy, not exact: a wait may time out on a loaded
	// machine, so leave room).
	for i := range g.Buckets {
		if BucketUpperBound(i) > 4*floodLimit {
			assert.Zero(t, g.Buckets[i], "gulps larger than %v", BucketUpperBound(i-1))
		}
	}
}
