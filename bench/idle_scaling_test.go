//go:build unix

package bench

import (
	"fmt"
	"github.com/actord/actord/actortest"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"golang.org/x/sys/unix"
)

// Benchmarks of what idleness costs as the system grows: process CPU of an
// idle system against the number of workers and the number of queues, and
// the CPU of the constant-rate pipeline (see Pipeline) against the number of
// workers. CPU is the process's user+system time over the wall time, as a
// percentage of one core (CPUTime), as in BenchmarkIdleSystem. One op is one
// measurement window on a fresh system; b.N is ignored beyond what
// -benchtime asks (run them with -benchtime 1x). The targets (stated, not
// asserted): an idle system costs under 0.5% of a core whatever its number
// of workers or queues, and 16 or 64 workers run the pipeline at 1,000
// msg/s with at most 1.5 times the CPU of 2 workers.

// idleWindow is how long an idle system is measured: 2 s, 500 ms with -short.
func idleWindow() time.Duration {
	if testing.Short() {
		return 500 * time.Millisecond
	}
	return 2 * time.Second
}

// Settling before an idle measurement: wait (up to idleSettleMax) until
// every worker is parked, then idleBackoff more, so that the park timeouts
// have doubled up to their maximum (10+20+40+80 ms with the defaults) and
// the window sees the steady idle state.
const (
	idleSettleMax = 3 * time.Second
	idleBackoff   = 250 * time.Millisecond
)

// ctxSwitches returns the process's voluntary plus involuntary context
// switches so far (each wake-up of a sleeping thread is at least one).
func ctxSwitches() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Nvcsw + ru.Nivcsw
}

// idleSink is the actor that receives the warm-up burst.
type idleSink struct {
	actor.Actor
	left int
	done chan struct{}
}

type idleMsg struct{ actor.Message }

func (s *idleSink) recv(*idleMsg) actor.Allocation {
	if s.left--; s.left == 0 {
		close(s.done)
		return actor.Finished // terminated, so that Stop does not wait for it
	}
	return actor.Nodelete
}

// idleBurst spawns one actor on sys, sends it n messages at once and
// returns when it has received them all (it terminates on the last): the
// workers go through work, spinning and parking once before the idle
// measurement.
func idleBurst(b *testing.B, sys *actor.System, n int) {
	b.Helper()
	s, err := actor.Spawn(sys, &idleSink{left: n, done: make(chan struct{})})
	if err != nil {
		b.Fatal(err)
	}
	msgs := make([]idleMsg, n)
	for i := range msgs {
		if err := actor.Send(s, &msgs[i], (*idleSink).recv); err != nil {
			b.Fatal(err)
		}
	}
	<-s.done
}

// idleTotals accumulates idle measurements over b.N windows.
type idleTotals struct {
	wall                    time.Duration
	cpu                     time.Duration
	ctxsw, parks, timeouts  int64
	parkedAtEnd, workersSum int
}

// measureIdle settles sys (see idleSettleMax) and measures one idle window
// with the benchmark timer running only over the window, then stops sys.
func (t *idleTotals) measureIdle(b *testing.B, sys *actor.System, window time.Duration) {
	b.Helper()
	workers := len(actortest.MustStats(sys).Workers)
	deadline := time.Now().Add(idleSettleMax)
	for actortest.MustStats(sys).ParkedWorkers < workers && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(idleBackoff)
	s0 := actortest.MustStats(sys).Total()
	b.StartTimer()
	c0, x0, t0 := CPUTime(), ctxSwitches(), time.Now()
	time.Sleep(window)
	c1, x1, wall := CPUTime(), ctxSwitches(), time.Since(t0)
	b.StopTimer()
	st := actortest.MustStats(sys)
	s1 := st.Total()
	if err := sys.Stop(b.Context()); err != nil {
		b.Fatal(err)
	}
	t.wall += wall
	t.cpu += c1 - c0
	t.ctxsw += x1 - x0
	t.parks += int64(s1.Parks - s0.Parks)
	t.timeouts += int64(s1.WakeupsByTimeout - s0.WakeupsByTimeout)
	t.parkedAtEnd += st.ParkedWorkers
	t.workersSum += workers
}

func (t *idleTotals) report(b *testing.B) {
	sec := t.wall.Seconds()
	b.ReportMetric(100*t.cpu.Seconds()/sec, "cpu-%")
	b.ReportMetric(float64(t.ctxsw)/sec, "ctxsw/s")
	b.ReportMetric(float64(t.parks)/sec, "parks/s")
	b.ReportMetric(float64(t.timeouts)/sec, "timeout-wakeups/s")
	b.ReportMetric(100*float64(t.parkedAtEnd)/float64(t.workersSum), "parked-%")
}

// BenchmarkIdleWorkers: a started system with no actors, idle for
// idleWindow, with more workers than cores. Target: under 0.5% of a core
// for each. workers=0 starts no system: it is the baseline, what the test
// process itself (Go runtime, benchmark goroutine) costs over the window.
func BenchmarkIdleWorkers(b *testing.B) {
	b.Run("workers=0", func(b *testing.B) {
		b.ReportAllocs()
		var cpu time.Duration
		var ctxsw int64
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			c0, x0 := CPUTime(), ctxSwitches()
			time.Sleep(idleWindow())
			cpu += CPUTime() - c0
			ctxsw += ctxSwitches() - x0
		}
		b.ReportMetric(100*cpu.Seconds()/b.Elapsed().Seconds(), "cpu-%")
		b.ReportMetric(float64(ctxsw)/b.Elapsed().Seconds(), "ctxsw/s")
	})
	for _, workers := range []int{2, 16, 64} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			b.ReportAllocs()
			var t idleTotals
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				sys := startSystem(b, actor.WithWorkers(workers))
				t.measureIdle(b, sys, idleWindow())
			}
			t.report(b)
		})
	}
}

// BenchmarkIdleQueues: 2 workers with 32 to 1,000,000 queues in all, idle
// for idleWindow after one actor has received a burst of 10,000 messages.
// Target: the idle cost does not grow with the number of queues.
func BenchmarkIdleQueues(b *testing.B) {
	const burst = 10000
	for _, queues := range []int{32, 10000, 1000000} {
		b.Run(fmt.Sprintf("queues=%d", queues), func(b *testing.B) {
			b.ReportAllocs()
			var t idleTotals
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				sys := startSystem(b, actor.WithWorkers(2), actor.WithQueues(queues))
				idleBurst(b, sys, burst)
				t.measureIdle(b, sys, idleWindow())
			}
			t.report(b)
		})
	}
}

// BenchmarkPipelineWorkers runs the 12-stage pipeline at 1,000 msg/s for 2
// seconds (500 ms with -short) with 2, 16 and 64 workers, and reports
// latency, CPU (reportPipeline) and context switches per second. Target: 16
// and 64 workers use at most 1.5 times the CPU of 2 workers.
func BenchmarkPipelineWorkers(b *testing.B) {
	const stages, rate = 12, 1000.0
	n := int(rate * 2)
	if testing.Short() {
		n = int(rate / 2)
	}
	for _, workers := range []int{2, 16, 64} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			b.ReportAllocs()
			var r PipelineResult
			var ctxsw int64
			var wall time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				sys := startSystem(b, actor.WithWorkers(workers))
				b.StartTimer()
				x0 := ctxSwitches()
				var err error
				if r, err = Pipeline(sys, stages, rate, n); err != nil {
					b.Fatal(err)
				}
				ctxsw += ctxSwitches() - x0
				wall += r.Wall
			}
			reportPipeline(b, r)
			b.ReportMetric(float64(ctxsw)/wall.Seconds(), "ctxsw/s")
		})
	}
}
