package executor

import (
	"fmt"
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
//
// A request is the one message the executor itself completes after its
// behaviour: when the behaviour terminates its actor or panics without
// replying, the worker fails it (ErrTerminated), since nobody else will
// answer it. A request forwarded through a port (Port.Send, SendContext)
// is known to have moved: the send marks the delivery (msgForwarded, see
// handedOver) and the worker then neither fails the request nor applies
// a status to it. A request forwarded with the function Send is not seen:
// telling it would cost every static send; the executor treats it as one
// the behaviour kept.

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
			w.deliverExtClaimed(env) // a dead letter, or an extended actor (supervise.go)
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
			if w.msgStatus&msgForwarded == 0 && w.mayBeRequest(env.msg) {
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

// msgForwarded is set in msgStatus, beside the status, when the behaviour
// sends the request it is receiving on through a port (handedOver): the
// request has moved, and nothing here touches it after the behaviour (no
// failure, no status applied: messageDone sees no Delete or Destroy).
const msgForwarded Allocation = 1 << 7

// handedOver marks the delivery running on this goroutine, if any, as
// forwarded (msgForwarded) when msg is the message it delivers: sendSlow
// calls it after a request's successful send through its port. It
// compares pointers only: it reads nothing of msg.
func handedOver(msg any) {
	w := runningWorker()
	if w == nil {
		return
	}
	if env := w.delivering(); env != nil && env.msg != nil && erased.Data(env.msg) == erased.Data(msg) {
		w.msgStatus |= msgForwarded
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

// recovered handles a panic (or runtime.Goexit) out of a behaviour or hook
// and records it with its stack:
//   - out of an actor's termination hook: that termination completes;
//   - out of a message's hook: the actor, whose behaviour completed, goes on;
//   - out of a behaviour: its actor is terminated, without hooks.
func (w *worker) recovered(r any, goexit bool) {
	// The extended actor's code this worker ran (deliverExtClaimed) ends
	// with this recovery, which may run its termination hooks first.
	defer w.leaveExt()
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
		if ms&msgForwarded == 0 && w.mayBeRequest(env.msg) {
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
		// If Destroy panicked the state is still ending (a Watch may have
		// converted its word: see watch); if Release panicked it is dead,
		// or already a new incarnation that must not be touched.
		obj = w.endingObj
		hook = "Release"
		if inc := incOf(w.endingWord); incOf(s) == inc && s&cellKindMask == cellEnding {
			hook = "Destroy"
			w.e.endPlain(c, obj, inc)
		}
		w.ending, w.endingObj = nil, nil
		w.e.actorGone()
		// The panic skipped what follows the termination in drainBatch:
		// a request the behaviour did not answer is failed here, and the
		// message's hooks run.
		if ms&msgForwarded == 0 && w.mayBeRequest(env.msg) {
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
		pe := &PanicError{Actor: obj, Message: userMessage(env.msg), Value: r, Goexit: goexit, Stack: stack, Worker: w.id}
		if ms&msgForwarded == 0 && w.mayBeRequest(env.msg) { // its behaviour ran: only a request it kept is told
			dropped(env.msg, fmt.Errorf("%w: %w", ErrTerminated, pe)) // a request its receiver panicked on
		}
		if c.endPlainPanicked(s) == endPlainTaken {
			w.st.ActorsTerminated++
			w.e.actorGone()
		} else {
			// Extended, or a Watch extended it after our load (the CAS
			// failed): it terminates as an extended actor (see watch).
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
		}
		w.e.recordPanic(pe)
		return
	}
	w.e.recordPanic(&PanicError{Actor: obj, Message: userMessage(env.msg), Value: r, Goexit: goexit, Stack: stack, Worker: w.id, hook: hook})
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
	w.msgStatus = a | w.msgStatus&msgForwarded
}

// Allocation returns the status the running behaviour set for the message
// with SetAllocation (Nodelete if it set none, or outside that behaviour).
func (m *Message) Allocation() Allocation {
	w := runningWorker()
	if w == nil || !w.delivering().holds(unsafe.Pointer(m)) {
		return Nodelete
	}
	return w.msgStatus &^ msgForwarded
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
	msg := userMessage(env.msg) // a periodic timer's delivery: its message
	start = uintptr(erased.Data(msg))
	if uintptr(p) == start {
		return true
	}
	size := reflect.TypeOf(msg).Elem().Size()
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
