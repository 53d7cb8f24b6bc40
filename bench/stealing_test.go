package bench

import (
	"github.com/actord/actord/actortest"
	"slices"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/stealing"
)

// Benchmarks of queue stealing: each program runs with every heuristic and
// without stealing, as sub-benchmarks of one invocation, so the figures are
// ratios measured side by side. One op is one whole program run.

var heuristics = []stealing.Heuristic{stealing.None, stealing.Random, stealing.LongestVictim}

// runProgram times one program per b.N iteration on a fresh system each.
func runProgram(b *testing.B, msgs int, opts []actor.Option, prog func(*actor.System) error) {
	b.ReportAllocs()
	var missed, gulps, steals uint64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		sys := startSystem(b, opts...)
		b.StartTimer()
		if err := prog(sys); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		st := actortest.MustStats(sys)
		t := st.Total()
		missed += t.MissedGulps
		gulps += t.GulpSize.Count
		steals += t.Steals()
		b.StartTimer()
	}
	b.ReportMetric(float64(msgs)*float64(b.N)/b.Elapsed().Seconds(), "msg/s")
	if gulps > 0 {
		b.ReportMetric(100*float64(missed)/float64(gulps), "missed-gulps-%")
	}
	b.ReportMetric(float64(steals)/float64(b.N), "steals/op")
}

func forEachHeuristic(b *testing.B, f func(b *testing.B, opts []actor.Option)) {
	for _, h := range heuristics {
		b.Run("steal="+h.String(), func(b *testing.B) { f(b, []actor.Option{actor.WithStealing(h)}) })
	}
}

func BenchmarkBalanceOne(b *testing.B) {
	sz := BalanceDefault()
	forEachHeuristic(b, func(b *testing.B, opts []actor.Option) {
		runProgram(b, sz.Messages(), opts, func(s *actor.System) error { return BalanceOne(s, sz) })
	})
}

func BenchmarkBalanceMulti(b *testing.B) {
	sz := BalanceDefault()
	forEachHeuristic(b, func(b *testing.B, opts []actor.Option) {
		runProgram(b, sz.Messages(), opts, func(s *actor.System) error { return BalanceMulti(s, sz) })
	})
}

func BenchmarkExecutorStealing(b *testing.B) {
	sz := ExecutorDefault()
	forEachHeuristic(b, func(b *testing.B, opts []actor.Option) {
		runProgram(b, sz.Messages(), opts, func(s *actor.System) error { return Executor(s, sz) })
	})
}

func BenchmarkRepeat(b *testing.B) {
	sz := RepeatDefault()
	forEachHeuristic(b, func(b *testing.B, opts []actor.Option) {
		runProgram(b, sz.Messages(), opts, func(s *actor.System) error { return Repeat(s, sz) })
	})
	b.Run("system=chan", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			RepeatChan(sz)
		}
		reportRate(b, b.N*sz.Messages())
	})
}

func BenchmarkMatrix(b *testing.B) {
	n := MatrixDefault()
	m := NewMatrices(n)
	forEachHeuristic(b, func(b *testing.B, opts []actor.Option) {
		runProgram(b, n, opts, func(s *actor.System) error { return Matrix(s, m) })
	})
	b.Run("system=chan", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			MatrixChan(m)
		}
	})
}

// BenchmarkTransfer spins one behaviour for 100ms and reports the delays of
// probes to actors whose queues are on the spinner's worker ("behind") and
// elsewhere ("other"), with each heuristic and without stealing.
func BenchmarkTransfer(b *testing.B) {
	forEachHeuristic(b, func(b *testing.B, opts []actor.Option) {
		var behind, other []time.Duration
		for i := 0; i < b.N; i++ {
			sys := startSystem(b, opts...)
			r, err := TransferDelay(sys, 100*time.Millisecond, 100*time.Microsecond)
			if err != nil {
				b.Fatal(err)
			}
			behind = append(behind, r.Behind...)
			other = append(other, r.Other...)
		}
		slices.Sort(behind)
		slices.Sort(other)
		ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
		b.ReportMetric(ms(Quantile(behind, 0.5)), "behind-p50-ms")
		b.ReportMetric(ms(Quantile(behind, 0.99)), "behind-p99-ms")
		b.ReportMetric(ms(Quantile(behind, 1)), "behind-max-ms")
		b.ReportMetric(ms(Quantile(other, 0.5)), "other-p50-ms")
		b.ReportMetric(ms(Quantile(other, 0.99)), "other-p99-ms")
	})
}
