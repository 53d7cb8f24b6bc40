package executor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// stopState makes Stop a single decision that every caller waits for.
type stopState struct {
	// started is set by the first Stop (CAS), which runs the stop; done is
	// closed by it after writing err, which every other caller reads after
	// receiving from done (the close publishes err).
	started atomic.Bool
	done    chan struct{}
	err     error
	// runner is the identity (selfID) of the goroutine running the stop
	// while runStop runs (stored by it before, cleared after: an identity
	// may be reused once its goroutine ends), else 0. OnError runs on that
	// goroutine during a forced stop; a Stopped hook runs on a goroutine of
	// its own (callAside), which stores its identity here while the hook
	// runs (stopHooks.run) and puts the previous one back by a CAS after
	// it, so that a runner that runStop cleared meanwhile stays cleared. A
	// Stop that either calls must not wait for itself.
	runner atomic.Uint64
	// mu pairs runStop's look at the stuck workers' inExt markers with
	// those workers' leaving (worker.leftExt): runStop loads each marker
	// and records busy under mu; a worker that leaves an extended actor's
	// code after shutdown clears its marker, then looks in busy under mu.
	// So for each such actor exactly one of them ends it: runStop, which
	// saw the marker cleared (stopExts), or the worker, whose actor busy
	// holds (endAtStop).
	mu   sync.Mutex
	busy []*Cell // guarded by mu: the actors left to their stuck workers
}

func (s *stopState) init() { s.done = make(chan struct{}) }

// forcedStopGrace bounds how long a forced Stop waits for workers to leave
// the behaviours they are running, and then, again, how long it waits for
// the Stopped hooks it runs (all of them together).
const forcedStopGrace = time.Second

// Stop waits until every actor has terminated, then stops the workers and
// closes the mailboxes. If ctx ends first, Stop shuts the executor down
// anyway (each worker finishes the behaviour it is running, if any, and drops
// the rest of its batch; Stop waits up to forcedStopGrace, one second, for a
// worker to leave its behaviour, then returns without it), runs the Stopped
// hooks of the actors still alive, one after another, on a goroutine it
// starts, tells their watchers ReasonStopped as each hook returns, and
// returns an error
// wrapping ErrActorsAlive and ctx's
// cause that says how many actors were still alive, naming their types
// with counts ("2 *main.Account, 1 *main.Ingest still alive"); those actors count as
// terminated from then on (Cell.Alive reports false once every worker has
// left its behaviour) and may be spawned into another executor. An
// extended actor whose code (a behaviour or hook) a worker Stop gave up on
// is still running is left to that worker: when the code returns, if the
// actor is still alive, the worker ends it there, after Stop returned, in
// the order of every termination: its Stopped hook runs (ReasonStopped),
// Cell.Alive reports false, its watchers are told ReasonStopped
// (ErrStopped); its Destroy and Release hooks do not run. Stop waits for
// the Stopped hooks it runs at most forcedStopGrace in all; then it returns
// an error wrapping ErrActorsAlive that says how many hooks had not
// returned (naming the type of one of their actors), and leaves them
// running: each of their actors refuses sends, Cell.Alive reports true
// until its hook has returned, then false, and then its watchers are told
// ReasonStopped. A hook that never returns keeps its actor alive.
//
// The error also reports, joined: every panic that terminated an actor, or
// came out of a hook or OnError (*PanicError, errors.Is(err, ErrPanic); a
// panic that supervision handled, by Resume, Restart or a supervisor's
// decision other than Failure.Stop, goes only to OnError), and
// ErrUndelivered with the number of messages that were never delivered (sent
// to actors that had terminated, still queued at the end, or dropped from
// batches at a forced stop; not those a bounded mailbox dropped by its
// overflow policy, which Stats counts), naming the type of one of those
// sent to terminated actors. A message still queued for an actor that had
// terminated counts as sent to a terminated actor, in this error and in
// Stats (WorkerStats.DeadLetters), so after a clean stop every undelivered
// message is a dead letter of Stats. Stop returns nil when all is well.
// After Stop, sends report ErrStopped, except to an actor that had
// terminated before, or whose end (left to a worker, or a Stopped hook
// Stop stopped waiting for) has begun (ErrTerminated).
//
// Stop runs once. Callers that call it while it runs wait for it and get
// the same result (or, if their own context ends first, an error wrapping
// ErrActorsAlive and their context's cause); callers after it has returned
// get ErrStopped. Called from a behaviour, from code that the executor's
// timer goroutine runs (an AskFunc function or OnError called by a timer's
// firing: Stop ends that goroutine and waits for it), or from a hook or
// error handler that the stop itself runs (Stopped hooks and OnError at a
// forced stop), it returns ErrStopInBehaviour and stops nothing.
func (e *Executor) Stop(ctx context.Context) error {
	if e == nil || e.stop.done == nil {
		return ErrNotStarted
	}
	if e.inBehaviour() || e.timers.inFiring() {
		return ErrStopInBehaviour
	}
	s := &e.stop
	if r := s.runner.Load(); r != 0 && r == selfID() {
		return ErrStopInBehaviour // it would wait for itself
	}
	if s.started.CompareAndSwap(false, true) {
		s.runner.Store(selfID())
		s.err = e.runStop(ctx)
		s.runner.Store(0)
		close(s.done)
		return s.err
	}
	select {
	case <-s.done:
		return ErrStopped
	default:
	}
	select {
	case <-s.done:
		return s.err
	case <-ctx.Done():
		return fmt.Errorf("%w: the Stop in progress had not finished when this caller's context ended: %w",
			ErrActorsAlive, context.Cause(ctx))
	}
}

// runStop is the one run of Stop.
func (e *Executor) runStop(ctx context.Context) error {
	var errs []error
	for !e.life.CompareAndSwap(0, lifeStopped) {
		select {
		case <-e.zero:
			continue
		case <-ctx.Done():
		}
		if e.life.CompareAndSwap(0, lifeStopped) {
			break // finished just as the context ended: a clean stop
		}
		e.forced.Store(true) // before shutdown: workers read it after seeing shutdown
		n := e.life.Or(lifeStopped) &^ lifeStopped
		errs = append(errs, fmt.Errorf("%w: %s: %w",
			ErrActorsAlive, e.aliveError(n), context.Cause(ctx)))
		break
	}
	e.shutdown.Store(true) // before wakeAll: see Executor.shutdown
	e.wakeAll()
	e.stopWatcher()
	stuck := 0
	allExited := e.waitWorkers(forcedStopGrace)
	if !allExited {
		// A worker is inside a behaviour that does not return. Stop does
		// not hang with it: the worker exits when the behaviour returns,
		// and drops the rest of its batch then.
		for _, w := range e.workers {
			if w.state.Load() != workerExited {
				stuck += int(w.batchSeq.Load() >> 32)
			}
		}
		errs = append(errs, fmt.Errorf("%w: a worker is still running a behaviour %v after the stop; it exits when the behaviour returns",
			ErrActorsAlive, forcedStopGrace))
	}
	// The extended actors whose code a stuck worker runs: their Stopped
	// hooks would run beside it (see deliverExtClaimed). Loaded after
	// shutdown was stored.
	// Their end is left to those workers (leftExt): decided under
	// stop.mu, which their leaving takes too.
	var busy []*Cell
	if !allExited {
		e.stop.mu.Lock()
		for _, w := range e.workers {
			if c := w.inExt.Load(); c != nil && w.state.Load() != workerExited {
				busy = append(busy, c)
			}
		}
		e.stop.busy = busy
		e.stop.mu.Unlock()
	}

	e.timers.close() // the timer goroutine exits; pending timers are dropped, counted dead (timer.go)
	var dead uint64
	for _, w := range e.workers {
		w.pubMu.Lock() // each exited worker published at exit
		dead += w.pub.DeadLetters
		w.pubMu.Unlock()
	}
	// The extended actors still alive (a forced stop): their hooks get
	// forcedStopGrace in all.
	queued, late, lateActor := e.stopExts(allExited, busy, forcedStopGrace)
	if late > 0 {
		errs = append(errs, fmt.Errorf("%w: %d Stopped hooks still running %v after the stop (one of a %T); they go on, and their actors' watchers are told when each returns",
			ErrActorsAlive, late, forcedStopGrace, lateActor))
	}
	if allExited {
		e.closed.Store(true) // after the Stopped hooks: see Executor.closed
	} else {
		// After the Stopped hooks too: the last worker to exit stores
		// closed (see Executor.closed).
		e.gaveUp.Store(true)
		if int(e.exited.Load()) == len(e.workers) {
			e.closed.Store(true) // it exited just now
		}
	}
	for _, m := range e.mailboxes {
		d, a := m.close()
		queued += int64(a)
		if d > 0 {
			// Dead letters, as a worker would have counted them: on
			// the worker whose range holds the mailbox.
			e.workers[m.owner.Load()].closedDead.Add(uint64(d))
			dead += uint64(d)
		}
	}
	for _, m := range e.spares {
		m.close() // no actor is placed on a spare: nothing is queued there
	}
	dropped := e.undeliver.Load()
	e.endAllHeld(!allExited, ErrStopped) // requests kept by actors that the stop ended (see held.go)
	// Shutdown's stop pills that found their actor ended are dead letters
	// of Stats, not of this error (see stopPill).
	dead -= min(dead, uint64(e.stopPillsDead.Load()))
	e.errMu.Lock()
	errs = append(errs, e.panics...)
	if extra := e.panicsN - len(e.panics); extra > 0 {
		errs = append(errs, fmt.Errorf("%w: %d more panics not kept", ErrPanic, extra))
	}
	e.errMu.Unlock()
	if total := int64(dead) + queued + dropped; total > 0 || stuck > 0 {
		msg := fmt.Sprintf("%d messages (%d sent to terminated actors, %d still queued at stop, %d dropped from batches at a forced stop)",
			total, dead, queued, dropped)
		if stuck > 0 {
			msg += fmt.Sprintf(", and the rest of a batch of %d messages held by a worker still running a behaviour, dropped when it returns", stuck)
		}
		if t := e.deadLetterType(); dead > 0 && t != "" {
			msg += fmt.Sprintf("; those sent to terminated actors include a %s", t)
		}
		errs = append(errs, fmt.Errorf("%w: %s", ErrUndelivered, msg))
	}
	return errors.Join(errs...)
}

// waitWorkers waits for every worker goroutine to exit. After a normal stop
// they all do promptly (no actor is alive, so no behaviour runs). After a
// forced stop a worker may be inside a long behaviour: then it gives up
// after grace and reports false.
func (e *Executor) waitWorkers(grace time.Duration) bool {
	done := make(chan struct{})
	go func() {
		e.wg.Wait()
		close(done)
	}()
	if !e.forced.Load() {
		<-done
		return true
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// deliverExtClaimed delivers env, whose actor is extended or whose
// incarnation has ended, through deliverExt, marking the actor as running
// on this worker (inExt) while its code runs, so that a forced Stop that
// gives up on this worker does not run the actor's Stopped hook beside it
// and leaves the actor's end to this worker (leftExt).
//
// The marker pairs with Executor.shutdown, Dekker-style: the worker stores
// inExt and then loads shutdown; Stop stores shutdown and, after its grace,
// loads every stuck worker's inExt. So either the worker sees shutdown and
// runs nothing of the actor (env is dropped, as the rest of a batch at a
// forced stop), or Stop sees the marker and skips the actor's hook (or
// both). An actor alive while shutdown is set means a forced stop: at a
// clean one no actor is alive.
func (w *worker) deliverExtClaimed(env *envelope) {
	c := env.cell
	if c.state.Load()|cellPlain != env.want {
		w.deliverExt(env) // a dead letter: none of the actor's code runs
		return
	}
	w.inExt.Store(c)
	if w.e.shutdown.Load() {
		w.inExt.Store(nil)
		if env.fn == ctlFn {
			w.st.control++
			return
		}
		w.st.Dropped++
		w.e.undeliver.Add(1)
		dropped(env.msg, ErrStopped)
		return
	}
	w.deliverExt(env)
	w.leftExt(c)
}

// leaveExt clears inExt after the code of an extended actor ended by a
// panic or runtime.Goexit (recovered, resume), which skipped the clearing
// in deliverExtClaimed.
func (w *worker) leaveExt() {
	if c := w.inExt.Load(); c != nil {
		w.leftExt(c)
	}
}

// leftExt clears inExt, set for c, once c's code has returned. The clear
// comes before the load of shutdown (Dekker-style with runStop, which
// stores shutdown before it loads the markers): if shutdown is not set
// yet, runStop will see the marker cleared and end c itself, if alive.
// Else the worker decides under stop.mu whether runStop left c to it (c
// is in stop.busy: runStop saw the marker before the clear) and, if so,
// ends c as the forced stop would have (endAtStop).
func (w *worker) leftExt(c *Cell) {
	w.inExt.Store(nil)
	if !w.e.shutdown.Load() {
		return
	}
	s := &w.e.stop
	s.mu.Lock()
	mine := cellIn(s.busy, c)
	s.mu.Unlock()
	if mine {
		w.endAtStop(c)
	}
}

// endAtStop ends c, an extended actor that a forced Stop left to this
// worker because its code was running here when Stop gave up waiting,
// once that code has returned: if the incarnation is still alive, it
// terminates as any extended actor does (terminateExt), with its Stopped
// hook called with ReasonStopped and its watchers told ReasonStopped
// (ErrStopped), after the dead store (Alive false). Neither Destroy nor
// Release runs, as for every actor a forced stop finishes.
func (w *worker) endAtStop(c *Cell) {
	x := c.ext.Load()
	if x == nil || c.state.Load()|cellPlain != x.inc|cellAlive|cellPlain {
		return // ended by its own code (or never extended): nothing left
	}
	w.terminateStopped(c, x)
}

// cellIn reports whether c is in cs.
func cellIn(cs []*Cell, c *Cell) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}
