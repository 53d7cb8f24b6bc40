package executor

import (
	"reflect"
	"runtime/debug"
	"unsafe"

	"github.com/actord/actord/internal/erased"
)

// Delivery: running behaviours, applying allocation statuses (ending an
// actor is terminate.go's), recovering panics by the worker's mode
// (runMode). The slow path, for extended actors and dead letters, is
// deliverext.go.
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
			w.deliverExtClaimed(env) // a dead letter, or an extended actor (deliverext.go)
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
	w.enterMessageHook()
	if d, ok := env.msg.(Destroyer); ok {
		d.Destroy()
	}
	if ms == Delete {
		if r, ok := env.msg.(Releaser); ok {
			r.Release()
		}
	}
	w.leaveMessageHook()
}

// runMode is what a worker goroutine runs, as far as a panic or a
// runtime.Goexit out of it concerns recovered, which switches on it. It
// changes only through the transitions below, named after what begins or
// ends; docs/design.md ("An actor's life") has the table.
//
// Which envelope is being delivered is not part of the mode: it is the
// batch's last popped one, or the private queue's copy while
// workerSup.inPriv is set (see delivering), in every mode; recovered reads
// that source only to reschedule a private queue that a panic left
// scheduled.
type runMode uint8

const (
	// runBehaviour: a behaviour, or nothing. (The Started hook, Reset and
	// an extended termination's hooks run here too, but recover their own
	// panics: see safeCall.) recovered terminates or supervises the actor
	// whose behaviour panicked.
	runBehaviour runMode = iota
	// runMsgHook: a message's Destroy or Release hook (messageDone); the
	// actor, whose behaviour completed, goes on.
	runMsgHook
	// runPlainEnd: a plain actor's Destroy or Release hook (terminate);
	// worker.end says which incarnation and which hook. recovered
	// completes that termination.
	runPlainEnd
	// runSupervising: recovered applies an extended actor's directive to
	// its behaviour's panic (worker.pendingPanic); a runtime.Goexit in a
	// termination it starts unwinds past recovered, so noteGoexit records
	// that panic in its stead. recovered itself never sees this mode.
	runSupervising
	// runGoexitDone: a hook's runtime.Goexit interrupted a termination,
	// which extTerm.run or hookExited completed and recorded (noteGoexit);
	// the recovery the Goexit reaches finishes the delivery only.
	runGoexitDone
)

// plainEnd is runPlainEnd's data: the plain incarnation whose termination
// hooks run, the object copied before its dead store, and whether its
// Destroy hook (still ending) or its Release hook (dead) runs.
type plainEnd struct {
	c          *Cell
	obj        any
	inc        uint32
	destroying bool
}

// enterMessageHook: runBehaviour -> runMsgHook, before a message's hooks.
func (w *worker) enterMessageHook() { w.mode = runMsgHook }

// leaveMessageHook: runMsgHook -> runBehaviour, after them.
func (w *worker) leaveMessageHook() { w.mode = runBehaviour }

// beginPlainEnd: runBehaviour -> runPlainEnd, before the termination hooks
// of the plain incarnation inc of c (obj), the first of which is Destroy
// if destroying, else Release.
func (w *worker) beginPlainEnd(c *Cell, obj any, inc uint32, destroying bool) {
	w.mode, w.end = runPlainEnd, plainEnd{c: c, obj: obj, inc: inc, destroying: destroying}
}

// plainEndReleasing: within runPlainEnd, the Destroy hook has returned;
// what follows (the dead store, the Release hook) is the Release step.
func (w *worker) plainEndReleasing() { w.end.destroying = false }

// leavePlainEnd: runPlainEnd -> runBehaviour, after the hooks.
func (w *worker) leavePlainEnd() { w.mode, w.end = runBehaviour, plainEnd{} }

// beginSupervising: runBehaviour -> runSupervising, while recovered
// applies the directive of an extended actor to its behaviour's panic pe.
func (w *worker) beginSupervising(pe *PanicError) { w.mode, w.pendingPanic = runSupervising, pe }

// leaveSupervising: runSupervising -> runBehaviour, once the directive is
// applied (not reached if a Goexit unwound it: resume resets the mode).
func (w *worker) leaveSupervising() { w.mode, w.pendingPanic = runBehaviour, nil }

// goexitHandled: runBehaviour or runSupervising -> runGoexitDone, when a
// hook's Goexit interrupted a termination that is being completed and
// recorded (noteGoexit); the behaviour's panic recovered was supervising
// is recorded first, as recovered would have.
func (w *worker) goexitHandled() {
	if w.mode == runSupervising {
		w.termPanics = append(w.termPanics, w.pendingPanic)
		w.pendingPanic = nil
	}
	w.mode = runGoexitDone
}

// takeRun returns the mode (and runPlainEnd's data) a panic or Goexit
// interrupted, and sets the mode back to runBehaviour: recovered, and
// resume (a new goroutine runs nothing yet), take it.
func (w *worker) takeRun() (runMode, plainEnd) {
	m, end := w.mode, w.end
	w.mode, w.end, w.pendingPanic = runBehaviour, plainEnd{}, nil
	return m, end
}

// recovered handles a panic (or runtime.Goexit) out of a behaviour or hook
// and records it with its stack. It acts on the worker's mode (runMode):
//   - runGoexitDone: the termination is complete and recorded; the rest of
//     the delivery is finished;
//   - runPlainEnd: a plain actor's termination hook: that termination
//     completes;
//   - runMsgHook: a message's hook: the actor, whose behaviour completed,
//     goes on;
//   - runBehaviour: a behaviour: its actor is terminated, without hooks,
//     or supervised.
func (w *worker) recovered(r any, goexit bool) {
	w.recoveredStack(r, goexit, nil)
}

// recoveredStack is recovered with the panicking goroutine's stack, taken
// there (nil: this goroutine's, now): finishLentTail recovers on the owner
// a panic that a helping caller's goroutine caught.
func (w *worker) recoveredStack(r any, goexit bool, stack []byte) {
	// The extended actor's code this worker ran (deliverExtClaimed) ends
	// with this recovery, which may run its termination hooks first.
	defer w.leaveExt()
	env := w.delivering() // the envelope being delivered
	inPriv := w.sup.inPriv
	w.sup.inPriv = false
	c := env.cell
	ms := w.msgStatus // the message's status, if its behaviour returned
	w.msgStatus = Nodelete
	mode, end := w.takeRun()
	if mode == runGoexitDone {
		// What followed the termination in drainBatch or deliverOne is
		// skipped: a request the behaviour did not answer is failed
		// here, and the message's hooks run.
		w.failKept(env, ms, ErrTerminated)
		w.skippedMessageDone(env, ms)
		return
	}
	if stack == nil {
		stack = debug.Stack()
	}
	w.st.Panics++
	var obj any
	hook := ""
	switch mode {
	case runPlainEnd:
		// If Destroy panicked the incarnation is still ending (a Watch
		// may have converted its word: see watch): it becomes dead. If
		// Release panicked it is dead, or already a new incarnation that
		// must not be touched.
		obj = end.obj
		hook = "Release"
		if end.destroying {
			hook = "Destroy"
			w.e.endPlain(end.c, obj, end.inc)
		}
		w.e.actorGone()
		w.e.endHeld(end.c, end.inc, true, errHeldEnded) // the requests it kept (see held.go)
		// The panic skipped what follows the termination in drainBatch:
		// a request the behaviour did not answer is failed here, and the
		// message's hooks run.
		w.failKept(env, ms, ErrTerminated)
		defer w.skippedMessageDone(env, ms) // after this panic is recorded
	case runMsgHook:
		hook = "message"
		if inPriv && c.state.Load()|cellPlain == env.want {
			// The panic unwound drainPrivate, which had the private
			// queue scheduled: schedule what is left, or its messages
			// would wait forever.
			w.reschedule(c, c.ext.Load(), env.want)
		}
	default: // runBehaviour
		s := c.state.Load()
		if s|cellPlain != env.want {
			break // not the actor's code: its incarnation had ended
		}
		// The behaviour panicked while this incarnation was alive. Only
		// this worker can end it, so obj is stable until the dead store.
		obj = c.obj
		pe := &PanicError{Actor: obj, Message: userMessage(env.msg), Value: r, Goexit: goexit, Stack: stack, Worker: w.id}
		// Its behaviour ran: only a request it kept is told.
		w.failKept(env, ms, pe) // ErrPanic, whatever supervision decides
		switch c.endPlainPanicked(s) {
		case endPlainTaken:
			w.st.ActorsTerminated++
			w.e.actorGone()
			w.e.endHeld(c, incOf(s), true, errHeldEnded) // the requests it kept
		case endWatched:
			// Extended, or a Watch extended it after our load (the CAS
			// failed): it terminates as an extended actor (see watch).
			x := c.ext.Load()
			w.beginSupervising(pe)
			handled, ended := w.supervise(c, x, env.want, pe)
			if !handled {
				x.lastPanic = pe
				w.terminateExt(c, x, env.want, Finished, reasonPanic)
				ended = true
			}
			w.leaveSupervising()
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

// failKept fails the request env delivered, if it is one that its
// behaviour kept (did not forward: see handedOver), with err: its receiver
// ended without answering it.
func (w *worker) failKept(env *envelope, ms Allocation, err error) {
	if ms&msgForwarded == 0 && w.mayBeRequest(env.msg) {
		dropped(env.msg, err)
	}
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
		w.leaveMessageHook()
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
