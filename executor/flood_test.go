package executor

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
			require.Positive(t, m.push(c, nil, nil, 0, 0))
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

// The flood points: the multiples of floodLimit with one deep mailbox;
// with d deep ones, a first point at floodLimit/d rounded up to a
// multiple of floodStep, then every floodLimit envelopes.
func TestFloodPoints(t *testing.T) {
	points := func(deep int32) (ps []int) {
		for n := 1; n <= 3*floodLimit; n++ {
			if floodPoint(n, deep) {
				ps = append(ps, n)
			}
		}
		return ps
	}
	ones := []int{floodLimit, 2 * floodLimit, 3 * floodLimit}
	assert.Equal(t, ones, points(1))
	assert.Equal(t, ones, points(0), "a count below one (in flight) counts as one")
	assert.Equal(t, ones, points(-1))
	assert.Equal(t, []int{floodLimit / 2, floodLimit/2 + floodLimit, floodLimit/2 + 2*floodLimit}, points(2))
	three := (floodLimit/3 + floodStep - 1) &^ (floodStep - 1)
	assert.Equal(t, []int{three, three + floodLimit, three + 2*floodLimit}, points(3))
	for _, d := range []int32{floodLimit / floodStep, 60, 1 << 20} {
		assert.Equal(t, []int{floodStep, floodStep + floodLimit, floodStep + 2*floodLimit}, points(d), "deep %d", d)
	}
}

// A goroutine outside the system sending round-robin to many actors on as
// many mailboxes (one worker, one processor) does not let each mailbox
// grow to floodLimit: once many are deep, it yields at about
// floodLimit/deep envelopes each, and the worker takes them in gulps of
// about floodStep.
func TestFloodOverManyMailboxesIsBounded(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const actors, each = 64, 4 * floodLimit
	e, err := Start(Config{Workers: 1, Queues: actors})
	require.NoError(t, err)
	ps := make([]*probe, actors)
	for i := range ps {
		ps[i] = finishingProbe(each, nil)
		ps[i].spawn(t, e)
	}
	m := &probeMsg{}
	for range each {
		for _, p := range ps {
			p.send(t, m)
		}
	}
	require.NoError(t, e.Stop(context.Background()))
	assert.Zero(t, e.deepQueues.Load(), "every deep mailbox was taken off the count")
	g := e.Stats().Total().GulpSize
	assert.Equal(t, uint64(actors*each), g.Sum)
	// Nothing above 4*floodStep (room for waits that time out on a loaded
	// machine); a bound of floodLimit per mailbox gives gulps of floodLimit.
	for i := range g.Buckets {
		if BucketUpperBound(i) > 4*floodStep {
			assert.Zero(t, g.Buckets[i], "gulps larger than %v", BucketUpperBound(i-1))
		}
	}
}

// The deep-mailbox count returns to zero once every envelope has been
// taken, however pushes from outside and from behaviours, gulps and
// re-takes interleave: each fill that reaches floodStep is counted once
// and taken off once.
func TestDeepQueuesCountSettles(t *testing.T) {
	e, err := Start(Config{Workers: 2, Queues: 8})
	require.NoError(t, err)
	const producers, actors, each = 4, 8, 8 * floodStep
	var got atomic.Int64
	sinks := make([]*probe, actors)
	for i := range sinks {
		sinks[i] = &probe{fn: func(*probe) Allocation { got.Add(1); return Nodelete }}
		sinks[i].spawn(t, e)
	}
	// Half the messages go through a forwarder, whose behaviour pushes
	// them into the sinks' mailboxes.
	m := &probeMsg{}
	fwds := make([]*probe, actors)
	for i := range fwds {
		to := sinks[(i+1)%actors]
		fwds[i] = &probe{fn: func(*probe) Allocation {
			if Send(&to.cell, to, m, probeBehaviour) != nil {
				panic("executor test: forward failed")
			}
			return Nodelete
		}}
		fwds[i].spawn(t, e)
	}
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range each {
				to := sinks[(p+k)%actors]
				if k%2 == 1 {
					to = fwds[(p+k)%actors]
				}
				if Send(&to.cell, to, m, probeBehaviour) != nil {
					panic("executor test: send failed")
				}
			}
		}()
	}
	wg.Wait()
	require.Eventually(t, func() bool { return got.Load() == producers*each }, 10*time.Second, time.Millisecond)
	assert.Zero(t, e.deepQueues.Load())
	pill := NewPill(Finished)
	for _, p := range append(sinks, fwds...) {
		require.NoError(t, SendPill(&p.cell, p, pill))
	}
	require.NoError(t, e.Stop(context.Background()))
}
