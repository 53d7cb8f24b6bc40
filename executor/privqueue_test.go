package executor

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pqMsg is a message for the private-queue tests.
type pqMsg struct{ Message }

// startBoom is a bounded actor whose Started hook waits for go_ and then
// panics: the actor terminates before delivering any message.
type startBoom struct {
	cell Cell
	go_  chan struct{}
}

func (s *startBoom) Started()                { <-s.go_; panic("start") }
func (s *startBoom) onMsg(*pqMsg) Allocation { return Nodelete }

// A Send into a private queue that the actor's termination races either
// queues the message and succeeds (the message is then a dead letter) or
// fails and leaves the message with its sender: never both. The send whose
// message opened an idle queue sends the drain token; when that token was
// refused because the actor had begun to end, Send returned ErrTerminated
// for a message it had queued and the termination counted dead.
func TestSendIntoEndingPrivateQueueReportsWhatItDid(t *testing.T) {
	e, err := Start(Config{Workers: 2})
	require.NoError(t, err)
	var ok, refused uint64
	const runs = 3000
	for i := range runs {
		s := &startBoom{go_: make(chan struct{})}
		require.NoError(t, SpawnWith(e, &s.cell, s, SpawnOptions{MailboxBound: 8}))
		p, err := Bind(&s.cell, s, (*startBoom).onMsg)
		require.NoError(t, err)
		ch, err := WatchChan(p)
		require.NoError(t, err)
		close(s.go_)
		// Vary where the send falls in the hook's panic and termination;
		// the test is correct wherever it falls.
		for j := 0; j < i%600*4; j++ {
			spinSink++
		}
		switch err := p.Send(&pqMsg{}); {
		case err == nil:
			ok++
		case errors.Is(err, ErrTerminated):
			refused++
		default:
			t.Fatalf("Send: %v", err)
		}
		notified(t, "startBoom", ch)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = e.Stop(ctx)
	require.ErrorIs(t, err, ErrPanic)
	require.NotErrorIs(t, err, ErrActorsAlive)
	dead := e.Stats().Total().DeadLetters
	t.Logf("%d sends queued, %d refused", ok, refused)
	assert.Equal(t, ok, dead, "dead letters must be exactly the sends that succeeded")
}

// spinSink keeps the tests' delay loops from being optimised away.
var spinSink int

// slowSink is a bounded actor whose first message holds its worker until
// gate closes; it counts its deliveries and its Stopped hook.
type slowSink struct {
	cell      Cell
	began     chan struct{}
	gate      chan struct{}
	delivered atomic.Int32
	stopped   atomic.Int32
}

func (s *slowSink) onMsg(*pqMsg) Allocation {
	if s.delivered.Add(1) == 1 {
		close(s.began)
		<-s.gate
	}
	return Nodelete
}

func (s *slowSink) Stopped(Reason) { s.stopped.Add(1) }

// A forced Stop ends the delivery of a private queue after the behaviour
// that is running: the messages still queued are undelivered, the worker
// exits, and the actor's Stopped hook runs. The worker used to deliver up
// to a drain token's whole batch after the stop decision.
func TestForcedStopEndsPrivateQueueDelivery(t *testing.T) {
	e, err := Start(Config{Workers: 1})
	require.NoError(t, err)
	s := &slowSink{began: make(chan struct{}), gate: make(chan struct{})}
	require.NoError(t, SpawnWith(e, &s.cell, s, SpawnOptions{MailboxBound: 100}))
	p, err := Bind(&s.cell, s, (*slowSink).onMsg)
	require.NoError(t, err)
	const sent = 10
	for range sent {
		require.NoError(t, p.Send(&pqMsg{}))
	}
	<-s.began
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- e.Stop(ctx) }()
	for !e.shutdown.Load() {
		time.Sleep(time.Millisecond) // the stop decision
	}
	close(s.gate)
	err = <-stopped
	require.ErrorIs(t, err, ErrActorsAlive)
	assert.EqualValues(t, 1, s.delivered.Load(), "deliveries: only the one running at the stop decision")
	assert.EqualValues(t, 1, s.stopped.Load(), "Stopped hook runs")
	assert.ErrorIs(t, err, ErrUndelivered)
	assert.Contains(t, err.Error(), "9 messages (0 sent to terminated actors, 9 still queued at stop")
	assert.NotContains(t, err.Error(), "still running a behaviour")
}

// pqIDMsg is a numbered message.
type pqIDMsg struct {
	Message
	id int
}

// heldSink is a bounded actor whose hold message holds its worker until
// gate closes; it records the numbered messages it receives.
type heldSink struct {
	cell  Cell
	began chan struct{}
	gate  chan struct{}
	got   []int // written by the actor's behaviour, read after its termination
}

func (s *heldSink) onHold(*hold) Allocation {
	close(s.began)
	<-s.gate
	return Nodelete
}

func (s *heldSink) onID(m *pqIDMsg) Allocation {
	s.got = append(s.got, m.id)
	return Nodelete
}

// In a full DropOldest mailbox that holds a poison pill, a message sent
// after the pill is dropped (it could only be a dead letter) instead of
// evicting a message sent before the pill, which is delivered. Only a pill
// at the head of the queue used to be kept: one behind other messages let
// later sends evict them.
func TestDropOldestKeepsMessagesSentBeforeAPill(t *testing.T) {
	e, err := Start(Config{Workers: 1})
	require.NoError(t, err)
	s := &heldSink{began: make(chan struct{}), gate: make(chan struct{})}
	require.NoError(t, SpawnWith(e, &s.cell, s, SpawnOptions{MailboxBound: 2, Overflow: DropOldest}))
	hp, err := Bind(&s.cell, s, (*heldSink).onHold)
	require.NoError(t, err)
	ip, err := Bind(&s.cell, s, (*heldSink).onID)
	require.NoError(t, err)
	ch, err := WatchChan(ip)
	require.NoError(t, err)
	require.NoError(t, hp.Send(&hold{}))
	<-s.began // the queue is empty, its worker held
	require.NoError(t, ip.Send(&pqIDMsg{id: 1}))
	require.NoError(t, ip.Send(&pqIDMsg{id: 2}))
	// The queue is full: a DropOldest send evicts message 1.
	require.NoError(t, ip.Send(&pqIDMsg{id: 3}))
	require.NoError(t, SendPill(&s.cell, s, NewPill(Finished)))
	// [2, 3, pill] (a pill is queued past the bound): messages sent after
	// the pill must not evict 2 and 3.
	require.NoError(t, ip.Send(&pqIDMsg{id: 4}))
	require.NoError(t, ip.Send(&pqIDMsg{id: 5}))
	close(s.gate)
	notified(t, "heldSink", ch)
	assert.Equal(t, []int{2, 3}, s.got, "delivered")
	st := e.Stats()
	assert.EqualValues(t, 1, st.MailboxDroppedOldest, "dropped oldest: message 1")
	assert.EqualValues(t, 2, st.MailboxDroppedNewest, "dropped newest: messages 4 and 5")
	require.NoError(t, e.Stop(context.Background()))
}

// A goroutine outside the system flooding an actor with a private queue
// (an unbounded supervised actor) yields at the queue's flood points, as
// it does at a mailbox's: with the actor's worker held, each point waits
// out floodWait. The private queue used to grow with no yield at all.
func TestFloodIntoPrivateQueueYields(t *testing.T) {
	var yields, timeouts atomic.Int64
	testHookFloodYield = func(timedOut bool) {
		yields.Add(1)
		if timedOut {
			timeouts.Add(1)
		}
	}
	defer func() { testHookFloodYield = nil }()
	e, err := Start(Config{Workers: 1})
	require.NoError(t, err)
	s := &heldSink{began: make(chan struct{}), gate: make(chan struct{})}
	require.NoError(t, SpawnWith(e, &s.cell, s, SpawnOptions{OnPanic: Restart}))
	hp, err := Bind(&s.cell, s, (*heldSink).onHold)
	require.NoError(t, err)
	ip, err := Bind(&s.cell, s, (*heldSink).onID)
	require.NoError(t, err)
	require.NoError(t, hp.Send(&hold{}))
	<-s.began // the queue is empty, its worker held
	const n = 2 * floodLimit
	for i := range n {
		require.NoError(t, ip.Send(&pqIDMsg{id: i}))
	}
	assert.EqualValues(t, 2, yields.Load(), "flood yields: at floodLimit and 2*floodLimit")
	assert.EqualValues(t, 2, timeouts.Load(), "yields that waited out floodWait (the worker is held)")
	close(s.gate)
	require.NoError(t, SendPill(&s.cell, s, NewPill(Finished)))
	require.NoError(t, e.Stop(context.Background()))
	assert.Len(t, s.got, n, "delivered")
}

// peakSink records the longest its private queue was when it took a
// message, and finishes at its n-th message.
type peakSink struct {
	cell Cell
	n    int
	got  int
	peak int
}

func (s *peakSink) onMsg(*pqMsg) Allocation {
	q := s.cell.ext.Load().pq
	q.mu.Lock()
	s.peak = max(s.peak, q.ring.n)
	q.mu.Unlock()
	if s.got++; s.got == s.n {
		return Finished
	}
	return Nodelete
}

// A goroutine outside the system flooding an unbounded supervised actor
// on one worker and one processor does not grow its private queue far
// beyond floodLimit: it yields to the worker at each flood point.
func TestFloodIntoPrivateQueueIsBounded(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	e, err := Start(Config{Workers: 1})
	require.NoError(t, err)
	const n = 64 * floodLimit
	s := &peakSink{n: n}
	require.NoError(t, SpawnWith(e, &s.cell, s, SpawnOptions{OnPanic: Restart}))
	p, err := Bind(&s.cell, s, (*peakSink).onMsg)
	require.NoError(t, err)
	m := &pqMsg{}
	for range n {
		require.NoError(t, p.Send(m))
	}
	require.NoError(t, e.Stop(context.Background()))
	assert.Equal(t, n, s.got)
	// Room for waits that time out on a loaded machine, as in
	// TestFloodFromOutsideIsBounded.
	assert.LessOrEqual(t, s.peak, 4*floodLimit, "the private queue's peak length")
}

// FuzzEnvRing checks the private queue's ring against a slice: pushes and
// pops in the order the fuzzer picks, across growth and wrap-around, and
// the release of a large buffer once drained.
func FuzzEnvRing(f *testing.F) {
	f.Add([]byte{1, 1, 1, 0, 1, 0, 0, 0})
	f.Add(append(make([]byte, 0, 64), []byte{9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 0, 0, 0, 0, 0, 0, 0, 3, 3, 3, 3, 0}...))
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 256 {
			ops = ops[:256]
		}
		var r envRing
		var model []uint32
		next := uint32(0)
		for _, op := range ops {
			if op == 0 {
				if len(model) == 0 {
					continue
				}
				e := r.pop()
				if e.coff != model[0] {
					t.Fatalf("popped %d, want %d", e.coff, model[0])
				}
				model = model[1:]
				continue
			}
			// op pushes up to 31*31 envelopes: a few grow it past 1024.
			for range int(op%32) * int(op%32) {
				r.push(envelope{coff: next})
				model = append(model, next)
				next++
			}
		}
		if r.n != len(model) {
			t.Fatalf("ring holds %d, model %d", r.n, len(model))
		}
		for _, want := range model {
			if e := r.pop(); e.coff != want {
				t.Fatalf("popped %d, want %d", e.coff, want)
			}
		}
		if r.n != 0 || r.head != 0 || len(r.buf) > 1024 {
			t.Fatalf("drained ring: n %d head %d len %d", r.n, r.head, len(r.buf))
		}
	})
}
