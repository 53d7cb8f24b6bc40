package executor

// Death-watch: Watch and WatchChan, and the finishing of an incarnation's
// watches when it terminates.

// Terminated tells a watcher (see Watch) that the actor it watched has
// terminated. Each watch receives exactly one.
type Terminated struct {
	Message
	// Actor is the terminated actor (the pointer that was spawned), nil
	// when nothing recorded it for this watch: the watch began after the
	// termination, or while it was completing (the watch lost the race
	// with the actor's dead store), and the actor had no extension.
	Actor any
	// Reason is why it terminated.
	Reason Reason
	// Err is the *PanicError of the last failure for ReasonPanic and
	// ReasonBudget (when known), ErrStopped for ReasonStopped, else nil.
	Err error
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
// applies to the notice too. A watch through a port of an incarnation that
// ends while Watch runs never touches a later incarnation (a forced Stop
// still finishes that one: its Stopped hook, its watchers). Errors: ErrNotSpawned (a zero target, or a
// zero notify port: nothing would receive the notification); ErrTerminated
// (notify's actor has terminated: it would never receive it).
func Watch[M any](target Port[M], notify Port[*Terminated]) error {
	if target.cell == nil || notify.cell == nil {
		return ErrNotSpawned
	}
	if err := portErr(notify.cell, notify.want); err != nil {
		return err
	}
	watch(target.cell, target.word(), portWatcher{notify})
	return nil
}

// WatchChan is Watch for goroutines: the returned channel receives the one
// *Terminated.
func WatchChan[M any](target Port[M]) (<-chan *Terminated, error) {
	if target.cell == nil {
		return nil, ErrNotSpawned
	}
	ch := make(chan *Terminated, 1)
	watch(target.cell, target.word(), chanWatcher(ch))
	return ch, nil
}

// watch implements Watch: it attaches wt to the extension of the
// incarnation want and makes sure that somebody will finish that
// extension (cellExt.finish, which notifies every watcher attached, once,
// after the actor is dead: its hooks have run and Alive reports false):
//   - an extended incarnation (alive with cellPlain clear, or ending with a
//     reason from terminateExt) is finished by its terminating worker, or
//     by a forced Stop (stopExts), whatever the watch does;
//   - a plain alive incarnation is extended by the watch: it registers the
//     extension (for a forced Stop) and clears cellPlain with a CAS, which
//     makes the terminating worker's CAS from the plain word fail, so that
//     it terminates the actor as an extended one (terminate);
//   - a plain incarnation whose Destroy hook runs (ending, reason bits
//     cellEndingPlain) is converted the same way: the watch clears those
//     bits with a CAS, which makes the worker's CAS from that word to dead
//     fail, so that it finishes the extension after its dead store
//     (endPlain).
//
// A watch whose CAS fails because the incarnation moved on detaches
// (cellExt.detach: out of the watchers and out of the registry, unless the
// extension was finished meanwhile, which notified it) and looks again;
// one that finds the incarnation dead, or a later one, notifies itself
// (watchGone). After a forced Stop has closed the executor, or taken the
// registry (sup.stopped), a watch notifies itself (ReasonStopped): the
// Stop finishes only what it took. The extension is used only if the word
// is unchanged after it was loaded, and registered only if the word is
// unchanged under sup.mu (registerWatched), so a watch through an old port
// never takes, or replaces, a later incarnation's extension or its registry
// entry; an extension whose
// inc is the current incarnation's is never replaced while it lives or
// ends.
//
// watch returns the extension wt is attached to, or nil if wt was
// notified, or is being, by the time it returns.
func watch(c *Cell, want uint32, wt watcher) *cellExt {
	for {
		s := c.state.Load()
		if testHookWatch != nil {
			testHookWatch()
		}
		alive := s|cellPlain == want
		if !alive && (incOf(s) != incOf(want) || s&cellKindMask != cellEnding) {
			watchGone(c, want, s, wt)
			return nil
		}
		e := c.executor()
		if e.closed.Load() {
			if wt.notify(&Terminated{Reason: ReasonStopped, Err: ErrStopped}) {
				e.sup.notices.Add(1)
			}
			return nil
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
		if t := x.attach(wt); t != nil {
			if wt.notify(t) {
				e.sup.notices.Add(1)
			}
			return nil
		}
		switch phaseOf(s) {
		case phaseAlivePlain:
			if testHookWatchRegister != nil {
				testHookWatchRegister()
			}
			if !e.registerWatched(c, x, s) {
				// A forced Stop has finished the extended actors already.
				if x.detach(e, c, wt) && wt.notify(&Terminated{Reason: ReasonStopped, Err: ErrStopped}) {
					e.sup.notices.Add(1)
				}
				return nil
			}
		case phaseEndingPlain:
		default:
			return x // extended already: see above
		}
		if testHookWatchExtend != nil {
			testHookWatchExtend()
		}
		if c.extendForWatch(s) {
			return x // extended, by this watch or by one that attached to x before it
		}
		if !x.detach(e, c, wt) {
			return nil // finished after all: it was notified
		}
	}
}

// attach adds wt to x's watchers and returns nil; if x is finished it
// leaves them alone and returns wt's notice instead, for the caller to
// send.
func (x *cellExt) attach(wt watcher) *Terminated {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.done {
		return &Terminated{Actor: x.obj, Reason: x.reason, Err: x.err}
	}
	x.watchers = append(x.watchers, wt)
	return nil
}

// detach undoes a watch that lost its race with its incarnation's
// termination: it takes wt out of x's watchers and x out of e's registry
// (x's incarnation no longer lives, so nothing needs it registered; the
// terminating worker unregisters only what it finishes). It reports
// false, leaving both alone, if x is finished (wt was notified).
func (x *cellExt) detach(e *Executor, c *Cell, wt watcher) bool {
	if !x.unwatch(wt) {
		return false
	}
	e.unextended(c, x)
	return true
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

// registerWatched adds x, the extension a watch made for the plain actor c
// whose word it loaded as s, to e's registry of extended actors, so that a
// forced Stop finishes it; it reports false, registering nothing, if a
// forced Stop has taken the registry already.
//
// It registers x only if c's word is still s, read under sup.mu: while
// sup.stopped is clear, a word that has left s never comes back to it (see
// lifecycle.go: only a Spawn aborted in a closed executor, or by a forced
// Stop that took the registry (registerSpawned), restores a word, and a
// forced Stop sets sup.stopped before it closes the executor), so the
// watch's CAS from s that follows fails, and the watch looks again. This is what
// keeps a stale watch (its incarnation ended meanwhile) from replacing the
// entry of a later incarnation spawned extended, which its detach would then
// delete: Spawn stores the later word (publishAlive) and registers, both
// under sup.mu (registerSpawned), so a load under sup.mu that still sees s comes
// before that registration, which then replaces x.
func (e *Executor) registerWatched(c *Cell, x *cellExt, s uint32) bool {
	e.sup.mu.Lock()
	defer e.sup.mu.Unlock()
	if e.sup.stopped {
		return false
	}
	if c.state.Load() != s {
		return true // moved on: the CAS that follows fails
	}
	if e.sup.exts == nil {
		e.sup.exts = make(map[*Cell]*cellExt)
	}
	e.sup.exts[c] = x
	return true
}

// testHookWatch, if set, is called by watch after each load of the word:
// a test ends and re-spawns the incarnation there.
var testHookWatch func()

// testHookWatchRegister, if set, is called by watch before it registers
// the extension of a plain actor: a test ends the incarnation and spawns the
// next one there.
var testHookWatchRegister func()

// testHookWatchExtend, if set, is called by watch before its CAS that
// extends a plain actor: a test terminates the actor there.
var testHookWatchExtend func()

// watchGone notifies a watch that began after its incarnation (want)
// ended; s is the state word seen.
func watchGone(c *Cell, want, s uint32, wt watcher) {
	t := &Terminated{Reason: ReasonUnknown}
	if incOf(s) == incOf(want) && s&cellKindMask == cellDead {
		t.Reason = reasonOf(s & cellReasonMask >> cellReasonShift)
		if x := c.ext.Load(); x != nil && x.inc == incOf(want) {
			x.mu.Lock()
			if x.done {
				t.Actor, t.Err = x.obj, x.err
				if x.reason == ReasonPassivated { // the word holds reasonNormal
					t.Reason = x.reason
				}
			}
			x.mu.Unlock()
		}
	}
	if e := c.executor(); wt.notify(t) && e != nil {
		e.sup.notices.Add(1)
	}
}
