package bench

import (
	"fmt"
	"github.com/actord/actord/actortest"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/executor"
)

// Benchmarks of the idle protocol (spin, then park with sender wake-ups).

// BenchmarkIdleSystem starts a system with no actors and reports the process
// CPU used over 5 seconds of idleness, as a percentage of one core (b.N is
// ignored beyond 1). The target is under 0.5%.
func BenchmarkIdleSystem(b *testing.B) {
	for i := 0; i < b.N; i++ {
		sys := startSystem(b)
		time.Sleep(20 * time.Millisecond) // let the workers park
		c0, t0 := CPUTime(), time.Now()
		time.Sleep(5 * time.Second)
		cpu := 100 * float64(CPUTime()-c0) / float64(time.Since(t0))
		st := actortest.MustStats(sys)
		tot := st.Total()
		if err := sys.Stop(b.Context()); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(cpu, "cpu-%")
		b.ReportMetric(float64(tot.WakeupsByTimeout)/5, "timeout-wakeups/s")
	}
}

// BenchmarkExecutorIdleProtocol runs the executor benchmark with the default
// idle protocol and with spinning (workers park only after the most spin
// passes a configuration allows), in one
// invocation: parking must not cost saturated throughput (target: within 3%).
func BenchmarkExecutorIdleProtocol(b *testing.B) {
	sz := ExecutorDefault()
	for _, tc := range []struct {
		name string
		opts []actor.Option
	}{
		{"idle=park", nil},
		{"idle=spin", []actor.Option{actor.WithIdle(executor.MaxSpinPasses, -1)}}, // the most passes allowed: workers all but never park
	} {
		b.Run(tc.name, func(b *testing.B) {
			runProgram(b, sz.Messages(), tc.opts, func(s *actor.System) error { return Executor(s, sz) })
		})
	}
}

// BenchmarkPipelineEvent compares the two sleep primitives (futex on the
// worker's state word, or a channel) on the constant-rate pipeline.
func BenchmarkPipelineEvent(b *testing.B) {
	for _, rate := range []float64{10, 1000, 10000, 100000} {
		for _, ev := range []executor.ParkKind{executor.ParkFutex, executor.ParkChannel, executor.ParkTwoPhase} {
			b.Run(fmt.Sprintf("rate=%g/event=%v", rate, ev), func(b *testing.B) {
				var r PipelineResult
				for i := 0; i < b.N; i++ {
					sys := startSystem(b, actor.WithConfig(executor.Config{Park: ev}))
					var err error
					if r, err = Pipeline(sys, 12, rate, max(30, int(rate*2))); err != nil {
						b.Fatal(err)
					}
				}
				reportPipeline(b, r)
			})
		}
	}
}

// BenchmarkPipelineSpin sweeps the spin count (passes before parking) on the
// pipeline at each rate: latency against CPU.
func BenchmarkPipelineSpin(b *testing.B) {
	for _, rate := range []float64{10, 1000, 10000, 100000} {
		for _, spin := range []int{8, 64, 512, 4096} {
			b.Run(fmt.Sprintf("rate=%g/spin=%d", rate, spin), func(b *testing.B) {
				var r PipelineResult
				for i := 0; i < b.N; i++ {
					sys := startSystem(b, actor.WithIdle(spin, 0))
					var err error
					if r, err = Pipeline(sys, 12, rate, max(30, int(rate*2))); err != nil {
						b.Fatal(err)
					}
				}
				reportPipeline(b, r)
			})
		}
	}
}
