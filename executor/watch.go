package executor

// Death-watch: Watch and WatchChan, and the finishing of an incarnation's
// watches when it terminates.

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
