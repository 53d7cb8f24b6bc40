package executor

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

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
	defer close(stop)
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
	assert.GreaterOrEqual(t, st.threadParks, uint64(long/2), "the worker kept its thread through long sleeps")

	// Short sleeps: each message sent as soon as the previous one ran.
	parks0, given0 := st.Parks, st.threadParks
	for i := range short {
		p.send(t, &probeMsg{})
		for got.Load() != int64(long+i+1) {
			runtime.Gosched()
		}
	}
	require.NoError(t, e.Stop(context.Background()))
	st = e.Stats().Workers[0]
	parks, given := st.Parks-parks0, st.threadParks-given0
	require.GreaterOrEqual(t, parks, uint64(short/4), "the worker hardly parked")
	assert.Less(t, given, parks/2, "the worker gave its thread back after short sleeps")
	assert.Zero(t, moved.Load(), "a behaviour ran on a thread not locked to it")
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
	assert.Zero(t, st.threadParks, "a pinned worker gave its thread back")
	assert.Zero(t, moved.Load())
}
