package executor

import (
	"errors"
	"math"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/actord/actord/internal/erased"
	"github.com/actord/actord/internal/event"
	"github.com/actord/actord/internal/goid"
)

// Timers.
//
// Each executor has one timer set (Executor.timers). It costs nothing until
// the first timer is set: no goroutine, no time.Timer, no memory.
//
// A pending timer is one timerEntry, stored by value in a slab, plus its slab
// index (an int32) in a 4-ary min-heap ordered by deadline; periodic timers
// also keep their period in a side map. There is no goroutine or time.Timer
// per timer, and no allocation per one-shot timer; a periodic timer
// allocates its periodicTick, the message it sends at every firing.
//
// The slab is a list of fixed-size chunks of entries. Entries never move,
// because a handle (Timer) names its entry by slab index, checked against a
// generation; so the slab shrinks by whole chunks instead of by compaction:
// a new timer takes a free slot in the lowest chunk that has one, which keeps
// the pending timers packed in the low chunks, and a chunk whose last timer
// fires or is stopped is released (one empty chunk is kept as a spare, so that
// setting and cancelling one timer at a time allocates nothing; Stop drops
// it). Trailing released chunks are trimmed off the chunk list, and the heap
// slice, the chunk list and the period map are reallocated smaller when they
// fall to a quarter of their capacity. A freed entry is cleared at once: it
// keeps no reference to the message, the actor or the behaviour. What the
// slab cannot give back is a chunk that still holds a pending timer: after a
// mass cancellation, timers that stay pending keep their chunks until they
// fire or are stopped (at worst one chunk each), while new timers fill the
// holes in those chunks first.
//
// A handle's generation is 32 bits, drawn from one counter per set: a stale
// handle could name a later timer only if that timer took the same slot
// exactly a multiple of 2^32 timers later.
//
// One goroutine per executor drives the set (run): started by the first
// timer, it sleeps on one time.Timer reset to the earliest deadline, and a
// setter whose timer becomes the heap's root (an earlier deadline than any
// other) wakes it through a channel. At a deadline it sends the message
// through the port's send path, exactly as Port.Send does from a goroutine
// that is not a worker. Stop ends it (close): pending timers are dropped.
//
// # Precision
//
// An idle Go runtime waits for its timers in epoll with a timeout in whole
// milliseconds, so a runtime timer can fire up to a millisecond late. The
// goroutine therefore sleeps on its time.Timer only until nearWindow before
// the earliest deadline, and waits for the rest in the kernel: on an
// internal/event Event of kind KindFutex, a futex wait with a nanosecond
// timeout. A setter whose timer becomes the root ends that wait through the
// Event instead of the channel (see timers.sleep). The waiting thread is
// blocked in the system call for at most nearWindow, and keeps its processor
// until the runtime's monitor retakes it; so the goroutine waits in the
// kernel only while GOMAXPROCS > 1, and otherwise, like on platforms without
// futexes (where the Event falls back to a channel), waits on a runtime
// timer with the runtime's precision.
//
// # Locking, and what Stop guarantees
//
// Everything in the set is guarded by one mutex, timers.mu: setters (add),
// stoppers (Timer.Stop), the goroutine while it fires, and close take it.
// The goroutine fires due timers while holding it, at most fireBatch timers
// per hold so that setters and stoppers wait for a bounded batch of sends.
// Firing under the mutex makes Stop exact: Stop returns true if and only if
// the timer was still pending, and then nothing is delivered by it after
// Stop returns, periodic timers included (a periodic timer's firing still
// queued is discarded when it comes to be delivered: see periodicTick); a
// one-shot timer whose Stop returns false has fired (delivered, or counted
// dead) or was stopped before. The
// send itself never blocks (a mailbox lock, at worst a wake-up of a parked
// worker), and neither does an internal timeout's callback.
//
// A firing can run code that sets or stops timers, on the timer goroutine
// and with mu held: a send into a full DropOldest mailbox drops the oldest
// message, and a dropped request completes its AskAsync (which stops the
// ask's timeout) or calls its AskFunc function (user code, which may call
// SendAfter); an internal timeout's callback does the same. So add and
// Timer.Stop do not take mu when the caller is the timer goroutine inside a
// firing (timers.firing, below): mu is already held, by that very call
// chain. fire allows for what such a call changes: a timer stopped during
// its own firing is left alone afterwards (its generation has changed),
// and neither a new timer nor the removal of another can take the heap's
// root from the timer being fired (their deadlines are not earlier).
//
// Counters (pending, fired, dead) are atomics updated under the mutex and
// read without it by Stats.

// ErrBadPeriod: SendEvery with a period that is not positive.
var ErrBadPeriod = errors.New("executor: timer period must be positive")

const (
	// A chunk holds 1024 entries: 57,344 bytes, exactly 7 pages. Smaller
	// chunks would be small objects, which, holding pointers, carry an
	// 8-byte allocation header that pushes them into the next size class.
	timerChunkShift = 10
	timerChunkLen   = 1 << timerChunkShift
	timerChunkMask  = timerChunkLen - 1
	// fireBatch bounds the timers fired per hold of timers.mu.
	fireBatch = 64
	// minShrinkCap: slices (heap, chunk list) with at most this capacity
	// are never reallocated smaller.
	minShrinkCap = 256
	// noDeadline is fire's "no pending timer".
	noDeadline = math.MaxInt64
	// nearWindow: a deadline closer than this is waited for in the kernel
	// (see Precision above); it exceeds the runtime timers' millisecond
	// lateness, so the time.Timer set nearWindow ahead never fires late.
	nearWindow = 2 * time.Millisecond
	// timerNear is timers.sleep's value while the goroutine waits on ev.
	timerNear = 1
)

// timeouter is an internal timeout (see afterTimeout): its timedOut method
// is called on the timer goroutine, under timers.mu, and must not block or
// touch the timer set.
type timeouter interface{ timedOut() }

// timerEntry is one pending timer, or a free slot (gen == 0). 56 bytes.
type timerEntry struct {
	when int64          // deadline, in nanoseconds since the executor's epoch
	cell *Cell          // the port's cell; nil for an internal timeout (msg is then its timeouter)
	fn   unsafe.Pointer // the port's behaviour, erased
	msg  any            // the message, or the timeouter; nil while free
	coff uint32         // the port's cell offset inside the actor it was bound to
	want uint32         // the port's state word: the incarnation it was bound to
	gen  uint32         // pending: the generation handed to its Timer (never 0); free: 0
	pos  int32          // pending: its index in the heap; free: the next free slot of its chunk, or -1
}

type timerChunk [timerChunkLen]timerEntry

// chunkRef is one chunk of the slab and its allocation state.
type chunkRef struct {
	p    *timerChunk // nil once released
	free int32       // head of the chunk's free list (slots freed since it was taken), or -1
	used int32       // slots [used, timerChunkLen) have never been used since the chunk was taken: free, not listed
	live int32       // pending timers in the chunk
}

func (r *chunkRef) hasRoom() bool { return r.p == nil || r.free >= 0 || r.used < timerChunkLen }

// timers is an executor's timer set (see the top of this file).
type timers struct {
	// runner is the timer goroutine's identity (goid.Get where supported,
	// else goid.Slow), stored by it when it starts, read by floodYield.
	runner atomic.Uint64
	// firing is the timer goroutine's identity while it fires timers with
	// mu held, and 0 otherwise: stored by the goroutine after it takes mu
	// and cleared before it releases it. lock reads it to let the
	// goroutine reenter add and Timer.Stop from a firing (see Locking
	// above), and Stop reads it (inFiring) to refuse to run there; any
	// other goroutine reads 0 or an identity not its own.
	firing atomic.Uint64
	// mu guards every field from here to the counters. Taken by add,
	// Timer.Stop, the timer goroutine while it fires, and close.
	mu sync.Mutex
	// heap holds the slab indices of the pending timers, a 4-ary min-heap
	// on their deadlines; each pending entry's pos is its index here.
	heap   []int32
	chunks []chunkRef
	// hasRoom has bit i set when chunks[i] is released or has a free slot;
	// bits at len(chunks) and beyond are 0. Every word below roomLow is 0.
	hasRoom []uint64
	roomLow int
	spare   *timerChunk // an empty chunk kept for the next chunk taken, or nil
	// period maps the slab index of each pending periodic timer to its
	// period in nanoseconds; nil when there is none. periodPeak is its
	// largest size since it was last reallocated.
	period     map[int32]int64
	periodPeak int
	gen        uint32 // the last generation handed out (wraps, skipping 0)
	// closed is set by close: no timer is added, and the goroutine exits.
	closed bool
	// wake (capacity 1), quit and done belong to the timer goroutine: all
	// three are created by the first add, under mu, before it starts the
	// goroutine. add posts to wake (never blocking) when a new timer
	// becomes the heap's root; the goroutine receives from it while it
	// sleeps, so a post made at any time after it looked at the heap wakes
	// it. close closes quit, which the goroutine receives from, then waits
	// for done, which the goroutine closes as it exits.
	wake chan struct{}
	quit chan struct{}
	done chan struct{}
	// ev is the goroutine's near-deadline sleep (KindFutex), initialised
	// with the channels above. sleep is its state word, in the Event's
	// protocol (see internal/event): the goroutine stores timerNear under
	// mu before releasing it to wait, and 0 when the wait returns; add and
	// close, under mu, CAS it timerNear -> 0 and then Wake ev. The futex
	// compares the word in the kernel, so a CAS that precedes the wait
	// makes the wait return at once: no wake-up is lost.
	ev    event.Event
	sleep atomic.Uint32

	// pending counts message timers set and neither fired (one-shot),
	// stopped nor dropped; fired counts the firings sent: a one-shot's
	// when its send succeeds, a periodic timer's when its delivery begins
	// (runTick) or the executor drops it (periodicTick.lost), unless its
	// timer was stopped while it was queued (then neither); dead counts
	// firings whose send failed (the port's incarnation had terminated,
	// the executor stopped, or a full bounded mailbox refused the message)
	// and timers dropped by close. Internal timeouts are not counted.
	// Written with atomic adds, under mu except fired by runTick and lost;
	// read by stats without it.
	pending     atomic.Int64
	fired, dead atomic.Uint64
}

// Timer is a handle on a timer set by SendAfter or SendEvery: Stop cancels
// it. It is a small value (16 bytes); copy it freely. The zero Timer is no
// timer: its Stop returns false.
type Timer struct {
	ts  *timers
	idx int32  // slab index of the entry
	gen uint32 // the entry's generation when the timer was set
}

// Stop cancels the timer and reports whether it was pending. When it returns
// true, the timer delivers nothing after Stop returns (a periodic timer
// included); when it returns false, the timer had already fired (a one-shot
// timer: its message was delivered, or counted dead), had been stopped, was
// cancelled because its actor had terminated (a periodic timer), or was
// dropped when its system stopped. A Timer's slot may be reused by a later
// timer: Stop on the old handle does nothing to it. Stop never blocks for
// long (it waits, at most, for the timer goroutine to fire a small batch) and
// may be called from any goroutine, behaviours included.
func (t Timer) Stop() bool {
	ts := t.ts
	if ts == nil {
		return false
	}
	if ts.lock() {
		defer ts.mu.Unlock()
	}
	ci := int(t.idx >> timerChunkShift)
	if ci >= len(ts.chunks) || ts.chunks[ci].p == nil {
		return false
	}
	en := &ts.chunks[ci].p[t.idx&timerChunkMask]
	if en.gen != t.gen {
		return false
	}
	if en.cell != nil {
		ts.pending.Add(-1)
	}
	if tk, ok := en.msg.(*periodicTick); ok {
		tk.state.Or(tickStopped) // its firing still queued is not delivered
	}
	ts.removeAt(int(en.pos))
	ts.free(t.idx)
	return true
}

// SendAfter sends msg through p once d has passed, unless the returned
// Timer is stopped first. The message is delivered as by p.Send at that time,
// from the executor's timer goroutine: if the port's incarnation has
// terminated by then, the system has stopped, or the actor's bounded
// mailbox is full under the Reject policy, nothing is delivered and the
// firing is counted dead (Stats.TimersDead). The message belongs to the
// timer until it fires, then to the receiving behaviour, as with Send.
// Timers with equal deadlines fire in no particular order. With d <= 0 it
// sends at once (p.Send) and returns the zero Timer.
//
// Errors: ErrNotSpawned (a zero Port), ErrTerminated (the port's
// incarnation has terminated), ErrStopped (its system has stopped or is
// stopping).
func SendAfter[M any](p Port[M], d time.Duration, msg M) (Timer, error) {
	checkTimerMessage(msg)
	if p.cell == nil {
		return Timer{}, ErrNotSpawned
	}
	if d <= 0 {
		return Timer{}, p.Send(msg)
	}
	return schedule(p.cell, p.fn, p.coff, p.want, d, 0, msg)
}

// SendEvery sends msg through p every period, first after one period,
// until the returned Timer is stopped, the port's incarnation terminates
// (the first firing that finds it terminated is counted dead and cancels
// the timer) or the system stops. A firing that a full bounded mailbox
// refuses (Reject) is counted dead, and the timer goes on.
//
// It sends the same message every time, so the message must be safe to be
// delivered repeatedly: the receiving behaviour must not set Delete or
// Destroy on it (they do nothing), nor send it on, and should treat it as
// read-only. A firing that comes late (a loaded system) is delivered once,
// and the periods missed meanwhile are skipped, not queued: the next firing
// is at the first deadline of the original schedule that is still ahead.
// Likewise a firing that comes while the previous one still waits in the
// actor's mailbox (an actor slower than the period) is skipped: at most one
// firing waits there, beside the one being delivered. Stats.TimersFired
// counts the firings delivered, or dropped undelivered (a dead letter, an
// overflow); a firing still queued when Stop returns true is discarded, and
// counted in neither TimersFired nor TimersDead. As a message, that firing
// counts in WorkerStats.TimersDiscarded, not processed, when its turn comes,
// or as whatever drops it before (a dead letter, a stop).
//
// Errors: ErrBadPeriod (period <= 0), and SendAfter's.
func SendEvery[M any](p Port[M], period time.Duration, msg M) (Timer, error) {
	checkTimerMessage(msg)
	if period <= 0 {
		return Timer{}, ErrBadPeriod
	}
	if p.cell == nil {
		return Timer{}, ErrNotSpawned
	}
	return schedule(p.cell, p.fn, p.coff, p.want, period, period, msg)
}

// checkTimerMessage panics if msg, given to SendAfter or SendEvery, is nil
// (whichever path the timer then takes, SendAfter's immediate send
// included).
func checkTimerMessage(msg any) {
	if erased.Data(msg) == nil {
		panic("executor: SendAfter or SendEvery with a nil message")
	}
}

// portErr returns nil if the incarnation want of c is alive, else the error
// a send to it reports.
func portErr(c *Cell, want uint32) error {
	want &^= portRequest
	if st := c.state.Load(); st|cellPlain != want {
		if incOf(st) != incOf(want) {
			return ErrTerminated // a later incarnation: the port's has ended
		}
		return stateErr(st)
	}
	return nil
}

// schedule checks the port's incarnation and sets a message timer for it.
func schedule(c *Cell, fn unsafe.Pointer, coff, want uint32, d, period time.Duration, msg any) (Timer, error) {
	if err := portErr(c, want); err != nil {
		return Timer{}, err
	}
	e := c.executor()
	if period > 0 {
		// A periodic timer sends its tick, which delivers msg through fn
		// (see periodicTick).
		t := &periodicTick{fn: fn, msg: msg, ts: &e.timers}
		return e.timers.add(e, d, int64(period), c, tickFn, coff, want, t)
	}
	return e.timers.add(e, d, int64(period), c, fn, coff, want, msg)
}

// periodicTick is the message a periodic timer sends at each firing (one
// per timer, allocated by SendEvery and sent again at every firing): its
// delivery runs the port's behaviour fn on the timer's message msg, unless
// the timer was stopped meanwhile. It keeps a periodic timer's firings from
// piling up in a slow actor's mailbox, and keeps Timer.Stop's promise for
// the firing still queued.
//
// state holds two bits. tickQueued is set by the timer goroutine (under
// timers.mu) when it sends the tick, and cleared by whoever ends that
// envelope: the worker that begins its delivery (runTick), the executor
// dropping it (lost, through dropped), or the firing itself when the send
// fails; runTick and lost leave it set once tickStopped is (the timer is
// gone: nothing reads it again). The timer goroutine does not send while it is set, so at most one
// envelope of the tick is queued, beside at most one being delivered.
// tickStopped is set by Timer.Stop (under timers.mu) and never cleared:
// runTick begins a delivery only by clearing tickQueued with a CAS that
// fails once tickStopped is set, so after Stop has returned true nothing of
// the timer is delivered (a delivery begun before may still be running).
type periodicTick struct {
	fn    unsafe.Pointer // the port's behaviour, erased
	msg   any            // the timer's message
	ts    *timers        // for the counters
	state atomic.Uint32
}

const (
	tickQueued  = 1 << iota // an envelope of the tick is queued
	tickStopped             // Timer.Stop stopped the timer
)

// tickFn is the behaviour that periodic timers send with their tick.
var tickFn = erased.Erase(runTick)

// runTick delivers a periodic timer's firing (see periodicTick): it counts
// the firing and runs the port's behaviour on self with the timer's message,
// returning its status; or, if the timer was stopped, it discards the
// firing and returns Nodelete. A discarded firing counts as neither fired
// nor dead (like a timer stopped while pending) and, since no behaviour
// ran, not as a processed message either: the worker counts it dropped.
//
// The decision is the load of state that sees tickStopped, or the CAS that
// clears tickQueued: the CAS fails once Timer.Stop's Or (under timers.mu)
// has set tickStopped, so a firing is either delivered and counted fired,
// or discarded, never both.
func runTick(self *byte, t *periodicTick) Allocation {
	for {
		s := t.state.Load()
		if s&tickStopped != 0 {
			if w := runningWorker(); w != nil {
				// Our worker's own counters (ticks are delivered by
				// workers only): MessagesProcessed leaves it out.
				w.st.TimersDiscarded++
			}
			return Nodelete
		}
		if t.state.CompareAndSwap(s, s&^tickQueued) {
			break
		}
	}
	t.ts.fired.Add(1)
	return Allocation(erased.Call(t.fn, unsafe.Pointer(self), erased.Data(t.msg)))
}

// lost is called (by dropped) when the executor drops an envelope of the
// tick without delivering it (a dead letter, a bounded mailbox's overflow,
// a stop): the firing counts as fired, as a one-shot timer's whose message
// is dropped after its send, and the next firing may send again; unless
// the timer was stopped while the firing was queued: then, as in runTick,
// it counts as neither fired nor dead. The decision pairs with Timer.Stop
// as runTick's does: the CAS clearing tickQueued fails once Stop's Or has
// set tickStopped.
func (t *periodicTick) lost() {
	for {
		s := t.state.Load()
		if s&tickStopped != 0 {
			return
		}
		if t.state.CompareAndSwap(s, s&^tickQueued) {
			t.ts.fired.Add(1)
			return
		}
	}
}

// userMessage returns the message a behaviour receives for msg: the timer's
// message for a periodic timer's tick, else msg.
func userMessage(msg any) any {
	if t, ok := msg.(*periodicTick); ok {
		return t.msg
	}
	return msg
}

// afterTimeout calls f.timedOut on the timer goroutine once d has passed,
// unless the returned Timer is stopped first. f.timedOut must not block. If
// the executor has stopped, it sets nothing and returns the zero Timer. An
// internal timeout still pending when the executor stops is dropped without
// being called.
func (e *Executor) afterTimeout(d time.Duration, f timeouter) Timer {
	t, _ := e.timers.add(e, d, 0, nil, nil, 0, 0, f)
	return t
}

// stats returns the pending, fired and dead timer counts.
func (ts *timers) stats() (pending int64, fired, dead uint64) {
	return ts.pending.Load(), ts.fired.Load(), ts.dead.Load()
}

// now is the executor's clock: nanoseconds since its epoch (monotonic).
func (e *Executor) now() int64 { return int64(time.Since(e.epoch)) }

// addSat returns a+b (b >= 0), saturated at math.MaxInt64.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// add sets a timer due d from now: a message timer for the port (c, fn,
// coff, want), periodic if period > 0, or, with c nil, an internal timeout
// whose msg is its timeouter. It fails with ErrStopped once the executor is
// shutting down.
func (ts *timers) add(e *Executor, d time.Duration, period int64, c *Cell, fn unsafe.Pointer, coff, want uint32, msg any) (Timer, error) {
	when := addSat(e.now(), max(int64(d), 0))
	if ts.lock() {
		defer ts.mu.Unlock()
	}
	if ts.closed || e.shutdown.Load() {
		return Timer{}, ErrStopped
	}
	if ts.quit == nil { // the first timer: start the goroutine
		ts.wake = make(chan struct{}, 1)
		ts.quit = make(chan struct{})
		ts.done = make(chan struct{})
		ts.ev.Init(event.KindFutex)
		go ts.run(e, ts.wake, ts.quit, ts.done)
	}
	i := ts.alloc()
	ts.gen++
	if ts.gen == 0 {
		ts.gen = 1
	}
	en := ts.at(i)
	*en = timerEntry{when: when, cell: c, fn: fn, msg: msg, coff: coff, want: want, gen: ts.gen, pos: int32(len(ts.heap))}
	ts.heap = append(ts.heap, i)
	ts.up(len(ts.heap) - 1)
	if period > 0 {
		if ts.period == nil {
			ts.period = make(map[int32]int64)
		}
		ts.period[i] = period
		ts.periodPeak = max(ts.periodPeak, len(ts.period))
	}
	if c != nil {
		ts.pending.Add(1)
	}
	if en.pos == 0 {
		ts.wakeUp()
	}
	return Timer{ts: ts, idx: i, gen: ts.gen}, nil
}

// lock takes mu and returns true, or returns false without taking it when
// the caller is the timer goroutine inside a firing, which holds mu already
// (see Locking at the top of this file).
func (ts *timers) lock() bool {
	if ts.inFiring() {
		return false
	}
	ts.mu.Lock()
	return true
}

// inFiring reports whether the caller is the timer goroutine inside a
// firing, running code that the firing called (an AskFunc function, a
// timeout's callback, OnError): it holds mu. Stop reads it to refuse to run
// there, since close takes mu and waits for the goroutine to exit.
func (ts *timers) inFiring() bool {
	f := ts.firing.Load()
	return f != 0 && f == selfID()
}

// close stops the timer goroutine (waiting for it to exit) and drops every
// pending timer, releasing all the set's memory. Dropped message timers are
// counted dead (they can never deliver: the system has stopped); dropped
// internal timeouts are not called (a timeStopper is told instead). Later
// adds fail with ErrStopped and Timer.Stop returns false. Called once by
// Stop, after the workers have exited; calling it again does nothing.
func (ts *timers) close() {
	ts.mu.Lock()
	if ts.closed {
		ts.mu.Unlock()
		return
	}
	ts.closed = true
	var n int64
	var ended []timeStopper
	for _, i := range ts.heap {
		if en := ts.at(i); en.cell != nil {
			n++
		} else if s, ok := en.msg.(timeStopper); ok {
			ended = append(ended, s)
		}
	}
	ts.pending.Add(-n)
	ts.dead.Add(uint64(n))
	ts.heap, ts.chunks, ts.hasRoom, ts.roomLow, ts.spare = nil, nil, nil, 0, nil
	ts.period, ts.periodPeak = nil, 0
	quit, done := ts.quit, ts.done
	if quit != nil {
		ts.wakeUp()
	}
	ts.mu.Unlock()
	if quit != nil {
		close(quit)
		<-done
	}
	for _, s := range ended {
		s.timerStopped()
	}
}

// timeStopper is an internal timeout that must learn that the system
// stopped before it fired (close calls timerStopped, without mu, after the
// timer goroutine has exited): an ask's, whose requester would otherwise
// never be told.
type timeStopper interface{ timerStopped() }

// wakeUp wakes the timer goroutine, from either sleep. Called with mu held,
// once the goroutine exists.
func (ts *timers) wakeUp() {
	if ts.sleep.CompareAndSwap(timerNear, 0) {
		ts.ev.Wake(&ts.sleep)
		return
	}
	select {
	case ts.wake <- struct{}{}:
	default: // a wake-up is posted already
	}
}

// run is the timer goroutine: it fires due timers, then sleeps until the
// earliest deadline (on tm until nearWindow before it, then on ev), a
// wake-up from add, or quit.
func (ts *timers) run(e *Executor, wake, quit <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	self := selfID()
	ts.runner.Store(self)
	tm := time.NewTimer(time.Hour)
	defer tm.Stop()
	tm.Stop()
	for {
		ts.mu.Lock()
		if ts.closed {
			ts.mu.Unlock()
			return
		}
		now := e.now()
		ts.firing.Store(self)
		next, more := ts.fire(now)
		ts.firing.Store(0)
		wait := next - now
		// Wait in the kernel only with another processor to run the
		// goroutines readied meanwhile (the worker just woken by a send,
		// say): the waiting thread keeps its processor in the system call
		// until the runtime's monitor retakes it.
		precise := !more && next != noDeadline && runtime.GOMAXPROCS(0) > 1
		near := precise && wait <= int64(nearWindow)
		if near {
			ts.sleep.Store(timerNear)
		}
		ts.mu.Unlock()
		if more {
			continue // a batch was fired and more timers are due
		}
		if near {
			ts.ev.Wait(&ts.sleep, timerNear, time.Duration(wait))
			ts.sleep.Store(0)
			continue
		}
		var tc <-chan time.Time
		if next != noDeadline {
			if precise {
				wait -= int64(nearWindow) // then wait for the rest on ev
			}
			// Since Go 1.23 Reset discards a value the timer may have
			// sent and nobody received: tc never delivers a stale tick.
			tm.Reset(time.Duration(wait))
			tc = tm.C
		}
		select {
		case <-tc:
		case <-wake:
		case <-quit:
			return
		}
	}
}

// fire fires the timers due at now, at most fireBatch of them. It returns
// the earliest deadline left (noDeadline if none) and whether timers due at
// now are left. Called by the timer goroutine with mu held.
func (ts *timers) fire(now int64) (next int64, more bool) {
	for n := 0; len(ts.heap) > 0; n++ {
		i := ts.heap[0]
		en := ts.at(i)
		if en.when > now {
			return en.when, false
		}
		if n == fireBatch {
			return 0, true
		}
		if en.cell == nil {
			f := en.msg.(timeouter)
			ts.removeAt(0)
			ts.free(i)
			f.timedOut()
			continue
		}
		gen := en.gen
		var err error
		switch tk, _ := en.msg.(*periodicTick); {
		case tk == nil: // a one-shot timer
			if err = send(en.cell, uintptr(en.coff), math.MaxUint32, en.want, en.fn, en.msg); err == nil {
				ts.fired.Add(1)
			} else {
				ts.dead.Add(1)
			}
		case tk.state.Load()&tickQueued != 0:
			// The previous firing is still queued: this one is skipped,
			// like a missed period (its delivery is counted by runTick).
		default:
			tk.state.Or(tickQueued)
			if err = send(en.cell, uintptr(en.coff), math.MaxUint32, en.want, en.fn, en.msg); err != nil {
				tk.state.And(^uint32(tickQueued))
				ts.dead.Add(1)
			}
		}
		if en.gen != gen {
			// Stopped during its own firing, by code the send ran (see
			// Locking above): Stop has removed and freed it.
			continue
		}
		// A periodic timer goes on after a delivery, and after a firing
		// that its bounded mailbox refused (Reject): only the end of its
		// incarnation or of the system cancels it.
		if (err == nil || errors.Is(err, ErrMailboxFull)) && ts.period != nil {
			if p, ok := ts.period[i]; ok {
				// The next deadline of the schedule that is after now:
				// missed periods are skipped.
				w := addSat(en.when, p)
				if w <= now {
					w = addSat(w, ((now-w)/p+1)*p)
				}
				en.when = w
				ts.down(0)
				continue
			}
		}
		ts.pending.Add(-1)
		ts.removeAt(0)
		ts.free(i)
	}
	return noDeadline, false
}

// at returns the entry at slab index i, which must be in a live chunk.
func (ts *timers) at(i int32) *timerEntry {
	return &ts.chunks[i>>timerChunkShift].p[i&timerChunkMask]
}

// The 4-ary heap. Every move stores the entry's new heap index in its pos.

func (ts *timers) up(k int) {
	h := ts.heap
	x := h[k]
	w := ts.at(x).when
	for k > 0 {
		p := (k - 1) / 4
		if ts.at(h[p]).when <= w {
			break
		}
		h[k] = h[p]
		ts.at(h[k]).pos = int32(k)
		k = p
	}
	h[k] = x
	ts.at(x).pos = int32(k)
}

func (ts *timers) down(k int) {
	h := ts.heap
	n := len(h)
	x := h[k]
	w := ts.at(x).when
	for {
		c := 4*k + 1
		if c >= n {
			break
		}
		best, bw := c, ts.at(h[c]).when
		for j := c + 1; j < c+4 && j < n; j++ {
			if jw := ts.at(h[j]).when; jw < bw {
				best, bw = j, jw
			}
		}
		if bw >= w {
			break
		}
		h[k] = h[best]
		ts.at(h[k]).pos = int32(k)
		k = best
	}
	h[k] = x
	ts.at(x).pos = int32(k)
}

// removeAt removes the heap's element at index k, and reallocates the heap
// smaller when it has fallen to a quarter of its capacity.
func (ts *timers) removeAt(k int) {
	last := len(ts.heap) - 1
	if k != last {
		ts.heap[k] = ts.heap[last]
		ts.at(ts.heap[k]).pos = int32(k)
	}
	ts.heap = ts.heap[:last]
	if k < last {
		ts.down(k)
		ts.up(k)
	}
	if c := cap(ts.heap); c > minShrinkCap && len(ts.heap) < c/4 {
		h := make([]int32, len(ts.heap), max(2*len(ts.heap), minShrinkCap))
		copy(h, ts.heap)
		ts.heap = h
	}
}

// alloc takes a free slot in the lowest chunk that has one (taking a chunk
// if needed) and returns its slab index. The slot is free (zero but for pos).
func (ts *timers) alloc() int32 {
	ci := ts.roomChunk()
	if ci == len(ts.chunks) {
		if ci >= math.MaxInt32>>timerChunkShift {
			panic("executor: too many pending timers")
		}
		ts.chunks = append(ts.chunks, chunkRef{})
		if ci>>6 == len(ts.hasRoom) {
			ts.hasRoom = append(ts.hasRoom, 0)
		}
		ts.setRoom(ci)
	}
	r := &ts.chunks[ci]
	if r.p == nil {
		r.p, ts.spare = ts.spare, nil
		if r.p == nil {
			r.p = new(timerChunk)
		}
		r.free, r.used, r.live = -1, 0, 0
	}
	var k int32
	if r.free >= 0 {
		k = r.free
		r.free = r.p[k].pos
	} else {
		k = r.used
		r.used++
	}
	r.live++
	if !r.hasRoom() {
		ts.hasRoom[ci>>6] &^= 1 << (ci & 63)
	}
	return int32(ci<<timerChunkShift) | k
}

// free clears the entry at slab index i (dropping its references) and
// returns its slot; a chunk left empty is released, and the slab's lists
// shrink.
func (ts *timers) free(i int32) {
	ci, k := int(i>>timerChunkShift), i&timerChunkMask
	r := &ts.chunks[ci]
	r.p[k] = timerEntry{pos: r.free}
	r.free = k
	r.live--
	ts.setRoom(ci)
	if ts.period != nil {
		if _, ok := ts.period[i]; ok {
			delete(ts.period, i)
			ts.shrinkPeriods()
		}
	}
	if r.live > 0 {
		return
	}
	// Release the empty chunk. Its entries are all clear (gen 0, no
	// references): it can serve as the spare as it is.
	if ts.spare == nil {
		ts.spare = r.p
	}
	r.p = nil
	n := len(ts.chunks)
	for n > 0 && ts.chunks[n-1].p == nil {
		n--
		ts.hasRoom[n>>6] &^= 1 << (n & 63)
	}
	if n == len(ts.chunks) {
		return
	}
	ts.chunks = ts.chunks[:n]
	words := (n + 63) >> 6
	ts.hasRoom = ts.hasRoom[:words]
	ts.roomLow = min(ts.roomLow, words)
	if c := cap(ts.chunks); c > minShrinkCap && n < c/4 {
		ts.chunks = append(make([]chunkRef, 0, max(2*n, minShrinkCap)), ts.chunks...)
		ts.hasRoom = append(make([]uint64, 0, (max(2*n, minShrinkCap)+63)>>6), ts.hasRoom...)
	}
}

// shrinkPeriods drops or reallocates the period map once it has fallen to a
// quarter of its peak size (a Go map does not shrink by itself).
func (ts *timers) shrinkPeriods() {
	switch n := len(ts.period); {
	case n == 0:
		ts.period, ts.periodPeak = nil, 0
	case ts.periodPeak > 64 && n < ts.periodPeak/4:
		m := make(map[int32]int64, n)
		for k, v := range ts.period {
			m[k] = v
		}
		ts.period, ts.periodPeak = m, n
	}
}

// setRoom marks chunk ci as having room.
func (ts *timers) setRoom(ci int) {
	ts.hasRoom[ci>>6] |= 1 << (ci & 63)
	ts.roomLow = min(ts.roomLow, ci>>6)
}

// roomChunk returns the lowest chunk with room (released, or with a free
// slot), or len(chunks) if there is none.
func (ts *timers) roomChunk() int {
	for w := ts.roomLow; w < len(ts.hasRoom); w++ {
		if x := ts.hasRoom[w]; x != 0 {
			ts.roomLow = w
			return w<<6 + bits.TrailingZeros64(x)
		}
	}
	ts.roomLow = len(ts.hasRoom)
	return len(ts.chunks)
}

// selfID returns the calling goroutine's identity: goid.Get where it is
// supported, else goid.Slow (the same on every call from one goroutine).
func selfID() uint64 {
	if goid.Supported {
		return uint64(goid.Get())
	}
	return goid.Slow()
}
