package executor

import (
	"reflect"
	"runtime/debug"
	"unsafe"

	"github.com/actord/actord/internal/erased"
)

// Delivery: running behaviours, applying allocation statuses, terminating
// actors, recovering panics.
//
// Message lifetime. A message belongs to the behaviour receiving it until
// that behaviour returns or sends the message on. The executor reads nothing
// of a message after its behaviour returns: the message's allocation status
// is not stored in the message but recorded by Message.SetAllocation on the worker
// running the behaviour (msgStatus), for that one delivery. So a behaviour
// that forwards its message (sends it again) moves it: the next receiver, on
// any worker, may use it, set its status and release it, while the first
// worker only reads its own record, which its behaviour left at Nodelete.
// Only the last receiver may set Delete or Destroy; a message delivered to
// several actors at once (a broadcast) must not be given either.

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
			// Control envelopes are not messages (see WorkerStats.control).
			var n uint64
			for ; env != nil; env = w.buf.PopRef() {
				if env.fn == ctlFn {
					w.st.control++
					continue
				}
				n++
				if !e.forced.Load() { // set before shutdown: a dead letter (below)
					e.noteDead(env.msg)
				}
				dropped(env.msg, ErrStopped)
			}
			if e.forced.Load() {
				w.st.Dropped += n
				e.undeliver.Add(int64(n))
			} else {
				w.st.DeadLetters += n
			}
			return true
		}
		// Deliver, inline (this loop is the executor's innermost): run the
		// behaviour, then apply the actor's and the message's statuses. The
		// actor must still be in the incarnation the envelope was sent to.
		c := env.cell
		if c.state.Load() != env.want {
			w.deliverExt(env) // a dead letter, or an extended actor (supervise.go)
			continue
		}
		status := env.call()
		if w.delivs++; w.delivs%beatEvery == 0 {
			w.beat.Store(w.delivs) // see victimStalled
		}
		if w.delivs%deferLookDelivs == 0 && e.deferred.Load() != 0 {
			w.wakeDeferred() // a batch of long behaviours? See defer.go
		}
		if status != Nodelete {
			w.terminate(c, env.want, status)
			if w.mayBeRequest(env.msg) {
				dropped(env.msg, ErrTerminated) // a request its receiver did not answer
			}
		}
		if ms := w.msgStatus; ms != Nodelete {
			w.msgStatus = Nodelete
			w.messageDone(env, ms)
			w.msgStatus = Nodelete // a message hook cannot set a status for the next delivery
		}
	}
}

// messageDone applies a message's Delete or Destroy status, set by the
// behaviour that received it: the Destroy and, for Delete, Release hooks
// run. Finished needs no action. A panic in these hooks is reported
// (recovered) but does not terminate the actor, whose behaviour completed.
func (w *worker) messageDone(env *envelope, ms Allocation) {
	if ms != Delete && ms != Destroy {
		return
	}
	w.inMsgHook = true
	if d, ok := env.msg.(Destroyer); ok {
		d.Destroy()
	}
	if ms == Delete {
		if r, ok := env.msg.(Releaser); ok {
			r.Release()
		}
	}
	w.inMsgHook = false
}

// terminate ends the incarnation of actor c whose alive state word is
// alive, with status st. In order: if there is a Destroy hook to run, the
// state becomes ending (sends fail, Spawn refuses) and the hook runs; the
// state becomes dead; the Release hook runs, and the live count drops (so
// Stop returns only after every hook ran).
//
// The dead store hands the object over: for Destroy and Finished, back to
// the program (it may be spawned again as soon as Alive reports false); for
// Delete, to the Release hook, which typically puts it in a pool from which
// another goroutine may spawn it again while Release is still returning.
// After the dead store nothing here reads c or the object except through
// the copy obj taken before it.
func (w *worker) terminate(c *Cell, alive uint32, st Allocation) {
	if c.state.Load()&cellPlain == 0 {
		w.terminateExt(c, c.ext.Load(), alive, st, reasonNormal)
		return
	}
	inc := incOf(alive)
	obj := c.obj
	w.st.ActorsTerminated++
	var destroyer Destroyer
	var releaser Releaser
	if st == Delete || st == Destroy {
		destroyer, _ = obj.(Destroyer)
		if st == Delete {
			releaser, _ = obj.(Releaser)
		}
	}
	// The word is swapped, not stored: a Watch may clear cellPlain until
	// the first swap, which then tells us to finish its watch.
	if destroyer == nil && releaser == nil {
		if old := c.state.Swap(inc | cellDead); old&cellPlain == 0 { // no hook: nothing can panic here
			w.e.watchedLate(c, obj, inc, ReasonNormal, nil)
		}
		w.e.actorGone()
		return
	}
	w.ending, w.endingWord, w.endingObj = c, inc|cellEnding, obj // for recovered, if a hook panics
	watched := false
	if destroyer != nil {
		watched = c.state.Swap(inc|cellEnding)&cellPlain == 0
		destroyer.Destroy()
		c.state.Store(inc | cellDead)
	} else {
		watched = c.state.Swap(inc|cellDead)&cellPlain == 0
	}
	if watched {
		w.e.watchedLate(c, obj, inc, ReasonNormal, nil)
	}
	if releaser != nil {
		releaser.Release()
	}
	w.ending, w.endingObj = nil, nil
	w.e.actorGone()
}

// recovered handles a panic (or runtime.Goexit) out of a behaviour or hook
// and records it with its stack:
//   - out of an actor's termination hook: that termination completes;
//   - out of a message's hook: the actor, whose behaviour completed, goes on;
//   - out of a behaviour: its actor is terminated, without hooks.
func (w *worker) recovered(r any, goexit bool) {
	env := w.delivering() // the envelope being delivered
	inPriv := w.sup.inPriv
	w.sup.inPriv = false
	c := env.cell
	ms := w.msgStatus // the message's status, if its behaviour returned
	w.msgStatus = Nodelete
	if w.termGoexit {
		// A hook's runtime.Goexit unwound a termination, which
		// extTerm.run completed and recorded. What followed it in
		// drainBatch or deliverOne is skipped: a request the behaviour
		// did not answer is failed here, and the message's hooks run.
		w.termGoexit = false
		if w.mayBeRequest(env.msg) {
			dropped(env.msg, ErrTerminated)
		}
		w.skippedMessageDone(env, ms)
		return
	}
	stack := debug.Stack()
	w.st.Panics++
	var obj any
	hook := ""
	switch s := c.state.Load(); {
	case w.ending != nil && w.ending == c:
		hook = "Release"
		if s == w.endingWord {
			hook = "Destroy"
		}
		// If Destroy panicked the state is still ending; if Release
		// panicked it is dead, or already a new incarnation that must not
		// be touched (the CAS fails then).
		obj = w.endingObj
		c.state.CompareAndSwap(w.endingWord, w.endingWord-cellEnding+cellDead)
		w.ending, w.endingObj = nil, nil
		w.e.actorGone()
		// The panic skipped what follows the termination in drainBatch:
		// a request the behaviour did not answer is failed here, and the
		// message's hooks run.
		if w.mayBeRequest(env.msg) {
			dropped(env.msg, ErrTerminated)
		}
		defer w.skippedMessageDone(env, ms) // after this panic is recorded
	case w.inMsgHook:
		hook = "message"
		w.inMsgHook = false
		if inPriv && s|cellPlain == env.want {
			// The panic unwound drainPrivate, which had the private
			// queue scheduled: schedule what is left, or its messages
			// would wait forever.
			w.reschedule(c, c.ext.Load(), env.want)
		}
	case s|cellPlain == env.want:
		// The behaviour panicked while this incarnation was alive. Only
		// this worker can end it, so obj is stable until the dead store.
		obj = c.obj
		pe := &PanicError{Actor: obj, Message: env.msg, Value: r, Goexit: goexit, Stack: stack, Worker: w.id}
		dropped(env.msg, pe) // a request its receiver panicked on: ErrPanic, whatever supervision decides
		if s&cellPlain == 0 {
			x := c.ext.Load()
			w.pendingPanic = pe // a Goexit in a termination hook would skip our recordPanic
			handled, ended := w.supervise(c, x, env.want, pe)
			if !handled {
				x.lastPanic = pe
				w.terminateExt(c, x, env.want, Finished, reasonPanic)
				ended = true
			}
			w.pendingPanic = nil
			if !ended { // handled: reported, but not an error of Stop
				if w.e.cfg.OnError != nil {
					w.e.callOnError(pe)
				}
				return
			}
		} else {
			inc := incOf(env.want)
			w.st.ActorsTerminated++
			if old := c.state.Swap(inc | cellDead | reasonPanic<<cellReasonShift); old&cellPlain == 0 {
				w.e.watchedLate(c, obj, inc, ReasonPanic, pe)
			}
			w.e.actorGone()
		}
		w.e.recordPanic(pe)
		return
	}
	w.e.recordPanic(&PanicError{Actor: obj, Message: env.msg, Value: r, Goexit: goexit, Stack: stack, Worker: w.id, hook: hook})
}

// skippedMessageDone applies the status ms that a behaviour set for its
// message (SetAllocation) when a panic or runtime.Goexit out of its actor's
// termination hooks unwound the delivery before messageDone: the message's
// Destroy and Release hooks still run, as they do when those hooks return.
// A panic out of them is recovered and recorded here, since recovered, our
// caller, runs in a deferred call that nothing recovers.
func (w *worker) skippedMessageDone(env *envelope, ms Allocation) {
	if ms != Delete && ms != Destroy {
		return
	}
	if r, ok := safeCall(func() { w.messageDone(env, ms) }); !ok {
		w.inMsgHook = false
		w.st.Panics++
		w.e.recordPanic(&PanicError{Message: env.msg, Value: r, Stack: debug.Stack(), Worker: w.id, hook: "message"})
	}
}

// SetAllocation sets what the executor does with the message after the
// behaviour receiving it returns: Nodelete (the default: nothing), Delete
// (its Destroy hook, then its Release hook), Destroy (its Destroy hook) or
// Finished (nothing). It applies to this delivery only: the next delivery of
// the same message starts at Nodelete again. It must be called by the
// behaviour receiving the message, on its goroutine; anywhere else it
// panics, with a message starting with "actor:" (Message is actor.Message,
// whose users meet this method there). See "Message lifetime" in package
// actor.
func (m *Message) SetAllocation(a Allocation) {
	w := runningWorker()
	if w == nil || !w.delivering().holds(unsafe.Pointer(m)) {
		panic("actor: SetAllocation called outside the behaviour receiving the message")
	}
	w.msgStatus = a
}

// Allocation returns the status the running behaviour set for the message
// with SetAllocation (Nodelete if it set none, or outside that behaviour).
func (m *Message) Allocation() Allocation {
	w := runningWorker()
	if w == nil || !w.delivering().holds(unsafe.Pointer(m)) {
		return Nodelete
	}
	return w.msgStatus
}

// holds reports whether p points into the message of env (nil env: false).
// The end is excluded: the address just past the message is another
// object's (Go pads a struct whose last field has size zero, so a Message
// embedded last still lies inside its message).
func (env *envelope) holds(p unsafe.Pointer) bool {
	if env == nil {
		return false
	}
	start := uintptr(erased.Data(env.msg))
	if uintptr(p) == start {
		return true // Message embedded first: the usual case
	}
	size := reflect.TypeOf(env.msg).Elem().Size()
	return uintptr(p) >= start && uintptr(p) < start+size
}

// mayBeRequest reports whether msg's type is a request type (it implements
// undeliverable), remembering the answer for the last type seen, so that a
// stream of terminations by the same message type costs one comparison
// each instead of a type assertion.
func (w *worker) mayBeRequest(msg any) bool {
	t := (*[2]unsafe.Pointer)(unsafe.Pointer(&msg))[0]
	if t != w.lastMsgType {
		_, w.lastIsReq = msg.(undeliverable)
		w.lastMsgType = t
	}
	return w.lastIsReq
}
