package executor

import (
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"time"
	"unsafe"

	"github.com/actord/actord/internal/event"
	"github.com/actord/actord/stealing"
)

// Defaults used for zero Config fields.
const (
	DefaultQueuesPerWorker = 16  // sharding factor
	DefaultQueueCapacity   = 10  // initial envelopes per copy queue
	DefaultLocalBatch      = 256 // local sends per gulp before falling back to the mailbox
	DefaultRegulps         = 4   // times a worker re-takes a mailbox it just drained before moving on
	DefaultSpinPasses      = 64  // empty passes over its mailboxes before a worker parks
	DefaultParkTimeout     = 10 * time.Millisecond
	DefaultParkTimeoutMax  = 100 * time.Millisecond
	DefaultStealAge        = time.Millisecond
)

// Upper bounds of Config values: Start refuses larger ones (ErrConfig), which
// would exhaust threads or memory rather than run.
const (
	MaxWorkers       = 1024
	MaxQueues        = 1 << 22 // mailboxes in all (Queues, or Workers*QueuesPerWorker)
	MaxQueueCapacity = 1 << 20 // initial envelopes per copy queue
	// MaxQueueMemory bounds the memory that the mailboxes take at Start:
	// their initial copy queues (Queues * QueueCapacity envelopes, and
	// each worker's batch buffer) and the mailboxes themselves, spares
	// included.
	MaxQueueMemory   = 1 << 32
	MaxLocalBatch    = 1 << 20
	MaxRegulps       = 1 << 20
	MaxSpinPasses    = 1 << 20
	MaxStealAge      = time.Minute
	MaxParkTimeout   = time.Hour
	envelopeSize     = 40                                  // bytes per queued envelope, for MaxQueueMemory
	mailboxSize      = int64(unsafe.Sizeof(mailbox{})) + 8 // a mailbox and its slot, for MaxQueueMemory
	maxThreadsMargin = 64                                  // threads left to the rest of the program (see Workers)
)

// ParkKind selects the sleep primitive of idle workers (Config.Park).
type ParkKind uint8

// The park kinds. Their values match package internal/event's kinds.
const (
	// ParkDefault is a two-phase park (see ParkTwoPhase) in whose futex
	// phase at most GOMAXPROCS-1 workers (GOMAXPROCS at Start) are at
	// once; the others sleep on the channel at once. A worker in the
	// futex keeps its processor, so at least one processor stays with
	// the rest of the program; with a single processor, ParkDefault is
	// ParkChannel.
	ParkDefault ParkKind = ParkKind(event.Default)
	// ParkFutex sleeps in futex(2) on the worker's state word (Linux
	// only; elsewhere ParkChannel is used). A wake-up is one system call,
	// but the sleeping thread keeps its Go processor in the system call
	// until the runtime retakes it.
	ParkFutex ParkKind = ParkKind(event.KindFutex)
	// ParkChannel sleeps on a channel receive with a timer: the Go
	// scheduler releases the sleeping worker's processor at once. A worker
	// that is not pinned (PinCPUs) and sleeps at a low rate (its previous
	// sleep lasted 2 ms or more, or its sleeps average 0.5 ms or more
	// between single messages; see park.go), or runs with a single
	// processor (GOMAXPROCS 1 at Start), also unlocks its goroutine
	// from its OS thread for this sleep (the channel phase of the other
	// kinds too, ParkFutex excepted), so
	// that a goroutine that wakes it and then blocks hands it its
	// processor and thread directly, as Go does for any goroutine, instead
	// of two thread wake-ups; it locks the thread it runs on when it wakes.
	ParkChannel ParkKind = ParkKind(event.KindChan)
	// ParkTwoPhase sleeps in futex(2) for at most a bounded phase
	// (50 µs), then on the channel (Linux only; elsewhere ParkChannel): a
	// worker woken soon after it parked is woken by one system call, and
	// one that sleeps longer gives its processor back. While every worker
	// is in the futex phase and every processor is held by one, other
	// goroutines of the program wait for the runtime to retake a
	// processor, at most until the phase ends. A worker whose last 4
	// phases all ended by the timeout (sleeps longer than the phase, as
	// at a steady low rate of messages) skips the phase, taking it again
	// every 8th park, until a sleep is shorter than the phase.
	ParkTwoPhase ParkKind = ParkKind(event.KindTwoPhase)
)

func (k ParkKind) String() string { return event.Kind(k).String() }

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
	// round-robin ticket.
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
	// Workers is the number of worker goroutines, each locked to an OS thread
	// while it runs (see ParkChannel for long sleeps). 0 means
	// runtime.GOMAXPROCS(0). At most MaxWorkers, and at most the
	// process's thread limit (debug.SetMaxThreads) less a margin.
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
	// victim is stuck in a long behaviour (it has been inside one mailbox
	// visit, of its own mailboxes or another's, for StealAge or more), a
	// thief gives it one of its spares in
	// exchange for the queue it steals, instead of one of its own queues,
	// whose actors would then wait behind that behaviour: for the first
	// queue it takes during that visit, and for all of them if the victim
	// was stuck before less than ten steal ages earlier (a worker that
	// keeps getting stuck is better left with fewer queues). Otherwise
	// queues are exchanged one for one, which keeps a balanced system
	// balanced.
	// Spares travel between workers with the swaps; each costs a pass one
	// load. 0 means as many as the worker's queues (enough to take all of a
	// stuck worker's queues without giving any back); negative means none.
	SpareQueues int
	// QueueCapacity is the initial capacity (in envelopes) of every copy
	// queue, and the floor below which reclamation never shrinks one.
	// 0 means DefaultQueueCapacity.
	QueueCapacity int
	// PinCPUs pins worker i to the i-th CPU of the process's allowed set
	// (modulo its size). Linux only; elsewhere Start fails. A pinned
	// worker keeps its OS thread for its whole life.
	PinCPUs bool
	// Steal selects the victim heuristic of queue stealing; stealing.None
	// disables stealing. nil means stealing.LongestVictim.
	Steal stealing.Heuristic
	// StealAge is how long a candidate mailbox must have been waiting (seen
	// non-empty, not being processed and not gulped since) before a thief
	// takes it. Mailboxes that their owner serves within this time stay
	// where they are, so sequential work is not dragged between cores and a
	// busy, balanced system does not churn its queues between workers; a
	// parked thief takes every remembered candidate that waited through its
	// sleep. A candidate whose owner is awake but has served none of its
	// mailboxes for a sixteenth of StealAge (its thread is off the CPU, or
	// it runs one long behaviour) is taken once it has waited that
	// sixteenth: served in place for one visit, or stolen once the thief
	// has served a few within StealAge. 0 means DefaultStealAge; negative
	// means steal on first sight. At most MaxStealAge.
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
	// ParkTimeout is how often, while some worker is awake, the executor's
	// watcher goroutine looks for a worker stuck inside one mailbox visit
	// (a behaviour that runs for a long time, whose worker cannot wake a
	// thief itself); when it finds one, it wakes one sleeping worker, which
	// steals the stuck worker's waiting mailboxes once they have aged
	// (busy workers that are not stuck wake sleepers themselves when they
	// see a backlog). The interval doubles after each look that finds no
	// stuck worker, up to ParkTimeoutMax, and starts over when a thief
	// takes work or a worker wakes after all slept. While every worker
	// sleeps nobody is woken, so an idle system makes no wake-ups. 0 means
	// DefaultParkTimeout; negative means never (sleeping workers are only
	// woken by work).
	ParkTimeout time.Duration
	// ParkTimeoutMax caps the doubling of the ParkTimeout interval. 0 means
	// DefaultParkTimeoutMax (or ParkTimeout if that is larger).
	ParkTimeoutMax time.Duration
	// Park selects the sleep primitive of idle workers: ParkDefault,
	// ParkTwoPhase, ParkChannel or ParkFutex (see ParkKind).
	Park ParkKind
	// NoStatistics turns statistics counting off on the workers' hot paths
	// (creations, terminations and parking are still counted).
	NoStatistics bool
	// NoCallerHelp turns callers that help off: a goroutine outside the
	// system that waits in Ask for an actor whose worker is parked then
	// wakes the worker instead of delivering the request, and any
	// messages queued before it, itself (see Ask); so does the goroutine
	// of a Go function with its Reply.
	NoCallerHelp bool
	// OnError, if set, is called with every *PanicError as it happens, on
	// the goroutine that recovered it: a worker's, or that of a caller
	// that helps (see Ask) for a panic in a plain actor's behaviour it ran
	// (an extended actor's is recovered by the worker). It must not
	// block for long.
	OnError func(error)
}

// resolved returns c with defaults applied, or an error wrapping ErrConfig.
// Every field is checked: negative values where none is meaningful, values
// past the Max bounds, and undefined kinds are refused.
func (c Config) resolved() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return c, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
	if c.Workers == 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if c.Workers < 0 || c.Workers > MaxWorkers {
		return bad("%d workers (1 to %d)", c.Workers, MaxWorkers)
	}
	if limit := maxThreads(); c.Workers > limit-maxThreadsMargin {
		return bad("%d workers: the thread limit is %d (debug.SetMaxThreads), and the rest of the program needs %d",
			c.Workers, limit, maxThreadsMargin)
	}
	if c.QueuesPerWorker == 0 {
		c.QueuesPerWorker = DefaultQueuesPerWorker
	}
	if c.QueuesPerWorker < 0 || c.QueuesPerWorker > MaxQueues/max(c.Workers, 1) {
		return bad("%d queues per worker for %d workers (at most %d in all)", c.QueuesPerWorker, c.Workers, MaxQueues)
	}
	if c.Queues == 0 {
		c.Queues = c.Workers * c.QueuesPerWorker
	}
	if c.Queues < 0 || c.Queues > MaxQueues {
		return bad("%d queues (1 to %d in all)", c.Queues, MaxQueues)
	}
	if c.Queues < c.Workers {
		return bad("%d queues for %d workers: every worker needs at least one queue", c.Queues, c.Workers)
	}
	if c.SpareQueues == 0 {
		c.SpareQueues = (c.Queues + c.Workers - 1) / c.Workers
	}
	if c.SpareQueues > MaxQueues/c.Workers {
		return bad("%d spare queues per worker (at most %d)", c.SpareQueues, MaxQueues/c.Workers)
	}
	if c.SpareQueues < 0 || c.Workers == 1 {
		c.SpareQueues = 0 // a single worker never steals
	}
	if c.QueueCapacity == 0 {
		c.QueueCapacity = DefaultQueueCapacity
	}
	if c.QueueCapacity < 0 || c.QueueCapacity > MaxQueueCapacity {
		return bad("queue capacity %d (1 to %d)", c.QueueCapacity, MaxQueueCapacity)
	}
	mem := int64(c.Queues+c.Workers)*int64(c.QueueCapacity)*envelopeSize +
		int64(c.Queues+c.SpareQueues*c.Workers)*mailboxSize
	if mem > MaxQueueMemory {
		return bad("%d queues of capacity %d and %d spares take %d MiB (at most %d MiB)",
			c.Queues, c.QueueCapacity, c.SpareQueues*c.Workers, mem>>20, MaxQueueMemory>>20)
	}
	if c.Steal == nil {
		c.Steal = stealing.LongestVictim
	}
	if c.StealAge == 0 {
		c.StealAge = DefaultStealAge
	}
	if c.StealAge > MaxStealAge {
		return bad("steal age %v (at most %v)", c.StealAge, MaxStealAge)
	}
	if c.Placement != PlaceLocal && c.Placement != PlaceGlobal {
		return bad("undefined placement %d", c.Placement)
	}
	if c.LocalBatch == 0 {
		c.LocalBatch = DefaultLocalBatch
	}
	if c.LocalBatch > MaxLocalBatch {
		return bad("local batch %d (at most %d)", c.LocalBatch, MaxLocalBatch)
	}
	if c.LocalBatch < 0 {
		c.LocalBatch = 0
	}
	if c.Regulps == 0 {
		c.Regulps = DefaultRegulps
	}
	if c.Regulps > MaxRegulps {
		return bad("%d regulps (at most %d)", c.Regulps, MaxRegulps)
	}
	if c.Regulps < 0 {
		c.Regulps = 0
	}
	if c.SpinPasses == 0 {
		c.SpinPasses = DefaultSpinPasses
	}
	if c.SpinPasses < 0 || c.SpinPasses > MaxSpinPasses {
		return bad("%d spin passes (1 to %d)", c.SpinPasses, MaxSpinPasses)
	}
	if c.ParkTimeout == 0 {
		c.ParkTimeout = DefaultParkTimeout
	}
	if c.ParkTimeout > MaxParkTimeout || c.ParkTimeoutMax > MaxParkTimeout {
		return bad("park timeout %v, max %v (at most %v)", c.ParkTimeout, c.ParkTimeoutMax, MaxParkTimeout)
	}
	if c.ParkTimeoutMax < 0 {
		return bad("negative park timeout max %v", c.ParkTimeoutMax)
	}
	if c.ParkTimeoutMax == 0 {
		c.ParkTimeoutMax = DefaultParkTimeoutMax
	}
	c.ParkTimeoutMax = max(c.ParkTimeoutMax, c.ParkTimeout)
	if c.Park != ParkDefault && c.Park != ParkFutex && c.Park != ParkChannel && c.Park != ParkTwoPhase {
		return bad("undefined park kind %d (ParkDefault, ParkChannel, ParkFutex or ParkTwoPhase)", c.Park)
	}
	return c, nil
}

// maxThreads returns the process's thread limit (debug.SetMaxThreads has no
// getter: it is set and restored). The limit set meanwhile is the largest
// int32, not a smaller one: the runtime aborts the process when it sets a
// limit below the threads in use.
func maxThreads() int {
	n := debug.SetMaxThreads(math.MaxInt32)
	debug.SetMaxThreads(n)
	return n
}
