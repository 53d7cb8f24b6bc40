package executor

import (
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/actord/actord/internal/affinity"
	"github.com/actord/actord/internal/copyq"
	"github.com/actord/actord/internal/event"
	"golang.org/x/sys/cpu"
)

// Worker states (worker.state).
const (
	workerRunning uint32 = iota // awake: scanning, processing, spinning or stealing
	workerParked                // asleep, or about to sleep, on its event
	workerWoken                 // moved out of parked by another goroutine (any caller of wake or wakeOnly)
	workerExited                // the worker goroutine has returned
	// workerLent: parked, and lent to a goroutine outside the system that
	// serves one of its mailboxes as this worker (see help.go). Only that
	// goroutine moves it out of this state, back to parked.
	workerLent
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
	// slowID is the goroutine id from goid.Slow: the worker's key in
	// running where goid.Get is not supported (key). Written by register
	// and retire, read by key, all on the worker's own goroutine.
	slowID atomic.Uint64
	rng    *rand.Rand
	stats  bool // count hot-path statistics (!Config.NoStatistics)

	// Everything below, up to the padding, is touched only by the worker's
	// own goroutine (including behaviours it runs, through send, Spawn and
	// Message.SetAllocation, which recognise it by its identity).
	batch       // buf, cur, limit; and g, the worker goroutine's identity
	regulps int // times cur has been re-taken in this visit
	gulped  int // envelopes taken by the current gulp (the rest of buf came from local sends)
	// msgStatus is the allocation status the running behaviour set for
	// its message (Message.SetAllocation, which finds the message being
	// delivered as w.buf.LastPopped()); see deliver.go.
	msgStatus Allocation
	// mode is what this goroutine runs, for recovered, and end
	// runPlainEnd's data: written through the transitions beside runMode
	// (deliver.go), read by recovered and noteGoexit.
	mode        runMode
	end         plainEnd
	batchFrom   *mailbox // a mailbox refilled a little from outside during this pass (see batchwait.go)
	peerG       uintptr  // the last pusher noteRefill found to be a worker
	given       *mailbox // during steal: the mailbox the swap gave the victim
	taken       *mailbox // during steal: the mailbox the swap took from it
	spawned     int      // actors this worker placed (PlaceLocal round-robin)
	spinner     bool     // this worker holds one of the e.spinning places (see park.go)
	busyPasses  uint     // passes that found work (see pass: the backlog check)
	futexMisses int      // consecutive futex phases ended by their timeout (see futexWanted)
	// backlogSeen is set by steal when its attempt saw mailboxes of
	// another worker waiting (candidates), cleared when it saw none; read
	// by spinForBacklog. runqIdle caches "no goroutine runnable" for
	// procsSpare, read afresh when runqCalls is a multiple of runqEvery;
	// runq is the sample it reads into; running is wakeThief's.
	backlogSeen bool
	runqIdle    bool
	runqCalls   uint
	runq        []metrics.Sample
	running     []metrics.Sample
	// handoff is a mailbox of a parked worker that a behaviour run here
	// sent to without waking its owner: this worker serves it or wakes the
	// owner when the visit ends, and before it parks (see handoff.go).
	// Always one of e's mailboxes (mb.exec == e): only notify on mb.exec
	// sets it, and only for a worker of that executor (pushTo).
	handoff *mailbox
	// next is one of this worker's own mailboxes that a behaviour run
	// here sent to while some worker slept (set by notify, on this
	// goroutine), and follows the number of such mailboxes afterVisit
	// has visited since the pass began: see "Following the chain" in
	// handoff.go. Like handoff, always one of e's mailboxes.
	next    *mailbox
	follows int
	// lastMsgType and lastIsReq cache mayBeRequest's answer for the last
	// message type it saw (the type word of the message interface).
	lastMsgType unsafe.Pointer
	lastIsReq   bool
	thiefWoken  time.Duration // when this worker last woke a thief (see pass), since e.epoch
	deferLook   time.Duration // when this worker last served deferred wake-ups during a pass (see pass), or looked at them during a batch (wakeDeferred), since e.epoch
	deferDelivs uint32        // delivs at the last look of wakeDeferred
	// cands are the candidates a thief is watching (see steal): each
	// mailbox with its word when first seen, and when.
	cands []candidate
	// watch is the visit counter of the last victim scanned, and when it
	// was first seen at that value: if it is unchanged StealAge later, the
	// victim is stuck in a long behaviour, and the thief gives it spares
	// rather than queues (see victimStuck).
	watch     victimWatch
	sup       workerSup   // the private queue's envelope, the spawn hook cache (deliverext.go)
	st        WorkerStats // private counters
	seenEpoch uint64      // last statsEpoch published
	exitOK    bool        // the loop returned normally (not by runtime.Goexit)
	// pendingPanic is runSupervising's data: a behaviour's panic that
	// recovered records after the termination it may start, and that
	// noteGoexit records in its stead if a Goexit unwinds past recovered.
	pendingPanic *PanicError
	termPanics   []*PanicError // the panics extTerm.run has yet to record
	// sleptLong is whether the worker's last sleep lasted threadSleep or
	// more (true before the first; a short sleep after an awake period
	// without messages leaves it as it was, see noteSleep). sleepAvg is a moving average of its
	// sleeps (each counted up to sleepAvgCap), and gulpAvg one of the
	// messages per gulp of its awake periods, in sixteenths; awakeGulps
	// and awakeMsgs count the gulps and messages of the awake period
	// under way (processGulped). spinShort is whether the sleeps before
	// the last one averaged threadSleepMid or more (a short spin follows).
	// All read by givesThread and spinDone: see "Giving the thread back"
	// in park.go.
	sleptLong             bool
	spinShort             bool
	sleepAvg              time.Duration
	gulpAvg               int
	awakeGulps, awakeMsgs int
	// stallFrom and stallTakes count the stalled victims' candidates this
	// worker took as a thief since stallFrom (see servesInPlace).
	stallFrom  time.Duration
	stallTakes int
	// spareTo, spareSeq and spareAt are the stuck victim, its visit
	// counter and the time of the last stuck episode this worker gave a
	// spare for as a thief; spareAll says that episode followed another
	// closely (see givesSpare).
	spareTo  *worker
	spareSeq uint32
	spareAt  time.Duration
	spareAll bool

	_ cpu.CacheLinePad
	// state is the parking protocol word (workerRunning, ...). Written by
	// the worker (parked, running, exited) and by wakers (CAS parked ->
	// woken); read by wakers and by Stats. The futex sleeps on it.
	state atomic.Uint32
	// watchWoken is set by the watcher just before it wakes this worker
	// (and cleared by it if the wake failed); swapped back by the worker
	// when it wakes, to count the wake-up as a timeout.
	watchWoken atomic.Bool
	// spinningNow mirrors spinner for the watcher: set and cleared by the
	// worker when it takes and gives back a spinning place (idle
	// transitions only); read by the watcher, which does not take a
	// spinning worker for a stuck one.
	spinningNow atomic.Bool
	// deferred is set by a sender outside the system whose push into a
	// mailbox of this parked worker left the wake-up to an awake worker
	// (D1, see defer.go), and cleared by the worker that then serves this
	// worker's mailboxes (serveDeferred); Executor.deferred counts the set
	// flags. Loaded by senders, who do nothing more while it is set.
	deferred atomic.Bool
	// threadless is set by the worker while it sleeps on the channel
	// without its thread (park, "Giving the thread back"), and cleared by
	// it when it wakes; loaded by senders outside the system that wake it,
	// which then yield to it (see wakeBySender). A stale value only makes
	// a sender yield when it need not, or not yield.
	threadless atomic.Bool
	// reclaimReq is set by the watcher before it wakes the worker to give
	// back its grown spare buffer, and swapped back by the worker when it
	// wakes (see reclaimIdle, reclaimOwn).
	reclaimReq atomic.Bool
	// lentWait is set by the worker while, in park, it waits for a caller
	// that borrowed it to give it back (waitLent); loaded by that caller
	// after it has, to signal the event (see help.go).
	lentWait atomic.Bool
	// lendGen is odd while the worker sleeps in park (the futex phase and
	// the channel), past every write it makes to its private fields before
	// waking: the only window in which a caller may borrow it (see
	// help.go). Written by the worker, read by lenders.
	lendGen atomic.Uint64
	// lentTail says that a helping caller stopped after a behaviour whose
	// statuses (lentStatus, the actor's; msgStatus, the message's) are
	// still to be applied, by the owner (see finishLent). Written by the
	// helper while it holds the worker, read and cleared by the owner
	// after the give-back.
	lentTail   bool
	lentStatus Allocation
	// lentExt, set with lentTail, is the extended actor whose delivery a
	// helping caller made last: its inExt marker is still set, for the
	// owner to clear (leftExt) after the statuses. lentPanic, set with
	// lentTail, is a panic or runtime.Goexit out of that delivery's
	// behaviour, which the owner recovers (supervision, termination,
	// watchers) instead of the helper. Same ownership as lentTail.
	lentExt   *Cell
	lentPanic *lentPanic
	// visitLeft is set by a helping caller that leaves the rest of a
	// visit to this worker (in its buffer), before it gives the worker
	// back, and cleared by the worker when it finishes that visit
	// (finishLent); lenders load it after their CAS and give the worker
	// back untouched while it is set (see help.go).
	visitLeft atomic.Bool
	// lent is this worker's entry in the table of helping callers
	// (lentTab, see help.go), filled by each caller that borrows it.
	lent lentEntry
	// ev is the worker's sleep: park waits on it with state as the word
	// (S4); wakers signal it after their CAS parked -> woken (wakeOnly).
	ev event.Event
	// futexPhase is how long park sleeps in the futex before the channel
	// (0: no futex phase). Set by newWorker; read by the worker.
	futexPhase time.Duration
	_          cpu.CacheLinePad
	// pub is the latest published copy of st, guarded by pubMu; pubEpoch is
	// the statsEpoch it answers. Written by the worker, read by Stats.
	pubMu    sync.Mutex
	pub      WorkerStats
	pubEpoch atomic.Uint64
	// closedDead counts the dead letters Stop found queued in this
	// worker's mailboxes when it closed them (mailbox.close). Added by
	// Stop, after the worker exited or Stop gave up on it; read by Stats,
	// which adds it to the worker's DeadLetters and sets it as the
	// worker's closed count, the messages taken from its mailboxes other
	// than by its gulps (the worker's own count, pub, knows nothing of
	// them). The pair of Stop's Add and Stats' Load orders nothing else:
	// a Stats that loads before the Add sees neither the letters taken
	// nor the dead letters, and MessagesProcessed is unchanged.
	closedDead atomic.Uint64
	// inExt is the extended actor whose code (behaviour, hooks, reset,
	// private queue) this worker is running, or nil: stored by the worker
	// before it runs that code and cleared after (deliverExtClaimed,
	// recovered, resume). Read by a forced Stop that gave up on this
	// worker, which leaves that actor's Stopped hook to nobody and runs the
	// others' (see deliverExtClaimed for the pairing with shutdown).
	inExt atomic.Pointer[Cell]
	// batchSeq's low 32 bits change at every mailbox visit (see
	// processCurrent; its re-takes of the mailbox are part of the visit)
	// and at every sleep (park): the watcher, and a thief (victimStuck),
	// see a worker stuck in one visit (a long behaviour, or a flooded
	// mailbox re-taken batch after batch) as the same value over time
	// while the worker is awake. Its high 32 bits are the
	// size of the batch being drained (as gulped; 0 while asleep), for Stop
	// to report the batch a stuck behaviour holds. Written by the worker at
	// each gulp and sleep; read by the watcher, thieves and Stop. seq is
	// the worker's own count.
	//
	// A visit stores batchSeq only if a reader has seen its latest value
	// (seenSeq) or the batch size changed (noteVisit): while nobody looks,
	// the visits that would only advance the counter skip the store, a
	// locked instruction. A reader that will compare the counter over time
	// loads it with visitSeq, which records it in seenSeq, so that the
	// next visit changes it: "no change since I looked" keeps its meaning.
	// stored is the latest value the worker stored (the worker's own).
	batchSeq atomic.Uint64
	seq      uint64
	stored   uint64
	// seenSeq is the latest value of batchSeq's low 32 bits that a reader
	// loaded through visitSeq. Written by readers (CAS, see visitSeq),
	// read by the worker at each visit (noteVisit). On batchSeq's line:
	// readers write it only after loading batchSeq, which the worker
	// writes.
	seenSeq atomic.Uint32
	// beat is the worker's count of delivered messages, stored every
	// beatEvery deliveries (drainBatch; delivs is the worker's own count):
	// with batchSeq it tells a thief whether a victim is serving its
	// mailboxes at all (victimStalled), where batchSeq alone would call a
	// long visit of many short behaviours a stall. Written by the worker,
	// read by thieves.
	beat   atomic.Uint32
	delivs uint32
}

func newWorker(e *Executor, id, lo, hi int) *worker {
	w := &worker{
		e: e, id: id, lo: lo, hi: hi, cpu: -1,
		rng:   rand.New(rand.NewPCG(uint64(id)+1, uint64(time.Now().UnixNano()))),
		stats: !e.cfg.NoStatistics,
		// The first look at deferred wake-ups during a pass is due at once.
		deferLook: -deferLookEvery,
	}
	w.buf = copyq.New[envelope](e.cfg.QueueCapacity)
	w.initPark()
	w.lent.w = w // see help.go
	return w
}

// initPark prepares the worker's sleep (see Config.Park). With ParkDefault
// it is a two-phase park whose futex phase at most GOMAXPROCS-1 workers
// (GOMAXPROCS at Start) are in at once (Executor.futexSlots): a worker in
// the futex keeps its processor in the system call, so at least one
// processor stays with the rest of the program, which needs it (the
// goroutines that send to the actors, timers, the network); with a single
// processor there is no futex phase. ParkTwoPhase lets every worker take
// the futex phase.
func (w *worker) initPark() {
	kind := event.Kind(w.e.cfg.Park)
	if kind == event.Default {
		kind = event.KindTwoPhase
	}
	w.ev.Init(kind)
	w.sleptLong = true // a worker's first sleep waits for the first work: as good as long
	if w.ev.Kind() == event.KindTwoPhase {
		w.futexPhase = event.TwoPhaseFutex
	}
}

// futexSlots is the initial Executor.futexSlots for cfg (see initPark).
func futexSlots(cfg Config) int32 {
	switch cfg.Park {
	case ParkTwoPhase:
		return int32(cfg.Workers)
	case ParkDefault:
		return int32(min(cfg.Workers, runtime.GOMAXPROCS(0)-1))
	}
	return 0
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
	w.e.register(w)
}

// exit runs when the worker goroutine ends. If a behaviour called
// runtime.Goexit, the goroutine is ending in the middle of a batch: a new
// goroutine takes over the worker and finishes the batch (the panic report
// was recorded by drainBatch), also during a stop, whose batch accounting
// (dead letters at a clean stop, dropped at a forced one; the gulp, the
// local sends, the mailbox's release) is drainBatch's.
func (w *worker) exit() {
	e := w.e
	// This goroutine's identity may be reused by a new goroutine once it
	// ends: withdraw it first (local sends and the identity tables).
	e.retire(w)
	if !w.exitOK {
		go w.resume()
		return // thread locked and not unlocked: the runtime discards it
	}
	w.stopSpinning()
	w.publish(e.statsEpoch.Load())
	w.state.Store(workerExited)
	if w.cpu < 0 {
		runtime.UnlockOSThread()
	}
	if int(e.exited.Add(1)) == len(e.workers) && e.shutdown.Load() && e.gaveUp.Load() {
		e.closed.Store(true) // no behaviour of e runs any more (see Executor.closed)
	}
	e.wg.Done()
}

// resume continues a worker whose goroutine was ended by runtime.Goexit.
func (w *worker) resume() {
	var err error
	w.start(&err) // pinning worked before; a failure now only loses the pinning
	defer w.exit()
	w.takeRun() // whatever the Goexit interrupted, nothing of it runs now
	w.termPanics = nil
	w.leaveExt() // a Goexit ended the code of an extended actor
	if w.cur != nil {
		w.processCurrent()
		if w.handoff != nil {
			w.afterVisit(false)
		}
	}
	w.loop()
	w.exitOK = true
}

// loop cycles over the worker's mailboxes until shutdown, which it checks
// before every pass, so that a forced stop ends it even under a steady
// stream of sends.
func (w *worker) loop() {
	e := w.e
	idle, visits := 0, 0 // consecutive passes without work, and the slots they visited
	for !e.shutdown.Load() {
		if w.pass() {
			idle, visits = 0, 0
			w.stopSpinning()
			continue
		}
		idle++
		visits += w.hi - w.lo
		spun := w.spinDone(idle, visits)
		// Steal every other idle pass, and always before parking, so that
		// no spin budget turns stealing off.
		if e.sel != nil && (idle%2 == 0 || spun) && w.steal() {
			idle, visits = 0, 0
			w.stopSpinning()
			continue
		}
		if spun {
			w.park()
			idle, visits = 0, 0
			if w.cur != nil {
				w.finishLent() // a visit a helping caller left to us (see help.go)
			}
		}
	}
}
