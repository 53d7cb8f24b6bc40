package bench

import (
	"github.com/actord/actord/actortest"
	"sync"
	"testing"
	"time"

	"github.com/actord/actord/actor"
)

// BenchmarkStatisticsOverhead runs the executor benchmark on fresh systems
// with statistics counted (the default), with them off
// (actor.WithoutStatistics), and with them counted while a goroutine takes
// a statistics snapshot every 10ms, a hundred times more often than a
// 1-second Prometheus scrape (each scrape of the actord server takes one), to
// show whether scraping stalls the workers. The target is at most 3% slower
// with statistics on. Compare the three in one run:
//
//	go test -c -o /tmp/bench.test ./bench
//	for i in $(seq 10); do /tmp/bench.test -test.run XXX -test.bench StatisticsOverhead -test.benchtime 20x; done > stats.txt
//	go run golang.org/x/perf/cmd/benchstat@latest -col /stats stats.txt
//
// (ten separate invocations interleave the variants, so drift on a shared
// machine does not favour one of them). One op is one run of the program.
func BenchmarkStatisticsOverhead(b *testing.B) {
	sz := ExecutorDefault()
	for _, tc := range []struct {
		name   string
		opts   []actor.Option
		scrape time.Duration
	}{
		{name: "stats=on"},
		{name: "stats=off", opts: []actor.Option{actor.WithoutStatistics()}},
		{name: "stats=on+scrape10ms", scrape: 10 * time.Millisecond},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			snapshots := 0
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				sys := startSystem(b, tc.opts...)
				stop := make(chan struct{})
				var wg sync.WaitGroup
				if tc.scrape > 0 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						tick := time.NewTicker(tc.scrape)
						defer tick.Stop()
						for {
							select {
							case <-stop:
								return
							case <-tick.C:
								_ = actortest.MustStats(sys)
								snapshots++
							}
						}
					}()
				}
				b.StartTimer()
				err := Executor(sys, sz)
				b.StopTimer()
				close(stop)
				wg.Wait()
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			reportRate(b, b.N*sz.Messages())
			if tc.scrape > 0 {
				b.ReportMetric(float64(snapshots)/float64(b.N), "snapshots/op")
			}
		})
	}
}
