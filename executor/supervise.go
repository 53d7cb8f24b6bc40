package executor

import (
	"context"
	"fmt"
	"math"
	"runtime/debug"
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

// Overflow is what a send to a full bounded mailbox does (see
// SpawnOptions.MailboxBound).
type Overflow uint8

const (
	// Reject: the send fails with ErrMailboxFull; the message is not queued
	// and stays the sender's. The default.
	Reject Overflow = iota
	// DropNewest: the send succeeds but the message is dropped, counted
	// (Stats.MailboxDroppedNewest); a request's requester gets ErrMailboxFull.
	DropNewest
	// DropOldest: the message is queued and the oldest queued one is
	// dropped, counted (Stats.MailboxDroppedOldest); a request's requester
	// gets ErrMailboxFull.
	DropOldest
)

var overflowNames = [...]string{Reject: "Reject", DropNewest: "DropNewest", DropOldest: "DropOldest"}

func (o Overflow) String() string { return enumName(overflowNames[:], uint8(o), "Overflow") }

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
)

var reasonNames = [...]string{
	ReasonUnknown: "unknown",
	ReasonNormal:  "normal",
	ReasonPanic:   "panic",
	ReasonBudget:  "budget_exhausted",
	ReasonStopped: "system_stopped",
}

func (r Reason) String() string { return enumName(reasonNames[:], uint8(r), "Reason") }

// enumName returns names[v], or "typ(v)" for a value without a name.
func enumName(names []string, v uint8, typ string) string {
	if int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", typ, v)
}

// Reasons as stored in the state word's bits 3-4 (see cellReasonMask).
const (
	reasonNormal uint32 = 0
	reasonPanic  uint32 = 1
	reasonBudget uint32 = 2
)

func reasonOf(bits uint32) Reason {
	switch bits {
	case reasonPanic:
		return ReasonPanic
	case reasonBudget:
		return ReasonBudget
	}
	return ReasonNormal
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
// it runs once every worker has exited, on a goroutine that Stop starts
// and waits for.
type Stopper interface{ Stopped(why Reason) }

// Terminated tells a watcher (see Watch) that the actor it watched has
// terminated. Each watch receives exactly one.
type Terminated struct {
	Message
	// Actor is the terminated actor (the pointer that was spawned), nil
	// when the watch began after the termination and nothing recorded it.
	Actor any
	// Reason is why it terminated.
	Reason Reason
	// Err is the *PanicError of the last failure for ReasonPanic and
	// ReasonBudget (when known), ErrStopped for ReasonStopped, else nil.
	Err error
}

// Failure is what an actor with the Escalate directive sends its
// supervisor when a behaviour panics. The actor is suspended (its messages
// wait, in order) until the supervisor decides with exactly one of Resume,
// Restart or Stop; an undecided failure keeps the actor suspended. A
// Failure that no supervisor can decide terminates the actor (ReasonPanic),
// as Stop would: one that the supervisor's bounded mailbox drops
// (DropNewest, DropOldest), one still queued when the supervisor
// terminates, and one whose receiving behaviour terminates its supervisor
// (returns Delete, Destroy or Finished, or panics) without deciding.
type Failure struct {
	Message
	// Err holds the actor, the message it failed on (dropped), the
	// recovered value and the stack.
	Err *PanicError

	cell    *Cell
	want    uint32
	seq     uint32
	decided atomic.Bool // set by the first decision (CAS)
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
	return sendControl(f.cell, f.want, &control{op: opDecide, dir: d, seq: f.seq})
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
	case o.Within < 0 || o.MinBackoff < 0 || o.MaxBackoff < 0:
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
	pq          *privQueue // nil unless bounded, Restart or Escalate

	// Worker-owned: read and written only by deliveries of this actor,
	// which never run concurrently (one mailbox, one worker at a time; the
	// mailbox lock orders consecutive workers).
	started     bool
	restarts    int
	windowStart time.Time
	lastPanic   *PanicError
	susp        uint32 // suspensions so far: the current one's number, for its resume or decision

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

// extended registers an extended actor.
func (e *Executor) extended(c *Cell, x *cellExt) {
	if x.starter != nil {
		sendControl(c, x.inc|cellAlive|cellPlain, startMsg)
	}
	e.sup.mu.Lock()
	if e.sup.exts == nil {
		e.sup.exts = make(map[*Cell]*cellExt)
	}
	e.sup.exts[c] = x
	e.sup.mu.Unlock()
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
	opDrain  = iota // drain the private queue
	opStart         // run the Started hook
	opResume        // a backoff has ended
	opDecide        // a supervisor's decision
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
	e := c.executor()
	e.sup.ctlSent.Add(1)
	if err := pushTo(c, c.mb.Load(), 0, want, ctlFn, ctl); err != nil {
		e.sup.ctlSent.Add(^uint64(0))
		return err
	}
	return nil
}

// sendExt sends to an alive extended actor (want: its canonical word).
func sendExt(c *Cell, coff, want uint32, fn unsafe.Pointer, msg any, ctx context.Context) error {
	x := c.ext.Load()
	if x == nil || x.inc != incOf(want) || x.pq == nil {
		return pushTo(c, c.mb.Load(), coff, want, fn, msg)
	}
	return x.pq.put(c, x, coff, want, fn, msg, ctx)
}

// privQueue is a bounded or supervised actor's own queue.
type privQueue struct {
	// mu guards every field. Senders hold it to queue (and apply the
	// bound); the actor's worker holds it to pop one message, to suspend
	// and resume. It is never held while a behaviour or hook runs, nor
	// across a push into the shared mailbox.
	mu   sync.Mutex
	ring envRing
	// scheduled: a drain token is queued in the shared mailbox, or the
	// actor's worker is draining. Invariant (under mu): if the queue is
	// non-empty and neither suspended nor closed, scheduled is set, so
	// the messages will be drained. Set by the sender that finds it clear
	// (which then sends the token); cleared by the worker that finds the
	// queue empty or the actor suspended.
	scheduled bool
	suspended bool // a backoff or an escalation is pending (worker-written)
	closed    bool // the actor terminated: sends fail (worker- or Stop-written)
	// room, when non-nil, is closed by the worker when it pops from a full
	// queue: SendContext callers wait on it.
	room chan struct{}
}

// put queues a message (see Overflow and SendContext).
func (q *privQueue) put(c *Cell, x *cellExt, coff, want uint32, fn unsafe.Pointer, msg any, ctx context.Context) error {
	e := c.executor()
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			if c.state.Load()|cellPlain == want {
				// Still alive: a forced Stop closed the queue (stopExts),
				// and after Stop sends report ErrStopped. A termination
				// ends the alive state before it closes the queue.
				return ErrStopped
			}
			return ErrTerminated
		}
		if x.bound > 0 && q.ring.n >= x.bound && fn != pillFn {
			if ctx != nil && runningWorker() == nil {
				ch := q.room
				if ch == nil {
					ch = make(chan struct{})
					q.room = ch
				}
				q.mu.Unlock()
				select {
				case <-ch:
					continue
				case <-ctx.Done():
					return fmt.Errorf("%w: %w", ErrMailboxFull, context.Cause(ctx))
				}
			}
			ov := x.overflow
			if ov == DropOldest && q.ring.buf[q.ring.head].fn == pillFn {
				// Never drop a pill: what is sent after it is a dead
				// letter anyway, so drop that.
				ov = DropNewest
			}
			switch ov {
			case DropNewest:
				q.mu.Unlock()
				e.sup.droppedNewest.Add(1)
				dropped(msg, ErrMailboxFull)
				return nil
			case DropOldest:
				old := q.ring.pop()
				q.ring.push(envelope{cell: c, fn: fn, msg: msg, coff: coff, want: want})
				q.mu.Unlock()
				e.sup.droppedOldest.Add(1)
				e.sup.privSent.Add(1)
				dropped(old.msg, ErrMailboxFull)
				return nil
			default:
				q.mu.Unlock()
				e.sup.rejected.Add(1)
				return ErrMailboxFull
			}
		}
		q.ring.push(envelope{cell: c, fn: fn, msg: msg, coff: coff, want: want})
		kick := !q.scheduled && !q.suspended
		q.scheduled = q.scheduled || kick
		q.mu.Unlock()
		e.sup.privSent.Add(1)
		if kick {
			return sendControl(c, want, drainMsg)
		}
		return nil
	}
}

// close closes the queue (later puts fail, waiting SendContext callers
// wake) and returns what it held, for the caller to drop after q.mu is
// released: dropping a request completes it, and its Reply may be sent to
// this very queue (an actor that asked itself with AskAsync).
func (q *privQueue) close() []envelope {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.signalRoom()
	var rest []envelope
	for q.ring.n > 0 {
		rest = append(rest, q.ring.pop())
	}
	return rest
}

// signalRoom wakes SendContext callers waiting for room. Called with mu held.
func (q *privQueue) signalRoom() {
	if q.room != nil {
		close(q.room)
		q.room = nil
	}
}

// envRing is a growable ring of envelopes.
type envRing struct {
	buf     []envelope
	head, n int
}

func (r *envRing) push(e envelope) {
	if r.n == len(r.buf) {
		nb := make([]envelope, max(2*len(r.buf), 8))
		for i := 0; i < r.n; i++ {
			nb[i] = r.buf[(r.head+i)%len(r.buf)]
		}
		r.buf, r.head = nb, 0
	}
	r.buf[(r.head+r.n)%len(r.buf)] = e
	r.n++
}

func (r *envRing) pop() envelope {
	e := r.buf[r.head]
	r.buf[r.head] = envelope{}
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	if r.n == 0 {
		r.head = 0
		if len(r.buf) > 1024 {
			r.buf = nil // an unbounded queue gives its peak back once drained
		}
	}
	return e
}

// privBatch bounds the messages a drain token delivers before the actor
// yields to the other actors of its mailbox (it sends itself a new token).
const privBatch = 64

// workerSup is a worker's supervision state, touched only by the worker.
type workerSup struct {
	// spawnType and spawnHookless cache hooklessType's answer.
	spawnType     unsafe.Pointer
	spawnHookless bool
	// env is a copy of the private-queue envelope being delivered, and
	// inPriv is set while its behaviour runs (see delivering).
	env    envelope
	inPriv bool
}

// delivering returns the envelope whose behaviour is running.
func (w *worker) delivering() *envelope {
	if w.sup.inPriv {
		return &w.sup.env
	}
	return w.buf.LastPopped()
}

// deliverExt delivers an envelope that failed drainBatch's comparison: a
// dead letter, or an envelope for an extended actor.
func (w *worker) deliverExt(env *envelope) {
	c := env.cell
	ctl := env.fn == ctlFn
	if c.state.Load()|cellPlain != env.want {
		if ctl {
			w.st.control++
			return
		}
		w.st.DeadLetters++
		w.e.noteDead(env.msg)
		dropped(env.msg, ErrTerminated) // a request: tell its requester
		return
	}
	x := c.ext.Load()
	if !ctl {
		if w.runStarted(c, x, env.want, true) {
			w.deliverOne(env)
		} else { // the hook panicked: the actor terminated before env
			w.st.DeadLetters++
			w.e.noteDead(env.msg)
			dropped(env.msg, ErrTerminated)
		}
		return
	}
	w.st.control++
	ctlMsg := env.msg.(*control)
	switch ctlMsg.op {
	case opStart:
		w.runStarted(c, x, env.want, false)
	case opDrain:
		w.drainPrivate(c, x, env.want)
	case opResume:
		if w.unsuspend(x, ctlMsg.seq) {
			w.drainPrivate(c, x, env.want)
		}
	case opDecide:
		q := x.pq
		q.mu.Lock()
		ok := q.suspended && ctlMsg.seq == x.susp
		q.mu.Unlock()
		if !ok {
			return
		}
		switch ctlMsg.dir {
		case Terminate:
			// The escalated panic terminated its actor: now an error of
			// Stop (OnError saw it when it was escalated).
			if pe := x.lastPanic; pe != nil {
				w.e.keepPanic(pe)
			}
			w.terminateExt(c, x, env.want, Finished, reasonPanic)
			return
		case Restart:
			w.st.Restarts++
			if !w.restart(c, x, env.want) {
				return
			}
		}
		if w.unsuspend(x, ctlMsg.seq) {
			w.drainPrivate(c, x, env.want)
		}
	}
}

// deliverOne runs one envelope's behaviour on an alive actor and applies
// the statuses (see drainBatch, whose inline loop does the same for plain
// actors).
func (w *worker) deliverOne(env *envelope) {
	status := env.call()
	if status != Nodelete {
		w.terminate(env.cell, env.want, status)
		if w.mayBeRequest(env.msg) {
			dropped(env.msg, ErrTerminated) // a request its receiver did not answer
		}
	}
	if ms := w.msgStatus; ms != Nodelete {
		w.msgStatus = Nodelete
		w.messageDone(env, ms)
		w.msgStatus = Nodelete
	}
}

// runStarted runs the Started hook if the incarnation (or restart) has not run
// it yet. It reports false if the actor terminated because the hook
// panicked. forMsg says that a user message waits for the hook (deliverExt):
// if the hook calls runtime.Goexit, that message is a dead letter, as when
// the hook panics (the caller counts it then), and recovered fails it if it
// is a request.
func (w *worker) runStarted(c *Cell, x *cellExt, want uint32, forMsg bool) bool {
	if x.started || x.starter == nil {
		return true
	}
	x.started = true
	exited := true
	defer func() {
		if exited {
			if forMsg {
				w.st.DeadLetters++
			}
			w.hookExited(c, x, want, "Started")
		}
	}()
	r, ok := safeCall(x.starter.Started)
	exited = false
	if !ok {
		w.hookPanicked(x, r, "Started")
		w.terminateExt(c, x, want, Finished, reasonPanic)
		return false
	}
	return true
}

// drainPrivate runs the Started hook if due, delivers up to privBatch
// messages of the private queue, then, if more are left, sends the actor a new drain token.
func (w *worker) drainPrivate(c *Cell, x *cellExt, want uint32) {
	if !w.runStarted(c, x, want, false) {
		return
	}
	q := x.pq
	for range privBatch {
		q.mu.Lock()
		if q.suspended || q.closed || q.ring.n == 0 {
			q.scheduled = false
			q.mu.Unlock()
			return
		}
		w.sup.env = q.ring.pop()
		q.signalRoom()
		q.mu.Unlock()
		w.st.private++
		w.sup.inPriv = true
		w.deliverOne(&w.sup.env)
		w.sup.inPriv = false
		w.sup.env = envelope{}
		if c.state.Load()|cellPlain != want {
			return // it terminated: terminateExt closed the queue
		}
	}
	w.reschedule(c, x, want)
}

// reschedule sends a drain token if the private queue has messages to
// deliver, else clears scheduled.
func (w *worker) reschedule(c *Cell, x *cellExt, want uint32) {
	q := x.pq
	q.mu.Lock()
	more := !q.suspended && !q.closed && q.ring.n > 0
	q.scheduled = more
	q.mu.Unlock()
	if more {
		sendControl(c, want, drainMsg)
	}
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
		if x.supervisor.Send(f) != nil {
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

// safeCall calls f and recovers a panic out of it.
func safeCall(f func()) (r any, ok bool) {
	defer func() {
		if !ok {
			r = recover()
		}
	}()
	f()
	return nil, true
}

// callAside calls f on a goroutine of its own and waits for it, so that
// a runtime.Goexit in f ends that goroutine and not the caller's (Stop's
// caller, for the hooks a forced Stop runs). It recovers a panic out of f
// (r) and reports a Goexit.
func callAside(f func()) (r any, goexit, ok bool) {
	done := make(chan struct{})
	go func() {
		defer close(done) // pairs with <-done: r, goexit and ok are written before
		defer func() {
			if !ok {
				r = recover()
				goexit = r == nil // panic(nil) panics with a *runtime.PanicNilError
			}
		}()
		f()
		ok = true
	}()
	<-done
	return r, goexit, ok
}

// hookPanicked records a panic out of a hook or reset function of x.
// While a termination that a Goexit interrupted keeps reports for
// recordGoexits, the panic joins them, so that they are recorded in the
// order they happened.
func (w *worker) hookPanicked(x *cellExt, r any, hook string) {
	w.st.Panics++
	pe := &PanicError{Actor: x.obj, Value: r, Stack: debug.Stack(), Worker: w.id, hook: hook}
	x.lastPanic = pe
	if len(w.termPanics) > 0 {
		w.termPanics = append(w.termPanics, pe)
		return
	}
	w.e.recordPanic(pe)
}

// hookExited runs, in a deferred call, when the Started hook or Reset
// function of x called runtime.Goexit, which safeCall cannot stop: as for
// a panic there, the actor terminates, while the goroutine unwinds.
func (w *worker) hookExited(c *Cell, x *cellExt, want uint32, hook string) {
	w.noteGoexit(x, hook)
	w.terminateExt(c, x, want, Finished, reasonPanic)
	w.recordGoexits() // not reached if a termination hook calls Goexit too: the nested call records
}

// noteGoexit counts a runtime.Goexit out of hook of x and keeps its report
// for recordGoexits, with the behaviour's panic that the caller it unwinds
// would have recorded (pendingPanic); it tells the recovery that the
// Goexit reaches next that it is handled (termGoexit).
func (w *worker) noteGoexit(x *cellExt, hook string) {
	w.termGoexit = true
	w.st.Panics++
	pe := &PanicError{Actor: x.obj, Goexit: true, Stack: debug.Stack(), Worker: w.id, hook: hook}
	x.lastPanic = pe
	if w.pendingPanic != nil {
		w.termPanics = append(w.termPanics, w.pendingPanic)
		w.pendingPanic = nil
	}
	w.termPanics = append(w.termPanics, pe)
}

// recordGoexits records the reports noteGoexit kept.
func (w *worker) recordGoexits() {
	for i, pe := range w.termPanics {
		w.termPanics[i] = nil
		w.e.recordPanic(pe)
	}
	w.termPanics = w.termPanics[:0]
}

// extTerm is the termination of an extended incarnation in progress. It
// lives on terminateExt's stack and is touched only by its worker.
type extTerm struct {
	c      *Cell
	x      *cellExt
	obj    any // the object, copied before the dead store
	inc    uint32
	reason uint32
	st     Allocation
	step   uint8 // the next step to take (termStopped ... termDone)
}

// The steps of extTerm.run, in order.
const (
	termStopped uint8 = iota // the Stopped hook
	termDestroy              // the Destroy hook (Delete, Destroy)
	termDead                 // close the private queue, the dead store, the notices
	termRelease              // the Release hook (Delete)
	termGone                 // the live count
	termDone
)

// termHooks names the hook each step runs (for a PanicError).
var termHooks = [termDone]string{termStopped: "Stopped", termDestroy: "Destroy", termRelease: "Release"}

// terminateExt ends an extended incarnation (its canonical word alive)
// with allocation status st for the given reason. In order: the state
// becomes ending (sends fail); the Stopped hook runs; the Destroy hook runs
// (Delete, Destroy); the private queue is closed and what it held counted
// as dead letters; the state becomes dead; watchers are notified; the
// Release hook runs (Delete). Hook panics are recorded and do not stop the
// termination; nor does runtime.Goexit in a hook (see extTerm.run), though
// it then ends the worker goroutine, and whatever the caller would have
// done after terminateExt, once the termination is complete.
func (w *worker) terminateExt(c *Cell, x *cellExt, alive uint32, st Allocation, reason uint32) {
	t := extTerm{c: c, x: x, obj: c.obj, inc: incOf(alive), reason: reason, st: st}
	w.st.ActorsTerminated++
	c.state.Store(t.inc | cellEnding | reason<<cellReasonShift)
	t.run(w)
}

// run takes the steps of t from t.step on. A step is counted taken before
// its hook runs, so a hook that calls runtime.Goexit (which safeCall cannot
// stop) is not run again: the deferred call records it and takes the
// remaining steps while the goroutine unwinds, before any caller's deferred
// recovery (worker.recovered) runs. A second Goexit in a later hook nests
// the same way; each one takes at least one step, so this ends.
func (t *extTerm) run(w *worker) {
	defer func() {
		if t.step != termDone { // a hook called runtime.Goexit
			w.noteGoexit(t.x, termHooks[t.step-1])
			// A Goexit out of a later hook ends this call here and the
			// nested one records; OnError runs after the termination is
			// complete, so that nothing it does can stop it.
			t.run(w)
			w.recordGoexits()
		}
	}()
	x, c := t.x, t.c
	for t.step != termDone {
		t.step++
		switch t.step - 1 {
		case termStopped:
			if x.stopper != nil {
				if r, ok := safeCall(func() { x.stopper.Stopped(reasonOf(t.reason)) }); !ok {
					w.hookPanicked(x, r, "Stopped")
				}
			}
		case termDestroy:
			if d, ok := t.obj.(Destroyer); ok && (t.st == Delete || t.st == Destroy) {
				if r, ok := safeCall(d.Destroy); !ok {
					w.hookPanicked(x, r, "Destroy")
				}
			}
		case termDead:
			if q := x.pq; q != nil {
				for _, env := range q.close() {
					w.st.private++
					w.st.DeadLetters++
					w.e.noteDead(env.msg)
					dropped(env.msg, ErrTerminated)
				}
			}
			c.state.Store(t.inc | cellDead | t.reason<<cellReasonShift)
			var err error
			if t.reason != reasonNormal && x.lastPanic != nil {
				err = x.lastPanic
			}
			w.e.sup.notices.Add(uint64(x.finish(t.obj, reasonOf(t.reason), err)))
			w.e.unextended(c, x)
		case termRelease:
			if r, ok := t.obj.(Releaser); ok && t.st == Delete {
				if rv, ok := safeCall(r.Release); !ok {
					w.hookPanicked(x, rv, "Release")
				}
			}
		case termGone:
			w.e.actorGone()
		}
	}
}

// watchedLate finishes the watches of a plain incarnation (inc) of obj
// that a Watch extended while it was terminating: the terminating worker
// saw plain clear in the word it swapped out.
func (e *Executor) watchedLate(c *Cell, obj any, inc uint32, r Reason, err error) {
	if x := c.ext.Load(); x != nil && x.inc == inc {
		e.sup.notices.Add(uint64(x.finish(obj, r, err)))
		e.unextended(c, x)
	}
}

// watcher receives one Terminated.
// notify reports whether the notice was delivered (a watching actor that
// has terminated gets none).
type watcher interface{ notify(*Terminated) bool }

type portWatcher struct{ p Port[*Terminated] }

func (p portWatcher) notify(t *Terminated) bool { return p.p.Send(t) == nil }

type chanWatcher chan *Terminated

func (ch chanWatcher) notify(t *Terminated) bool { ch <- t; return true } // buffered (1), one notice per watch: never blocks

// finish records the termination of obj and notifies every watcher, once;
// it returns the number of notices delivered.
func (x *cellExt) finish(obj any, r Reason, err error) int {
	x.mu.Lock()
	if x.done {
		x.mu.Unlock()
		return 0
	}
	x.done, x.reason, x.err, x.obj = true, r, err, obj
	ws := x.watchers
	x.watchers = nil
	x.mu.Unlock()
	n := 0
	for _, wt := range ws {
		if wt.notify(&Terminated{Actor: obj, Reason: r, Err: err}) {
			n++
		}
	}
	return n
}

// Watch arranges for notify to receive one *Terminated when the
// incarnation target is bound to terminates, for whatever reason, or at
// once if it already has. The notice is sent through notify like any
// message: if notify's actor has a bounded mailbox, its overflow policy
// applies to the notice too. Errors: ErrNotSpawned (a zero target, or a
// zero notify port: nothing would receive the notification); ErrTerminated
// (notify's actor has terminated: it would never receive it).
func Watch[M any](target Port[M], notify Port[*Terminated]) error {
	if target.cell == nil || notify.cell == nil {
		return ErrNotSpawned
	}
	if err := portErr(notify.cell, notify.want); err != nil {
		return err
	}
	watch(target.cell, target.want, portWatcher{notify})
	return nil
}

// WatchChan is Watch for goroutines: the returned channel receives the one
// *Terminated.
func WatchChan[M any](target Port[M]) (<-chan *Terminated, error) {
	if target.cell == nil {
		return nil, ErrNotSpawned
	}
	ch := make(chan *Terminated, 1)
	watch(target.cell, target.want, chanWatcher(ch))
	return ch, nil
}

// watch implements Watch. The exactly-once argument: the watcher is either
// in x.watchers when the terminating worker calls finish (it saw plain
// clear, because this CAS or an earlier one cleared it before its swap of
// the word), or it finds x.done, or it finds the incarnation gone and
// notifies itself, taking itself out of x.watchers first when its own CAS
// failed (under x.mu, so finish cannot have notified it unless done is
// set, which it checks). After a forced Stop has taken the registry
// (sup.stopped), a watch of a plain actor takes itself out the same way and
// notifies itself (ReasonStopped): the Stop finishes only what it took.
// The extension is used only if the word is unchanged after it was loaded,
// so a watch through an old port never takes, or replaces, a later
// incarnation's extension.
func watch(c *Cell, want uint32, wt watcher) {
	for {
		s := c.state.Load()
		if testHookWatch != nil {
			testHookWatch()
		}
		if s|cellPlain != want {
			watchGone(c, want, s, wt)
			return
		}
		e := c.executor()
		if e.closed.Load() {
			if wt.notify(&Terminated{Reason: ReasonStopped, Err: ErrStopped}) {
				e.sup.notices.Add(1)
			}
			return
		}
		x := c.ext.Load()
		if c.state.Load() != s {
			// The word moved on meanwhile (the incarnation may have ended
			// and a later one been spawned, with its own extension in
			// x): look again. Otherwise x is want's extension (Spawn
			// stores it before the word), or a leftover for a plain one.
			continue
		}
		if x == nil || x.inc != incOf(want) {
			nx := &cellExt{inc: incOf(want), started: true}
			if !c.ext.CompareAndSwap(x, nx) {
				continue
			}
			x = nx
		}
		x.mu.Lock()
		if x.done {
			r, err, obj := x.reason, x.err, x.obj
			x.mu.Unlock()
			if wt.notify(&Terminated{Actor: obj, Reason: r, Err: err}) {
				e.sup.notices.Add(1)
			}
			return
		}
		x.watchers = append(x.watchers, wt)
		x.mu.Unlock()
		if s&cellPlain == 0 {
			return // already extended: the terminating worker will finish x
		}
		e.sup.mu.Lock()
		stopped := e.sup.stopped
		if !stopped {
			if e.sup.exts == nil {
				e.sup.exts = make(map[*Cell]*cellExt)
			}
			e.sup.exts[c] = x
		}
		e.sup.mu.Unlock()
		if !stopped && c.state.CompareAndSwap(s, s&^cellPlain) {
			return
		}
		if !x.unwatch(wt) {
			return // finished after all: it was notified
		}
		if stopped {
			// A forced Stop has finished the extended actors already.
			if wt.notify(&Terminated{Reason: ReasonStopped, Err: ErrStopped}) {
				e.sup.notices.Add(1)
			}
			return
		}
		if incOf(c.state.Load()) != incOf(want) {
			e.unextended(c, x) // want's incarnation has ended: nothing else registers x
		}
	}
}

// unwatch takes wt out of x's watchers; it reports false, leaving them
// alone, if x is finished (wt was notified).
func (x *cellExt) unwatch(wt watcher) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.done {
		return false
	}
	for i := len(x.watchers) - 1; i >= 0; i-- {
		if x.watchers[i] == wt {
			x.watchers = append(x.watchers[:i], x.watchers[i+1:]...)
			break
		}
	}
	return true
}

// testHookWatch, if set, is called by watch after each load of the word:
// a test ends and re-spawns the incarnation there.
var testHookWatch func()

// watchGone notifies a watch that began after its incarnation (want)
// ended; s is the state word seen.
func watchGone(c *Cell, want, s uint32, wt watcher) {
	t := &Terminated{Reason: ReasonUnknown}
	if incOf(s) == incOf(want) && (s&cellKindMask == cellEnding || s&cellKindMask == cellDead) {
		t.Reason = reasonOf(s & cellReasonMask >> cellReasonShift)
		if x := c.ext.Load(); x != nil && x.inc == incOf(want) {
			x.mu.Lock()
			if x.done {
				t.Actor, t.Err = x.obj, x.err
			}
			x.mu.Unlock()
		}
	}
	if e := c.executor(); wt.notify(t) && e != nil {
		e.sup.notices.Add(1)
	}
}

// stopExts finishes, at a forced Stop, the extended actors still alive:
// their Stopped hooks run if every worker has exited (hooks) and their
// watchers are told ReasonStopped. It returns the messages their private
// queues still held (undelivered).
func (e *Executor) stopExts(hooks bool) int64 {
	e.sup.mu.Lock()
	exts := e.sup.exts
	e.sup.exts, e.sup.stopped = nil, true
	e.sup.mu.Unlock()
	var left int64
	for c, x := range exts {
		if c.state.Load()|cellPlain != x.inc|cellAlive|cellPlain {
			continue
		}
		if hooks && x.stopper != nil {
			stopped := func() {
				// A Stop the hook calls is still one from the stop itself.
				prev := e.stop.runner.Swap(selfID())
				defer e.stop.runner.Store(prev)
				x.stopper.Stopped(ReasonStopped)
			}
			if r, goexit, ok := callAside(stopped); !ok {
				e.recordPanic(&PanicError{Actor: x.obj, Value: r, Goexit: goexit, Stack: debug.Stack(), Worker: -1, hook: "Stopped"})
			}
		}
		if q := x.pq; q != nil {
			for _, env := range q.close() {
				dropped(env.msg, ErrStopped)
				left++
			}
		}
		x.mu.Lock() // finish, on a worker still stuck in a behaviour (!hooks), may be writing obj
		obj := x.obj
		x.mu.Unlock()
		if obj == nil && hooks {
			obj = c.obj // every worker has exited: nothing writes it now
		}
		e.sup.notices.Add(uint64(x.finish(obj, ReasonStopped, ErrStopped)))
	}
	return left
}

// SendContext is Send for a bounded actor from a goroutine that can wait:
// when the actor's mailbox is full it waits for room until ctx ends (then
// it returns an error wrapping ErrMailboxFull and ctx's cause), whatever
// the actor's Overflow policy. Called from a behaviour it never waits (a
// worker must not block): it applies the policy like Send. For other actors
// it is Send.
func SendContext[TA, TM any, A interface{ *TA }, M MessagePtr[TM]](ctx context.Context, c *Cell, to A, msg M, fn func(A, M) Allocation) error {
	off := uintptr(unsafe.Pointer(c)) - uintptr(unsafe.Pointer(to))
	return sendCtx(ctx, c, off, unsafe.Sizeof(*to), 0, erased.Erase(fn), msg)
}

// SendContext is Port.Send that waits for room in a full bounded mailbox
// (see the function SendContext).
func (p Port[M]) SendContext(ctx context.Context, msg M) error {
	if p.cell == nil {
		return ErrNotSpawned
	}
	return sendCtx(ctx, p.cell, uintptr(p.coff), math.MaxUint32, p.want, p.fn, msg)
}

func sendCtx(ctx context.Context, c *Cell, off, size uintptr, want uint32, fn unsafe.Pointer, msg any) error {
	if off >= size || off > math.MaxUint32 {
		panic("executor: SendContext: the cell is not inside the actor")
	}
	if erased.Data(msg) == nil {
		panic("executor: SendContext with a nil message")
	}
	st := c.state.Load()
	if st&(cellKindMask|cellPlain) != cellAlive|cellPlain || (want != 0 && st != want) {
		return sendSlow(c, uint32(off), st, want, fn, msg, ctx)
	}
	return send(c, off, size, want, fn, msg)
}
