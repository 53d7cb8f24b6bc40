package executor

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/actord/actord/internal/affinity"
	"github.com/actord/actord/internal/copyq"
	"github.com/actord/actord/stealing"
	"golang.org/x/sys/cpu"
)

// Executor is a running inverted actor executor: Workers worker goroutines
// cycling over Queues sharded mailboxes. Create one with Start; it runs until
// Stop. All methods are safe for concurrent use.
//
// The engine is split by mechanism, one file each: send.go (Spawn, Send and
// the local path), mailbox.go (the locked queues), worker.go (a worker's
// life and its loop), scan.go (passes and gulps), deliver.go (running
// behaviours, statuses, termination, panics), park.go (idling: spinning,
// parking and the wake-up protocol), steal.go (the stealing policy),
// identity.go (which goroutine is which worker), stop.go and stats.go.
type Executor struct {
	cfg Config // resolved; read-only after Start

	// mailboxes is the actors' array: actor with ticket t sends into
	// mailboxes[t % len]. Never changes after Start.
	mailboxes []*mailbox
	// spares are the spare mailboxes (Config.SpareQueues per worker), in no
	// actor's reach; they live in the slots like the others.
	spares []*mailbox
	// slots is the workers' array: worker i scans slots[workers[i].lo:hi].
	// Thieves permute it with stealing.TrySwapHooked; nil marks a slot in
	// the middle of a swap (see package stealing).
	slots   []atomic.Pointer[mailbox]
	workers []*worker
	// slotWorker[i] is the worker whose range holds slot i; immutable.
	slotWorker []*worker
	sel        stealing.Selector // victim heuristic, nil when stealing is off

	// gtab maps goroutine identities to workers (see identity.go).
	gtab  []atomic.Pointer[gentry]
	gmask uintptr

	_ cpu.CacheLinePad
	// ticket hands out mailbox indices round-robin. Add by Spawn.
	ticket atomic.Uint64
	// extCreated counts actors spawned by goroutines that are not workers.
	// Add by Spawn, read by Stats; kept off the lines workers read per
	// message and per pass.
	extCreated atomic.Uint64
	_          cpu.CacheLinePad
	// life counts live actors in its low bits, with lifeStopped set once
	// Stop has decided that the executor stops. Spawn adds one with a CAS
	// that fails if lifeStopped is set (enter); termination subtracts one
	// and, on reaching 0, posts a token to zero (actorGone); Stop sets
	// lifeStopped with a CAS from exactly 0 (a clean stop: no actor alive,
	// none being spawned) or unconditionally when its context ends (a
	// forced stop). The single word makes the decision linearizable: a
	// Spawn either entered before the stop (and Stop waits for its actor)
	// or fails with ErrStopped, and after the first ErrStopped every later
	// Spawn fails too.
	life atomic.Int64
	_    cpu.CacheLinePad
	// sleepers counts parked workers; spinning counts workers spinning in
	// search of work. See park.go for the protocol each belongs to.
	sleepers atomic.Int32
	_        cpu.CacheLinePad
	spinning atomic.Int32
	_        cpu.CacheLinePad
	// deepQueues counts the mailboxes whose length has reached floodStep
	// since their last gulp (flood.go). Incremented by the pusher whose
	// push made the length exactly floodStep (in notify, after its
	// unlock); decremented by whoever takes such a mailbox's envelopes
	// (gulp, a re-take, close; after its unlock). Each fill of a mailbox
	// has one such push and one such take, so the count is exact once
	// both have happened; in between it may be off by the pushes and
	// takes in flight (even below zero: a take may decrement before its
	// push's increment). Read by outside senders at flood points as a
	// hint only: it orders nothing.
	deepQueues atomic.Int32
	_          cpu.CacheLinePad
	// futexSlots counts the workers that may still enter the futex phase
	// of a park (see park and worker.initPark): a parking worker takes a
	// slot with an add of -1 (a result below zero means none was free;
	// it adds 1 back at once and skips the phase) and gives it back with
	// an add of +1 when the phase ends. The count thus bounds how many
	// processors sleeping workers hold. Set before the workers start.
	futexSlots atomic.Int32
	_          cpu.CacheLinePad
	// waking counts wake-ups in flight: workers moved out of the parked
	// state by wake that have not yet seen it. wake adds one before its
	// CAS (and takes it back if the CAS fails); the woken worker subtracts
	// one in park once it has seen itself woken. Every decrement thus
	// follows its increment, so the count never falls below the number of
	// woken workers not yet running. Read by spinners (spinDone) as a hint
	// only: it takes no part in the wake-up protocol.
	waking atomic.Int32
	_      cpu.CacheLinePad
	// deferred counts the workers whose deferred flag is set (see
	// defer.go): incremented by the sender that sets a flag (D1), after
	// the set; decremented by the worker that clears one, after the
	// clear. Loaded by parking workers at S3 and at the end of every pass:
	// not 0 means a mailbox waits for an awake worker to serve it.
	deferred atomic.Int32
	_        cpu.CacheLinePad
	// procs is GOMAXPROCS at Start: written before the workers start,
	// read-only afterwards.
	procs int32

	// Request/reply counters (see ask.go): requests begun and ended by
	// goroutines that are not workers (workers count theirs privately),
	// requests ended by their requester's context or timeout, and replies
	// that came too late (or found their requester gone). Updated with
	// atomic adds; read by Stats.
	extAsksStarted atomic.Uint64
	extAsksDone    atomic.Uint64
	asksTimedOut   atomic.Uint64
	lateReplies    atomic.Uint64
	_              cpu.CacheLinePad

	timers timers // see timer.go

	sup supState // supervision counters and extended actors (see supervise.go)

	// watchKick wakes the watcher goroutine (see park.go) when a worker
	// leaves the parked state while all were parked, and at shutdown; nil
	// without a watcher. Capacity 1: a pending kick is never lost.
	// watchDone is closed when the watcher exits.
	watchKick chan struct{}
	watchDone chan struct{}
	// grown is set by a worker that drained a buffer grown above
	// Config.QueueCapacity, and swapped back by reclaimIdle, which then
	// gives back the grown mailbox buffers of an idle system.
	grown atomic.Bool
	// reclaims counts the runs of reclaimIdle (for tests). Written by the
	// watcher.
	reclaims atomic.Uint64
	// watchReset is set by a thief whose steal took work, and swapped back
	// by the watcher, which then looks at its shortest interval again.
	watchReset atomic.Bool

	epoch time.Time // monotonic reference for thieves' clocks
	// shutdown makes the workers exit. Stored once, by Stop after the stop
	// decision (or by a failed Start), and only then wakeAll runs: with
	// park's S2 (state parked) before its S3 load of shutdown, a parking
	// worker either sees it or is woken by wakeAll. Read by the workers
	// before each pass and delivery and in park (S3), by the watcher and
	// by timers.add.
	shutdown atomic.Bool
	forced   atomic.Bool // set by Stop, before shutdown, when its context ended with actors alive
	// closed is set once every worker has exited after shutdown and a
	// forced Stop has finished the actors still alive (their Stopped hooks
	// ran, stopExts): no behaviour or hook of this executor runs any
	// more, so an actor still alive in it is terminated (Cell.Alive) and
	// may be spawned elsewhere. Written by runStop after stopExts; or, when
	// runStop gave up waiting for a worker stuck in a behaviour (gaveUp,
	// stored after stopExts), by the last worker to exit: runStop stores
	// gaveUp and then loads exited, the worker adds to exited and then
	// loads gaveUp, so one of them sees the other (both may store). Read
	// by Cell.Alive, Port.Alive, Spawn and watch.
	closed atomic.Bool
	// exited counts worker goroutines that have exited; the one that
	// brings it to the number of workers with shutdown set stores closed.
	// Added to by each worker as it exits.
	exited atomic.Int32
	// zero (capacity 1) gets a token from actorGone when the count of live
	// actors drops to 0; runStop waits on it and re-checks life with its
	// CAS after each token, so a stale token is harmless.
	zero chan struct{}

	// statsEpoch is incremented by Stats to ask workers to publish their
	// counters; each worker compares it with the last epoch it published
	// once per pass (a plain load).
	statsEpoch atomic.Uint64

	stop stopState // see stop.go

	// errMu guards panics and panicsN: appended to by recordPanic (any
	// worker, or a goroutine reporting for one), read by Stop after the
	// workers have exited.
	errMu   sync.Mutex
	panics  []error // recorded *PanicError values, at most maxKeptPanics
	panicsN int     // total recorded, including those not kept
	wg      sync.WaitGroup
	// undeliver counts envelopes dropped by workers at a forced shutdown:
	// added to by a worker dropping the rest of its batch (drainBatch,
	// exit), read by Stop after waitWorkers.
	undeliver atomic.Int64
	// deadType is the reflect.Type of a message counted as a dead letter,
	// the first that noteDead saw: stored once (CompareAndSwap from
	// empty) by a worker counting a dead letter, read by Stop after
	// waitWorkers to name it in its ErrUndelivered error. Nothing orders
	// the two but the workers' exit; a dead letter a stuck worker counts
	// later is not named.
	deadType atomic.Value
	// liveLog is the log of spawns (see live.go), one shard per worker
	// and as many for spawns from outside the workers.
	liveLog []liveShard
	// stopPillsDead counts the stop pills (see shutdown.go) counted as
	// dead letters: added to by noteDead wherever a dead letter is
	// counted, read by runStop after the workers have exited, which leaves
	// them out of its ErrUndelivered error (they stay in Stats).
	stopPillsDead atomic.Int64
	// held is the registry of requests sent to this executor's actors
	// and not yet answered (see held.go).
	held heldReg

	gaveUp atomic.Bool // see closed

	// sentMax is the largest Stats.MessagesSent a snapshot computed
	// (raised by CAS in Stats, which reads it): see Stats.
	sentMax atomic.Uint64
}

const lifeStopped = 1 << 62

// Start creates an executor from cfg and starts its workers. It returns once
// every worker is running. Errors wrap ErrConfig for an invalid
// configuration.
func Start(cfg Config) (*Executor, error) {
	cfg, err := cfg.resolved()
	if err != nil {
		return nil, err
	}
	var cpus []int
	if cfg.PinCPUs {
		if cpus, err = affinity.Allowed(); err != nil {
			return nil, fmt.Errorf("%w: PinCPUs: %w", ErrConfig, err)
		}
	}
	e := &Executor{
		cfg:       cfg,
		mailboxes: make([]*mailbox, cfg.Queues),
		spares:    make([]*mailbox, cfg.SpareQueues*cfg.Workers),
		slots:     make([]atomic.Pointer[mailbox], cfg.Queues+cfg.SpareQueues*cfg.Workers),
		workers:   make([]*worker, cfg.Workers),
		zero:      make(chan struct{}, 1),
		epoch:     time.Now(),
	}
	e.stop.init()
	if cfg.Steal != stealing.None && cfg.Workers > 1 {
		e.sel = cfg.Steal.NewSelector(cfg.Workers)
	}
	e.initIdentities()
	e.initLive()
	for i := range e.mailboxes {
		e.mailboxes[i] = &mailbox{exec: e, index: i, buf: copyq.New[envelope](cfg.QueueCapacity)}
	}
	for i := range e.spares {
		e.spares[i] = &mailbox{exec: e, index: cfg.Queues + i, spare: true}
	}
	// Worker i's slot range holds its share of the real mailboxes (a
	// contiguous run of tickets) followed by its spares.
	lo := 0
	e.slotWorker = make([]*worker, 0, len(e.slots))
	for i := range e.workers {
		real := e.mailboxes[i*cfg.Queues/cfg.Workers : (i+1)*cfg.Queues/cfg.Workers]
		spares := e.spares[i*cfg.SpareQueues : (i+1)*cfg.SpareQueues]
		hi := lo + len(real) + len(spares)
		w := newWorker(e, i, lo, hi)
		if cpus != nil {
			w.cpu = cpus[i%len(cpus)]
		}
		for k, m := range append(real[:len(real):len(real)], spares...) {
			e.slots[lo+k].Store(m)
			m.owner.Store(int32(i))
			e.slotWorker = append(e.slotWorker, w)
		}
		e.workers[i] = w
		lo = hi
	}
	e.futexSlots.Store(futexSlots(cfg))
	e.procs = int32(runtime.GOMAXPROCS(0))
	var ready sync.WaitGroup
	ready.Add(cfg.Workers)
	errs := make([]error, cfg.Workers)
	e.wg.Add(cfg.Workers)
	for i, w := range e.workers {
		go w.run(&ready, &errs[i])
	}
	ready.Wait()
	if e.sel != nil && cfg.ParkTimeout > 0 {
		e.watchKick, e.watchDone = make(chan struct{}, 1), make(chan struct{})
		go e.watch()
	}
	if err := errors.Join(errs...); err != nil {
		e.life.Or(lifeStopped)
		e.shutdown.Store(true)
		e.wakeAll()
		e.stopWatcher()
		e.wg.Wait()
		return nil, err
	}
	return e, nil
}

// Config returns the executor's resolved configuration.
func (e *Executor) Config() Config { return e.cfg }

// enter counts a new live actor, unless the executor has stopped.
func (e *Executor) enter() bool {
	for {
		v := e.life.Load()
		if v&lifeStopped != 0 {
			return false
		}
		if e.life.CompareAndSwap(v, v+1) {
			return true
		}
	}
}

// actorGone records the end of a live actor.
func (e *Executor) actorGone() {
	if e.life.Add(-1)&^lifeStopped == 0 {
		select {
		case e.zero <- struct{}{}:
		default: // a token is pending: Stop re-checks life anyway
		}
	}
}

// live returns the number of live actors.
func (e *Executor) live() int64 { return e.life.Load() &^ lifeStopped }

// Stopped reports whether Stop has decided that the executor stops (the
// lifeStopped bit of life, which never clears): from then on Spawn fails
// with ErrStopped. It is false for a nil or zero Executor.
func (e *Executor) Stopped() bool { return e != nil && e.life.Load()&lifeStopped != 0 }
