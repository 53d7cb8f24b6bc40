package bench

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkPipeline sends messages at a constant rate through 12 actors (and
// through 12 goroutines with channels, in the same invocation) and reports
// end-to-end latency percentiles, the achieved rate and the process CPU use
// as a percentage of one core. Each rate runs for about 2 seconds (the 10
// msg/s case sends 20 messages); b.N is ignored beyond 1.
func BenchmarkPipeline(b *testing.B) {
	const stages = 12
	for _, rate := range []float64{10, 1000, 10000, 100000} {
		n := int(rate * 2)
		b.Run(fmt.Sprintf("rate=%g/system=actord", rate), func(b *testing.B) {
			var r PipelineResult
			for i := 0; i < b.N; i++ {
				sys := startSystem(b)
				var err error
				if r, err = Pipeline(sys, stages, rate, n); err != nil {
					b.Fatal(err)
				}
			}
			reportPipeline(b, r)
		})
		b.Run(fmt.Sprintf("rate=%g/system=chan", rate), func(b *testing.B) {
			var r PipelineResult
			for i := 0; i < b.N; i++ {
				r = PipelineChan(stages, rate, n)
			}
			reportPipeline(b, r)
		})
	}
}

func reportPipeline(b *testing.B, r PipelineResult) {
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	b.ReportMetric(us(Quantile(r.Latencies, 0.5)), "p50-us")
	b.ReportMetric(us(Quantile(r.Latencies, 0.99)), "p99-us")
	b.ReportMetric(us(Quantile(r.Latencies, 1)), "max-us")
	b.ReportMetric(r.Achieved(), "msg/s")
	b.ReportMetric(r.CPUPercent(), "cpu-%")
}

// BenchmarkPipelineIdle sends single messages through the 12-stage chain
// (and the goroutine chain) with the process idle between them: the
// generator sleeps 20 ms, sends one message, and sleeps 2 ms while it
// travels, 60 times, so that every message finds every worker (and every
// spare thread of the runtime) asleep, as the 10 msg/s pipeline does, but
// at about 45 messages per second of run. It reports the quartile,
// median and 90th percentile of the end-to-end latency, which show whether
// the latencies are bimodal (see BENCHMARKS.md, "Known losses and their
// measured causes"). b.N is ignored beyond 1.
func BenchmarkPipelineIdle(b *testing.B) {
	const stages, n = 12, 60
	pace := func(send func(i int)) int {
		for i := 0; i < n; i++ {
			time.Sleep(20 * time.Millisecond)
			send(i)
			time.Sleep(2 * time.Millisecond)
		}
		return 0
	}
	report := func(b *testing.B, r PipelineResult) {
		us := func(d time.Duration) float64 { return float64(d) / 1e3 }
		b.ReportMetric(us(Quantile(r.Latencies, 0.25)), "p25-us")
		b.ReportMetric(us(Quantile(r.Latencies, 0.5)), "p50-us")
		b.ReportMetric(us(Quantile(r.Latencies, 0.9)), "p90-us")
	}
	b.Run("system=actord", func(b *testing.B) {
		var r PipelineResult
		for i := 0; i < b.N; i++ {
			sys := startSystem(b)
			var err error
			if r, err = pipelineWith(sys, stages, 1/0.022, n, pace); err != nil {
				b.Fatal(err)
			}
		}
		report(b, r)
	})
	b.Run("system=chan", func(b *testing.B) {
		var r PipelineResult
		for i := 0; i < b.N; i++ {
			r = pipelineChanWith(stages, 1/0.022, n, pace)
		}
		report(b, r)
	})
}
