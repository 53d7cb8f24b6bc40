package actortest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/executor"
	"github.com/actord/actord/stealing"
)

// TB is the part of testing.TB that the kit uses; *testing.T, *testing.B
// and *testing.F satisfy it, and so does the TB that Run passes.
//
// As with testing.TB, Fatalf must be called from the goroutine running the
// test (or Run's function): the kit's functions that may fail the test
// fatally (Start, NewProbe, Probe.Expect, Probe.ExpectNone, Ask) must be
// called from there. A TB whose Fatalf returns (a fake one, in the kit's
// own tests) gets the zero value back from them.
type TB interface {
	Helper()
	Cleanup(func())
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// DefaultGrace is how long the cleanup of a system started by Start waits
// for its actors to terminate (Policy.Grace).
const DefaultGrace = 5 * time.Second

// AskTimeout bounds the wait of Ask.
const AskTimeout = 5 * time.Second

// Policy says what the end of a test treats as a failure when it stops the
// system that Start or StartWith started. The zero Policy, which Start uses,
// is strict: a clean stop, as System.Stop defines it, is required.
type Policy struct {
	// Grace is how long the cleanup waits for every actor to terminate
	// before it stops the system by force. 0 means DefaultGrace. The
	// cleanup returns as soon as the last actor terminates; it waits the
	// whole grace only when actors are left alive (and then up to a second
	// more, for the probes to take their pills: see NewProbe).
	Grace time.Duration
	// AllowAlive accepts actors still alive after the grace (Stop's
	// ErrActorsAlive). A test that leaves long-lived actors running on
	// purpose sets it, with a short Grace. Otherwise every actor the test
	// spawned must terminate (send it a poison pill, such as
	// actor.FinishedMsg, at the end of the test); probes terminate
	// themselves.
	AllowAlive bool
	// AllowUndelivered accepts messages that were never delivered (Stop's
	// ErrUndelivered): sent to actors that terminated before receiving
	// them, still queued at the stop, or dropped by a forced stop (so a
	// test that sets AllowAlive may need it too, if its live actors still
	// had messages queued).
	AllowUndelivered bool
	// AllowPanics accepts behaviours that panicked, for tests of what a
	// panic does: those Stop reports (ErrPanic: they terminated their
	// actors) and those supervision handled (Stats.Panics). Each panic is
	// logged (t.Logf) as it happens, whatever the policy.
	AllowPanics bool
}

// Start starts an actor system for a test and stops it when the test ends
// (t.Cleanup), failing the test unless the stop is clean: every actor
// terminated within DefaultGrace, no behaviour panicked, no message was
// left undelivered (see Policy; StartWith chooses another).
//
// The system is deterministic as far as a real executor can be: one worker
// (actor.WithWorkers(1)), one mailbox per worker
// (actor.WithQueuesPerWorker(1)) and no stealing
// (actor.WithStealing(stealing.None)). Behaviours run one at a time, on one
// goroutine, and the messages sent by one goroutine (the test's, or the
// worker's, from behaviours) are received in the order they were sent,
// whatever actors they go to. Only the interleaving of the messages from
// different goroutines (the test's and the worker's) depends on timing.
// opts apply after these settings, and may override them: with
// actor.WithWorkers(2), say, the system has two workers and two mailboxes.
//
// A panic in a behaviour or hook is logged when it happens (with t.Logf,
// including its stack) and fails the test at its end, whether it terminated
// its actor or supervision handled it (a restart, say). An option actor.WithErrorHandler
// in opts replaces the logging, not the failure. A test that stops the
// system itself checks Stop's result itself: the cleanup then checks only
// the panics, since Stop does not report those that supervision handled;
// it fails the test if any behaviour or hook panicked, whether or not Stop
// reported it, unless the policy allows panics.
func Start(t TB, opts ...actor.Option) *actor.System {
	t.Helper()
	return StartWith(t, Policy{}, opts...)
}

// StartWith is Start with the policy p for the end of the test.
func StartWith(t TB, p Policy, opts ...actor.Option) *actor.System {
	t.Helper()
	all := append([]actor.Option{
		actor.WithWorkers(1),
		actor.WithQueuesPerWorker(1),
		actor.WithStealing(stealing.None),
		actor.WithErrorHandler(func(err error) { t.Logf("actortest: %s", describe(err)) }),
	}, opts...)
	sys, err := actor.Start(all...)
	if err != nil {
		t.Fatalf("actortest: Start: %v", err)
		return nil
	}
	grace := p.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	k := &kit{}
	kits.Store(sys, k)
	t.Cleanup(func() {
		defer kits.Delete(sys)
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		k.endProbes(ctx, sys)
		err := sys.Stop(ctx)
		if err == actor.ErrStopped { // exactly: the test stopped the system itself
			// The test checked Stop's result, which holds only the
			// panics that terminated an actor: those that supervision
			// handled are checked here, with the others, since the
			// statistics do not tell them apart.
			if st, serr := sys.Stats(); serr == nil && !p.AllowPanics && st.Total().Panics > 0 {
				t.Errorf("actortest: stop: %d behaviours or hooks panicked (logged above; the test stopped the system, and Stop does not report the panics that supervision handled; see Policy.AllowPanics)", st.Total().Panics)
			}
			return
		}
		reported := false // a panic among Stop's errors
		for _, e := range parts(err) {
			switch {
			case errors.Is(e, actor.ErrPanic):
				reported = true
				if !p.AllowPanics {
					t.Errorf("actortest: stop: %s", describe(e))
				}
			case errors.Is(e, actor.ErrActorsAlive):
				if !p.AllowAlive {
					t.Errorf("actortest: stop: %v (after a grace of %v; terminate every actor the test spawned, or see Policy.AllowAlive)", e, grace)
				}
			case errors.Is(e, actor.ErrUndelivered):
				if !p.AllowUndelivered {
					t.Errorf("actortest: stop: %v (see Policy.AllowUndelivered)", e)
				}
			default:
				t.Errorf("actortest: stop: %v", e)
			}
		}
		// Panics that supervision handled (WithResume, WithRestart, a
		// supervisor's decision) reach the error handler, not Stop.
		if st, serr := sys.Stats(); serr == nil && !p.AllowPanics && !reported && st.Total().Panics > 0 {
			t.Errorf("actortest: stop: %d behaviours or hooks panicked, handled by supervision (logged above; see Policy.AllowPanics)", st.Total().Panics)
		}
	})
	return sys
}

// parts splits Stop's joined error into its parts.
func parts(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok { // Stop joins at the top level
		return j.Unwrap()
	}
	return []error{err}
}

// describe formats err, with the stack if it is a panic.
func describe(err error) string {
	var pe *actor.PanicError
	if errors.As(err, &pe) && len(pe.Stack) > 0 {
		return fmt.Sprintf("%v\n%s", err, pe.Stack)
	}
	return err.Error()
}

// Ask sends the request req through the port to, waits up to AskTimeout
// for the reply and returns it; it fails the test (t.Fatalf) if the ask
// fails or times out:
//
//	total := actortest.Ask(t, totalPort, &GetTotal{})
//
// It is actor.Ask for tests; use actor.Ask itself to test its errors.
func Ask[TR, R any, Req executor.RequestPtr[TR, R]](t TB, to actor.Port[Req], req Req) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), AskTimeout)
	defer cancel()
	r, err := actor.Ask(ctx, to, req)
	if err != nil {
		t.Fatalf("actortest: Ask %T: %v", req, err)
	}
	return r
}

// Run runs f as a test outside the go test harness, for examples and for
// programs that check actors at run time. f's TB prints what it logs and
// every failure to standard output; its Fatalf ends f (runtime.Goexit, as
// testing.T's FailNow does). Run runs f on a goroutine of its own, then the
// cleanups f registered, last registered first, and reports whether no
// failure was reported.
func Run(f func(t TB)) (passed bool) {
	r := &runner{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	for {
		r.mu.Lock()
		n := len(r.cleanups)
		if n == 0 {
			r.mu.Unlock()
			break
		}
		c := r.cleanups[n-1]
		r.cleanups = r.cleanups[:n-1]
		r.mu.Unlock()
		runCleanup(c)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.failed
}

// runCleanup runs c; a Fatalf in it ends c, not Run.
func runCleanup(c func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		c()
	}()
	<-done
}

// runner is the TB of Run.
type runner struct {
	mu       sync.Mutex
	failed   bool
	cleanups []func()
}

func (r *runner) Helper() {}

func (r *runner) Cleanup(f func()) {
	r.mu.Lock()
	r.cleanups = append(r.cleanups, f)
	r.mu.Unlock()
}

func (r *runner) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Printf(format+"\n", args...)
}

func (r *runner) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
	fmt.Printf("FAIL: "+format+"\n", args...)
}

func (r *runner) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// MustStats returns sys's statistics, for tests and benchmarks of a system
// known to be started; it panics if sys is not (ErrNotStarted).
func MustStats(sys *actor.System) executor.Stats {
	st, err := sys.Stats()
	if err != nil {
		panic(fmt.Errorf("actortest: MustStats: %w", err))
	}
	return st
}

// MustConfig returns sys's resolved configuration, for tests and benchmarks
// of a system known to be started; it panics if sys is not.
func MustConfig(sys *actor.System) executor.Config {
	cfg, err := sys.Config()
	if err != nil {
		panic(fmt.Errorf("actortest: MustConfig: %w", err))
	}
	return cfg
}
