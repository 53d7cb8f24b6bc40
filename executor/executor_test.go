package executor

import (
	"context"
	"flag"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/actord/actord/internal/copyq"
	"github.com/actord/actord/internal/goid"
	"github.com/actord/actord/internal/testwatch"
	"github.com/actord/actord/stealing"
)

func TestMain(m *testing.M) {
	flag.Parse()
	testwatch.Arm() // goleak.VerifyTestMain exits: the watchdog is never disarmed
	goleak.VerifyTestMain(m)
}

func TestMailboxLockWord(t *testing.T) {
	m := &mailbox{buf: copyq.New[envelope](2)}
	c := &Cell{}
	for i := 0; i < 5; i++ {
		require.Positive(t, m.push(c, nil, nil, 0, 0))
	}
	assert.Equal(t, 5, m.queued())
	assert.Equal(t, uint64(5), m.sentCount())

	var batch copyq.Queue[envelope]
	n, missed := m.gulp(&batch)
	assert.Equal(t, 5, n)
	assert.False(t, missed)
	assert.Equal(t, 5, batch.Len())
	assert.Equal(t, 0, m.queued())
	assert.NotZero(t, m.word.Load()&wordProcessing, "gulp marks the mailbox being processed")

	var other copyq.Queue[envelope]
	n, missed = m.gulp(&other)
	assert.True(t, missed, "a mailbox being processed cannot be gulped again")
	assert.Zero(t, n)

	// Pushes go on while it is processed; release can re-take them at once.
	require.Positive(t, m.push(c, nil, nil, 0, 0))
	for batch.PopRef() != nil {
	}
	batch.Reset(2)
	n, left, _ := m.release(&batch, true)
	assert.Equal(t, 1, n)
	assert.Zero(t, left)
	assert.NotZero(t, m.word.Load()&wordProcessing, "re-taken: still processing")

	require.Positive(t, m.push(c, nil, nil, 0, 0))
	for batch.PopRef() != nil {
	}
	batch.Reset(2)
	n, left, _ = m.release(&batch, false)
	assert.Zero(t, n)
	assert.Equal(t, 1, left)
	assert.Zero(t, m.word.Load()&wordProcessing, "released")

	dead, alive := m.close()
	assert.Equal(t, 1, dead+alive)
	assert.Negative(t, m.push(c, nil, nil, 0, 0), "closed mailboxes refuse pushes")
	assert.Zero(t, m.word.Load()&wordLocked)
}

func TestMailboxConcurrentPushes(t *testing.T) {
	m := &mailbox{buf: copyq.New[envelope](1)}
	const pushers, each = 8, 5000
	var wg sync.WaitGroup
	cells := make([]Cell, pushers)
	for p := 0; p < pushers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				m.push(&cells[p], nil, i+1, 0, 0)
			}
		}()
	}
	// A watcher-like goroutine looks at and shrinks the buffer meanwhile.
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if m.grown(1) {
				m.shrink(1)
			}
		}
	}()
	// A drainer gulps concurrently, re-takes arrivals at every other
	// release (the release's one-CAS path when nothing arrived, its locked
	// path otherwise), and checks per-pusher order.
	last := make([]int, pushers)
	got := 0
	batch := copyq.New[envelope](1)
	take := func() {
		for e := batch.PopRef(); e != nil; e = batch.PopRef() {
			p := (uintptr(unsafe.Pointer(e.cell)) - uintptr(unsafe.Pointer(&cells[0]))) / unsafe.Sizeof(cells[0])
			require.Equal(t, last[p]+1, e.msg.(int), "per-pusher FIFO")
			last[p] = e.msg.(int)
		}
		batch.Reset(1)
	}
	for i := 0; got < pushers*each; i++ {
		n, missed := m.gulp(&batch)
		require.False(t, missed, "nobody else processes the mailbox")
		for n > 0 {
			got += n
			take()
			n, _, _ = m.release(&batch, i%2 == 0)
		}
	}
	close(stop)
	<-watched
	wg.Wait()
	assert.Equal(t, uint64(pushers*each), m.sentCount())
	assert.Zero(t, m.word.Load()&(wordProcessing|wordLocked))
}

func TestHistogram(t *testing.T) {
	var h Histogram
	for _, v := range []uint64{0, 1, 2, 3, 4, 5, 8, 9, 1 << 20, 1<<20 + 1, 1 << 40} {
		h.Observe(v)
	}
	assert.Equal(t, uint64(1), h.Buckets[0]) // 0
	assert.Equal(t, uint64(1), h.Buckets[1]) // 1
	assert.Equal(t, uint64(1), h.Buckets[2]) // 2
	assert.Equal(t, uint64(2), h.Buckets[3]) // 3,4
	assert.Equal(t, uint64(2), h.Buckets[4]) // 5,8
	assert.Equal(t, uint64(1), h.Buckets[5]) // 9
	assert.Equal(t, uint64(1), h.Buckets[21])
	assert.Equal(t, uint64(2), h.Buckets[22], "overflow bucket")
	assert.Equal(t, uint64(11), h.Count)
	for i := 2; i < HistogramBuckets-1; i++ {
		assert.Equal(t, 2*BucketUpperBound(i-1), BucketUpperBound(i), "power-of-two bounds")
	}
	assert.Equal(t, 0.0, BucketUpperBound(0))
	assert.Equal(t, 1.0, BucketUpperBound(1))
	assert.Equal(t, 4.0, BucketUpperBound(3))
	assert.True(t, math.IsInf(BucketUpperBound(HistogramBuckets-1), 1))
}

func TestConfigResolution(t *testing.T) {
	c, err := Config{}.resolved()
	require.NoError(t, err)
	assert.Equal(t, runtime.GOMAXPROCS(0), c.Workers)
	assert.Equal(t, c.Workers*DefaultQueuesPerWorker, c.Queues)
	assert.Equal(t, DefaultQueueCapacity, c.QueueCapacity)
	assert.Equal(t, stealing.LongestVictim, c.Steal)
	assert.Equal(t, DefaultParkTimeout, c.ParkTimeout)

	c, err = Config{Workers: 3, QueuesPerWorker: 5, LocalBatch: -1, Regulps: -1}.resolved()
	require.NoError(t, err)
	assert.Equal(t, 15, c.Queues)
	assert.Zero(t, c.LocalBatch)
	assert.Zero(t, c.Regulps)

	for _, bad := range []Config{{Workers: -1}, {Workers: 4, Queues: 3}, {QueuesPerWorker: -2}, {QueueCapacity: -1}, {SpinPasses: -1}} {
		_, err := bad.resolved()
		assert.ErrorIs(t, err, ErrConfig, "%+v", bad)
	}

	// The mailboxes themselves count against MaxQueueMemory, spares
	// included: 4M queues and 4M spares take more than 4 GiB (about 5.4),
	// though their copy queues alone (capacity 20: 3.4 GiB) would not.
	_, err = Config{Workers: 1024, Queues: MaxQueues, SpareQueues: MaxQueues / 1024, QueueCapacity: 20}.resolved()
	if maxThreads() > 1024+maxThreadsMargin {
		require.ErrorIs(t, err, ErrConfig)
		assert.Contains(t, err.Error(), "spares take")
	}
}

// probe is a minimal actor for in-package tests: a Cell and a behaviour.
type probe struct {
	cell  Cell
	calls int
	fn    func(*probe) Allocation
}

type probeMsg struct{ Message }

func probeBehaviour(p *probe, _ *probeMsg) Allocation { return p.fn(p) }

func (p *probe) send(t testing.TB, m *probeMsg) {
	t.Helper()
	require.NoError(t, Send(&p.cell, p, m, probeBehaviour))
}

func (p *probe) spawn(t testing.TB, e *Executor) {
	t.Helper()
	require.NoError(t, Spawn(e, &p.cell, p))
}

// finishingProbe returns a probe that adds 1 to counter (if not nil) at
// every message and finishes at its n-th.
func finishingProbe(n int, counter *atomic.Int64) *probe {
	return &probe{fn: func(p *probe) Allocation {
		if counter != nil {
			counter.Add(1)
		}
		if p.calls++; p.calls == n {
			return Finished
		}
		return Nodelete
	}}
}

// blockingProbe returns a probe whose first message closes started, blocks
// until release is closed, and finishes it.
func blockingProbe(started, release chan struct{}) *probe {
	return &probe{fn: func(*probe) Allocation {
		close(started)
		<-release
		return Finished
	}}
}

// reportingProbe returns a probe whose first message sends the worker
// running it (e.current()) on ch and finishes it.
func reportingProbe(e *Executor, ch chan<- *worker) *probe {
	return &probe{fn: func(*probe) Allocation {
		ch <- e.current()
		return Finished
	}}
}

func TestCurrentRecognisesWorkers(t *testing.T) {
	e, err := Start(Config{Workers: 3})
	require.NoError(t, err)
	assert.Nil(t, e.current(), "the test goroutine is not a worker")
	assert.False(t, e.inBehaviour())
	type seenT struct {
		w  *worker
		in bool
	}
	seen := make(chan seenT, 1)
	p := &probe{fn: func(*probe) Allocation { seen <- seenT{e.current(), e.inBehaviour()}; return Finished }}
	p.spawn(t, e)
	p.send(t, &probeMsg{})
	got := <-seen
	assert.True(t, got.in, "inBehaviour works on every platform")
	if goid.Supported {
		require.NotNil(t, got.w)
		assert.Contains(t, e.workers, got.w)
	} else {
		assert.Nil(t, got.w, "no goroutine identity: behaviours count as external senders")
	}
	require.NoError(t, e.Stop(context.Background()))
	for _, w := range e.workers {
		assert.Equal(t, workerExited, w.state.Load())
	}
}

func TestStatsFreshWhileBusy(t *testing.T) {
	e, err := Start(Config{Workers: 2})
	require.NoError(t, err)
	var total atomic.Int64
	const n = 20000
	p := finishingProbe(n, &total)
	p.spawn(t, e)
	m := &probeMsg{}
	for i := 0; i < n; i++ {
		p.send(t, m)
	}
	// Snapshots while running never go backwards and never exceed the truth.
	var prev uint64
	for total.Load() < n {
		st := e.Stats()
		tot := st.Total()
		done := tot.MessagesProcessed()
		assert.GreaterOrEqual(t, done, prev)
		assert.LessOrEqual(t, int64(done), total.Load())
		prev = done
	}
	require.NoError(t, e.Stop(context.Background()))
	st := e.Stats()
	tot := st.Total()
	assert.Equal(t, uint64(n), tot.MessagesProcessed())
	assert.Equal(t, uint64(n), st.MessagesSent)
	assert.Empty(t, st.Stale)
}

func TestSleepersCountBalanced(t *testing.T) {
	// After any amount of parking and waking, the sleepers count equals the
	// number of workers actually parked.
	e, err := Start(Config{Workers: 4, SpinPasses: 1, ParkTimeout: 50 * time.Microsecond})
	require.NoError(t, err)
	p := finishingProbe(2000, nil)
	p.spawn(t, e)
	m := &probeMsg{}
	for i := 0; i < 2000; i++ {
		p.send(t, m)
		if i%10 == 0 {
			time.Sleep(20 * time.Microsecond)
		}
	}
	require.NoError(t, e.Stop(context.Background()))
	assert.Zero(t, e.sleepers.Load())
}

// After heavy stealing, every mailbox's owner is the worker whose range
// holds its slot, and the slots are a permutation of the mailboxes: the
// owner bookkeeping done in the swap hooks never goes stale.
func TestOwnersMatchSlotsAfterStealing(t *testing.T) {
	// Processors to spare: with fewer, the flood below (from outside the
	// system) keeps them all running, so busy workers wake no thieves and
	// awake workers serve the mailboxes of parked ones instead (see
	// wakeThief and defer.go). The test is about the swaps.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	e, err := Start(Config{Workers: 4, QueuesPerWorker: 4, SpinPasses: 4, StealAge: -1,
		ParkTimeout: 100 * time.Microsecond, Placement: PlaceGlobal})
	require.NoError(t, err)
	// Load only worker 0's mailboxes (tickets 0..3 of every 16), so the
	// other three workers steal from it. Rounds go on until some stealing
	// has happened (on a loaded machine one round may pass without: the
	// thieves' threads may not get a CPU before worker 0 has caught up),
	// at most maxRounds.
	const maxRounds = 50
	var steals uint64
	for round := 0; round < maxRounds && steals == 0; round++ {
		floodWorkerZero(t, e)
		tot := e.Stats().Total()
		steals = tot.Steals()
	}
	seen := map[*mailbox]bool{}
	for i := range e.slots {
		mb := e.slots[i].Load()
		require.NotNil(t, mb, "slot %d left nil", i)
		require.False(t, seen[mb], "mailbox in two slots")
		seen[mb] = true
		require.Equal(t, int32(e.slotWorker[i].id), mb.owner.Load(), "slot %d: owner does not match", i)
	}
	require.NoError(t, e.Stop(context.Background()))
	require.NotZero(t, steals, "the test must exercise stealing")
	t.Logf("%d steals", steals)
}

// floodWorkerZero spawns 128 actors on e (global placement, 16 mailboxes),
// sends 500 messages from outside to each of the 32 on mailboxes 0..3 of
// every 16 and one to each other, and waits until all have terminated.
func floodWorkerZero(t *testing.T, e *Executor) {
	var probes []*probe
	for i := 0; i < 16*8; i++ {
		p := &probe{}
		p.fn = func(p *probe) Allocation {
			p.calls++
			if p.calls == 500 {
				return Finished
			}
			for i := 0; i < 200; i++ { // a little work per message
				_ = i * i
			}
			return Nodelete
		}
		p.spawn(t, e)
		if i%16 < 4 {
			probes = append(probes, p)
		} else {
			p.calls = 499 // a dummy: terminates on its first message
			p.send(t, &probeMsg{})
		}
	}
	m := &probeMsg{}
	for round := 0; round < 500; round++ {
		for _, p := range probes {
			p.send(t, m)
		}
	}
	for _, p := range probes {
		for p.cell.Alive() {
			time.Sleep(time.Millisecond)
		}
	}
}
