package executor

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ticker is an actor for the timer tests: it records what it receives.
type ticker struct {
	cell Cell
	mu   sync.Mutex
	got  []*tick
	at   []int64 // e.now() at each delivery
	e    *Executor
	n    atomic.Int64
	fin  bool // terminate on the next message; guarded by mu
	// running is true while onTick runs, outside mu: overlaps counts the
	// entries that found it already true (two workers running the actor at
	// once).
	running  atomic.Bool
	overlaps atomic.Int64
}

type tick struct {
	Message
	id   int
	when int64 // the timer's deadline, read from the set when it was added
}

func onTick(a *ticker, m *tick) Allocation {
	if !a.running.CompareAndSwap(false, true) {
		a.overlaps.Add(1)
	}
	defer a.running.Store(false)
	a.mu.Lock()
	a.got = append(a.got, m)
	a.at = append(a.at, a.e.now())
	fin := a.fin
	a.mu.Unlock()
	a.n.Add(1)
	if fin {
		return Finished
	}
	return Nodelete
}

func (a *ticker) received() []*tick {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*tick(nil), a.got...)
}

func startTicker(t *testing.T, cfg Config) (*Executor, *ticker, Port[*tick]) {
	t.Helper()
	e, err := Start(cfg)
	require.NoError(t, err)
	a := &ticker{e: e}
	require.NoError(t, Spawn(e, &a.cell, a))
	p, err := Bind(&a.cell, a, onTick)
	require.NoError(t, err)
	return e, a, p
}

// finish terminates the ticker (a plain send that returns Finished) and
// stops the executor cleanly.
func finish(t *testing.T, e *Executor, a *ticker) {
	t.Helper()
	a.mu.Lock()
	a.fin = true
	a.mu.Unlock()
	if a.cell.Alive() {
		_ = Send(&a.cell, a, &tick{id: -1}, onTick)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, e.Stop(ctx))
	assert.Zero(t, a.overlaps.Load(), "the ticker ran on two workers at once")
}

// waitFor polls cond for up to 20s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// checkTimers verifies the set's invariants: the heap property, every
// pending entry's pos, chunk counts, the room bitmap, the counters.
func checkTimers(t *testing.T, ts *timers) {
	t.Helper()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for k, i := range ts.heap {
		en := ts.at(i)
		require.NotZero(t, en.gen, "heap[%d] is a free entry", k)
		require.Equal(t, int32(k), en.pos, "heap[%d]: pos", k)
		if k > 0 {
			require.LessOrEqual(t, ts.at(ts.heap[(k-1)/4]).when, en.when, "heap order at %d", k)
		}
	}
	live, msgs := 0, int64(0)
	for ci := range ts.chunks {
		r := &ts.chunks[ci]
		bit := ts.hasRoom[ci>>6]&(1<<(ci&63)) != 0
		require.Equal(t, r.hasRoom(), bit, "room bit of chunk %d", ci)
		if r.p == nil {
			continue
		}
		require.NotZero(t, r.live, "an empty chunk %d is kept", ci)
		n := int32(0)
		for k := range r.p {
			en := &r.p[k]
			if en.gen != 0 {
				n++
				if en.cell != nil {
					msgs++
				}
			} else {
				require.Nil(t, en.msg, "a free entry keeps its message")
				require.Nil(t, en.cell)
			}
		}
		require.Equal(t, r.live, n, "live count of chunk %d", ci)
		live += int(n)
	}
	require.Equal(t, len(ts.heap), live)
	require.Equal(t, msgs, ts.pending.Load())
	if len(ts.chunks) > 0 {
		require.NotNil(t, ts.chunks[len(ts.chunks)-1].p, "a trailing released chunk was not trimmed")
	}
	for w := range ts.hasRoom[:min(ts.roomLow, len(ts.hasRoom))] {
		require.Zero(t, ts.hasRoom[w], "a word below roomLow has room")
	}
}

func TestTimerEntrySize(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the sizes are those of 64-bit platforms")
	}
	assert.Equal(t, uintptr(56), unsafe.Sizeof(timerEntry{}))
	assert.Equal(t, uintptr(16), unsafe.Sizeof(Timer{}))
	assert.Equal(t, uintptr(7*8192), unsafe.Sizeof(timerChunk{}), "a chunk is a whole number of pages")
}

// Timers with random delays, set from several goroutines at once, are all
// delivered, never before their deadlines.
func TestTimerNeverEarly(t *testing.T) {
	e, a, p := startTicker(t, Config{Workers: 2})
	const setters, each = 4, 500
	var wg sync.WaitGroup
	for s := range setters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(s), 1))
			for i := range each {
				d := time.Duration(r.IntN(40_000)+1) * time.Microsecond
				// A lower bound of the deadline the set will record.
				m := &tick{id: s*each + i, when: e.now() + int64(d)}
				if _, err := SendAfter(p, d, m); !assert.NoError(t, err) {
					return
				}
			}
		}()
	}
	wg.Wait()
	checkTimers(t, &e.timers)
	waitFor(t, "every timer", func() bool { return a.n.Load() == setters*each })
	got := a.received()
	a.mu.Lock()
	at := append([]int64(nil), a.at...)
	a.mu.Unlock()
	for k, m := range got {
		assert.GreaterOrEqual(t, at[k], m.when, "timer %d delivered early", m.id)
	}
	s := e.Stats()
	assert.Equal(t, uint64(setters*each), s.TimersFired)
	assert.Zero(t, s.TimersPending)
	assert.Zero(t, s.TimersDead)
	finish(t, e, a)
}

// The fire order is the deadline order, checked against the deadlines the
// set itself recorded (read under its lock, before any of them is due; the
// firing, under the same lock, publishes them to the behaviour).
func TestTimerFireOrderByDeadline(t *testing.T) {
	e, a, p := startTicker(t, Config{Workers: 1})
	const n = 2000
	r := rand.New(rand.NewPCG(7, 7))
	ts := &e.timers
	ms := make([]*tick, n)
	for i := range ms {
		ms[i] = &tick{id: i}
	}
	// The delays are long enough that no timer is due before all are set
	// and their deadlines read.
	base := e.now()
	tms := make([]Timer, n)
	for i := range ms {
		d := 200*time.Millisecond + time.Duration(r.IntN(50_000))*time.Microsecond
		tm, err := SendAfter(p, d, ms[i])
		require.NoError(t, err)
		tms[i] = tm
	}
	ts.mu.Lock()
	if e.now()-base >= int64(200*time.Millisecond) {
		ts.mu.Unlock()
		finish(t, e, a)
		t.Skip("setting the timers took too long on this machine for the check")
	}
	for i, tm := range tms {
		ms[i].when = ts.at(tm.idx).when
	}
	ts.mu.Unlock()
	checkTimers(t, ts)
	waitFor(t, "every timer", func() bool { return a.n.Load() == n })
	got := a.received()
	for k := 1; k < n; k++ {
		assert.LessOrEqual(t, got[k-1].when, got[k].when, "delivery %d out of deadline order", k)
	}
	a.mu.Lock()
	for k, m := range got {
		assert.GreaterOrEqual(t, a.at[k], m.when, "timer %d delivered early", m.id)
	}
	a.mu.Unlock()
	finish(t, e, a)
}

func TestTimerStopBeforeFire(t *testing.T) {
	e, a, p := startTicker(t, Config{Workers: 1})
	tm, err := SendAfter(p, time.Hour, &tick{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), e.Stats().TimersPending)
	assert.True(t, tm.Stop())
	assert.False(t, tm.Stop(), "a second Stop")
	assert.Zero(t, e.Stats().TimersPending)
	assert.False(t, Timer{}.Stop(), "the zero Timer")

	// A stale handle does nothing to the timer that reuses its slot.
	tm2, err := SendAfter(p, time.Hour, &tick{})
	require.NoError(t, err)
	require.Equal(t, tm.idx, tm2.idx, "the slot is reused")
	assert.False(t, tm.Stop(), "the stale handle")
	assert.Equal(t, int64(1), e.Stats().TimersPending)
	assert.True(t, tm2.Stop())

	// A short timer stopped at once delivers nothing.
	for range 100 {
		tm, err := SendAfter(p, 5*time.Millisecond, &tick{})
		require.NoError(t, err)
		require.True(t, tm.Stop())
	}
	time.Sleep(20 * time.Millisecond)
	assert.Zero(t, a.n.Load())
	s := e.Stats()
	assert.Zero(t, s.TimersPending)
	assert.Zero(t, s.TimersFired)
	checkTimers(t, &e.timers)
	finish(t, e, a)
}

// Stop racing the firing: for every timer exactly one of "delivered" and
// "Stop returned true" happens.
func TestTimerStopRacingFire(t *testing.T) {
	e, a, p := startTicker(t, Config{Workers: 2})
	const n = 3000
	stopped := make([]bool, n)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		tm, err := SendAfter(p, time.Duration(r.IntN(300)+1)*time.Microsecond, &tick{id: i})
		require.NoError(t, err)
		if r.IntN(4) == 0 {
			time.Sleep(time.Duration(r.IntN(300)) * time.Microsecond)
		} else {
			for range r.IntN(2000) {
				runtime.Gosched()
			}
		}
		stopped[i] = tm.Stop()
	}
	nStopped := 0
	for _, s := range stopped {
		if s {
			nStopped++
		}
	}
	waitFor(t, "the unstopped timers", func() bool { return a.n.Load() == int64(n-nStopped) })
	time.Sleep(5 * time.Millisecond)
	got := a.received()
	require.Len(t, got, n-nStopped)
	seen := make([]bool, n)
	for _, m := range got {
		require.False(t, seen[m.id], "timer %d delivered twice", m.id)
		seen[m.id] = true
		require.False(t, stopped[m.id], "timer %d delivered although Stop returned true", m.id)
	}
	s := e.Stats()
	assert.Equal(t, uint64(n-nStopped), s.TimersFired)
	assert.Zero(t, s.TimersPending)
	t.Logf("%d of %d stopped in time", nStopped, n)
	finish(t, e, a)
}

func TestTimerPeriodic(t *testing.T) {
	e, a, p := startTicker(t, Config{Workers: 1})
	m := &tick{id: 1}
	tm, err := SendEvery(p, 2*time.Millisecond, m)
	require.NoError(t, err)
	waitFor(t, "five firings", func() bool { return a.n.Load() >= 5 })
	require.True(t, tm.Stop())
	fired := e.Stats().TimersFired
	assert.GreaterOrEqual(t, fired, uint64(5))
	time.Sleep(20 * time.Millisecond)
	s := e.Stats()
	assert.Equal(t, fired, s.TimersFired, "fired after Stop returned true")
	assert.Zero(t, s.TimersPending)
	assert.Equal(t, int64(fired), a.n.Load())
	for _, g := range a.received() {
		assert.Same(t, m, g, "the same message every time")
	}
	assert.False(t, tm.Stop())
	checkTimers(t, &e.timers)
	assert.Nil(t, e.timers.period, "the period map is dropped with its last timer")
	finish(t, e, a)
}

// Missed periods are skipped: a late firing delivers once and the next
// deadline is the schedule's first one still ahead.
func TestTimerPeriodicSkipsMissedPeriods(t *testing.T) {
	e, a, p := startTicker(t, Config{Workers: 1})
	tm, err := SendEvery(p, time.Hour, &tick{})
	require.NoError(t, err)
	ts := &e.timers
	ts.mu.Lock()
	w0 := ts.at(tm.idx).when
	next, more := ts.fire(w0 + 3*int64(time.Hour) + int64(time.Hour)/2) // 3.5 periods late
	w1 := ts.at(tm.idx).when
	ts.mu.Unlock()
	assert.False(t, more)
	assert.Equal(t, w0+4*int64(time.Hour), w1)
	assert.Equal(t, w1, next)
	waitFor(t, "the late firing", func() bool { return a.n.Load() == 1 })
	assert.Equal(t, uint64(1), e.Stats().TimersFired)
	assert.True(t, tm.Stop())
	finish(t, e, a)
}

func TestTimerErrors(t *testing.T) {
	e, a, p := startTicker(t, Config{Workers: 1})
	_, err := SendAfter(Port[*tick]{}, time.Second, &tick{})
	assert.ErrorIs(t, err, ErrNotSpawned)
	_, err = SendEvery(Port[*tick]{}, time.Second, &tick{})
	assert.ErrorIs(t, err, ErrNotSpawned)
	_, err = SendEvery(p, 0, &tick{})
	assert.ErrorIs(t, err, ErrBadPeriod)
	_, err = SendEvery(p, -time.Second, &tick{})
	assert.ErrorIs(t, err, ErrBadPeriod)

	// d <= 0 sends at once.
	tm, err := SendAfter(p, 0, &tick{id: 9})
	require.NoError(t, err)
	assert.Equal(t, Timer{}, tm)
	waitFor(t, "the immediate send", func() bool { return a.n.Load() == 1 })

	// A timer set while the actor lives, firing after it terminated, is
	// dead; so is a periodic one, which is cancelled.
	// Their deadlines are an hour away: once the actor has terminated, the
	// test fires them itself, as the timer goroutine does (fire, under mu)
	// with a clock past both deadlines. The termination comes first
	// however slow the machine: a firing before it would be delivered, or
	// reach the actor after it terminated, not count as dead.
	one, err := SendAfter(p, time.Hour, &tick{})
	require.NoError(t, err)
	per, err := SendEvery(p, time.Hour, &tick{})
	require.NoError(t, err)
	a.mu.Lock()
	a.fin = true
	a.mu.Unlock()
	require.NoError(t, p.Send(&tick{id: -1}))
	waitFor(t, "termination", func() bool { return !a.cell.Alive() })
	ts := &e.timers
	ts.mu.Lock()
	now := max(ts.at(one.idx).when, ts.at(per.idx).when)
	next, more := ts.fire(now)
	ts.mu.Unlock()
	assert.False(t, more)
	assert.Equal(t, int64(noDeadline), next, "a timer is left")
	s := e.Stats()
	assert.Equal(t, uint64(2), s.TimersDead, "two dead firings")
	assert.Zero(t, s.TimersFired)
	assert.Zero(t, s.TimersPending, "the periodic timer was cancelled")
	assert.False(t, per.Stop())
	_, err = SendAfter(p, time.Second, &tick{})
	assert.ErrorIs(t, err, ErrTerminated)
	_, err = SendEvery(p, time.Second, &tick{})
	assert.ErrorIs(t, err, ErrTerminated)
	// Periods later, the cancelled periodic timer does not fire again.
	ts.mu.Lock()
	next, more = ts.fire(now + 10*int64(time.Hour))
	ts.mu.Unlock()
	assert.False(t, more)
	assert.Equal(t, int64(noDeadline), next)
	assert.Equal(t, uint64(2), e.Stats().TimersDead, "the periodic timer fired again")
	checkTimers(t, &e.timers)
	require.NoError(t, e.Stop(context.Background()))

	// After Stop.
	_, err = SendAfter(p, time.Second, &tick{})
	assert.ErrorIs(t, err, ErrTerminated)
}

// The system stops with 10,000 timers pending: they are dropped (counted
// dead), their memory released, and the timer goroutine exits (TestMain
// checks with goleak).
func TestTimerStopSystemWithPending(t *testing.T) {
	e, a, p := startTicker(t, Config{Workers: 2})
	const n = 10_000
	tms := make([]Timer, 0, n)
	for i := range n {
		tm, err := SendAfter(p, time.Hour+time.Duration(i)*time.Millisecond, &tick{id: i})
		require.NoError(t, err)
		tms = append(tms, tm)
	}
	per, err := SendEvery(p, time.Hour, &tick{})
	require.NoError(t, err)
	to := &fakeTimeout{}
	e.afterTimeout(time.Hour, to)
	assert.Equal(t, int64(n+1), e.Stats().TimersPending)
	finish(t, e, a)
	s := e.Stats()
	assert.Zero(t, s.TimersPending)
	assert.Equal(t, uint64(n+1), s.TimersDead)
	assert.False(t, tms[0].Stop())
	assert.False(t, per.Stop())
	assert.Zero(t, to.n.Load(), "a dropped internal timeout is not called")
	assert.Nil(t, e.timers.chunks)
	assert.Nil(t, e.timers.heap)

	// A port of an actor left alive by a forced stop: ErrStopped.
	e2, a2, p2 := startTicker(t, Config{Workers: 1})
	_, err = SendAfter(p2, time.Hour, &tick{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, e2.Stop(ctx), ErrActorsAlive)
	_, err = SendAfter(p2, time.Hour, &tick{})
	assert.ErrorIs(t, err, ErrStopped)
	assert.Equal(t, uint64(1), e2.Stats().TimersDead)
	_ = a2
}

type fakeTimeout struct{ n atomic.Int64 }

func (f *fakeTimeout) timedOut() { f.n.Add(1) }

func TestTimerInternalTimeout(t *testing.T) {
	e, a, _ := startTicker(t, Config{Workers: 1})
	f := &fakeTimeout{}
	e.afterTimeout(time.Millisecond, f)
	waitFor(t, "the timeout", func() bool { return f.n.Load() == 1 })
	g := &fakeTimeout{}
	tm := e.afterTimeout(time.Hour, g)
	assert.True(t, tm.Stop())
	s := e.Stats()
	assert.Zero(t, s.TimersPending+int64(s.TimersFired)+int64(s.TimersDead), "internal timeouts are not counted")
	checkTimers(t, &e.timers)
	finish(t, e, a)
	assert.Zero(t, g.n.Load())
}

// Stopped and fired timers keep no memory: the entries are cleared (no
// reference to their messages), emptied chunks are released and the heap
// reallocated smaller.
func TestTimerMemoryReleased(t *testing.T) {
	e, a, p := startTicker(t, Config{Workers: 1})
	ts := &e.timers
	const n = 100_000
	tms := make([]Timer, n)
	weaks := make([]weak.Pointer[tick], 0, 100)
	for i := range n {
		m := &tick{id: i}
		if i%1000 == 0 {
			weaks = append(weaks, weak.Make(m))
		}
		tm, err := SendAfter(p, time.Hour, m)
		require.NoError(t, err)
		tms[i] = tm
	}
	ts.mu.Lock()
	chunks, heapCap := len(ts.chunks), cap(ts.heap)
	ts.mu.Unlock()
	assert.Equal(t, (n+timerChunkLen-1)/timerChunkLen, chunks)
	// Keep the first 10 (they are in chunk 0); stop the rest in random
	// order.
	order := rand.New(rand.NewPCG(3, 3)).Perm(n - 10)
	for _, k := range order {
		require.True(t, tms[k+10].Stop())
	}
	checkTimers(t, ts)
	ts.mu.Lock()
	assert.Len(t, ts.chunks, 1, "the emptied chunks are released")
	assert.LessOrEqual(t, cap(ts.heap), minShrinkCap, "the heap was %d", heapCap)
	assert.LessOrEqual(t, cap(ts.chunks), minShrinkCap)
	ts.mu.Unlock()
	runtime.GC()
	runtime.GC()
	for k, w := range weaks[1:] {
		assert.Nil(t, w.Value(), "message %d is still referenced", (k+1)*1000)
	}
	for _, tm := range tms[:10] {
		require.True(t, tm.Stop())
	}
	ts.mu.Lock()
	assert.Empty(t, ts.chunks)
	assert.NotNil(t, ts.spare, "one empty chunk is kept")
	ts.mu.Unlock()

	// Fired timers likewise.
	weaks = weaks[:0]
	for i := range 1000 {
		m := &tick{id: i}
		weaks = append(weaks, weak.Make(m))
		_, err := SendAfter(p, time.Millisecond, m)
		require.NoError(t, err)
	}
	waitFor(t, "the fired timers", func() bool { return a.n.Load() == 1000 })
	checkTimers(t, ts)
	ts.mu.Lock()
	assert.Empty(t, ts.chunks)
	ts.mu.Unlock()
	a.mu.Lock()
	a.got, a.at = nil, nil
	a.mu.Unlock()
	finish(t, e, a)
	runtime.GC()
	runtime.GC()
	alive := 0
	for _, w := range weaks {
		if w.Value() != nil {
			alive++
		}
	}
	assert.Zero(t, alive, "fired messages still referenced")

	// Periodic timers' map shrinks too.
	e, a, p = startTicker(t, Config{Workers: 1})
	ts = &e.timers
	pers := make([]Timer, 1000)
	for i := range pers {
		tm, err := SendEvery(p, time.Hour, &tick{})
		require.NoError(t, err)
		pers[i] = tm
	}
	for _, tm := range pers[:990] {
		require.True(t, tm.Stop())
	}
	ts.mu.Lock()
	assert.Len(t, ts.period, 10)
	assert.LessOrEqual(t, ts.periodPeak, 1000/4)
	ts.mu.Unlock()
	finish(t, e, a)
}

// Many goroutines set and stop one-shot and periodic timers at once: every
// one-shot timer is either delivered once or stopped (Stop true), never
// both; the set's invariants hold and it ends empty.
func TestTimerStress(t *testing.T) {
	e, a, p := startTicker(t, Config{Workers: 4})
	const goroutines, each = 8, 3000
	var oneShots, stopped atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 9))
			var keep, periodic []Timer
			for i := range each {
				if r.IntN(20) == 0 {
					tm, err := SendEvery(p, time.Duration(r.IntN(500)+50)*time.Microsecond, &tick{id: -2})
					if !assert.NoError(t, err) {
						break
					}
					periodic = append(periodic, tm)
					if len(periodic) > 5 {
						assert.True(t, periodic[0].Stop(), "a periodic timer is pending until stopped")
						periodic = periodic[1:]
					}
					continue
				}
				oneShots.Add(1)
				tm, err := SendAfter(p, time.Duration(r.IntN(2000)+1)*time.Microsecond, &tick{id: g*each + i})
				if !assert.NoError(t, err) {
					break
				}
				if r.IntN(2) == 0 {
					if tm.Stop() {
						stopped.Add(1)
					}
				} else {
					keep = append(keep, tm)
				}
				if len(keep) > 200 {
					k := r.IntN(len(keep))
					if keep[k].Stop() {
						stopped.Add(1)
					}
					keep = append(keep[:k], keep[k+1:]...)
				}
			}
			for _, tm := range periodic { // also after a failed set above
				assert.True(t, tm.Stop())
			}
		}()
	}
	wg.Wait()
	waitFor(t, "every one-shot timer", func() bool { return e.Stats().TimersPending == 0 })
	checkTimers(t, &e.timers)
	s := e.Stats()
	waitFor(t, "the deliveries", func() bool { return uint64(a.n.Load()) == s.TimersFired })
	seen := make(map[int]bool)
	for _, m := range a.received() {
		if m.id >= 0 {
			require.False(t, seen[m.id], "timer %d delivered twice", m.id)
			seen[m.id] = true
		}
	}
	assert.Equal(t, oneShots.Load()-stopped.Load(), int64(len(seen)), "one-shot timers delivered")
	assert.Zero(t, s.TimersDead)
	ts := &e.timers
	ts.mu.Lock()
	assert.Empty(t, ts.chunks)
	assert.Empty(t, ts.heap)
	assert.Nil(t, ts.period)
	ts.mu.Unlock()
	t.Logf("one-shots %d, delivered %d, stopped %d; deliveries in all %d", oneShots.Load(), len(seen), stopped.Load(), s.TimersFired)
	finish(t, e, a)
}
