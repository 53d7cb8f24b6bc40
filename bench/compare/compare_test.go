package compare

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/actord/actord/bench"
)

// testSizes shrinks the quick sizes further, for -race.
func testSizes(workers int) Sizes {
	s := SizesFor(Quick, workers)
	s.Static = 10_000
	s.Dynamic = 1_000
	s.Executor = bench.ExecutorSize{Actors: 200, Set: 10, Rounds: 2}
	s.Repeat = bench.RepeatSize{Servers: 200, Rounds: 2}
	s.Matrix = 32
	s.CycleBusy.Hops = 20
	s.CycleIdle.Hops = 500
	s.Churn.Iterations = 10
	s.LocalityNoshare.Iterations = 10
	s.LocalShare.Iterations = 10
	s.PipelineRare.N = 3
	s.PipelineLow.N = 10
	s.PipelineHigh.N = 500
	s.LeaderTransfers = 5
	s.Counting = 5_000
	s.ForkJoin = bench.ForkJoinSize{Actors: 6, Messages: 200}
	s.PingPong = 500
	s.TokenRing = 1_000
	s.Asks = 640
	return s
}

// TestPrograms runs every program on every system it supports, and checks
// that the matrix is the same on all (each run also checks its own counts).
func TestPrograms(t *testing.T) {
	const workers = 2
	sz := testSizes(workers)
	for _, p := range Programs {
		checksums := map[string]float64{}
		for _, sys := range p.Systems {
			r, err := p.Run(sys, workers, sz)
			require.NoError(t, err, "%s on %s", p.Name, sys)
			require.Positive(t, r.Wall, "%s on %s", p.Name, sys)
			require.Positive(t, r.Actors, "%s on %s", p.Name, sys)
			require.Positive(t, r.Messages, "%s on %s", p.Name, sys)
			require.Positive(t, r.Queues, "%s on %s", p.Name, sys)
			require.NotEmpty(t, r.Heuristic, "%s on %s", p.Name, sys)
			if p.Metric.Key != "" {
				require.Contains(t, r.Metrics, p.Metric.Key, "%s on %s", p.Name, sys)
			}
			require.Positive(t, p.Metric.Value(r), "%s on %s", p.Name, sys)
			if p.Name == "matrix" {
				checksums[sys] = r.Metrics["checksum"]
			}
			if strings.HasPrefix(sys, Actord) {
				require.NotEqual(t, "go", r.Heuristic)
			}
		}
		for sys, c := range checksums {
			require.Equal(t, checksums[Chan], c, "matrix checksum of %s", sys)
		}
	}
	_, err := Lookup("balance-one").Run(Chan, 1, sz)
	require.ErrorContains(t, err, "does not run on system")
	_, err = Lookup("transfer-leader").Run(Actord, 1, sz)
	require.ErrorContains(t, err, "needs at least 2 workers")
	require.Nil(t, Lookup("nope"))
}

// BenchmarkCompare runs every program on every system at the default sizes
// (the chapter's with ACTORD_BENCH_FULL=1) on GOMAXPROCS workers (set it
// with -cpu), side by side in one process. One op is one program run; each
// reports the program's metric, msg/s and, for the executor, the peak of
// the memory the Go runtime held from the OS during the run (peak-MB, after
// returning what it could before the run; the runner measures the peak RSS
// of a process per run instead).
func BenchmarkCompare(b *testing.B) {
	workers := runtime.GOMAXPROCS(0)
	sz := SizesFor(Default, workers)
	for _, p := range Programs {
		if workers < p.MinWorkers {
			continue
		}
		for _, sys := range p.Systems {
			b.Run("program="+p.Name+"/system="+sys, func(b *testing.B) {
				b.ReportAllocs()
				var metric, msgs, secs, peak float64
				for i := 0; i < b.N; i++ {
					var mem *bench.MemorySampler
					if p.Name == "executor" {
						b.StopTimer()
						debug.FreeOSMemory()
						mem = bench.StartMemorySampler()
						b.StartTimer()
					}
					r, err := p.Run(sys, workers, sz)
					if err != nil {
						b.Fatal(err)
					}
					if mem != nil {
						peak = max(peak, float64(mem.Stop())/(1<<20))
					}
					metric += p.Metric.Value(r)
					msgs += float64(r.Messages)
					secs += r.Wall.Seconds()
				}
				b.ReportMetric(metric/float64(b.N), p.Metric.Name)
				if p.Metric.Name != "msg/s" {
					b.ReportMetric(msgs/secs, "msg/s")
				}
				if peak > 0 {
					b.ReportMetric(peak, "peak-MB")
				}
			})
		}
	}
}

func TestBalanceCountsActors(t *testing.T) {
	sz := testSizes(1)
	r, err := Lookup("balance-one").Run(Actord, 1, sz)
	require.NoError(t, err)
	require.Equal(t, sz.Balance.Working, r.Actors, "one worker: every actor is a working one")
}

// TestAsk checks the ask programs' figures on one and two workers.
func TestAsk(t *testing.T) {
	for _, workers := range []int{1, 2} {
		sz := testSizes(workers)
		for _, name := range []string{"ask", "ask64"} {
			for _, sys := range Lookup(name).Systems {
				r, err := Lookup(name).Run(sys, workers, sz)
				require.NoError(t, err, "%s on %s", name, sys)
				require.Equal(t, sz.Asks, r.Messages, "%s on %s", name, sys)
				for _, k := range []string{"ns/ask", "p50-us", "p99-us", "p999-us", "max-us", "p99/p50"} {
					require.Positive(t, r.Metrics[k], "%s on %s: %s", name, sys, k)
				}
				require.LessOrEqual(t, r.Metrics["p50-us"], r.Metrics["p99-us"], "%s on %s", name, sys)
				require.GreaterOrEqual(t, r.Metrics["p99/p50"], 1.0, "%s on %s", name, sys)
			}
		}
	}
}
