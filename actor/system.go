package actor

import (
	"context"
	"time"

	"github.com/actord/actord/executor"
	"github.com/actord/actord/stealing"
)

// System is a started actor system: an executor with its workers. Create one
// with Start and end it with Stop. A program may run several systems, one
// after the other or at the same time.
type System struct {
	e *executor.Executor
}

// Option configures Start. Options apply in order; each sets only what it
// names, so options compose (a later option overrides an earlier one only
// for the same setting). A nil Option is ignored.
type Option interface{ apply(*executor.Config) }

type option func(*executor.Config)

func (o option) apply(c *executor.Config) { o(c) }

// WithWorkers sets the number of worker threads (default GOMAXPROCS).
func WithWorkers(n int) Option { return option(func(c *executor.Config) { c.Workers = n }) }

// WithQueuesPerWorker sets the sharding factor: queues per worker (default 16).
func WithQueuesPerWorker(n int) Option {
	return option(func(c *executor.Config) { c.QueuesPerWorker = n })
}

// WithQueues sets the total number of queues, overriding WithQueuesPerWorker.
// Start fails if it is smaller than the number of workers.
func WithQueues(n int) Option { return option(func(c *executor.Config) { c.Queues = n }) }

// WithQueueCapacity sets the initial capacity, in messages, of each copy
// queue (default 10). Queues grow on demand and shrink back after bursts,
// never below this capacity.
func WithQueueCapacity(n int) Option { return option(func(c *executor.Config) { c.QueueCapacity = n }) }

// WithCPUPinning pins each worker thread to its own CPU (Linux only).
func WithCPUPinning() Option { return option(func(c *executor.Config) { c.PinCPUs = true }) }

// WithStealing selects the victim heuristic for queue stealing:
// stealing.LongestVictim (the default), stealing.Random, or stealing.None
// to disable stealing.
func WithStealing(h stealing.Heuristic) Option {
	return option(func(c *executor.Config) { c.Steal = h })
}

// WithErrorHandler sets a function called, on the worker goroutine (or the
// goroutine of an Ask that ran the behaviour, see Ask), with each panic
// recovered from a behaviour (a *executor.PanicError). Stop reports them
// too.
func WithErrorHandler(f func(error)) Option {
	return option(func(c *executor.Config) { c.OnError = f })
}

// WithIdle tunes the idle protocol: a worker parks after spinPasses
// consecutive passes over its queues without work, and parkTimeout is the
// first interval at which, while some worker is awake, the system looks for
// a worker stuck in a long behaviour and wakes a parked one to steal its
// waiting queues (it doubles while nothing is stuck; see
// executor.Config.ParkTimeout; negative: parked workers are only woken by
// work). Zero values keep the defaults; a negative spinPasses makes Start
// fail with ErrConfig.
func WithIdle(spinPasses int, parkTimeout time.Duration) Option {
	return option(func(c *executor.Config) {
		if spinPasses != 0 {
			c.SpinPasses = spinPasses
		}
		if parkTimeout != 0 {
			c.ParkTimeout = parkTimeout
		}
	})
}

// WithoutStatistics stops counting per-message statistics (messages sent and
// processed, gulps), for the last few percent of throughput.
func WithoutStatistics() Option { return option(func(c *executor.Config) { c.NoStatistics = true }) }

// WithoutCallerHelp turns callers that help off: a goroutine waiting in Ask
// for an actor whose worker is parked then wakes that worker, instead of
// delivering the request (and the messages queued before it) itself, and
// the goroutine of a Go function wakes it to deliver its Reply. See Ask for
// what helping changes for the asking goroutine.
func WithoutCallerHelp() Option { return option(func(c *executor.Config) { c.NoCallerHelp = true }) }

// WithConfig applies every engine setting of cfg that is set (non-zero),
// including those other options also set (executor.Config documents each);
// it is meant for the settings no other option names. Like every option it
// changes only what it sets: options before and after it still apply to
// the other settings, and a later option overrides it. A zero field leaves
// the setting as it was, so WithConfig cannot turn PinCPUs, NoStatistics
// or NoCallerHelp off, nor set Placement back to PlaceLocal or Park back
// to ParkDefault.
func WithConfig(cfg executor.Config) Option {
	return option(func(c *executor.Config) { mergeConfig(c, &cfg) })
}

// mergeConfig copies every non-zero field of src into dst.
func mergeConfig(dst, src *executor.Config) {
	set := func(d *int, s int) {
		if s != 0 {
			*d = s
		}
	}
	setDur := func(d *time.Duration, s time.Duration) {
		if s != 0 {
			*d = s
		}
	}
	set(&dst.Workers, src.Workers)
	set(&dst.QueuesPerWorker, src.QueuesPerWorker)
	set(&dst.Queues, src.Queues)
	set(&dst.SpareQueues, src.SpareQueues)
	set(&dst.QueueCapacity, src.QueueCapacity)
	set(&dst.LocalBatch, src.LocalBatch)
	set(&dst.Regulps, src.Regulps)
	set(&dst.SpinPasses, src.SpinPasses)
	setDur(&dst.StealAge, src.StealAge)
	setDur(&dst.ParkTimeout, src.ParkTimeout)
	setDur(&dst.ParkTimeoutMax, src.ParkTimeoutMax)
	dst.PinCPUs = dst.PinCPUs || src.PinCPUs
	dst.NoStatistics = dst.NoStatistics || src.NoStatistics
	dst.NoCallerHelp = dst.NoCallerHelp || src.NoCallerHelp
	if src.Steal != nil {
		dst.Steal = src.Steal
	}
	if src.Placement != executor.PlaceLocal {
		dst.Placement = src.Placement
	}
	if src.Park != executor.ParkDefault {
		dst.Park = src.Park
	}
	if src.OnError != nil {
		dst.OnError = src.OnError
	}
}

// Start starts an actor system. Errors wrap ErrConfig for an invalid
// configuration (for example fewer queues than workers).
func Start(opts ...Option) (*System, error) {
	var cfg executor.Config
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	e, err := executor.Start(cfg)
	if err != nil {
		return nil, err
	}
	return &System{e: e}, nil
}

// Stop blocks until every actor has terminated by itself, then stops the
// workers (Shutdown asks the actors to stop first). If ctx ends first, it
// stops the system anyway and returns an error wrapping ErrActorsAlive
// (and ctx's error) that says how many actors were alive and names them by
// type, with counts ("2 *main.Account, 1 *main.Ingest still alive").
//
// Its error also joins every panic that terminated an actor, or came out of
// a hook (errors.Is(err, ErrPanic); errors.As gives the *executor.PanicError
// with the panic value and stack; a panic that supervision handled, by
// WithResume, WithRestart or a supervisor's decision other than
// Failure.Stop, goes only to the error handler), and ErrUndelivered with the
// number of messages that were never delivered: sent to an actor that
// terminated first (the error names the type of one of those), or still
// queued at the end (not those a bounded mailbox dropped by its overflow
// policy: see Stats). A clean run returns nil. If a
// worker is still inside a behaviour when ctx ends, Stop waits up to one
// second for it, then returns anyway; then the Stopped hooks of the actors
// still alive run, one after another (their watchers are told
// ReasonStopped as each returns), and Stop waits for them one more second
// in all: hooks still running then go on, their actors alive until each
// returns, and the error says how many. The actor whose code a stuck
// worker is running is ended by that worker when the code returns (its
// Stopped hook, then Alive false, then its watchers). After Stop, sends return ErrStopped
// (ErrTerminated for an actor that had terminated before, or whose end,
// left to a stuck worker or a hook still running, has begun). Stop runs once: callers while it runs wait for it and get its
// result, a call after it has returned gets ErrStopped. Stop must not be
// called from a behaviour, nor from a function that a timer's firing runs
// (an AskFunc function called by its timeout): there it returns
// ErrStopInBehaviour and stops nothing.
func (s *System) Stop(ctx context.Context) error {
	if s == nil || s.e == nil {
		return ErrNotStarted
	}
	return s.e.Stop(ctx)
}

// Shutdown stops every live actor, then stops the system as Stop does: it
// is the stop a service calls when it exits. Where Stop waits for the
// actors to end by themselves, Shutdown asks each live actor to stop, with
// a poison pill queued after the messages already queued for it (so it
// receives those first; a pill is never refused by a bounded mailbox). The
// actor then terminates on its worker, as after any pill: its Stopped hook
// runs with ReasonStopped, its watchers get ReasonStopped (Err ErrStopped),
// its registered names are released; its Destroy and Release hooks do not
// run. Messages sent to it after the pill are dead letters, reported by
// the error as ErrUndelivered, as by Stop.
//
// The order: the actors that no live actor names as its supervisor
// (WithEscalate) stop first, then their supervisors, and so on, each wave
// waited for before the next, so that a supervisor is still there to
// decide the failures of the actors it supervises while they stop. Within
// a wave the actors stop concurrently, in no set order. Actors spawned
// meanwhile (by a Stopped hook, or an Entities.Get) are stopped in turn.
//
// ctx bounds all of it. When every actor has ended, the system stops
// (Stop(ctx)); if ctx ends first, the system is stopped as by a Stop whose
// context ended, and the error wraps ErrActorsAlive and names the actors
// still alive by type, with counts ("2 *main.Account, 1 *main.Ingest
// still alive"). A clean shutdown returns nil; the error is otherwise
// Stop's (panics that terminated actors, ErrUndelivered); a panic that
// supervision handled is not an error. A stop pill that finds its actor
// ended by itself meanwhile is a dead letter in Stats, not in the error.
// Errors: ErrNotStarted for a nil or zero System; ErrStopInBehaviour
// where Stop returns it; after a Stop has begun, Shutdown is Stop.
func (s *System) Shutdown(ctx context.Context) error {
	if s == nil || s.e == nil {
		return ErrNotStarted
	}
	return s.e.Shutdown(ctx)
}

// Stats returns a snapshot of the system's statistics (see Stats).
// Error: ErrNotStarted for a nil or zero System.
func (s *System) Stats() (Stats, error) {
	if s == nil || s.e == nil {
		return Stats{}, ErrNotStarted
	}
	return s.e.Stats(), nil
}

// Config returns the system's resolved configuration. Error: ErrNotStarted
// for a nil or zero System.
func (s *System) Config() (executor.Config, error) {
	if s == nil || s.e == nil {
		return executor.Config{}, ErrNotStarted
	}
	return s.e.Config(), nil
}

// Executor returns the underlying executor (nil for a zero System), for the
// metrics package and for tools that read statistics.
func (s *System) Executor() *executor.Executor { return s.e }

// Stats is a snapshot of a system's statistics (System.Stats): plain
// counters, kept per worker without atomic instructions on the hot path
// and read while the system runs. System-wide fields:
//
//	Workers               []WorkerStats // per worker, by worker number; Total() sums them
//	ExternalActorsCreated uint64 // actors spawned by goroutines that are not workers
//	MessagesSent          uint64 // successful sends (pills included); may lag while sends run, exact once quiet
//	LiveActors            int64  // spawned and not yet terminated
//	ParkedWorkers         int    // workers asleep
//	QueuedMessages        int    // messages waiting in mailboxes
//	Queues, SpareQueues   int    // mailboxes actors are placed on, spare ones
//	AsksPending           int64  // requests waiting for an answer
//	AsksTimedOut          uint64 // requests ended by their requester's context or timeout
//	LateReplies           uint64 // answers that came after their request had ended, dropped
//	TimersPending         int64  // timers set, not yet fired or stopped
//	TimersFired           uint64 // timer deliveries made (not the queued firing of a Timer stopped meanwhile)
//	TimersDead            uint64 // firings that delivered nothing, and timers dropped by Stop
//	MailboxRejected       uint64 // sends refused by a full bounded mailbox (Reject)
//	MailboxDroppedNewest  uint64 // messages dropped by DropNewest
//	MailboxDroppedOldest  uint64 // messages dropped by DropOldest
//	WatchNotices          uint64 // Terminated notices delivered to watchers
//	Stale                 []int  // workers that did not publish fresh counters in time (inside a long behaviour)
//
//	func (s Stats) Total() WorkerStats // the sum over workers, ActorsCreated including the external ones
//
// Package metrics exports them to Prometheus; executor.Stats documents
// each in full.
type Stats = executor.Stats

// WorkerStats are one worker's counters (Stats.Workers, Stats.Total):
//
//	ActorsCreated, ActorsTerminated   uint64 // actors spawned by its behaviours, actors terminated on it
//	LocalSends                        uint64 // sends appended to the batch it was draining
//	DeadLetters                       uint64 // messages dropped because their actor had terminated
//	Dropped                           uint64 // messages dropped from its batch by a forced stop
//	TimersDiscarded                   uint64 // firings of periodic Timers stopped while queued, discarded at their turn
//	Panics                            uint64 // behaviours or hooks that panicked or called runtime.Goexit
//	Restarts, Resumes, Escalations    uint64 // supervision: restarts, messages dropped by Resume, failures escalated
//	BudgetExhausted                   uint64 // actors terminated past their restart budget
//	Passivations                      uint64 // actors ended by idle passivation (WithPassivation)
//	GulpSize, StealSize               executor.Histogram // messages per gulp, per non-empty steal
//	MissedGulps, BatchWaits           uint64 // scheduling: mailboxes found busy, waits for a batch
//	DeferredServes                    uint64 // mailboxes of parked workers it served
//	CallerVisits                      uint64 // visits made as it, parked, by callers that help
//	StealAttempts, StealNoCandidate   uint64 // stealing: attempts, attempts without a candidate
//	StealFailedSwap, EmptySteals      uint64 // swaps that failed, that took an empty mailbox
//	StealWakeups, StalledSteals       uint64 // workers woken for a backlog, mailboxes taken from a stalled worker
//	Parks, ThreadReleases             uint64 // sleeps, sleeps that gave the OS thread back
//	WakeupsBySender, WakeupsByTimeout uint64 // what ended the sleeps
//	ParkedTime                        time.Duration // total time asleep
//
//	func (s *WorkerStats) MessagesProcessed() uint64 // messages whose behaviour it ran (0 WithoutStatistics)
//	func (s *WorkerStats) Steals() uint64            // successful steals, empty or not
type WorkerStats = executor.WorkerStats
