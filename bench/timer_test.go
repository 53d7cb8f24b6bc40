package bench

import (
	"context"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/actord/actord/actor"
)

// Timer benchmarks (actor.SendAfter, actor.SendEvery). Targets, from the
// issue "Service-grade messaging": 1,000,000 pending timers in at most 64
// bytes each beyond the message (BenchmarkTimerMemory), and a fire-time
// error whose p99 is at most 1ms at low load (BenchmarkTimerFireError).
// Run them with:
//
//	go test -run XXX -bench 'Timer|SendAfter' -benchmem -count 3 ./bench

// alarm is the actor the timer benchmarks send to.
type alarm struct {
	actor.Actor
	late []time.Duration // BenchmarkTimerFireError: delivery time minus deadline
	rang chan struct{}
}

type alarmMsg struct {
	actor.Message
	deadline time.Time
}

func (a *alarm) onAlarm(m *alarmMsg) actor.Allocation {
	a.late = append(a.late, time.Since(m.deadline))
	a.rang <- struct{}{}
	return actor.Nodelete
}

func startAlarm(b *testing.B) (*actor.System, *alarm, actor.Port[*alarmMsg]) {
	b.Helper()
	sys := startSystem(b)
	a, err := actor.Spawn(sys, &alarm{rang: make(chan struct{}, 1)})
	if err != nil {
		b.Fatal(err)
	}
	p, err := actor.Bind(a, (*alarm).onAlarm)
	if err != nil {
		b.Fatal(err)
	}
	return sys, a, p
}

func stopAlarm(b *testing.B, sys *actor.System, a *alarm) {
	b.Helper()
	if err := actor.SendPill(a, actor.FinishedMsg); err != nil {
		b.Fatal(err)
	}
	if err := sys.Stop(context.Background()); err != nil {
		b.Fatal(err)
	}
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkTimerMemory sets 1,000,000 pending timers (one hour away) sharing
// one message, and reports the heap bytes they hold per timer (B/timer,
// target at most 64), measured with runtime.ReadMemStats after a GC before
// and after setting them; the handles are allocated before the first
// measurement, so B/timer is the timer set's own cost. It then stops them
// all and reports the heap bytes still held compared with before the first
// timer was set (B-after-stop: the one empty chunk the set keeps for reuse).
// One op is setting the million timers.
func BenchmarkTimerMemory(b *testing.B) {
	const n = 1_000_000
	sys, a, p := startAlarm(b)
	defer stopAlarm(b, sys, a)
	shared := &alarmMsg{}
	tms := make([]actor.Timer, n)
	var perTimer, after float64
	base := heapAlloc()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		before := heapAlloc()
		b.StartTimer()
		for k := range tms {
			t, err := actor.SendAfter(p, time.Hour, shared)
			if err != nil {
				b.Fatal(err)
			}
			tms[k] = t
		}
		b.StopTimer()
		set := heapAlloc()
		perTimer = float64(int64(set)-int64(before)) / n
		for _, t := range tms {
			if !t.Stop() {
				b.Fatal("a pending timer's Stop returned false")
			}
		}
		after = float64(int64(heapAlloc()) - int64(base))
		b.StartTimer()
	}
	b.ReportMetric(perTimer, "B/timer")
	b.ReportMetric(max(after, 0), "B-after-stop")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/timer")
}

// BenchmarkTimerFireError sets 200 timers one at a time on an idle system,
// each 1 to 5ms away (the next one set once the previous has been
// delivered), and reports how late the receiving behaviour ran: the time
// it read minus the deadline (the time before SendAfter plus the delay), in
// microseconds: p50-µs, p99-µs (target at most 1000) and max-µs. This
// includes waking the timer goroutine and a parked worker. One op is the
// 200 timers.
func BenchmarkTimerFireError(b *testing.B) {
	const n = 200
	sys, a, p := startAlarm(b)
	defer stopAlarm(b, sys, a)
	r := rand.New(rand.NewPCG(1, 1))
	var all []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for range n {
			d := time.Millisecond + time.Duration(r.IntN(4000))*time.Microsecond
			m := &alarmMsg{deadline: time.Now().Add(d)}
			if _, err := actor.SendAfter(p, d, m); err != nil {
				b.Fatal(err)
			}
			<-a.rang // the behaviour's append to a.late happens before this
		}
		all = append(all, a.late...)
		a.late = a.late[:0]
	}
	b.StopTimer()
	slices.Sort(all)
	q := func(f float64) float64 { return float64(all[int(f*float64(len(all)-1))].Microseconds()) }
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
	b.ReportMetric(float64(all[len(all)-1].Microseconds()), "max-µs")
}

// BenchmarkSendAfter measures setting a timer and stopping it, with no
// other timer pending and with 100,000 others pending (the heap's depth).
// One op is one SendAfter plus one Stop.
func BenchmarkSendAfter(b *testing.B) {
	for _, pending := range []int{0, 100_000} {
		b.Run("pending="+itoa(pending), func(b *testing.B) {
			sys, a, p := startAlarm(b)
			defer stopAlarm(b, sys, a)
			m := &alarmMsg{}
			others := make([]actor.Timer, pending)
			for k := range others {
				var err error
				if others[k], err = actor.SendAfter(p, time.Hour+time.Duration(k)*time.Microsecond, m); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t, err := actor.SendAfter(p, time.Hour/2, m)
				if err != nil {
					b.Fatal(err)
				}
				if !t.Stop() {
					b.Fatal("Stop returned false")
				}
			}
			b.StopTimer()
			for _, t := range others {
				t.Stop()
			}
		})
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var buf [20]byte
	i := len(buf)
	for ; n > 0; n /= 10 {
		i--
		buf[i] = byte('0' + n%10)
	}
	return string(buf[i:])
}
