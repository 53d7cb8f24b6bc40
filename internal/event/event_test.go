package event

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

const (
	running uint32 = 0
	parked  uint32 = 1
)

func kinds() []Kind { return []Kind{KindFutex, KindChan, KindTwoPhase} }

func TestWaitReturnsWhenWordChanged(t *testing.T) {
	for _, k := range kinds() {
		var e Event
		e.Init(k)
		var w atomic.Uint32 // running: Wait must not block
		done := make(chan struct{})
		go func() { e.Wait(&w, parked, 0); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%v: Wait blocked although the word was not parked", k)
		}
	}
}

// Wait with a timeout, the word left parked and no Wake, returns, and not
// before the timeout has passed. Wait may return spuriously, so it is called
// again until one call has lasted the whole timeout: a Wait that returns
// early as a rule never gets there (and fails after 5s), one that ignores
// the timeout never returns (and fails after 10s).
func TestTimeout(t *testing.T) {
	const timeout = time.Millisecond
	for _, k := range kinds() {
		var e Event
		e.Init(k)
		var w atomic.Uint32
		w.Store(parked)
		full := make(chan bool, 1)
		go func() {
			give := time.Now().Add(5 * time.Second)
			for time.Now().Before(give) {
				start := time.Now()
				e.Wait(&w, parked, timeout)
				if time.Since(start) >= timeout {
					full <- true
					return
				}
			}
			full <- false
		}()
		select {
		case ok := <-full:
			if !ok {
				t.Fatalf("%v: Wait kept returning before its timeout had passed", k)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%v: Wait with a timeout did not return", k)
		}
	}
}

// handshake runs the park/wake handshake used by the executor, many times in
// a row: the sleeper announces, re-checks for work, and sleeps with sleep
// (which must not return before the word changes, other than spuriously);
// the waker publishes work, then wakes only if it wins the parked->running
// transition, pausing for pause(i) after round i. No round may hang.
func handshake(t *testing.T, e *Event, sleep func(state *atomic.Uint32), pause func(i int)) {
	t.Helper()
	var state atomic.Uint32
	var work atomic.Int64
	const rounds = 20000
	done := make(chan struct{})
	go func() { // sleeper: consumes one unit of work per round
		defer close(done)
		for got := int64(0); got < rounds; {
			if work.Load() > got {
				got++
				continue
			}
			state.Store(parked)
			if work.Load() > got { // re-check after announcing
				state.CompareAndSwap(parked, running)
				continue
			}
			sleep(&state)
		}
	}()
	for i := 0; i < rounds; i++ {
		work.Add(1) // publish, then check for a sleeper
		if state.CompareAndSwap(parked, running) {
			e.Wake(&state)
		}
		pause(i)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("sleeper never woke: lost wake-up")
	}
}

func TestNoLostWakeups(t *testing.T) {
	for _, k := range kinds() {
		t.Run(k.String(), func(t *testing.T) {
			var e Event
			e.Init(k)
			handshake(t, &e, func(state *atomic.Uint32) {
				for state.Load() == parked {
					e.Wait(state, parked, 0) // no timeout: a lost wake-up hangs
				}
			}, func(i int) {
				if i%64 == 0 {
					time.Sleep(time.Microsecond)
				}
			})
		})
	}
}

// The executor's park with KindTwoPhase: WaitFutex for a bounded phase (here
// so short that wake-ups land before, inside and after it), then WaitChan
// until the word changes. A waker's Wake makes one signal, chosen by the
// phase it sees (see Event.inFutex); none may be lost.
func TestNoLostWakeupsAcrossPhases(t *testing.T) {
	for _, phase := range []time.Duration{time.Microsecond, 20 * time.Microsecond, time.Millisecond} {
		t.Run(phase.String(), func(t *testing.T) {
			var e Event
			e.Init(KindTwoPhase)
			handshake(t, &e, func(state *atomic.Uint32) {
				e.WaitFutex(state, parked, phase)
				for state.Load() == parked {
					e.WaitChan(state, parked, 0) // no timeout: a lost wake-up hangs
				}
			}, func(i int) {
				if i%32 == 0 {
					time.Sleep(time.Duration(i%7) * 5 * time.Microsecond)
				}
			})
		})
	}
}

// A Wake that finds the sleeper in the futex phase does not leave a channel
// token behind: the next channel sleep is not cut short by a stale token.
func TestFutexPhaseWakeLeavesNoToken(t *testing.T) {
	if !futexSupported {
		t.Skip("no futex here")
	}
	var e Event
	e.Init(KindTwoPhase)
	var state atomic.Uint32
	state.Store(parked)
	woke := make(chan struct{})
	go func() {
		for state.Load() == parked {
			e.WaitFutex(&state, parked, time.Minute)
		}
		close(woke)
	}()
	for e.inFutex.Load() == 0 {
		runtime.Gosched()
	}
	state.Store(running)
	e.Wake(&state)
	<-woke
	if n := len(e.ch); n != 0 {
		t.Fatalf("%d channel token(s) left by a futex-phase wake-up", n)
	}
}

func TestValid(t *testing.T) {
	for _, k := range []Kind{Default, KindFutex, KindChan, KindTwoPhase} {
		if !Valid(k) {
			t.Errorf("Valid(%v) = false", k)
		}
	}
	for _, k := range []Kind{KindTwoPhase + 1, 7, 255} {
		if Valid(k) {
			t.Errorf("Valid(%d) = true for an undefined kind", uint8(k))
		}
		if got, want := k.String(), "Kind("+strconv.Itoa(int(k))+")"; got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
	for k, want := range map[Kind]string{Default: "default", KindFutex: "futex", KindChan: "chan", KindTwoPhase: "twophase"} {
		if got := k.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}

func TestInitRejectsUndefinedKind(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Init accepted an undefined kind")
		}
	}()
	var e Event
	e.Init(KindTwoPhase + 1)
}

// BenchmarkPingPong measures a wake-up round trip: each op is two
// Wake-to-running hand-offs between two goroutines. With locked=true both
// goroutines are locked to their OS threads, as the executor's workers are,
// so that every wake-up is a thread wake-up.
func BenchmarkPingPong(b *testing.B) {
	for _, locked := range []bool{false, true} {
		for _, k := range kinds() {
			b.Run(fmt.Sprintf("kind=%v/locked=%v", k, locked), func(b *testing.B) { pingPong(b, k, locked) })
		}
	}
}

func pingPong(b *testing.B, k Kind, locked bool) {
	var ea, eb Event
	ea.Init(k)
	eb.Init(k)
	var sa, sb atomic.Uint32
	sa.Store(parked)
	done := make(chan struct{})
	if locked {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	b.ReportAllocs()
	b.ResetTimer()
	go func() {
		if locked {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
		}
		for i := 0; i < b.N; i++ {
			for sa.Load() == parked {
				ea.Wait(&sa, parked, 0)
			}
			sa.Store(parked)
			sb.Store(running)
			eb.Wake(&sb)
		}
		close(done)
	}()
	for i := 0; i < b.N; i++ {
		sb.Store(parked)
		sa.Store(running)
		ea.Wake(&sa)
		for sb.Load() == parked {
			eb.Wait(&sb, parked, 0)
		}
	}
	<-done
}

// BenchmarkWakeAfterIdle measures one wake-up of a sleeper that has slept
// for an idle period (20 ms, the whole process idle meanwhile), as the
// first message after a pause wakes a parked worker: each op is one such
// wake-up. It reports the medians of the waker's own cost (the time Wake
// takes to return, which includes any thread the runtime wakes on its
// behalf) and of the wake-to-run latency (from the call of Wake until the
// sleeper's Wait has returned), in microseconds. With locked=true the
// sleeper is locked to its OS thread, as a worker that keeps its thread
// is. Run it with a small fixed count, e.g. -benchtime 50x: each op sleeps
// 20 ms.
func BenchmarkWakeAfterIdle(b *testing.B) {
	for _, locked := range []bool{false, true} {
		for _, k := range kinds() {
			b.Run(fmt.Sprintf("kind=%v/locked=%v", k, locked), func(b *testing.B) { wakeAfterIdle(b, k, locked) })
		}
	}
}

func wakeAfterIdle(b *testing.B, k Kind, locked bool) {
	const idle = 20 * time.Millisecond
	var e Event
	e.Init(k)
	var s atomic.Uint32
	s.Store(parked)
	var ran atomic.Int64 // when the sleeper's Wait returned (time since base)
	base := time.Now()
	done := make(chan struct{})
	go func() {
		if locked {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
		}
		for i := 0; i < b.N; i++ {
			for s.Load() == parked {
				e.Wait(&s, parked, 0)
			}
			ran.Store(int64(time.Since(base)))
			s.Store(parked)
		}
		close(done)
	}()
	cost := make([]time.Duration, b.N)
	lat := make([]time.Duration, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		time.Sleep(idle)
		ran.Store(0)
		t0 := time.Since(base)
		s.Store(running)
		e.Wake(&s)
		cost[i] = time.Since(base) - t0
		for ran.Load() == 0 {
			runtime.Gosched()
		}
		lat[i] = time.Duration(ran.Load()) - t0
	}
	b.StopTimer()
	<-done
	median := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2]) / 1e3
	}
	b.ReportMetric(median(cost), "wake-us")
	b.ReportMetric(median(lat), "run-us")
}
