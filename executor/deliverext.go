package executor

import "unsafe"

// The slow delivery path: envelopes that failed drainBatch's comparison
// (a dead letter, or an envelope for an extended actor: a user message,
// or a control envelope), the Started hook, and the private queue's
// envelope source (workerSup).

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
			x.delivered = true // the passivation mark (see passivate.go)
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
	case opPassivate:
		w.passivationCheck(c, x, env.want)
	case opPassivated:
		w.terminatePassivated(c, x, env.want)
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
	if w.mayBeRequest(env.msg) {
		deliveredHeld(env.msg) // for a restart: see held.go
	}
	status := env.call()
	if status != Nodelete {
		w.terminate(env.cell, env.want, status)
		if w.msgStatus&msgForwarded == 0 && w.mayBeRequest(env.msg) {
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
