package executor

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/actord/actord/internal/erased"
)

// Failure handling and flow control: supervision directives, restart
// budgets with backoff, escalation, death-watch, lifecycle hooks and
// bounded mailboxes.
//
// An actor spawned plainly (Spawn, no hook methods) has no extension: its
// state word has cellPlain set and nothing here costs it anything. An actor
// spawned with options (SpawnWith), or whose type has a Started or Stopped
// hook, or that somebody watches, has a cellExt and plain clear; its
// deliveries take the slow path of drainBatch (deliverExt).
//
// Actors that may be suspended (Restart, Escalate) or are bounded get a
// private queue: every message sent to them goes into it, under its mutex,
// and the shared mailbox carries only a drain token (a control envelope)
// while the private queue is non-empty and not suspended. Suspending the
// actor (a backoff, a pending escalation) is then just not draining, while
// the other actors of the mailbox go on; a bound is exact because the
// private queue holds every message not yet delivered.

// Directive is what happens to an actor whose behaviour panics.
type Directive uint8

const (
	// Terminate: the actor terminates (reason ReasonPanic); no hook but
	// Stopped runs. The default.
	Terminate Directive = iota
	// Restart: the actor's state is reset (SpawnOptions.Reset) and it goes
	// on with the messages still queued for it, after a backoff, within a
	// restart budget; past the budget it terminates (ReasonBudget). The
	// failing message is dropped.
	Restart
	// Resume: the failing message is dropped and the actor goes on with its
	// state as the panic left it.
	Resume
	// Escalate: the actor is suspended (its messages wait) and a *Failure
	// goes to SpawnOptions.Supervisor, which decides with Failure.Resume,
	// Restart or Stop.
	Escalate
)

var directiveNames = [...]string{Terminate: "Terminate", Restart: "Restart", Resume: "Resume", Escalate: "Escalate"}

func (d Directive) String() string { return enumName(directiveNames[:], uint8(d), "Directive") }

// Reason says why an actor terminated.
type Reason uint8

const (
	// ReasonUnknown: the actor had terminated before the watch began and
	// nothing recorded why (its incarnation was not watched nor extended,
	// or it has been spawned again since).
	ReasonUnknown Reason = iota
	// ReasonNormal: a behaviour returned Delete, Destroy or Finished (a
	// poison pill included).
	ReasonNormal
	// ReasonPanic: a behaviour panicked and its directive was Terminate,
	// or its supervisor stopped it (Failure.Stop, or a Failure that never
	// reached a decision: see Failure), or a lifecycle hook or reset
	// function panicked.
	ReasonPanic
	// ReasonBudget: the actor panicked more often than its restart budget
	// allows.
	ReasonBudget
	// ReasonStopped: its system stopped (its Stop's context ended) while
	// it was alive.
	ReasonStopped
	// ReasonPassivated: the actor, spawned with SpawnOptions.IdleTimeout,
	// received no message for that long and was ended by its passivation
	// (see passivate.go).
	ReasonPassivated
)

var reasonNames = [...]string{
	ReasonUnknown:    "unknown",
	ReasonNormal:     "normal",
	ReasonPanic:      "panic",
	ReasonBudget:     "budget_exhausted",
	ReasonStopped:    "system_stopped",
	ReasonPassivated: "passivated",
}

func (r Reason) String() string { return enumName(reasonNames[:], uint8(r), "Reason") }

// enumName returns names[v], or "typ(v)" for a value without a name.
func enumName(names []string, v uint8, typ string) string {
	if int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", typ, v)
}

// Starter is the optional Started hook of an actor type: it runs on the
// actor's worker before the actor's first message (promptly after Spawn,
// even if no message comes) and again before the first message after each
// restart. A panic (or runtime.Goexit) in it terminates the actor
// (ReasonPanic) whatever its directive, Restart included: a start that
// failed is not retried, and the messages queued for the actor are
// undelivered.
type Starter interface{ Started() }

// Stopper is the optional Stopped hook of an actor type: it runs on the
// actor's worker when the actor terminates, for any reason, before its
// Destroy and Release hooks; after a forced Stop, for actors still alive,
// it runs (ReasonStopped) on a goroutine that Stop starts, once every
// worker has exited or Stop gave up waiting for one stuck in a behaviour;
// Stop waits for those hooks one second in all, and leaves those still
// running then to go on (their actors stay alive until they return). For
// the actor whose code that stuck worker is running, the worker runs it
// once that code returns, if the actor is still alive.
type Stopper interface{ Stopped(why Reason) }

// Failure is what an actor with the Escalate directive sends its
// supervisor when a behaviour panics. The actor is suspended (its messages
// wait, in order) until the supervisor decides with exactly one of Resume,
// Restart or Stop; a failure the supervisor keeps undecided keeps the
// actor suspended while the supervisor lives. A Failure that no supervisor
// can decide terminates the actor (ReasonPanic), as Stop would: one that
// the supervisor's bounded mailbox drops (DropNewest, DropOldest), and one
// not decided when the supervisor terminates, for any reason, whether it
// was still queued or had been received.
type Failure struct {
	Message
	// Err holds the actor, the message it failed on (dropped), the
	// recovered value and the stack.
	Err *PanicError

	cell    *Cell
	want    uint32
	seq     uint32
	decided atomic.Bool // set by the first decision (CAS)
	// sx is the supervisor's extension that the Failure watches (see
	// notify), nil if the watch was notified at once. Written by the
	// escalating worker before the send that publishes the Failure; read
	// by decide, which only its receivers and the executor dropping it
	// call, after that send.
	sx *cellExt
}

// Resume lets the actor go on with its state. Errors: ErrReplied (already
// decided), ErrTerminated (the actor is gone).
func (f *Failure) Resume() error { return f.decide(Resume) }

// Restart resets the actor (SpawnOptions.Reset, if set) and lets it go on
// with its queued messages. Errors as for Resume.
func (f *Failure) Restart() error { return f.decide(Restart) }

// Stop terminates the actor (ReasonPanic). Errors as for Resume.
func (f *Failure) Stop() error { return f.decide(Terminate) }

// undelivered decides Terminate for a Failure that the executor drops
// (dropped): nobody is left to decide it. A decision made before loses
// nothing: decide's CAS makes the first decision the only one.
func (f *Failure) undelivered(error) { _ = f.decide(Terminate) }

func (f *Failure) decide(d Directive) error {
	if f.cell == nil {
		return ErrNotSpawned
	}
	if !f.decided.CompareAndSwap(false, true) {
		return ErrReplied
	}
	if f.sx != nil {
		f.sx.unwatch(f) // the supervisor's end no longer concerns it
	}
	return sendControl(f.cell, f.want, &control{op: opDecide, dir: d, seq: f.seq})
}

// notify decides Terminate for a Failure whose supervisor has terminated
// (the Failure watches it: see supervise), unless a decision came first.
// It runs in the supervisor's termination (or in the escalation itself, if
// the supervisor is gone already), which may come before the escalating
// worker has written sx: it does not read it (finish has taken the
// watchers anyway). It reports false: the notice is not a message.
func (f *Failure) notify(*Terminated) bool {
	if f.decided.CompareAndSwap(false, true) {
		_ = sendControl(f.cell, f.want, &control{op: opDecide, dir: Terminate, seq: f.seq})
	}
	return false
}

// SpawnOptions are an actor's failure handling and flow control, chosen at
// spawn (see SpawnWith). The zero value is a plain actor.
type SpawnOptions struct {
	// OnPanic is the directive applied when a behaviour panics.
	OnPanic Directive
	// Reset resets the actor's state for a restart (Restart, or an
	// escalation's Failure.Restart). It runs on the actor's worker; nil
	// keeps the state.
	Reset func()
	// MaxRestarts and Within are the restart budget: at most MaxRestarts
	// restarts within any window of Within (the window starts at the first
	// restart after the previous window ended). Each field's zero value is
	// its default: MaxRestarts 0 means 10, Within 0 one minute.
	// NoRestarts allows none (the first panic terminates the actor,
	// ReasonBudget); any other negative MaxRestarts means no limit.
	MaxRestarts int
	Within      time.Duration
	// MinBackoff is the pause before the first restart of a window, doubled
	// for each further restart in it, up to MaxBackoff (0: no cap; else
	// not below MinBackoff). Zero: restart at once. While paused the
	// actor's messages wait.
	MinBackoff, MaxBackoff time.Duration
	// Supervisor receives a *Failure per panic for the Escalate directive.
	// If it cannot be sent to, or the Failure can never be decided (see
	// Failure), the actor terminates (ReasonPanic).
	Supervisor Port[*Failure]
	// MailboxBound, if positive, bounds the messages queued for the actor
	// (not counting the one being delivered, nor poison pills, which are
	// queued past the bound and never dropped); Overflow says what a send
	// past it does. A send never blocks, except SendContext from a
	// goroutine that is not running a behaviour.
	MailboxBound int
	Overflow     Overflow
	// IdleTimeout, if positive, passivates the actor: once it has
	// received no message for about that long (between IdleTimeout and
	// 1.25 times it), it terminates (ReasonPassivated; its Stopped hook
	// runs, its watchers are told). Messages accepted before the decision
	// are delivered first; sends after it fail with ErrTerminated. See
	// passivate.go.
	IdleTimeout time.Duration
}

// MaxMailboxBound is the largest SpawnOptions.MailboxBound.
const MaxMailboxBound = 1 << 24

// NoRestarts, as SpawnOptions.MaxRestarts, allows no restart: under the
// Restart directive the first panic terminates the actor (ReasonBudget),
// as past any other budget. (MaxRestarts 0 is the default budget.)
const NoRestarts = math.MinInt

func (o *SpawnOptions) validate() error {
	switch {
	case o.OnPanic > Escalate:
		return fmt.Errorf("%w: SpawnOptions.OnPanic %v is not a directive", ErrConfig, o.OnPanic)
	case o.Overflow > DropOldest:
		return fmt.Errorf("%w: SpawnOptions.Overflow %d is not an overflow policy", ErrConfig, o.Overflow)
	case o.MailboxBound < 0 || o.MailboxBound > MaxMailboxBound:
		return fmt.Errorf("%w: SpawnOptions.MailboxBound %d out of [0, %d]", ErrConfig, o.MailboxBound, MaxMailboxBound)
	case o.Within < 0 || o.MinBackoff < 0 || o.MaxBackoff < 0 || o.IdleTimeout < 0:
		return fmt.Errorf("%w: SpawnOptions durations must not be negative", ErrConfig)
	case o.MaxBackoff > 0 && o.MinBackoff > o.MaxBackoff:
		return fmt.Errorf("%w: SpawnOptions.MinBackoff %v above MaxBackoff %v", ErrConfig, o.MinBackoff, o.MaxBackoff)
	case o.OnPanic == Escalate && o.Supervisor.cell == nil:
		return fmt.Errorf("%w: SpawnOptions.OnPanic Escalate needs a Supervisor port", ErrConfig)
	}
	return nil
}

// SpawnWith is Spawn with failure handling and flow control options.
// Errors: Spawn's, and ErrConfig for invalid options.
func SpawnWith[T any, A interface{ *T }](e *Executor, c *Cell, a A, o SpawnOptions) error {
	if uintptr(unsafe.Pointer(c))-uintptr(unsafe.Pointer(a)) >= unsafe.Sizeof(*a) {
		panic("executor: SpawnWith: the cell is not inside the actor")
	}
	if err := o.validate(); err != nil {
		return err
	}
	if e == nil || len(e.mailboxes) == 0 { // nil, or the zero Executor
		return ErrNotStarted
	}
	return e.spawn(c, a, &o)
}

// cellExt is an incarnation's extension.
type cellExt struct {
	inc uint32 // the incarnation bits it belongs to; immutable
	// obj is the actor: set by Spawn (immutable); for an extension that
	// Watch installed on a plain actor, nil until finish sets it, under
	// mu, from the terminating worker's copy (Watch never reads Cell.obj,
	// which a re-spawn may be writing).
	obj any

	// Immutable after spawn.
	dir         Directive
	reset       func()
	maxRestarts int
	within      time.Duration
	minBackoff  time.Duration
	maxBackoff  time.Duration
	supervisor  Port[*Failure]
	bound       int
	overflow    Overflow
	starter     Starter
	stopper     Stopper
	pq          *privQueue  // nil unless bounded, Restart or Escalate
	pass        *passivator // nil unless IdleTimeout (see passivate.go)
	// exec is the executor the incarnation was spawned in (nil for an
	// extension Watch installed, which has no private queue): a put
	// counts into it, as the queue's messages are delivered or dropped
	// there, whatever executor the cell names by the time of the put.
	exec *Executor

	// Worker-owned: read and written only by deliveries of this actor,
	// which never run concurrently (one mailbox, one worker at a time; the
	// mailbox lock orders consecutive workers).
	started     bool
	restarts    int
	windowStart time.Time
	lastPanic   *PanicError
	susp        uint32 // suspensions so far: the current one's number, for its resume or decision
	// delivered is the passivation mark: set at every delivery of a user
	// message (deliverExt, drainPrivate), read and cleared by the
	// passivation check, which runs in the actor's own turn too
	// (passivationCheck). A plain store, worker-owned like the fields
	// above; set for every extended actor, since a store costs less than
	// a branch on whether it passivates.
	delivered bool

	// mu guards the watch state: watchers, done, reason and err. The
	// terminating worker sets done once (finish); Watch appends before
	// done or notifies by itself after.
	mu       sync.Mutex
	watchers []watcher
	done     bool
	reason   Reason
	err      error
}

// newExt returns the extension of a new incarnation (inc) of obj, or nil
// if it needs none.
func newExt(obj any, o *SpawnOptions, inc uint32, w *worker) *cellExt {
	var starter Starter
	var stopper Stopper
	if w == nil || !w.hooklessType(obj) {
		starter, _ = obj.(Starter)
		stopper, _ = obj.(Stopper)
	}
	if o == nil && starter == nil && stopper == nil {
		return nil
	}
	x := &cellExt{inc: incOf(inc), obj: obj, starter: starter, stopper: stopper}
	if o != nil {
		x.dir, x.reset, x.supervisor = o.OnPanic, o.Reset, o.Supervisor
		x.maxRestarts, x.within = o.MaxRestarts, o.Within
		switch x.maxRestarts {
		case 0:
			x.maxRestarts = 10
		case NoRestarts:
			x.maxRestarts = 0
		}
		if x.within == 0 {
			x.within = time.Minute
		}
		x.minBackoff, x.maxBackoff = o.MinBackoff, o.MaxBackoff
		x.bound, x.overflow = o.MailboxBound, o.Overflow
		if x.bound > 0 || x.dir == Restart || x.dir == Escalate {
			x.pq = new(privQueue)
		}
		if o.IdleTimeout > 0 {
			x.pass = newPassivator(o.IdleTimeout)
		}
	}
	return x
}

// hooklessType reports whether obj's type is known to have neither a
// Started nor a Stopped hook, remembering the answer for the last type a
// behaviour of this worker spawned (so a stream of spawns of one type costs
// one comparison each instead of two interface assertions).
func (w *worker) hooklessType(obj any) bool {
	t := (*[2]unsafe.Pointer)(unsafe.Pointer(&obj))[0]
	if t != w.sup.spawnType {
		_, s := obj.(Starter)
		_, p := obj.(Stopper)
		w.sup.spawnType, w.sup.spawnHookless = t, !s && !p
	}
	return w.sup.spawnHookless
}

// supState is the executor's part: counters and the registry of extended
// actors (for a forced Stop).
type supState struct {
	// Counters, updated with atomic adds by senders (mailbox-full events,
	// counted where they happen: often outside any worker), by workers and
	// Watch (notices); read by Stats.
	rejected, droppedNewest, droppedOldest atomic.Uint64
	notices                                atomic.Uint64
	// privSent counts messages queued into private queues, ctlSent the
	// control envelopes sent; Stats adds the first and subtracts the
	// second from the mailbox counts, so MessagesSent counts user messages.
	privSent, ctlSent atomic.Uint64

	// mu guards exts: the extended actors spawned (or watched) and not yet
	// terminated, so that a forced Stop can finish them; and stopped, set
	// by that Stop (stopExts) when it takes exts: a Watch of a plain actor
	// that comes later (a worker stuck in a behaviour keeps the executor
	// from closing) finds it, under mu, and notifies itself, since nothing
	// would finish an extension registered after that.
	mu      sync.Mutex
	exts    map[*Cell]*cellExt
	stopped bool
}

// registerSpawned ends the Spawn of the extended incarnation inc of c:
// under sup.mu, unless a forced Stop has taken the registry (stopped: it
// reports false, and publishes nothing), it registers x and publishes the
// incarnation alive (publishAlive). Both under the lock, so that stopExts,
// which takes the registry under it too, either finds c registered and
// alive, and finishes it, or comes first, and this spawn fails: an
// outside goroutine's Spawn that passed enter before the Stop began must
// not leave an extended actor that no one finishes.
func (e *Executor) registerSpawned(c *Cell, x *cellExt, inc uint32) bool {
	if testHookSpawnRegister != nil {
		testHookSpawnRegister()
	}
	e.sup.mu.Lock()
	defer e.sup.mu.Unlock()
	if e.sup.stopped {
		return false
	}
	c.publishAlive(inc, false) // publishes the fields Spawn wrote to senders and workers
	if e.sup.exts == nil {
		e.sup.exts = make(map[*Cell]*cellExt)
	}
	e.sup.exts[c] = x
	return true
}

// testHookSpawnRegister, if set, is called by registerSpawned before it
// takes sup.mu: a test runs a forced Stop there.
var testHookSpawnRegister func()

// extended starts an extended actor that registerSpawned registered: its
// Started hook's control envelope, its passivation timer.
func (e *Executor) extended(c *Cell, x *cellExt) {
	if x.starter != nil {
		sendControl(c, x.inc|cellAlive|cellPlain, startMsg)
	}
	if x.pass != nil {
		x.pass.arm(e, c, x.inc|cellAlive|cellPlain)
	}
}

// unextended removes a terminated actor from the registry.
func (e *Executor) unextended(c *Cell, x *cellExt) {
	e.sup.mu.Lock()
	if e.sup.exts[c] == x {
		delete(e.sup.exts, c)
	}
	e.sup.mu.Unlock()
}

// control is an internal envelope's message: a drain token, the start of
// an actor with a Started hook, the end of a backoff, or a supervisor's
// decision. Its behaviour ctlFn is never called: every control envelope is
// for an extended actor, so its delivery takes deliverExt.
type control struct {
	Message
	op  uint8
	dir Directive // opDecide
	seq uint32    // opResume, opDecide: the suspension it ends
}

const (
	opDrain      = iota // drain the private queue
	opStart             // run the Started hook
	opResume            // a backoff has ended
	opDecide            // a supervisor's decision
	opPassivate         // a passivation check (passivate.go)
	opPassivated        // a passivation's end marker (passivate.go)
)

var (
	ctlFn    = erased.Erase(func(_ *byte, _ *control) Allocation { return Nodelete })
	drainMsg = &control{op: opDrain}
	startMsg = &control{op: opStart}
)

// sendControl sends a control envelope to the incarnation want of c.
func sendControl(c *Cell, want uint32, ctl *control) error {
	if st := c.state.Load(); st|cellPlain != want {
		if incOf(st) != incOf(want) {
			return ErrTerminated
		}
		return stateErr(st)
	}
	// One load of the mailbox: the control count belongs to the executor
	// the envelope is pushed into (see pushTo).
	mb := c.mb.Load()
	e := mb.exec
	e.sup.ctlSent.Add(1)
	if err := pushTo(c, mb, 0, want, ctlFn, ctl); err != nil {
		e.sup.ctlSent.Add(^uint64(0))
		return err
	}
	return nil
}

// sendExt sends to an alive extended actor (want: its canonical word).
func sendExt(c *Cell, coff, want uint32, fn unsafe.Pointer, msg any, ctx context.Context) error {
	x := c.ext.Load()
	if x == nil || x.inc != incOf(want) || x.pq == nil {
		if x != nil && x.pass != nil && x.inc == incOf(want) {
			return pushGatedTo(c, c.mb.Load(), coff, want, fn, msg, &x.pass.shut)
		}
		return pushTo(c, c.mb.Load(), coff, want, fn, msg)
	}
	return x.pq.put(c, x, coff, want, fn, msg, ctx)
}

// unsuspend ends the suspension seq; it reports whether it did (a stale
// resume or decision does nothing).
func (w *worker) unsuspend(x *cellExt, seq uint32) bool {
	q := x.pq
	q.mu.Lock()
	ok := q.suspended && seq == x.susp
	if ok {
		q.suspended = false
		q.scheduled = true // the caller drains now
	}
	q.mu.Unlock()
	return ok
}

// suspend stops draining the private queue and returns the suspension's
// sequence number; with d > 0 a timer ends it after d.
func (w *worker) suspend(c *Cell, x *cellExt, want uint32, d time.Duration) uint32 {
	q := x.pq
	x.susp++
	seq := x.susp
	q.mu.Lock()
	q.suspended = true
	q.scheduled = false
	q.mu.Unlock()
	if d > 0 {
		w.e.afterTimeout(d, &backoffEnd{c: c, want: want, seq: seq})
	}
	return seq
}

// backoffEnd ends a restart's backoff: on the timer goroutine it sends the
// actor an opResume control.
type backoffEnd struct {
	c    *Cell
	want uint32
	seq  uint32
}

func (b *backoffEnd) timedOut() { sendControl(b.c, b.want, &control{op: opResume, seq: b.seq}) }

// restart resets the actor for a restart and reports whether it lives on
// (false: the reset panicked and the actor terminated).
func (w *worker) restart(c *Cell, x *cellExt, want uint32) bool {
	// The requests the failed state received and kept: the restarted
	// state does not know them (see held.go).
	w.e.endHeld(c, incOf(want), true, errHeldRestarted)
	x.started = false
	if x.reset == nil {
		return true
	}
	exited := true
	defer func() {
		if exited {
			w.hookExited(c, x, want, "Reset")
		}
	}()
	r, ok := safeCall(x.reset)
	exited = false
	if !ok {
		w.hookPanicked(x, r, "Reset")
		w.terminateExt(c, x, want, Finished, reasonPanic)
		return false
	}
	return true
}

// supervise applies the directive of an extended actor whose behaviour
// panicked (pe); it reports false if the directive is Terminate (the
// caller terminates the actor), and ended if it terminated the actor
// itself (the budget exhausted, no supervisor to escalate to).
func (w *worker) supervise(c *Cell, x *cellExt, want uint32, pe *PanicError) (handled, ended bool) {
	x.lastPanic = pe
	switch x.dir {
	case Resume:
		w.st.Resumes++
		if x.pq != nil {
			w.reschedule(c, x, want)
		}
		return true, false
	case Restart:
		now := time.Now()
		if x.restarts == 0 || now.Sub(x.windowStart) > x.within {
			x.windowStart, x.restarts = now, 0
		}
		x.restarts++
		if x.maxRestarts >= 0 && x.restarts > x.maxRestarts {
			w.st.BudgetExhausted++
			w.terminateExt(c, x, want, Finished, reasonBudget)
			return true, true
		}
		w.st.Restarts++
		if !w.restart(c, x, want) {
			return true, true
		}
		if d := backoff(x.minBackoff, x.maxBackoff, x.restarts); d > 0 {
			w.suspend(c, x, want, d)
		} else {
			w.reschedule(c, x, want)
		}
		return true, false
	case Escalate:
		w.st.Escalations++
		seq := w.suspend(c, x, want, 0)
		f := &Failure{Err: pe, cell: c, want: want, seq: seq}
		// The supervisor's termination decides f if nothing did before
		// (Failure.notify); the watch begins before the send that
		// publishes f, so that no decision can miss sx.
		sp := x.supervisor
		f.sx = watch(sp.cell, sp.word(), f)
		if sp.Send(f) != nil {
			if f.sx != nil {
				f.sx.unwatch(f)
			}
			w.terminateExt(c, x, want, Finished, reasonPanic) // nobody to decide
			return true, true
		}
		return true, false
	}
	return false, false
}

// backoff returns the pause before restart n (1-based) of a window.
func backoff(lo, hi time.Duration, n int) time.Duration {
	if lo <= 0 {
		return 0
	}
	d := lo
	for i := 1; i < n; i++ {
		if hi > 0 && d >= hi || d > time.Hour {
			break
		}
		d *= 2
	}
	if hi > 0 && d > hi {
		d = hi
	}
	return d
}
