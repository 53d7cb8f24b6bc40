package executor

import (
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/actord/actord/internal/affinity"
	"github.com/actord/actord/internal/copyq"
	"github.com/actord/actord/internal/event"
	"github.com/actord/actord/internal/goid"
	"github.com/actord/actord/stealing"
	"golang.org/x/sys/cpu"
)

// Worker states (worker.state).
const (
	workerRunning uint32 = iota // awake: scanning, processing, spinning or stealing
	workerParked                // asleep, or about to sleep, on its event
	workerWoken                 // moved out of parked by another goroutine (sender, thief, releaser, Stop)
	workerExited                // the worker goroutine has returned
)

// worker is one executor thread: a goroutine locked to an OS thread that
// cycles over its own range of slots, gulps non-empty mailboxes, runs their
// behaviours, steals mailboxes when idle and parks when there is nothing to do.
type worker struct {
	e      *Executor
	id     int
	lo, hi int // owned slot range [lo, hi) of e.slots; immutable
	cpu    int // CPU to pin to, or -1
	gslot  int // index of this worker's entry in e.gtab
	// g is the worker goroutine's identity (goid.Get). Written by the
	// worker goroutine when it starts (or resumes after runtime.Goexit);
	// read by senders to recognise it (see Send).
	g atomic.Uintptr
	// slowID is the goroutine id from goid.Slow, for Stop's "called from a
	// behaviour?" check where goid.Get is not supported. Written by the
	// worker goroutine at start and exit; read by Stop.
	slowID atomic.Uint64
	rng    *rand.Rand
	stats  bool // count hot-path statistics (!Config.NoStatistics)

	// Everything below, up to the padding, is touched only by the worker's
	// own goroutine (including behaviours it runs, through Send and Spawn,
	// which recognise it with Executor.current).
	buf     copyq.Queue[envelope] // the gulped batch being drained, else an empty spare
	cur     *mailbox              // mailbox whose batch is in buf, nil between gulps
	regulps int                   // times cur has been re-taken in this visit
	// localLimit bounds local sends: they may append to buf while it holds
	// fewer than localLimit envelopes (the gulped ones plus
	// Config.LocalBatch). Set per batch; 0 between batches.
	localLimit int
	gulped     int           // envelopes taken by the current gulp (the rest of buf came from local sends)
	ending     *Cell         // actor whose termination hooks are running
	endingInc  uint32        // its incarnation (state word without the kind bits)
	given      *mailbox      // during steal: the mailbox the swap gave the victim
	taken      *mailbox      // during steal: the mailbox the swap took from it
	spawned    int           // actors this worker placed (PlaceLocal round-robin)
	idleWakes  int           // consecutive park timeouts without work since (see park)
	thiefWoken time.Duration // when this worker last woke a thief (see pass), since e.epoch
	// cands are the candidates a thief is watching (see steal): each
	// mailbox with its word when first seen, and when.
	cands []candidate
	// busy is a victim mailbox seen being processed (see steal): if it is
	// still processed by the same gulp StealAge later, its worker is stuck
	// in a long behaviour, and the thief gives it spares rather than queues.
	busy      candidate
	st        WorkerStats // private counters
	seenEpoch uint64      // last statsEpoch published
	exitOK    bool        // the loop returned normally (not by runtime.Goexit)

	_ cpu.CacheLinePad
	// state is the parking protocol word (workerRunning, ...). Written by
	// the worker (parked, running, exited) and by wakers (CAS parked ->
	// woken); read by wakers and by Stats. The futex sleeps on it.
	state atomic.Uint32
	ev    event.Event
	_     cpu.CacheLinePad
	// pub is the latest published copy of st, guarded by pubMu; pubEpoch is
	// the statsEpoch it answers. Written by the worker, read by Stats.
	pubMu    sync.Mutex
	pub      WorkerStats
	pubEpoch atomic.Uint64
}

func newWorker(e *Executor, id, lo, hi int) *worker {
	w := &worker{
		e: e, id: id, lo: lo, hi: hi, cpu: -1,
		rng:   rand.New(rand.NewPCG(uint64(id)+1, uint64(time.Now().UnixNano()))),
		stats: !e.cfg.NoStatistics,
		buf:   copyq.New[envelope](e.cfg.QueueCapacity),
	}
	w.ev.Init(e.cfg.Event)
	return w
}

// run is the worker goroutine. ready is signalled once the worker is
// registered (or failed to pin, with *errp set).
func (w *worker) run(ready *sync.WaitGroup, errp *error) {
	w.start(errp)
	ready.Done()
	if *errp != nil {
		w.exitOK = true
		w.exit()
		return
	}
	defer w.exit()
	w.loop()
	w.exitOK = true
}

// start locks the goroutine to its thread, pins it and registers its identity.
func (w *worker) start(errp *error) {
	runtime.LockOSThread()
	if w.cpu >= 0 {
		if err := affinity.Pin(w.cpu); err != nil {
			*errp = err
		}
	}
	g := goid.Get()
	w.g.Store(g)
	w.slowID.Store(goid.Slow())
	w.e.register(w, g)
}

// exit runs when the worker goroutine ends. If a behaviour called
// runtime.Goexit, the goroutine is ending in the middle of a batch: a new
// goroutine takes over the worker and finishes the batch (the panic report
// was recorded by drainBatch).
func (w *worker) exit() {
	// This goroutine's identity may be reused by a new goroutine once it
	// ends: withdraw it first (local sends and the identity table).
	w.g.Store(0)
	w.slowID.Store(0)
	w.e.retire(w)
	if !w.exitOK {
		if !w.e.shutdown.Load() {
			go w.resume()
			return // thread locked and not unlocked: the runtime discards it
		}
		n := w.buf.Len() // the rest of the interrupted batch
		w.st.Dropped += uint64(n)
		w.e.undeliver.Add(int64(n))
	}
	w.publish(w.e.statsEpoch.Load())
	w.state.Store(workerExited)
	if w.cpu < 0 {
		runtime.UnlockOSThread()
	}
	w.e.wg.Done()
}

// resume continues a worker whose goroutine was ended by runtime.Goexit.
func (w *worker) resume() {
	var err error
	w.start(&err) // pinning worked before; a failure now only loses the pinning
	defer w.exit()
	if w.cur != nil {
		w.processCurrent()
	}
	w.loop()
	w.exitOK = true
}

// loop cycles over the worker's mailboxes until shutdown.
func (w *worker) loop() {
	e := w.e
	idle := 0 // consecutive passes without work
	for {
		if w.pass() {
			idle = 0
			w.idleWakes = 0
			continue
		}
		if e.shutdown.Load() {
			return
		}
		idle++
		// The chapter: steal after two consecutive passes without work,
		// and again after every two more.
		if e.sel != nil && idle%2 == 0 && w.steal() {
			idle = 0
			w.idleWakes = 0
			continue
		}
		if idle >= e.cfg.SpinPasses {
			w.park()
			idle = 0
		}
	}
}

// pass visits each owned slot once, gulping and processing every non-empty
// mailbox that is not being processed elsewhere. It reports whether it found
// work.
func (w *worker) pass() bool {
	e := w.e
	if ep := e.statsEpoch.Load(); ep != w.seenEpoch {
		w.publish(ep)
	}
	busy := 0
	for i := w.lo; i < w.hi; i++ {
		mb := e.slots[i].Load() // nil only while this worker swaps it, never here
		if mb == nil {
			continue
		}
		word := mb.word.Load() // the unlocked emptiness test
		if wordLen(word) == 0 {
			continue
		}
		if word&wordProcessing != 0 {
			if w.stats {
				w.st.MissedGulps++
			}
			continue
		}
		n, missed := mb.gulp(&w.buf)
		if missed {
			if w.stats {
				w.st.MissedGulps++
			}
			continue
		}
		if n == 0 {
			continue
		}
		busy++
		if mb.drainer.Load() != w {
			mb.drainer.Store(w)
		}
		w.cur = mb
		w.regulps = 0
		w.gulped = n
		w.processCurrent()
	}
	// A backlog: after a pass, at least two owned mailboxes are waiting
	// again. (Counting busy mailboxes during the pass would not do: a chain
	// of single messages hopping from one mailbox to the next, which one
	// worker serves best alone, looks busy too.) If others sleep, wake one
	// so it can steal (see wakeThief).
	if busy > 0 && e.sel != nil && e.sleepers.Load() != 0 && w.waiting(2) {
		// At most once per steal age: a thief woken sooner could not take
		// anything yet (candidates must age), and each wake costs this busy
		// worker a wake-up and the sleeper a spin over our mailbox words.
		if now := time.Since(e.epoch); now-w.thiefWoken >= e.cfg.StealAge {
			w.thiefWoken = now
			w.wakeThief()
		}
	}
	return busy > 0
}

// processCurrent drains the batch of w.cur, re-taking the mailbox while it
// refilled meanwhile (up to Config.Regulps times), then releases it.
func (w *worker) processCurrent() {
	e, mb := w.e, w.cur
	for {
		w.localLimit = w.gulped + e.cfg.LocalBatch
		w.drain()
		w.localLimit = 0
		w.st.LocalSends += uint64(w.buf.Pushed() - w.gulped) // always: Stats.MessagesSent needs it
		if w.stats {
			w.st.GulpSize.Observe(uint64(w.gulped))
		}
		w.buf.Reset(e.cfg.QueueCapacity)
		regulp := w.regulps < e.cfg.Regulps && !e.shutdown.Load()
		n, left := mb.release(&w.buf, regulp)
		if n == 0 {
			w.cur = nil
			// Messages arrived while we held the mailbox, but it is not
			// ours to re-take: if its owner (a thief took it) sleeps,
			// wake it. Pairs with the owner's announce-then-recheck in park.
			if left > 0 && e.sleepers.Load() != 0 {
				if o := mb.owner.Load(); o != nil && o != w {
					o.wake()
				}
			}
			return
		}
		w.regulps++
		w.gulped = n
	}
}

// drain delivers every envelope of the batch, recovering from panics.
func (w *worker) drain() {
	for !w.drainBatch() {
	}
}

// drainBatch delivers envelopes until the batch is empty and returns true.
// If a behaviour panics it returns false after recording the panic, and
// drain calls it again for the rest of the batch. The deferred function runs
// once per batch, not per message (a deferred call in a loop would not be
// open-coded and would cost every message).
func (w *worker) drainBatch() (done bool) {
	defer func() {
		if !done {
			r := recover()
			w.recovered(r, r == nil) // r == nil: runtime.Goexit is unwinding us
		}
	}()
	e := w.e
	for {
		env := w.buf.PopRef() // after a panic, w.buf.LastPopped() is the culprit
		if env == nil {
			return true
		}
		if e.shutdown.Load() {
			// Stopping with messages left: after a normal stop (no actor
			// alive) they are dead letters; after a forced stop, dropped.
			n := uint64(1 + w.buf.Len())
			if e.forced.Load() {
				w.st.Dropped += n
				e.undeliver.Add(int64(n))
			} else {
				w.st.DeadLetters += n
			}
			for w.buf.PopRef() != nil {
			}
			return true
		}
		// Deliver, inline (this loop is the executor's innermost): run the
		// behaviour, then apply the actor's and the message's statuses. The
		// actor must still be in the incarnation the envelope was sent to.
		c := env.cell
		if c.state.Load() != env.want {
			w.st.DeadLetters++
			continue
		}
		status := env.call()
		if status != Nodelete {
			w.terminate(c, env.want, status)
		}
		if mc := env.mcell(); mc.status != Nodelete {
			w.messageDone(env, mc)
		}
	}
}

// messageDone applies a message's Delete or Destroy status: the status is
// reset to Nodelete (so a pooled message comes back clean), then the Destroy
// and, for Delete, Release hooks run. Finished needs no action.
func (w *worker) messageDone(env *envelope, mc *MsgCell) {
	ms := mc.status
	if ms != Delete && ms != Destroy {
		return
	}
	mc.status = Nodelete
	if d, ok := env.msg.(Destroyer); ok {
		d.Destroy()
	}
	if ms == Delete {
		if r, ok := env.msg.(Releaser); ok {
			r.Release()
		}
	}
}

// terminate ends the incarnation of actor c whose alive state word is
// alive, with status st. In order: if there is a Destroy hook to run, the
// state becomes ending (sends fail, Spawn refuses) and the hook runs; the
// state becomes dead (from here the storage may be reused: Spawn accepts it
// again); the Release hook runs
// (typically returning the object to a pool, so it must be the last use of
// the object), and the live count drops (so Stop returns only after every
// hook ran). After the dead store nothing here touches c or its object
// except through the local obj passed to Release.
func (w *worker) terminate(c *Cell, alive uint32, st Allocation) {
	inc := alive &^ cellKindMask
	obj := c.obj
	w.st.ActorsTerminated++
	var destroyer Destroyer
	if st == Delete || st == Destroy {
		destroyer, _ = obj.(Destroyer)
	}
	if destroyer != nil {
		c.state.Store(inc | cellEnding)
		w.ending, w.endingInc = c, inc
		destroyer.Destroy()
	}
	c.state.Store(inc | cellDead)
	if st == Delete {
		w.ending, w.endingInc = c, inc // a panicking Release still ends this termination
		if r, ok := obj.(Releaser); ok {
			r.Release()
		}
	}
	w.ending = nil
	w.e.actorGone()
}

// recovered handles a panic (or runtime.Goexit) out of a behaviour or hook:
// the actor is terminated (if its termination was underway, it completes),
// and the panic is recorded with its stack.
func (w *worker) recovered(r any, goexit bool) {
	env := w.buf.LastPopped() // the envelope being delivered
	c := env.cell
	stack := debug.Stack()
	w.st.Panics++
	obj := c.obj
	switch {
	case w.ending == c:
		// A termination hook panicked: finish that termination. If Destroy
		// panicked the state is still ending; if Release panicked it is
		// dead, or already a new incarnation that must not be touched.
		c.state.CompareAndSwap(w.endingInc|cellEnding, w.endingInc|cellDead)
		w.ending = nil
		w.e.actorGone()
	case c.state.CompareAndSwap(env.want, env.want&^cellKindMask|cellDead):
		// The behaviour (or a message hook) panicked while this incarnation
		// was alive: terminate it, without hooks.
		w.st.ActorsTerminated++
		w.e.actorGone()
	}
	w.e.recordPanic(&PanicError{Actor: obj, Message: env.msg, Value: r, Goexit: goexit, Stack: stack, Worker: w.id})
}

// publish copies the private counters to pub for Stats.
func (w *worker) publish(epoch uint64) {
	w.pubMu.Lock()
	w.pub = w.st
	w.pubMu.Unlock()
	w.seenEpoch = epoch
	w.pubEpoch.Store(epoch)
}

// answered reports whether w's published counters are fresh for epoch: it
// published for that epoch, or it is asleep or gone (it published before).
func (w *worker) answered(epoch uint64) bool {
	return w.pubEpoch.Load() >= epoch || w.state.Load() != workerRunning
}

// waiting reports whether at least n owned mailboxes hold envelopes and are
// not being processed.
func (w *worker) waiting(n int) bool {
	for i := w.lo; i < w.hi; i++ {
		if mb := w.e.slots[i].Load(); mb != nil && isCandidate(mb) {
			if n--; n == 0 {
				return true
			}
		}
	}
	return false
}

// hasWork reports whether an owned mailbox holds envelopes and is not being
// processed elsewhere (a mailbox being processed elsewhere is handed back
// with a wake-up by its releaser, see processCurrent).
func (w *worker) hasWork() bool {
	for i := w.lo; i < w.hi; i++ {
		if mb := w.e.slots[i].Load(); mb != nil {
			if word := mb.word.Load(); wordLen(word) > 0 && word&wordProcessing == 0 {
				return true
			}
		}
	}
	return false
}

// park puts the worker to sleep until a sender (or thief, releaser, Stop)
// wakes it or Config.ParkTimeout passes.
//
// Lost wake-up freedom. The sleeper (here) does: announce (state = parked;
// sleepers += 1), then re-check every owned mailbox. A sender does: publish
// (the push's unlocking store), then load sleepers, and if non-zero load the
// mailbox's owner and CAS its state parked -> woken. All of these are
// sequentially consistent atomics, so in their single total order either the
// sleeper's re-check comes after the sender's publish (and sees the message),
// or the sender's load of sleepers comes after the sleeper's increment (and
// it wakes the sleeper; its CAS cannot miss state == parked, which was stored
// before the increment). This is the runtime/proc.go discipline for spinning
// Ms: "publish, barrier, check sleepers" against "announce, barrier, re-check".
// Releasers and thieves follow the sender's side of the same protocol.
func (w *worker) park() {
	e := w.e
	w.publish(e.statsEpoch.Load()) // Stats does not wait for sleepers: publish first
	// Announce: count ourselves as a sleeper BEFORE becoming parked, so
	// that a waker (which moves us out of parked and then decrements
	// sleepers) can never decrement before our increment: sleepers never
	// undercounts the parked workers, which would let a sender skip the
	// wake-up of another sleeper.
	e.sleepers.Add(1)
	w.state.Store(workerParked)
	if e.shutdown.Load() || w.hasWork() {
		// Work arrived meanwhile: do not sleep.
		if w.state.CompareAndSwap(workerParked, workerRunning) {
			e.sleepers.Add(-1)
		} else {
			w.state.Store(workerRunning) // a waker beat us to it (and decremented)
		}
		return
	}
	w.st.Parks++
	w.publish(e.statsEpoch.Load()) // with this park counted
	start := time.Now()
	timeout := e.cfg.ParkTimeout
	if timeout > 0 {
		// Back off: each timeout that found no work doubles the next one.
		for i := 0; i < w.idleWakes && timeout < e.cfg.ParkTimeoutMax; i++ {
			timeout *= 2
		}
		timeout = min(timeout, e.cfg.ParkTimeoutMax)
	}
	for {
		wait := time.Duration(0)
		if timeout > 0 {
			if wait = timeout - time.Since(start); wait <= 0 {
				if w.state.CompareAndSwap(workerParked, workerRunning) {
					e.sleepers.Add(-1)
					w.st.WakeupsByTimeout++
					w.idleWakes++ // reset by loop as soon as there is work
				} else {
					w.st.WakeupsBySender++
				}
				break
			}
		}
		w.ev.Wait(&w.state, workerParked, wait)
		if w.state.Load() != workerParked {
			w.st.WakeupsBySender++
			break
		}
	}
	w.state.Store(workerRunning)
	w.st.ParkedTime += time.Since(start)
}

// wake moves w out of the parked state and wakes its goroutine, if it is
// parked, and reports whether it did; otherwise it does nothing. Any
// goroutine may call it.
func (w *worker) wake() bool {
	if w.state.Load() == workerParked && w.state.CompareAndSwap(workerParked, workerWoken) {
		w.e.sleepers.Add(-1)
		w.ev.Wake(&w.state)
		return true
	}
	return false
}

// wakeThief wakes one parked worker (the first after w in worker order) so
// that it can steal from w's backlog.
//
// How parked workers take part in stealing:
//  1. A busy worker that, after a pass, still has two or more mailboxes
//     waiting wakes one sleeper (here). The sleeper resumes as a spinning
//     thief, finds a candidate at w, and takes it once it has aged
//     (Config.StealAge). One wake per pass at most, and only while someone
//     sleeps, so a steadily busy system does not churn sleepers.
//  2. A worker stuck in a long behaviour cannot run passes, so it cannot do
//     (1). Its mailboxes are found by any worker that is awake (spinning
//     thieves look every two idle passes), or, when all others sleep, by
//     the park timeout: a parked worker wakes after Config.ParkTimeout
//     (doubling while it keeps finding nothing, up to ParkTimeoutMax),
//     spins, and steals what has aged.
//  3. Senders never wake a worker other than their mailbox's owner, and
//     never for stealing: sending stays one load when nobody sleeps.
func (w *worker) wakeThief() {
	ws := w.e.workers
	for k := 1; k < len(ws); k++ {
		o := ws[(w.id+k)%len(ws)]
		if o.wake() {
			w.st.StealWakeups++
			return
		}
	}
}

// stealHooks keeps mailbox owners exact across a swap: each mailbox's owner
// is written while the mailbox is unreachable through the slots (see
// stealing.Hooks), so a concurrent thief can never overwrite a newer owner
// with an older one.
type stealHooks struct{ thief, victim *worker }

func (h stealHooks) Giving(q *mailbox)   { q.owner.Store(h.victim); h.thief.given = q }
func (h stealHooks) Ungiving(q *mailbox) { q.owner.Store(h.thief) }
func (h stealHooks) Taking(q *mailbox)   { q.owner.Store(h.thief); h.thief.taken = q }

// victimStuck reports whether the batch w saw being processed at its victim
// is still the same one StealAge or more later: a behaviour that long means
// the victim is stuck, and must not be given queues with actors on them.
func (w *worker) victimStuck(now time.Duration) bool {
	b := w.busy
	if b.mb == nil {
		return false
	}
	word := b.mb.word.Load()
	if word&wordProcessing == 0 || word&wordSeqMask != b.word&wordSeqMask {
		w.busy = candidate{} // that batch is over
		return false
	}
	return now-b.since >= w.e.cfg.StealAge
}

// candidate is a mailbox a thief saw waiting (see steal).
type candidate struct {
	mb    *mailbox
	word  uint64        // its word when first seen (the gulp sequence matters)
	since time.Duration // when, since the executor's epoch
}

// steal makes one steal attempt, as the chapter describes: choose a victim,
// scan its slots from a random start for candidates (non-nil, non-empty,
// not being processed), and try ONE wait-free swap with a slot of our own.
// Whatever the outcome, the caller goes back to its own slots. It reports
// whether a non-empty mailbox was taken.
//
// Aging (our addition): a candidate is swapped only once it has been waiting
// for Config.StealAge: the thief remembers every candidate it saw at the
// victim, with its word and the time, and at later attempts checks (one load
// each) which are still candidates with the same gulp sequence, i.e. have
// not been served since. A mailbox its owner serves promptly (the owner is
// busy, not stuck) is left alone, so sequential work such as a chain of
// single messages is not dragged between cores, and a busy but balanced
// system does not churn its queues between workers. A backlog the owner
// cannot keep up with, or mailboxes stuck behind a long behaviour, are
// taken once they have aged: one per attempt, and after a sleep all the
// remembered ones that waited through it, without a new wait each.
// Watching candidates costs the victim only those loads.
func (w *worker) steal() bool {
	e := w.e
	e.sel.Attempt(w.id) // this worker is looking for work: not a good victim
	now := time.Since(e.epoch)
	ready := -1
	keep := w.cands[:0]
	for _, c := range w.cands {
		word := c.mb.word.Load()
		if !isCandidateWord(word) || word&wordSeqMask != c.word&wordSeqMask {
			continue // served (or emptied) since we saw it
		}
		if ready < 0 && now-c.since >= e.cfg.StealAge {
			if i := e.slotOf(c.mb, w); i >= 0 {
				ready = i
				continue // tried now: not kept
			}
		}
		keep = append(keep, c)
	}
	clear(w.cands[len(keep):]) // drop references to mailboxes no longer watched
	w.cands = keep
	if ready >= 0 {
		w.st.StealAttempts++
		return w.trySteal(ready, w.victimStuck(now))
	}
	if len(w.cands) > 0 {
		return false // still waiting for them to age
	}
	w.st.StealAttempts++
	v := e.sel.Victim(w.id, w.rng)
	if v < 0 {
		w.st.StealNoCandidate++
		return false
	}
	vw := e.workers[v]
	span := vw.hi - vw.lo
	start := w.rng.IntN(span)
	for k := 0; k < span; k++ {
		i := vw.lo + (start+k)%span
		mb := e.slots[i].Load()
		if mb == nil {
			continue // another thief is mid-swap on this slot
		}
		word := mb.word.Load()
		if isCandidateWord(word) {
			if e.cfg.StealAge < 0 {
				return w.trySteal(i, false)
			}
			w.cands = append(w.cands, candidate{mb: mb, word: word, since: now})
		} else if word&wordProcessing != 0 && (w.busy.mb == nil || w.busy.mb.word.Load()&(wordProcessing|wordSeqMask) != w.busy.word&(wordProcessing|wordSeqMask)) {
			w.busy = candidate{mb: mb, word: word, since: now} // a new batch to watch
		}
	}
	if len(w.cands) == 0 {
		w.st.StealNoCandidate++
	}
	return false
}

// isCandidate reports whether mb is worth stealing: non-empty and not being
// processed (a racy test; the swap itself is what must be correct).
func isCandidate(mb *mailbox) bool { return isCandidateWord(mb.word.Load()) }

func isCandidateWord(word uint64) bool {
	return wordLen(word) > 0 && word&wordProcessing == 0
}

// slotOf returns the slot index holding mb if it is in another worker's
// range (the owner field says whose), or -1.
func (e *Executor) slotOf(mb *mailbox, thief *worker) int {
	o := mb.owner.Load()
	if o == nil || o == thief {
		return -1
	}
	for i := o.lo; i < o.hi; i++ {
		if e.slots[i].Load() == mb {
			return i
		}
	}
	return -1
}

// nextLocal returns the next of w's own mailboxes, round-robin, that is not
// a spare, for PlaceLocal; nil if all of w's slots hold spares. Own slots
// are nil only during w's own swaps, and a behaviour never runs inside one.
func (w *worker) nextLocal() *mailbox {
	span := w.hi - w.lo
	for k := 0; k < span; k++ {
		mb := w.e.slots[w.lo+w.spawned%span].Load()
		w.spawned++
		if !mb.spare {
			return mb
		}
	}
	return nil
}

// giveSlot returns the own slot to give the victim in a swap. Normally a
// random own mailbox that is not a spare, as in the chapter: queues are
// exchanged one for one, so both workers keep as many queues with actors as
// before and a busy, balanced system stays balanced. When the victim is
// stuck in a long behaviour, a spare if w holds one: none of w's actors
// then end up waiting behind the stuck behaviour.
func (w *worker) giveSlot(victimStuck bool) int {
	span := w.hi - w.lo
	start := w.rng.IntN(span)
	fallback := w.lo + start
	for k := 0; k < span; k++ {
		i := w.lo + (start+k)%span
		mb := w.e.slots[i].Load()
		if mb == nil {
			continue
		}
		if mb.spare == victimStuck {
			return i
		}
	}
	return fallback
}

// trySteal swaps victim slot i (where the candidate was found) with a slot
// of w's own (see giveSlot; victimStuck says whether to give a spare). The swap takes whatever slot i holds at that
// moment (usually the candidate; recorded by the Taking hook), and the
// victim is the worker that owns slot i's range, which never changes.
func (w *worker) trySteal(i int, victimStuck bool) bool {
	e := w.e
	vw := e.slotWorker[i]
	mine := w.giveSlot(victimStuck)
	if !stealing.TrySwapHooked(e.slots, i, mine, stealHooks{thief: w, victim: vw}) {
		w.st.StealFailedSwap++
		return false
	}
	n := w.taken.queued()
	w.taken = nil
	if n == 0 {
		w.st.EmptySteals++
	} else {
		w.st.StealSize.Observe(uint64(n))
	}
	// The mailbox we gave the victim may hold messages: if the victim
	// sleeps, wake it (pairs with its announce-then-recheck in park).
	if w.given.queued() > 0 && e.sleepers.Load() != 0 {
		vw.wake()
	}
	w.given = nil
	return n > 0
}
