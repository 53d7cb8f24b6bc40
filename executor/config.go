package executor

import (
	"fmt"
	"runtime"
	"time"

	"github.com/actord/actord/internal/event"
	"github.com/actord/actord/stealing"
)

// Defaults used for zero Config fields.
const (
	DefaultQueuesPerWorker = 16  // the chapter's sharding factor
	DefaultQueueCapacity   = 10  // initial envelopes per copy queue, as in C∀
	DefaultLocalBatch      = 256 // local sends per gulp before falling back to the mailbox
	DefaultRegulps         = 4   // times a worker re-takes a mailbox it just drained before moving on
	DefaultSpinPasses      = 64  // empty passes over its mailboxes before a worker parks
	DefaultParkTimeout     = 10 * time.Millisecond
	DefaultParkTimeoutMax  = 100 * time.Millisecond
	DefaultStealAge        = time.Millisecond
)

// Placement says how Spawn chooses a new actor's mailbox.
type Placement uint8

const (
	// PlaceLocal (the default): an actor spawned by a behaviour goes to the
	// next mailbox, round-robin, of the worker running that behaviour; an
	// actor spawned from any other goroutine goes to the next mailbox of
	// all, round-robin by a global ticket. New actors start where their
	// creator runs (as Go puts a new goroutine on its creator's processor),
	// and stealing spreads the mailboxes when there is work to share.
	PlaceLocal Placement = iota
	// PlaceGlobal: every actor goes to the next mailbox of all, by the global
	// round-robin ticket (the chapter's placement).
	PlaceGlobal
)

func (p Placement) String() string {
	if p == PlaceGlobal {
		return "global"
	}
	return "local"
}

// Config configures an Executor. The zero value gives the defaults.
type Config struct {
	// Workers is the number of worker goroutines, each locked to an OS thread.
	// 0 means runtime.GOMAXPROCS(0).
	Workers int
	// QueuesPerWorker is the sharding factor: Queues defaults to
	// Workers*QueuesPerWorker. 0 means DefaultQueuesPerWorker.
	QueuesPerWorker int
	// Queues is the total number of mailboxes, overriding QueuesPerWorker.
	// It must be at least Workers: a worker without a mailbox could never
	// receive work. 0 means Workers*QueuesPerWorker.
	Queues int
	// SpareQueues is the number of spare mailboxes per worker: mailboxes on
	// which no actor is ever placed, so they never hold messages. When the
	// victim is stuck in a long behaviour (the batch it is processing has
	// lasted StealAge or more), a thief gives it one of its spares in
	// exchange for the queue it steals, instead of one of its own queues,
	// whose actors would then wait behind that behaviour. Otherwise queues
	// are exchanged one for one, which keeps a balanced system balanced.
	// Spares travel between workers with the swaps; each costs a pass one
	// load. 0 means as many as the worker's queues (enough to take all of a
	// stuck worker's queues without giving any back); negative means none.
	SpareQueues int
	// QueueCapacity is the initial capacity (in envelopes) of every copy
	// queue, and the floor below which reclamation never shrinks one.
	// 0 means DefaultQueueCapacity.
	QueueCapacity int
	// PinCPUs pins worker i to the i-th CPU of the process's allowed set
	// (modulo its size). Linux only; elsewhere Start fails.
	PinCPUs bool
	// Steal selects the victim heuristic of queue stealing; stealing.None
	// disables stealing. nil means stealing.LongestVictim.
	Steal stealing.Heuristic
	// StealAge is how long a candidate mailbox must have been waiting (seen
	// non-empty, not being processed and not gulped since) before a thief
	// takes it. Mailboxes that their owner serves within this time stay
	// where they are, so sequential work is not dragged between cores and a
	// busy, balanced system does not churn its queues between workers.
	// Measured on 2 workers against no stealing: 20us cost the executor
	// benchmark +34%, 200us +33%, 1ms +18%, with the same delay for
	// messages stuck behind a long behaviour (p50 ~20us, p99 ~16ms): a
	// parked thief takes every remembered candidate that waited through its
	// sleep. 0 means DefaultStealAge; negative means steal on first sight.
	StealAge time.Duration
	// Placement chooses new actors' mailboxes (default PlaceLocal).
	Placement Placement
	// LocalBatch bounds how many sends a behaviour may append directly to
	// the batch its worker is draining (sends to an actor of the mailbox
	// being drained, made from that worker) before further sends go through
	// the mailbox, so a self-sending actor cannot keep its worker forever.
	// 0 means DefaultLocalBatch; negative disables local appends.
	LocalBatch int
	// Regulps is how many times in a row a worker re-takes a mailbox that
	// refilled while it was being drained before moving to its next mailbox.
	// 0 means DefaultRegulps; negative disables re-taking.
	Regulps int
	// SpinPasses is the number of consecutive passes over its mailboxes
	// without work (including steal attempts) after which a worker parks.
	// 0 means DefaultSpinPasses.
	SpinPasses int
	// ParkTimeout bounds a worker's sleep, so that parked workers still look
	// for work to steal now and then: a backlog behind a behaviour that runs
	// for a long time is found this way when every other worker sleeps
	// (otherwise busy workers wake sleepers themselves when they see a
	// backlog). After each timeout that finds no work the next sleep is
	// twice as long, up to ParkTimeoutMax, so that an idle system wakes
	// rarely; any work resets it. 0 means DefaultParkTimeout; negative means
	// sleep until woken.
	ParkTimeout time.Duration
	// ParkTimeoutMax caps the doubling of ParkTimeout. 0 means
	// DefaultParkTimeoutMax (or ParkTimeout if that is larger).
	ParkTimeoutMax time.Duration
	// Event selects the sleep primitive: event.KindChan (the default) or
	// event.KindFutex (see package internal/event for the measurements).
	Event event.Kind
	// NoStatistics turns statistics counting off on the workers' hot paths
	// (creations, terminations and parking are still counted).
	NoStatistics bool
	// OnError, if set, is called with every *PanicError as it happens, on
	// the worker goroutine that recovered it. It must not block for long.
	OnError func(error)
}

// resolved returns c with defaults applied, or an error wrapping ErrConfig.
func (c Config) resolved() (Config, error) {
	if c.Workers == 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if c.Workers < 0 {
		return c, fmt.Errorf("%w: %d workers", ErrConfig, c.Workers)
	}
	if c.QueuesPerWorker == 0 {
		c.QueuesPerWorker = DefaultQueuesPerWorker
	}
	if c.QueuesPerWorker < 0 {
		return c, fmt.Errorf("%w: %d queues per worker", ErrConfig, c.QueuesPerWorker)
	}
	if c.Queues == 0 {
		c.Queues = c.Workers * c.QueuesPerWorker
	}
	if c.Queues < c.Workers {
		return c, fmt.Errorf("%w: %d queues for %d workers: every worker needs at least one queue",
			ErrConfig, c.Queues, c.Workers)
	}
	if c.SpareQueues == 0 {
		c.SpareQueues = (c.Queues + c.Workers - 1) / c.Workers
	}
	if c.SpareQueues < 0 || c.Workers == 1 {
		c.SpareQueues = 0 // a single worker never steals
	}
	if c.QueueCapacity == 0 {
		c.QueueCapacity = DefaultQueueCapacity
	}
	if c.QueueCapacity < 0 {
		return c, fmt.Errorf("%w: queue capacity %d", ErrConfig, c.QueueCapacity)
	}
	if c.Steal == nil {
		c.Steal = stealing.LongestVictim
	}
	if c.StealAge == 0 {
		c.StealAge = DefaultStealAge
	}
	if c.LocalBatch == 0 {
		c.LocalBatch = DefaultLocalBatch
	}
	if c.LocalBatch < 0 {
		c.LocalBatch = 0
	}
	if c.Regulps == 0 {
		c.Regulps = DefaultRegulps
	}
	if c.Regulps < 0 {
		c.Regulps = 0
	}
	if c.SpinPasses == 0 {
		c.SpinPasses = DefaultSpinPasses
	}
	if c.SpinPasses < 0 {
		return c, fmt.Errorf("%w: %d spin passes", ErrConfig, c.SpinPasses)
	}
	if c.ParkTimeout == 0 {
		c.ParkTimeout = DefaultParkTimeout
	}
	if c.ParkTimeoutMax == 0 {
		c.ParkTimeoutMax = DefaultParkTimeoutMax
	}
	c.ParkTimeoutMax = max(c.ParkTimeoutMax, c.ParkTimeout)
	return c, nil
}
