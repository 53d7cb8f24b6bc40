package executor

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/actord/actord/internal/event"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// threadProbe returns a probe whose behaviour checks that it runs on a
// thread locked to it: its thread stays the same across runtime.Gosched
// calls while another goroutine competes for the processors (an unlocked
// goroutine moves between threads there). It counts runs in got and
// thread changes in moved, and finishes after n runs.
func threadProbe(n int, got, moved *atomic.Int64) *probe {
	return &probe{fn: func(p *probe) Allocation {
		tid := unix.Gettid()
		for range 20 {
			runtime.Gosched()
			if unix.Gettid() != tid {
				moved.Add(1)
				break
			}
		}
		got.Add(1)
		if p.calls++; p.calls == n {
			return Finished
		}
		return Nodelete
	}}
}

// competitor keeps goroutines runnable beside the workers until stop is
// closed, so that an unlocked goroutine that yields is likely to resume on
// another thread.
func competitor(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
			runtime.Gosched()
		}
	}
}

// A worker whose sleeps last threadSleep or more gives its thread back while
// it sleeps on the channel, and its behaviours still run on a thread locked
// to it; a worker whose sleeps are short keeps its thread. Fails if the
// worker never gives the thread back, gives it back after short sleeps, or
// forgets to lock a thread again when it wakes.
func TestThreadGivenBackOnLongSleeps(t *testing.T) {
	stop := make(chan struct{})
	var stopOnce sync.Once
	stopCompetitors := func() { stopOnce.Do(func() { close(stop) }) }
	defer stopCompetitors()
	for range 2 {
		go competitor(stop)
	}
	e, err := Start(Config{Workers: 1, SpinPasses: 1, Park: ParkChannel})
	require.NoError(t, err)
	const long, short = 12, 200
	var got, moved atomic.Int64
	p := threadProbe(long+short, &got, &moved)
	p.spawn(t, e)

	// Long sleeps: messages 3 × threadSleep apart.
	for i := range long {
		time.Sleep(3 * threadSleep)
		p.send(t, &probeMsg{})
		require.Eventually(t, func() bool { return got.Load() == int64(i+1) }, 10*time.Second, 50*time.Microsecond)
	}
	st := e.Stats().Workers[0]
	assert.GreaterOrEqual(t, st.ThreadReleases, uint64(long/2), "the worker kept its thread through long sleeps")

	// Short sleeps: each message sent as soon as the previous one ran,
	// without the competitors, which would lengthen them. Counted once the moving averages have forgotten the long sleeps, and
	// only if the sleeps were short indeed: on a machine loaded enough to
	// make them average threadSleepMid, single messages are a low rate
	// (see TestGivesThreadPolicy).
	var parks0, given0 uint64
	var slept0 time.Duration
	stopCompetitors()
	for i := range short {
		if i == short/2 {
			st := e.Stats().Workers[0]
			parks0, given0, slept0 = st.Parks, st.ThreadReleases, st.ParkedTime
		}
		p.send(t, &probeMsg{})
		for got.Load() != int64(long+i+1) {
			runtime.Gosched()
		}
	}
	require.NoError(t, e.Stop(context.Background()))
	st = e.Stats().Workers[0]
	parks, given := st.Parks-parks0, st.ThreadReleases-given0
	switch mean := (st.ParkedTime - slept0) / time.Duration(max(parks, 1)); {
	case e.procs == 1:
		// One processor (go test -cpu 1): every sleep gives the thread
		// back (TestThreadGivenBackWithOneProcessor); the snapshot may fall
		// between a sleep's two counts.
		assert.InDelta(t, parks, given, 1, "one processor: a sleep kept the thread")
	case parks < short/20:
		t.Logf("%d parks: too few to judge", parks)
	case mean >= threadSleepMid/2:
		t.Logf("sleeps of %v on average: not short here", mean)
	default:
		assert.Less(t, given, parks/2, "the worker gave its thread back after short sleeps (%v on average)", mean)
	}
	if testing.Verbose() {
		t.Logf("%d parks, %d gave the thread back", parks, given)
	}
	assert.Zero(t, moved.Load(), "a behaviour ran on a thread not locked to it")
}

// A worker fed single messages about a millisecond apart (sleeps shorter
// than threadSleep, but of threadSleepMid or more) gives its thread back,
// and its behaviours still run on a thread locked to it. Fails without the
// average rule of "Giving the thread back" (such sleeps then keep the
// thread) and if the worker forgets to lock a thread again.
func TestThreadGivenBackAtALowRate(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	go competitor(stop)
	e, err := Start(Config{Workers: 1, Park: ParkChannel})
	require.NoError(t, err)
	const n = 80
	var got, moved atomic.Int64
	p := threadProbe(n, &got, &moved)
	p.spawn(t, e)
	var parks0, given0 uint64
	for i := range n {
		if i == n/2 { // the averages have settled: count from here
			st := e.Stats().Workers[0]
			parks0, given0 = st.Parks, st.ThreadReleases
		}
		time.Sleep(threadSleep / 2)
		p.send(t, &probeMsg{})
		require.Eventually(t, func() bool { return got.Load() == int64(i+1) }, 10*time.Second, 20*time.Microsecond)
	}
	require.NoError(t, e.Stop(context.Background()))
	st := e.Stats().Workers[0]
	parks, given := st.Parks-parks0, st.ThreadReleases-given0
	require.GreaterOrEqual(t, parks, uint64(n/4), "the worker hardly parked")
	assert.Greater(t, given, parks/2, "the worker kept its thread through a low rate of single messages")
	assert.Zero(t, moved.Load(), "a behaviour ran on a thread not locked to it")
}

// The thread policy in isolation (see "Giving the thread back" in park.go):
// a sequence of awake periods and sleeps, and whether the next sleep gives
// the thread back.
func TestGivesThreadPolicy(t *testing.T) {
	newWorker := func() *worker {
		w := &worker{e: &Executor{}, cpu: -1}
		w.initPark() // the first sleep is as good as long
		return w
	}
	// period records an awake period of gulps gulps taking msgs messages,
	// then a sleep of d, as the worker does.
	period := func(w *worker, gulps, msgs int, d time.Duration) {
		w.awakeGulps += gulps
		w.awakeMsgs += msgs
		w.noteSleep(d)
	}
	w := newWorker()
	assert.True(t, w.givesThread(), "first sleep")
	period(w, 0, 0, 200*time.Microsecond) // the first sleep, ended by the first message soon after Start
	assert.True(t, w.givesThread(), "a short sleep that followed no message says nothing of the rate")
	period(w, 12, 12, 200*time.Microsecond)
	assert.False(t, w.givesThread(), "a short sleep after messages")
	period(w, 0, 0, 200*time.Microsecond) // woken for messages another worker took
	assert.False(t, w.givesThread(), "a short sleep that followed no message leaves the rule as it was")
	w = newWorker()
	for range 20 {
		period(w, 12, 12, 900*time.Microsecond) // a 12-stage chain at 1k msg/s
	}
	assert.True(t, w.givesThread(), "single messages about a millisecond apart")
	assert.True(t, w.spinShort)

	w = newWorker()
	for range 20 {
		period(w, 12, 120, time.Millisecond) // the same chain, fed batches of 10
	}
	assert.False(t, w.givesThread(), "batches a millisecond apart")
	assert.True(t, w.spinShort, "batches a millisecond apart: the next one is a sleep away")

	w = newWorker()
	for range 20 {
		period(w, 1, 1, 30*time.Microsecond) // a ping-pong
	}
	assert.False(t, w.givesThread(), "short sleeps")
	period(w, 1, 1, 3*threadSleep)
	assert.True(t, w.givesThread(), "a long sleep, whatever came before")
	assert.False(t, w.spinShort, "one long sleep says nothing of the rate yet")

	// After a long idle, short sleeps take the thread back within a few
	// sleeps: the average counts each sleep up to sleepAvgCap.
	w = newWorker()
	period(w, 1, 1, 10*time.Second)
	sleeps := 0
	for w.givesThread() {
		period(w, 1, 1, 30*time.Microsecond)
		sleeps++
		require.Less(t, sleeps, 100)
	}
	assert.LessOrEqual(t, sleeps, 8, "a worker idle for long took too many short sleeps to keep its thread again")

	// With one processor every sleep gives it back, and short sleeps keep
	// the whole spin budget.
	w = newWorker()
	w.e.procs = 1
	for range 20 {
		period(w, 1, 1, 30*time.Microsecond)
	}
	assert.True(t, w.givesThread(), "one processor, short sleeps")
	assert.False(t, w.spinShort, "one processor, short sleeps: the whole spin budget")
	w.cpu = 0
	assert.False(t, w.givesThread(), "one processor, a pinned worker")

	w = newWorker()
	w.cpu = 0
	assert.False(t, w.givesThread(), "a pinned worker")
	w = newWorker()
	w.ev.Init(event.KindFutex)
	assert.False(t, w.givesThread(), "a worker parking in the futex only")
}

// With a single processor a worker gives its thread back at every sleep,
// short ones included, and its behaviours still run on a thread locked to
// it. Fails without the single-processor rule of "Giving the thread back"
// (short sleeps then keep the thread) and if the worker forgets to lock a
// thread again.
func TestThreadGivenBackWithOneProcessor(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	e, err := Start(Config{Workers: 1, SpinPasses: 1})
	require.NoError(t, err)
	require.Equal(t, int32(1), e.procs)
	const n = 200
	var got, moved atomic.Int64
	p := threadProbe(n, &got, &moved)
	p.spawn(t, e)
	for i := range n {
		p.send(t, &probeMsg{}) // short sleeps: each message as soon as the previous one ran
		for got.Load() != int64(i+1) {
			runtime.Gosched()
		}
	}
	require.NoError(t, e.Stop(context.Background()))
	st := e.Stats().Workers[0]
	require.GreaterOrEqual(t, st.Parks, uint64(n/4), "the worker hardly parked")
	assert.Equal(t, st.Parks, st.ThreadReleases, "a sleep kept the thread with one processor")
	assert.Zero(t, moved.Load(), "a behaviour ran on a thread not locked to it")
}

// A worker whose sleeps averaged threadSleepMid or more spins
// 1/lowRateSpinDiv of its budget before it parks again; otherwise the whole
// budget.
func TestShortSpinAtLowRates(t *testing.T) {
	e := &Executor{cfg: Config{SpinPasses: 64}, workers: make([]*worker, 2)}
	passes := func(short bool) int {
		w := &worker{e: e, cpu: -1, spinShort: short}
		for idle := 1; ; idle++ {
			if w.spinDone(idle, idle) {
				w.stopSpinning()
				return idle
			}
			require.Less(t, idle, 100000)
		}
	}
	assert.Equal(t, 64/lowRateSpinDiv, passes(true))
	assert.Equal(t, 64, passes(false))
}

// A worker pinned to a CPU never gives its thread back: pinning applies to
// the thread.
func TestPinnedWorkerKeepsItsThread(t *testing.T) {
	e, err := Start(Config{Workers: 1, SpinPasses: 1, Park: ParkChannel, PinCPUs: true})
	if err != nil {
		t.Skipf("cannot pin here: %v", err)
	}
	const n = 6
	var got, moved atomic.Int64
	p := threadProbe(n, &got, &moved)
	p.spawn(t, e)
	for i := range n {
		time.Sleep(3 * threadSleep)
		p.send(t, &probeMsg{})
		require.Eventually(t, func() bool { return got.Load() == int64(i+1) }, 10*time.Second, 50*time.Microsecond)
	}
	require.NoError(t, e.Stop(context.Background()))
	st := e.Stats().Workers[0]
	assert.GreaterOrEqual(t, st.Parks, uint64(n), "the worker hardly parked")
	assert.Zero(t, st.ThreadReleases, "a pinned worker gave its thread back")
	assert.Zero(t, moved.Load())
}
