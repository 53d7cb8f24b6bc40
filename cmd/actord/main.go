// Command actord runs actor workloads on actord's executor and reports their
// throughput and the executor's statistics.
//
// With no flags it runs the executor benchmark (4,000 actors in groups of
// 100 messaging each other) repeatedly for 5 seconds on one worker per
// GOMAXPROCS, then prints messages per second and the statistics.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/bench"
	"github.com/actord/actord/executor"
)

func main() {
	workers := flag.Int("workers", 0, "worker threads (0: GOMAXPROCS)")
	duration := flag.Duration("duration", 5*time.Second, "how long to run")
	flag.Parse()

	sz := bench.ExecutorDefault()
	var total executor.WorkerStats
	var sent uint64
	msgs, runs := 0, 0
	start := time.Now()
	for time.Since(start) < *duration {
		sys, err := actor.Start(actor.WithWorkers(*workers))
		if err != nil {
			fmt.Fprintln(os.Stderr, "actord:", err)
			os.Exit(1)
		}
		if err := bench.Executor(sys, sz); err != nil {
			fmt.Fprintln(os.Stderr, "actord:", err)
			os.Exit(1)
		}
		st := sys.Stats()
		t := st.Total()
		addStats(&total, &t)
		sent += st.MessagesSent
		msgs += sz.Messages()
		runs++
	}
	el := time.Since(start)
	fmt.Printf("executor workload: %d runs, %d messages in %v: %.1f million messages/s\n",
		runs, msgs, el.Round(time.Millisecond), float64(msgs)/el.Seconds()/1e6)
	fmt.Printf("messages sent %d, processed %d, local sends %d\n", sent, total.MessagesProcessed(), total.LocalSends)
	fmt.Printf("gulps %d (mean size %.1f), missed gulps %d\n", total.GulpSize.Count, total.GulpSize.Mean(), total.MissedGulps)
	fmt.Printf("steal attempts %d, steals %d, messages stolen %d\n", total.StealAttempts, total.Steals(), total.StealSize.Sum)
	fmt.Printf("parks %d, wake-ups by sender %d / by timeout %d, time parked %v\n",
		total.Parks, total.WakeupsBySender, total.WakeupsByTimeout, total.ParkedTime.Round(time.Millisecond))
}

func addStats(t, s *executor.WorkerStats) {
	st := executor.Stats{Workers: []executor.WorkerStats{*t, *s}}
	*t = st.Total()
}
