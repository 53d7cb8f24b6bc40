package executor

import (
	"runtime/debug"
	"sync/atomic"
	"time"
)

// Termination: ending an incarnation, plain (terminate) or extended
// (terminateExt, extTerm), and finishing the extended actors a forced Stop
// leaves alive (stopExts); the hooks' panics and runtime.Goexit on the way.

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
//
// A plain actor's first transition is a CAS from its plain alive word: a
// Watch that extended it meanwhile makes the CAS fail, and the actor then
// terminates as an extended one (terminateExt), which finishes the watch.
// A Watch that comes while its Destroy hook runs is finished by endPlain
// (see watch).
func (w *worker) terminate(c *Cell, alive uint32, st Allocation) {
	inc := incOf(alive)
	obj := c.obj
	var destroyer Destroyer
	var releaser Releaser
	if st == Delete || st == Destroy {
		destroyer, _ = obj.(Destroyer)
		if st == Delete {
			releaser, _ = obj.(Releaser)
		}
	}
	if c.endPlainAlive(alive, destroyer != nil) == endWatched {
		w.terminateExt(c, c.ext.Load(), alive, st, reasonNormal) // extended, maybe by a Watch
		return
	}
	w.st.ActorsTerminated++
	if destroyer == nil && releaser == nil { // no hook: nothing can panic here
		w.e.actorGone()
		w.e.endHeld(c, inc, true, errHeldEnded) // the requests it kept (see held.go)
		return
	}
	w.beginPlainEnd(c, obj, inc, destroyer != nil) // for recovered, if a hook panics
	if destroyer != nil {
		destroyer.Destroy()
		w.plainEndReleasing()
		w.e.endPlain(c, obj, inc)
	}
	if releaser != nil {
		releaser.Release()
	}
	w.leavePlainEnd()
	w.e.actorGone()
	// The requests it kept (see held.go), after the end, as the request
	// its behaviour ended on (recovered does it when a hook panics).
	w.e.endHeld(c, inc, true, errHeldEnded)
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
// for recordGoexits, after the behaviour's panic that the recovery it
// unwinds would have recorded (runSupervising's); the worker's mode
// becomes runGoexitDone, which tells the recovery that the Goexit reaches
// next, if any, that it is handled (goexitHandled).
func (w *worker) noteGoexit(x *cellExt, hook string) {
	w.st.Panics++
	pe := &PanicError{Actor: x.obj, Goexit: true, Stack: debug.Stack(), Worker: w.id, hook: hook}
	x.lastPanic = pe
	w.goexitHandled()
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
	// stopped: the end a forced Stop left to this worker (endAtStop):
	// the Stopped hook and the watchers get ReasonStopped, and the
	// private queue's messages are dropped with ErrStopped.
	stopped bool
	// passivated: the end of a passivation (terminatePassivated): the
	// Stopped hook and the watchers get ReasonPassivated.
	passivated bool
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
	c.startExtEnd(t.inc, reason)
	t.run(w)
}

// terminateStopped ends the extended incarnation x of c, still alive, whose
// end a forced Stop left to this worker (see endAtStop): terminateExt's
// steps, without Destroy and Release (Nodelete), with ReasonStopped for
// the Stopped hook and the watchers. The word takes the same transitions
// (ending, then dead, with reasonNormal: the word holds no ReasonStopped).
func (w *worker) terminateStopped(c *Cell, x *cellExt) {
	t := extTerm{c: c, x: x, obj: c.obj, inc: x.inc, reason: reasonNormal, st: Nodelete, stopped: true}
	w.st.ActorsTerminated++
	c.startExtEnd(t.inc, t.reason)
	t.run(w)
}

// why is the reason the Stopped hook and the watchers get.
func (t *extTerm) why() Reason {
	if t.stopped || t.st == stopStatus { // a forced Stop's end, or Shutdown's stop pill
		return ReasonStopped
	}
	if t.passivated {
		return ReasonPassivated
	}
	return reasonOf(t.reason)
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
				if r, ok := safeCall(func() { x.stopper.Stopped(t.why()) }); !ok {
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
					if t.stopped { // as the rest of a batch at a forced stop
						w.st.Dropped++
						w.e.undeliver.Add(1)
						dropped(env.msg, ErrStopped)
						continue
					}
					w.st.private++
					w.st.DeadLetters++
					w.e.noteDead(env.msg)
					dropped(env.msg, ErrTerminated)
				}
			}
			// The requests it kept, after its Stopped hook, which may
			// still answer them (see held.go).
			w.e.endHeld(c, t.inc, true, errHeldEnded)
			c.finishExtEnd(t.inc, t.reason)
			var err error
			if t.reason != reasonNormal && x.lastPanic != nil {
				err = x.lastPanic
			} else if t.why() == ReasonStopped {
				err = ErrStopped
			}
			w.e.unextended(c, x) // before the notices: a watcher told finds nothing left
			w.e.sup.notices.Add(uint64(x.finish(t.obj, t.why(), err)))
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

// stopExts finishes, at a forced Stop, the extended actors still alive:
// their Stopped hooks run and their watchers are told ReasonStopped. It
// leaves out busy, the actors whose code a worker that Stop gave up on is
// running (allExited is false then), but for closing their private queues:
// each one's worker ends it when that code returns (endAtStop), so that
// its hook, Alive false and its watchers come in that order there too.
//
// The hooks run one after another, in the registry's order, on a goroutine
// of stopHooks, each on a goroutine of its own (callAside). stopExts waits
// for them up to grace in all; then it takes, under stop.mu, the actors
// whose end the goroutine has not finished (late), moves each from alive
// extended to ending (startExtEnd: no Spawn may take it, and Alive reports
// true while its hook runs), and leaves their end to that goroutine, which
// after each one's hook stores dead (finishExtEnd) and then tells its
// watchers. It returns the messages the private queues still held
// (undelivered), the number of hooks late (not finished at the bound), and
// one of their actors.
func (e *Executor) stopExts(allExited bool, busy []*Cell, grace time.Duration) (left int64, late int, lateActor any) {
	e.sup.mu.Lock()
	exts := e.sup.exts
	e.sup.exts, e.sup.stopped = nil, true
	e.sup.mu.Unlock()
	h := &stopHooks{e: e}
	for c, x := range exts {
		if c.state.Load()|cellPlain != x.inc|cellAlive|cellPlain {
			continue
		}
		if cellIn(busy, c) { // left to its worker, but for its queue
			left += closeStopped(x)
			continue
		}
		// A Stopper is extended from its spawn: every delivery to it is
		// marked (see deliverExtClaimed), so unless it is busy no worker
		// runs its code, nor will.
		if x.stopper != nil {
			h.ends = append(h.ends, stopEnd{c, x})
			continue
		}
		left += closeStopped(x)
		// A worker still stuck in the behaviour of an actor that a Watch
		// extended (unmarked: not in busy) may be finishing it, writing
		// x.obj.
		x.mu.Lock()
		obj := x.obj
		x.mu.Unlock()
		if obj == nil && allExited {
			obj = c.obj // no worker runs its code: nothing writes it now
		}
		e.sup.notices.Add(uint64(x.finish(obj, ReasonStopped, ErrStopped)))
	}
	if len(h.ends) == 0 {
		return left, 0, nil
	}
	done := make(chan struct{})
	go h.run(done)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done: // pairs with close(done): h.left is final
		return left + h.left.Load(), 0, nil
	case <-t.C:
	}
	// Decide under the lock which ends are late; the goroutine finishing
	// one takes it too (stopHooks.run), after its hook.
	e.stop.mu.Lock()
	rest := h.ends[h.next:]
	h.late = true
	for _, a := range rest {
		a.c.startExtEnd(a.x.inc, reasonNormal) // the goroutine stores dead after the hook
	}
	e.stop.mu.Unlock()
	for _, a := range rest {
		left += closeStopped(a.x)
	}
	if len(rest) > 0 {
		lateActor = rest[0].x.obj
	}
	return left + h.left.Load(), len(rest), lateActor
}

// closeStopped closes the private queue of x at a forced stop: what it
// held is dropped (ErrStopped). It returns how many messages that was.
func closeStopped(x *cellExt) int64 {
	var n int64
	if q := x.pq; q != nil {
		for _, env := range q.close() {
			dropped(env.msg, ErrStopped)
			n++
		}
	}
	return n
}

// stopEnd is an idle actor whose Stopped hook a forced Stop runs.
type stopEnd struct {
	c *Cell
	x *cellExt
}

// stopHooks runs the Stopped hooks of a forced Stop (stopExts).
type stopHooks struct {
	e    *Executor
	ends []stopEnd
	left atomic.Int64 // messages dropped from the private queues, before late
	// next (the ends whose end run has finished) and late (stopExts gave
	// up waiting) are guarded by e.stop.mu: stopExts sets late and moves
	// ends[next:] to ending; run, after each hook, reads late to learn
	// whose end is its to finish (store dead, then tell the watchers).
	next int
	late bool
}

// run runs the hooks in order and finishes each actor's end; it closes
// done when all are finished (unless late, nobody waits then).
func (h *stopHooks) run(done chan struct{}) {
	e := h.e
	for i, a := range h.ends {
		x := a.x
		stopped := func() {
			// A Stop the hook calls is still one from the stop itself.
			// The CAS leaves alone a runner that runStop cleared since.
			prev := e.stop.runner.Swap(selfID())
			defer e.stop.runner.CompareAndSwap(selfID(), prev)
			x.stopper.Stopped(ReasonStopped)
		}
		if r, goexit, ok := callAside(stopped); !ok {
			e.recordPanic(&PanicError{Actor: x.obj, Value: r, Goexit: goexit, Stack: debug.Stack(), Worker: -1, hook: "Stopped"})
		}
		e.stop.mu.Lock()
		late := h.late
		h.next = i + 1
		e.stop.mu.Unlock()
		obj := a.c.obj // before the dead store, which hands it over
		if late {      // stopExts moved it to ending and closed its queue
			a.c.finishExtEnd(x.inc, reasonNormal) // Alive false, then the watchers
		} else {
			h.left.Add(closeStopped(x))
		}
		e.sup.notices.Add(uint64(x.finish(obj, ReasonStopped, ErrStopped)))
	}
	close(done) // pairs with stopExts's <-done
}

// endPlain takes a plain incarnation (inc) of obj from ending, whose
// Destroy hook has returned or panicked, to dead. If a watch converted the
// ending word meanwhile (see watch), it finishes the watch's extension
// after the dead store: the word is ending until that store, so no spawn
// can have replaced the extension it loads before it.
func (e *Executor) endPlain(c *Cell, obj any, inc uint32) {
	x, o := c.finishPlainEnd(inc)
	if o == endWatched && x != nil && x.inc == inc {
		e.unextended(c, x)
		e.sup.notices.Add(uint64(x.finish(obj, ReasonNormal, nil)))
	}
}
