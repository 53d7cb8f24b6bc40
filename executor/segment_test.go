package executor

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actord/actord/internal/copyq"
)

// A behaviour that floods other actors queues its whole backlog before
// they run (on one worker): the mailboxes grow by segments (copyq). These
// tests check, through the executor, that such backlogs are delivered
// exactly once and in each sender's order across segment boundaries, and
// that no queue keeps more than a segment once they are drained.

type segMsg struct {
	Message
	from, i int
}

// segSink records, per sender, the next index it expects; a gap, a
// repeat or a reordering is an error. Touched only by its behaviour, and
// read after the run (sync through done).
type segSink struct {
	cell Cell
	next []int
	errs []string
	got  int
	want int
	done chan struct{}
}

func segSinkReceive(s *segSink, m *segMsg) Allocation {
	if m.i != s.next[m.from] && len(s.errs) < 10 {
		s.errs = append(s.errs, fmt.Sprintf("from %d: got %d, want %d", m.from, m.i, s.next[m.from]))
	}
	s.next[m.from] = m.i + 1
	if s.got++; s.got == s.want {
		close(s.done)
		return Finished
	}
	return Nodelete
}

// segProducer sends its n messages to sink from one behaviour.
type segProducer struct {
	cell Cell
	from int
	msgs []segMsg
	sink *segSink
	err  error
}

func segProduce(p *segProducer, _ *probeMsg) Allocation {
	for i := range p.msgs {
		p.msgs[i].from, p.msgs[i].i = p.from, i
		if err := Send(&p.sink.cell, p.sink, &p.msgs[i], segSinkReceive); err != nil {
			p.err = err
			break
		}
	}
	return Finished
}

// maxQueueCap returns the largest capacity among e's mailboxes' queues,
// each read under its lock.
func maxQueueCap(e *Executor) int {
	most := 0
	for _, mb := range e.mailboxes {
		w := mb.lock()
		most = max(most, mb.buf.Cap())
		mb.unlock(w)
	}
	return most
}

func runSegFlood(t *testing.T, workers, producers, each int) {
	e, err := Start(Config{Workers: workers, Queues: 4 * workers})
	require.NoError(t, err)
	sink := &segSink{next: make([]int, producers), want: producers * each, done: make(chan struct{})}
	require.NoError(t, Spawn(e, &sink.cell, sink))
	ps := make([]*segProducer, producers)
	for k := range ps {
		ps[k] = &segProducer{from: k, msgs: make([]segMsg, each), sink: sink}
		require.NoError(t, Spawn(e, &ps[k].cell, ps[k]))
	}
	start := &probeMsg{}
	for _, p := range ps {
		require.NoError(t, Send(&p.cell, p, start, segProduce))
	}
	select {
	case <-sink.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("sink got %d of %d", sink.got, sink.want)
	}
	require.NoError(t, e.Stop(context.Background()))
	for _, p := range ps {
		require.NoError(t, p.err)
	}
	assert.Empty(t, sink.errs)
	for k, n := range sink.next {
		assert.Equal(t, each, n, "sender %d", k)
	}
	st := e.Stats().Total()
	assert.Equal(t, uint64(producers*(each+1)), st.GulpSize.Sum+st.LocalSends, "every envelope taken once")
}

// One worker: the producer's whole backlog, many segments long, is queued
// before the sink runs.
func TestSegmentedBacklogOneWorker(t *testing.T) {
	runSegFlood(t, 1, 1, 10*copyq.SegmentLen+123)
}

// Several producers on two workers push into the same mailbox at once,
// growing it by segments (the pushers' allocate-outside-the-lock protocol)
// while the sink's worker gulps it.
func TestSegmentedBacklogConcurrentPushers(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Log("one CPU: the pushers take turns")
	}
	runSegFlood(t, 2, 4, 3*copyq.SegmentLen+77)
}

// After a backlog of many segments is drained, no queue keeps more than
// one segment: the segments read past are dropped during the drain, and
// the drained queue keeps only its last segment.
func TestSegmentedBacklogGivesMemoryBack(t *testing.T) {
	e, err := Start(Config{Workers: 1, Queues: 4})
	require.NoError(t, err)
	const n = 8 * copyq.SegmentLen
	var wg sync.WaitGroup
	wg.Add(1)
	sink := &probe{fn: func(p *probe) Allocation {
		if p.calls++; p.calls == n {
			wg.Done()
		}
		return Nodelete
	}}
	sink.spawn(t, e)
	m := &probeMsg{}
	prod := &probe{fn: func(*probe) Allocation {
		for range n {
			if Send(&sink.cell, sink, m, probeBehaviour) != nil {
				panic("executor test: send failed")
			}
		}
		return Nodelete
	}}
	prod.spawn(t, e)
	prod.send(t, m)
	wg.Wait()
	// The worker releases the sink's mailbox after its last behaviour:
	// wait for the mailboxes to hold nothing but spare buffers.
	require.Eventually(t, func() bool { return maxQueueCap(e) <= copyq.SegmentLen }, 10*time.Second, time.Millisecond)
	pill := NewPill(Finished)
	require.NoError(t, SendPill(&sink.cell, sink, pill))
	require.NoError(t, SendPill(&prod.cell, prod, pill))
	require.NoError(t, e.Stop(context.Background()))
}
