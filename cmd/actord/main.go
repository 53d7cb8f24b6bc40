// Command actord runs an actor workload on actord's executor and serves the
// executor's statistics as Prometheus metrics, with Go profiles and a health
// check, until it is signalled.
//
//	go run ./cmd/actord                       # the mixed demo load on 127.0.0.1:9464
//	curl -s 127.0.0.1:9464/metrics | grep ^actord_
//	go run ./cmd/actord -workload balance-one -steal none
//
// Endpoints: /metrics (Prometheus; package metrics lists the metrics),
// /debug/pprof/ (net/http/pprof), /healthz (200 while the workload runs,
// 503 while starting or stopping). SIGINT or SIGTERM stops the workload
// gracefully: the mixed workload terminates its actors with poison pills in
// an order that leaves no message undelivered and stops its system; a
// benchmark workload finishes its current run (waiting at most
// -shutdown-timeout). The final statistics, and Stop's error if any, are
// logged (log/slog); the exit status is 0 only if the stop was clean.
//
// A second SIGINT or SIGTERM ends the process at once, without waiting for
// the graceful stop to finish: it is logged, and the exit status is 128 plus
// the signal's number (130 for SIGINT, 143 for SIGTERM), as a shell reports a
// process killed by that signal.
//
// Run `actord -h` for the flags and workloads; every flag has an environment
// variable (ACTORD_LISTEN, ACTORD_WORKERS, ...). dashboards/README.md shows
// how to watch it in Grafana.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/actord/actord/bench"
	"github.com/actord/actord/executor"
	"github.com/actord/actord/metrics"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Getenv, os.Stderr, nil))
}

// run is the whole program, minus os.Exit: it returns the exit status,
// except after a second signal, when it ends the process itself (see
// handleSignals). ready, if not nil, is called with the address being served
// once the workload has started.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer, ready func(addr string)) int {
	cfg, err := parseConfig(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	log := cfg.newLogger(stderr)

	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	releaseSignals := handleSignals(log, stop, os.Exit)
	defer releaseSignals()
	if cfg.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.duration)
		defer cancel()
	}

	coll := metrics.NewCollector()
	wm := metrics.NewWorkload(cfg.workload)
	reg, err := metrics.NewRegistry(coll, wm)
	if err != nil {
		log.Error("metrics registry", "err", err)
		return 1
	}
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		log.Error("cannot listen", "err", err)
		return 1
	}
	var healthy atomic.Bool // true while the workload runs: set by its first system's start, cleared by run; read by /healthz
	srv := &http.Server{Handler: newMux(reg, &healthy), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	addr := ln.Addr().String()

	w := &workload{cfg: cfg, coll: coll, wm: wm, log: log, running: &healthy}
	log.Info("actord started", startAttrs(cfg, addr)...)
	started := time.Now()
	if ready != nil {
		ready(addr)
	}

	var wg sync.WaitGroup
	reportCtx, stopReport := context.WithCancel(ctx)
	if cfg.report > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			report(reportCtx, log, coll, wm, cfg.report)
		}()
	}

	runErr := w.run(ctx)
	healthy.Store(false)
	stopReport()
	wg.Wait()
	if ctx.Err() == nil && runErr == nil {
		runErr = errors.New("actord: workload ended by itself") // cannot happen: workloads run until ctx ends
	}
	logFinal(log, coll, wm, time.Since(started), runErr)

	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		log.Error("http shutdown", "err", err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("http server", "err", err)
		return 1
	}
	if runErr != nil {
		return 1
	}
	return 0
}

// errSignalled is the cause of the run context's end when a signal stopped
// the workload.
var errSignalled = errors.New("actord: signalled")

// handleSignals catches SIGINT and SIGTERM until the returned release
// function is called. The first signal calls stop, which begins the graceful
// stop, and is logged. A second one is logged and ends the process at once,
// by calling exit with 128 plus the signal's number, without waiting for the
// graceful stop or for anything else run would do. release stops catching
// the signals (restoring their default action, which ends the process,
// unless something else in the process catches them too) and returns once
// the handler has ended; it must be called once.
func handleSignals(log *slog.Logger, stop context.CancelCauseFunc, exit func(code int)) (release func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case s := <-sigs:
			log.Warn("signal received: stopping gracefully; a second signal ends the process at once", "signal", s.String())
			stop(fmt.Errorf("%w: %v", errSignalled, s))
		case <-done:
			return
		}
		select {
		case s := <-sigs:
			code := 1
			if n, ok := s.(syscall.Signal); ok {
				code = 128 + int(n)
			}
			log.Error("second signal: exiting at once, without finishing the graceful stop", "signal", s.String(), "exit_status", code)
			exit(code)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
		wg.Wait()
	}
}

// startAttrs are the start-up log line's attributes: the values in use, a
// workload's defaults where a flag was left at 0. A workload that has no
// rate (the benchmark programs but pipeline) logs none.
func startAttrs(cfg config, addr string) []any {
	queues := cfg.queuesPerWorker
	if queues == 0 {
		queues = executor.DefaultQueuesPerWorker
	}
	size, rate := workloadSize(cfg)
	attrs := []any{"listen", addr, "metrics", "http://" + addr + "/metrics",
		"workload", cfg.workload, "workers", workersOf(cfg), "queues_per_worker", queues,
		"steal", cfg.steal.String(), "size", size}
	if rate > 0 {
		attrs = append(attrs, "rate", rate)
	}
	return append(attrs, "duration", cfg.duration, "gomaxprocs", runtime.GOMAXPROCS(0))
}

// workloadSize returns the size and rate the workload runs with: -size and
// -rate, or the workload's defaults (usageHeader lists them) where they are
// 0. The rate is 0 for a workload that has none.
func workloadSize(cfg config) (size int, rate float64) {
	orDefault := func(def int) int {
		if cfg.size > 0 {
			return cfg.size
		}
		return def
	}
	switch cfg.workload {
	case "mixed":
		p := defaultMixed(cfg.size, cfg.rate)
		return p.sessions, p.rate
	case "pipeline":
		rate = cfg.rate
		if rate == 0 {
			rate = pipelineDefaultRate
		}
		return orDefault(pipelineDefaultStages), rate
	case "executor":
		return orDefault(bench.ExecutorDefault().Actors), 0
	case "repeat":
		return orDefault(bench.RepeatDefault().Servers), 0
	case "balance-one", "balance-multi":
		return orDefault(bench.BalanceDefault().Working), 0
	case "matrix":
		return orDefault(bench.MatrixDefault()), 0
	}
	return cfg.size, cfg.rate // a workload only tests define
}

func workersOf(cfg config) int {
	if cfg.workers > 0 {
		return cfg.workers
	}
	return runtime.GOMAXPROCS(0)
}

// newMux serves /metrics, /debug/pprof/, /healthz and an index page.
func newMux(reg *prometheus.Registry, healthy *atomic.Bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics.Handler(reg))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !healthy.Load() {
			http.Error(w, "not running", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>actord</title></head><body><h1>actord</h1><ul>
<li><a href="/metrics">/metrics</a> (Prometheus)</li>
<li><a href="/debug/pprof/">/debug/pprof/</a> (Go profiles)</li>
<li><a href="/healthz">/healthz</a></li></ul></body></html>
`)
	})
	return mux
}

// report logs a summary of the last interval every interval until ctx ends.
func report(ctx context.Context, log *slog.Logger, coll *metrics.Collector, wm *metrics.Workload, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	prev, prevT := coll.Totals(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			cur := coll.Totals()
			dt := now.Sub(prevT).Seconds()
			p, c := prev.Total(), cur.Total()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			log.Info("statistics",
				"messages_per_second", int64(float64(cur.MessagesSent-prev.MessagesSent)/dt),
				"gulps_per_second", int64(float64(c.GulpSize.Count-p.GulpSize.Count)/dt),
				"mean_gulp", round2(gulpMean(&c.GulpSize, &p.GulpSize)),
				"steals_per_second", int64(float64(c.Steals()-p.Steals())/dt),
				"live_actors", cur.LiveActors, "queued_messages", cur.QueuedMessages, "parked_workers", cur.ParkedWorkers,
				"runs", int64(counterValue(wm.Runs)), "requests", int64(counterValue(wm.Requests)),
				"goroutines", runtime.NumGoroutine(), "heap_bytes", ms.HeapAlloc)
			prev, prevT = cur, now
		}
	}
}

// gulpMean is the mean gulp size between two snapshots of a histogram.
func gulpMean(cur, prev *executor.Histogram) float64 {
	d := executor.Histogram{Count: cur.Count - prev.Count, Sum: cur.Sum - prev.Sum}
	return d.Mean()
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

// logFinal logs the process's final statistics, over every system it ran.
func logFinal(log *slog.Logger, coll *metrics.Collector, wm *metrics.Workload, up time.Duration, runErr error) {
	st := coll.Totals()
	t := st.Total()
	attrs := []any{
		"uptime", up.Round(time.Millisecond),
		"messages_sent", st.MessagesSent,
		"messages_per_second", int64(float64(st.MessagesSent) / up.Seconds()),
		"messages_processed", t.MessagesProcessed(),
		"local_sends", t.LocalSends,
		"gulps", t.GulpSize.Count, "mean_gulp", round2(t.GulpSize.Mean()),
		"missed_gulps", t.MissedGulps,
		"steal_attempts", t.StealAttempts, "steals", t.Steals(), "empty_steals", t.EmptySteals,
		"steal_no_candidate", t.StealNoCandidate, "steal_failed_swap", t.StealFailedSwap,
		"messages_stolen", t.StealSize.Sum, "stalled_steals", t.StalledSteals,
		"parks", t.Parks, "wakeups_by_sender", t.WakeupsBySender, "wakeups_by_timeout", t.WakeupsByTimeout,
		"parked", t.ParkedTime.Round(time.Millisecond), "thread_releases", t.ThreadReleases, "batch_waits", t.BatchWaits, "deferred_serves", t.DeferredServes, "caller_visits", t.CallerVisits,
		"actors_created", t.ActorsCreated, "actors_terminated", t.ActorsTerminated,
		"dead_letters", t.DeadLetters, "dropped", t.Dropped, "panics", t.Panics,
		"restarts", t.Restarts, "resumes", t.Resumes, "escalations", t.Escalations, "restart_budget_exhausted", t.BudgetExhausted,
		"watch_notifications", st.WatchNotices, "mailbox_rejected", st.MailboxRejected,
		"mailbox_dropped_newest", st.MailboxDroppedNewest, "mailbox_dropped_oldest", st.MailboxDroppedOldest,
		"runs", int64(counterValue(wm.Runs)), "requests", int64(counterValue(wm.Requests)),
	}
	if runErr != nil {
		log.Error("actord stopped with an error", append(attrs, "err", runErr)...)
		return
	}
	log.Info("actord stopped cleanly", attrs...)
}

// counterValue reads a client_golang counter (for logging).
func counterValue(c prometheus.Counter) float64 {
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	var m dto.Metric
	if err := (<-ch).Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}
