package executor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/actord/actord/internal/affinity"
	"github.com/actord/actord/internal/copyq"
	"github.com/actord/actord/internal/goid"
	"github.com/actord/actord/stealing"
	"golang.org/x/sys/cpu"
)

// Executor is a running inverted actor executor: Workers worker goroutines
// cycling over Queues sharded mailboxes. Create one with Start; it runs until
// Stop. All methods are safe for concurrent use.
type Executor struct {
	cfg Config // resolved; read-only after Start

	// mailboxes is the actors' array: actor with ticket t sends into
	// mailboxes[t % len]. Never changes after Start.
	mailboxes []*mailbox
	// spares are the spare mailboxes (Config.SpareQueues per worker), in no
	// actor's reach; they live in the slots like the others.
	spares []*mailbox
	// slots is the workers' array: worker i scans slots[workers[i].lo:hi].
	// Thieves permute it with stealing.TrySwap; nil marks a slot in the
	// middle of a swap (see package stealing).
	slots   []atomic.Pointer[mailbox]
	workers []*worker
	// slotWorker[i] is the worker whose range holds slot i; immutable.
	slotWorker []*worker
	sel        stealing.Selector // victim heuristic, nil when stealing is off

	// gtab maps goroutine identities (goid.Get) to workers: an open-addressed
	// table written only by workers registering at start (and retiring at
	// exit), read by every Send and Spawn to recognise a worker caller.
	// Entries are immutable once published.
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
	// live counts actors spawned and not terminated. Spawn adds 1 before it
	// checks stopping (and undoes it if stopping is set); termination
	// subtracts 1 and, on reaching 0, posts a token to zero. Stop sets
	// stopping only after it has seen live == 0 and then re-checks live:
	// this Dekker-style pair (both sides: write, then read the other's
	// variable, all sequentially consistent) ensures that either the spawner
	// sees stopping and backs out, or Stop sees its actor and keeps waiting.
	live atomic.Int64
	_    cpu.CacheLinePad
	// sleepers counts parked workers. A worker adds 1 after announcing
	// itself parked and before re-checking its mailboxes; whoever moves it
	// out of the parked state (itself on timeout, or a waker) subtracts 1.
	// Senders load it after publishing a push: 0 means nobody to wake, which
	// is the only cost parking adds to a send. See worker.park for the
	// protocol that makes this free of lost wake-ups.
	sleepers atomic.Int32
	_        cpu.CacheLinePad

	epoch      time.Time   // monotonic reference for thieves' clocks
	stopping   atomic.Bool // Spawn refuses; see live
	shutdown   atomic.Bool // workers exit; set by Stop after live == 0 or on its context's end
	forced     atomic.Bool // set by Stop, before shutdown, when its context ended with actors alive
	stopCalled atomic.Bool // Stop runs once
	zero       chan struct{}

	// statsEpoch is incremented by Stats to ask workers to publish their
	// counters; each worker compares it with the last epoch it published
	// once per pass (a plain load).
	statsEpoch atomic.Uint64

	errMu     sync.Mutex
	panics    []error // recorded *PanicError values, at most maxKeptPanics
	panicsN   int     // total recorded, including those not kept
	wg        sync.WaitGroup
	undeliver atomic.Int64 // envelopes dropped by workers at a forced shutdown
}

const maxKeptPanics = 64

// gentry maps one goroutine identity to a worker. g == 0 marks a retired
// entry (the worker exited; its identity may be reused by another goroutine).
type gentry struct {
	g uintptr
	w *worker
}

// Start creates an executor from cfg and starts its workers. It returns once
// every worker is running.
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
	if cfg.Steal != stealing.None && cfg.Workers > 1 {
		e.sel = cfg.Steal.NewSelector(cfg.Workers)
	}
	tab := 4
	for tab < 4*cfg.Workers {
		tab *= 2
	}
	e.gtab = make([]atomic.Pointer[gentry], tab)
	e.gmask = uintptr(tab - 1)
	for i := range e.mailboxes {
		e.mailboxes[i] = &mailbox{index: i, buf: copyq.New[envelope](cfg.QueueCapacity)}
	}
	for i := range e.spares {
		e.spares[i] = &mailbox{index: cfg.Queues + i, spare: true}
	}
	// Worker i's slot range holds its share of the real mailboxes (a
	// contiguous run of tickets, as the chapter assigns them) followed by
	// its spares.
	lo := 0
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
			m.owner.Store(w)
			e.slotWorker = append(e.slotWorker, w)
		}
		e.workers[i] = w
		lo = hi
	}
	var ready sync.WaitGroup
	ready.Add(cfg.Workers)
	errs := make([]error, cfg.Workers)
	e.wg.Add(cfg.Workers)
	for i, w := range e.workers {
		go w.run(&ready, &errs[i])
	}
	ready.Wait()
	if err := errors.Join(errs...); err != nil {
		e.shutdown.Store(true)
		e.wakeAll()
		e.wg.Wait()
		return nil, err
	}
	return e, nil
}

// Config returns the executor's resolved configuration.
func (e *Executor) Config() Config { return e.cfg }

// hash spreads goroutine identities (8-byte aligned pointers) over gtab.
func (e *Executor) hash(g uintptr) uintptr {
	return uintptr((uint64(g) >> 3) * 0x9E3779B97F4A7C15 >> 32)
}

// register enters w's goroutine identity in gtab, in the first free or
// retired entry of g's probe sequence. A retired entry (a tombstone) matches
// no goroutine and lookups probe past it, so reusing it creates no hole.
func (e *Executor) register(w *worker, g uintptr) {
	ent := &gentry{g: g, w: w}
	for k, i := 0, e.hash(g); k < len(e.gtab); k, i = k+1, i+1 {
		slot := &e.gtab[i&e.gmask]
		if old := slot.Load(); (old == nil || old.g == 0) && slot.CompareAndSwap(old, ent) {
			w.gslot = int(i & e.gmask)
			return
		}
	}
	panic("executor: goroutine table full") // 4x more entries than workers: cannot happen
}

// retire replaces w's entry by a tombstone that matches no goroutine, so a
// goroutine that later reuses w's identity is not mistaken for w.
func (e *Executor) retire(w *worker) {
	e.gtab[w.gslot].Store(&gentry{})
}

// current returns the worker running the calling goroutine, or nil if the
// caller is not one of e's workers. Cost: one identity read and usually one
// table load. Where goroutine identity is not supported it returns nil: the
// caller is then treated as external (global placement, no local path).
func (e *Executor) current() *worker { return e.workerOf(goid.Get()) }

// workerOf returns the worker whose goroutine identity is g, or nil.
func (e *Executor) workerOf(g uintptr) *worker {
	if g == 0 {
		return nil
	}
	for k, i := 0, e.hash(g); k < len(e.gtab); k, i = k+1, i+1 {
		ent := e.gtab[i&e.gmask].Load()
		if ent == nil {
			return nil
		}
		if ent.g == g {
			return ent.w
		}
	}
	return nil
}

// inBehaviour reports whether the caller is one of e's workers (that is, a
// behaviour). Unlike current it also works where goroutine identity is not
// supported, by comparing goroutine ids read from the stack trace: slow,
// and used only by Stop.
func (e *Executor) inBehaviour() bool {
	if goid.Supported {
		return e.current() != nil
	}
	id := goid.Slow()
	for _, w := range e.workers {
		if w.slowID.Load() == id {
			return true
		}
	}
	return false
}

// Spawn makes c a live actor of e, on a mailbox chosen by Config.Placement.
// self is the user's actor object (the struct embedding c) and obj the same
// object as an interface. c must be new, or dead (a Destroyed actor whose
// storage is reused).
func (e *Executor) Spawn(c *Cell, self unsafe.Pointer, obj any) error {
	if e == nil {
		return ErrNotStarted
	}
	st := c.state.Load()
	if k := st & cellKindMask; k != cellNew && k != cellDead {
		return ErrAlreadySpawned // spawning, alive, or its termination hooks are running
	}
	next := st&^cellKindMask + cellIncarnOne // the next incarnation
	if !c.state.CompareAndSwap(st, next|cellSpawning) {
		return ErrAlreadySpawned
	}
	e.live.Add(1)
	if e.stopping.Load() {
		e.actorGone()
		c.state.Store(st)
		return ErrStopped
	}
	w := e.current()
	var mb *mailbox
	if w != nil && e.cfg.Placement == PlaceLocal {
		mb = w.nextLocal()
	}
	if mb == nil {
		t := e.ticket.Add(1) - 1
		mb = e.mailboxes[t%uint64(len(e.mailboxes))]
	}
	c.mb.Store(mb)
	c.exec.Store(e)
	c.self = self
	c.obj = obj
	c.state.Store(next | cellAlive) // publishes the fields above to senders and workers
	if w != nil {
		w.st.ActorsCreated++
	} else {
		e.extCreated.Add(1)
	}
	return nil
}

// actorGone records the end of a live actor.
func (e *Executor) actorGone() {
	if e.live.Add(-1) == 0 {
		select {
		case e.zero <- struct{}{}:
		default: // a token is pending: Stop will re-check live anyway
		}
	}
}

// stateErr maps a non-alive cell state to the error a send reports.
func stateErr(st uint32) error {
	switch st & cellKindMask {
	case cellEnding, cellDead:
		return ErrTerminated
	}
	return ErrNotSpawned
}

// Send queues msg for the actor of c, to be delivered by calling the
// behaviour fn (a func(*A, *M) Allocation stored as a pointer; see
// behaviourFunc). mc is the message's status cell. It allocates nothing once
// the destination copy queue has grown to its working size.
//
// The local path: when the destination mailbox is being processed and the
// caller is the very goroutine draining it (a behaviour of an actor on that
// mailbox, sending to an actor on the same mailbox, such as itself), the
// envelope is appended to the batch being drained: no lock, no atomic write.
// Recognising the caller costs one load of the mailbox word (which the
// locked path needs anyway), and only when that word says "processing" a
// load of the drainer and of the caller's goroutine identity. Every field
// of the drainer that the local path touches is read only after the
// identity matched, that is, by the drainer's own goroutine.
func Send(c *Cell, fn unsafe.Pointer, msg any, mc *MsgCell) error {
	st := c.state.Load()
	if st&cellKindMask != cellAlive {
		return stateErr(st)
	}
	moff := uintptr(unsafe.Pointer(mc)) - uintptr(efaceData(msg))
	if moff > math.MaxUint32 {
		panic("executor: the message's MsgCell is not inside the message")
	}
	mb := c.mb.Load()
	// goid.Supported is a constant: where goroutine identity is not
	// available (Get returns 0 for every goroutine), the local path is
	// compiled out and every send takes the mailbox.
	if goid.Supported && mb.word.Load()&wordProcessing != 0 {
		if d := mb.drainer.Load(); d != nil && d.g.Load() == goid.Get() && d.cur == mb && d.buf.Pushed() < d.localLimit {
			// We are d's goroutine, inside a behaviour of the batch it is
			// draining: append to that batch. Per-sender FIFO holds: every
			// earlier send from here to this mailbox during this batch was
			// appended too (the batch only grows, so once it reaches
			// localLimit every later send of the batch goes to the mailbox),
			// and earlier batches were drained before this one began.
			d.buf.Next().set(c, fn, msg, uint32(moff), st)
			return nil
		}
	}
	if !mb.push(c, fn, msg, uint32(moff), st) {
		return ErrStopped
	}
	c.exec.Load().notify(mb)
	return nil
}

// notify wakes the owner of mb if it is parked. Called after every push into
// mb (after the unlock that published it). When no worker sleeps this is one
// atomic load.
//
// This is the sender's half of the lost-wake-up protocol (the sleeper's half
// is on worker.park): publish (the push's unlocking store of the mailbox
// word), then load sleepers, then, if someone sleeps, load the mailbox's
// owner and move it from parked to woken with a CAS. Every one of these is a
// sequentially consistent atomic, as are the sleeper's store of its state,
// its increment of sleepers and its re-check of its mailboxes; in their total
// order, either the sleeper's re-check follows our publish (it sees the
// message and does not sleep) or our load of sleepers follows its increment
// (we see it, and its state, stored before the increment, reads parked).
// mb.owner is exact whenever the mailbox is reachable through the slots
// (thieves rewrite it only while it is not: see stealHooks); a sender that
// read the owner just before a swap published it wakes the previous owner,
// and the thief's own post-swap check covers the new one.
func (e *Executor) notify(mb *mailbox) {
	if e.sleepers.Load() == 0 {
		return
	}
	if o := mb.owner.Load(); o != nil {
		o.wake()
	}
}

// wakeAll wakes every parked worker (for shutdown).
func (e *Executor) wakeAll() {
	for _, w := range e.workers {
		if w != nil {
			w.wake()
		}
	}
}

// recordPanic stores a panic report for Stop and passes it to OnError.
func (e *Executor) recordPanic(err *PanicError) {
	e.errMu.Lock()
	if len(e.panics) < maxKeptPanics {
		e.panics = append(e.panics, err)
	}
	e.panicsN++
	e.errMu.Unlock()
	if e.cfg.OnError != nil {
		e.callOnError(err)
	}
}

// callOnError calls Config.OnError, recovering a panic in it (which would
// otherwise escape the worker's own recovery and end the process); that
// panic is recorded like any other.
func (e *Executor) callOnError(err *PanicError) {
	defer func() {
		if r := recover(); r != nil {
			e.errMu.Lock()
			if len(e.panics) < maxKeptPanics {
				e.panics = append(e.panics, &PanicError{Value: r, Stack: debug.Stack(), Worker: err.Worker,
					Actor: err.Actor, Message: err.Message})
			}
			e.panicsN++
			e.errMu.Unlock()
		}
	}()
	e.cfg.OnError(err)
}

// Live returns the number of live actors.
func (e *Executor) Live() int64 { return e.live.Load() }

// Stop waits until every actor has terminated, then stops the workers and
// closes the mailboxes. If ctx ends first, Stop shuts the executor down
// anyway (each worker finishes the behaviour it is running, if any, and drops
// the rest of its batch) and returns an error wrapping ErrActorsAlive and
// ctx.Err() that says how many actors were still alive.
//
// The error also reports, joined: every panic recovered during the run
// (*PanicError, errors.Is(err, ErrPanic)), and ErrUndelivered with the number
// of messages that were never delivered (sent to actors that had terminated,
// or still queued at the end). Stop returns nil when all is well. Calling Stop
// again returns ErrStopped; calling it from a behaviour returns
// ErrStopInBehaviour and stops nothing.
func (e *Executor) Stop(ctx context.Context) error {
	if e == nil {
		return ErrNotStarted
	}
	if e.inBehaviour() {
		return ErrStopInBehaviour
	}
	if !e.stopCalled.CompareAndSwap(false, true) {
		return ErrStopped
	}
	var errs []error
	for {
		if e.live.Load() == 0 {
			e.stopping.Store(true)
			if e.live.Load() == 0 {
				break
			}
			// A Spawn raced with us. It either saw stopping (and will undo
			// its increment) or its actor is legitimately alive: reopen and
			// wait for it like any other.
			e.stopping.Store(false)
		}
		select {
		case <-e.zero:
			continue
		case <-ctx.Done():
		}
		if e.live.Load() == 0 {
			continue // finished just as the context ended: a clean stop
		}
		e.stopping.Store(true)
		e.forced.Store(true)
		errs = append(errs, fmt.Errorf("%w: %d actors still alive when the context ended: %w",
			ErrActorsAlive, e.live.Load(), context.Cause(ctx)))
		break
	}
	e.shutdown.Store(true)
	e.wakeAll()
	if !e.waitWorkers(forcedStopGrace) {
		// A worker is inside a behaviour that does not return. Stop does
		// not hang with it: the worker exits when the behaviour returns,
		// and its remaining batch is lost (it is not in the count below).
		errs = append(errs, fmt.Errorf("%w: a worker is still running a behaviour %v after the stop; it exits when the behaviour returns",
			ErrActorsAlive, forcedStopGrace))
	}

	var dead uint64
	for _, w := range e.workers {
		w.pubMu.Lock() // each worker published at exit
		dead += w.pub.DeadLetters
		w.pubMu.Unlock()
	}
	queued := int64(0)
	for _, m := range e.mailboxes {
		queued += int64(m.close())
	}
	for _, m := range e.spares {
		m.close()
	}
	dropped := e.undeliver.Load()
	e.errMu.Lock()
	errs = append(errs, e.panics...)
	if extra := e.panicsN - len(e.panics); extra > 0 {
		errs = append(errs, fmt.Errorf("%w: %d more panics not kept", ErrPanic, extra))
	}
	e.errMu.Unlock()
	if total := int64(dead) + queued + dropped; total > 0 {
		errs = append(errs, fmt.Errorf("%w: %d messages (%d sent to terminated actors, %d still queued at stop, %d dropped from batches at a forced stop)",
			ErrUndelivered, total, dead, queued, dropped))
	}
	return errors.Join(errs...)
}

// forcedStopGrace bounds how long a forced Stop waits for workers to leave
// the behaviours they are running.
const forcedStopGrace = time.Second

// waitWorkers waits for every worker goroutine to exit. After a normal stop
// they all do promptly (no actor is alive, so no behaviour runs). After a
// forced stop a worker may be inside a long behaviour: then it gives up
// after grace and reports false.
func (e *Executor) waitWorkers(grace time.Duration) bool {
	done := make(chan struct{})
	go func() {
		e.wg.Wait()
		close(done)
	}()
	if !e.forced.Load() {
		<-done
		return true
	}
	select {
	case <-done:
		return true
	case <-time.After(grace):
		return false
	}
}

// Stats returns a snapshot of the statistics. Workers publish their private
// counters when asked: Stats asks, then waits (up to about 10ms) for every
// worker that is not parked to answer at the end of its current pass.
// Workers that do not answer in time (a long behaviour) are listed in Stale
// with their previously published counters. Safe to call while running and
// after Stop.
func (e *Executor) Stats() Stats {
	s := Stats{Workers: make([]WorkerStats, len(e.workers)), Queues: len(e.mailboxes), SpareQueues: len(e.spares)}
	epoch := e.statsEpoch.Add(1)
	if w := e.current(); w != nil {
		w.publish(epoch) // called from a behaviour: its own worker cannot answer otherwise
	}
	deadline := time.Now().Add(10 * time.Millisecond)
	for i, w := range e.workers {
		for !w.answered(epoch) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Microsecond)
		}
		if !w.answered(epoch) {
			s.Stale = append(s.Stale, i)
		}
		w.pubMu.Lock()
		s.Workers[i] = w.pub
		w.pubMu.Unlock()
		if w.state.Load() == workerParked {
			s.ParkedWorkers++
		}
	}
	s.ExternalActorsCreated = e.extCreated.Load()
	s.LiveActors = e.live.Load()
	for _, m := range e.mailboxes {
		s.QueuedMessages += m.queued()
		s.MessagesSent += m.sentCount()
	}
	for i := range s.Workers {
		s.MessagesSent += s.Workers[i].LocalSends
	}
	return s
}
