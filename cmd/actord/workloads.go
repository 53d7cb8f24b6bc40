package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/bench"
	"github.com/actord/actord/metrics"
)

// errShutdownTimeout: the workload did not stop within -shutdown-timeout.
var errShutdownTimeout = errors.New("actord: workload did not stop in time")

// program is one run of a benchmark program on a fresh system, which it
// stops (the bench package's functions). A program that can end its run
// early does so when ctx ends (pipeline); the others ignore it.
type program func(ctx context.Context, sys *actor.System) error

// workload runs the configured workload until ctx ends, then stops it
// gracefully and returns the error of the last system's Stop (joined with
// any other failure). Every system it starts is attached to coll.
type workload struct {
	cfg  config
	coll *metrics.Collector
	wm   *metrics.Workload
	log  *slog.Logger
	// running, if not nil, is set once the first system has started
	// (/healthz answers 200 from then on).
	running *atomic.Bool
}

// start starts a system with the configured options, logs its panics
// (the mixed workload's injected failures at debug level only) and
// attaches it to the collector (retiring the previous one).
func (w *workload) start() (*actor.System, error) {
	opts := append(w.cfg.options(), actor.WithErrorHandler(func(err error) {
		if errors.Is(err, errInjectedCrash) {
			// The mixed workload's own failures: its shards restart.
			w.log.Debug("injected failure", "err", err)
			return
		}
		w.log.Error("behaviour panicked", "err", err)
	}))
	sys, err := actor.Start(opts...)
	if err != nil {
		return nil, err
	}
	w.coll.Attach(sys)
	if w.running != nil {
		w.running.Store(true)
	}
	return sys, nil
}

func (w *workload) run(ctx context.Context) error {
	if w.cfg.workload == "mixed" {
		sys, err := w.start()
		if err != nil {
			return err
		}
		return runMixed(ctx, sys, defaultMixed(w.cfg.size, w.cfg.rate), w.wm, w.log, w.cfg.shutdownTimeout)
	}
	prog, err := w.program()
	if err != nil {
		return err
	}
	return w.repeat(ctx, prog)
}

// The pipeline workload's defaults: stage actors (-size) and messages per
// second (-rate).
const (
	pipelineDefaultStages = 12
	pipelineDefaultRate   = 10000
)

// testPrograms holds workloads that only tests define (by name, in the test
// binary run as the command; the name must also be added to workloadNames).
// It is empty in actord.
var testPrograms = map[string]program{}

// program returns the benchmark program of the configured workload at its
// configured size.
func (w *workload) program() (program, error) {
	if p, ok := testPrograms[w.cfg.workload]; ok {
		return p, nil
	}
	size := w.cfg.size
	orDefault := func(def int) int {
		if size > 0 {
			return size
		}
		return def
	}
	switch w.cfg.workload {
	case "executor":
		def := bench.ExecutorDefault()
		sz := bench.ExecutorSize{Actors: orDefault(def.Actors), Set: def.Set, Rounds: def.Rounds}
		sz.Set = min(sz.Set, sz.Actors)
		return func(_ context.Context, sys *actor.System) error { return bench.Executor(sys, sz) }, nil
	case "repeat":
		def := bench.RepeatDefault()
		sz := bench.RepeatSize{Servers: orDefault(def.Servers), Rounds: def.Rounds}
		return func(_ context.Context, sys *actor.System) error { return bench.Repeat(sys, sz) }, nil
	case "balance-one", "balance-multi":
		def := bench.BalanceDefault()
		sz := bench.BalanceSize{Working: orDefault(def.Working), Set: def.Set, Rounds: def.Rounds}
		sz.Set = min(sz.Set, sz.Working)
		if w.cfg.workload == "balance-one" {
			return func(_ context.Context, sys *actor.System) error { return bench.BalanceOne(sys, sz) }, nil
		}
		return func(_ context.Context, sys *actor.System) error { return bench.BalanceMulti(sys, sz) }, nil
	case "matrix":
		m := bench.NewMatrices(orDefault(bench.MatrixDefault()))
		return func(_ context.Context, sys *actor.System) error { return bench.Matrix(sys, m) }, nil
	case "pipeline":
		stages, rate := orDefault(pipelineDefaultStages), w.cfg.rate
		if rate == 0 {
			rate = pipelineDefaultRate
		}
		n := max(1, int(2*rate)) // runs of about 2 seconds
		return func(ctx context.Context, sys *actor.System) error {
			r, err := bench.PipelineUntil(ctx, sys, stages, rate, n)
			if err != nil {
				return err
			}
			w.wm.Requests.Add(float64(r.Sent))
			for _, l := range r.Latencies {
				w.wm.Latency.Observe(l.Seconds())
			}
			return nil
		}, nil
	}
	return nil, fmt.Errorf("%w: unknown workload %q", errUsage, w.cfg.workload)
}

// repeat runs prog on fresh systems until ctx ends. Once ctx ends, repeat
// waits for the current run to finish, for at most the shutdown timeout: a
// pipeline run ends at once (it stops sending), the other programs' runs
// cannot be interrupted.
func (w *workload) repeat(ctx context.Context, prog program) error {
	done := make(chan error, 1)
	go func() {
		for run := 1; ctx.Err() == nil; run++ {
			sys, err := w.start()
			if err != nil {
				done <- err
				return
			}
			t0 := time.Now()
			if err := prog(ctx, sys); err != nil {
				done <- fmt.Errorf("%s run %d: %w", w.cfg.workload, run, err)
				return
			}
			w.wm.Runs.Inc()
			w.log.Debug("run finished", "workload", w.cfg.workload, "took", time.Since(t0).Round(time.Millisecond))
		}
		done <- nil
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	w.log.Info("waiting for the current run to finish", "workload", w.cfg.workload, "timeout", w.cfg.shutdownTimeout)
	select {
	case err := <-done:
		return err
	case <-time.After(w.cfg.shutdownTimeout):
		return fmt.Errorf("%w: a %s run was still going after %v", errShutdownTimeout, w.cfg.workload, w.cfg.shutdownTimeout)
	}
}
