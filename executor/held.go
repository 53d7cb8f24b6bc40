package executor

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/actord/actord/internal/erased"
	"golang.org/x/sys/cpu"
)

// Held requests: a request an actor keeps to answer later is failed when
// the actor ends.
//
// Every request sent through a port with a reply target (Ask, AskAsync,
// AskFunc, and each forwarding through a port) is recorded, before the
// send, under the incarnation it is sent to: its target's hold names that
// cell and incarnation, and the executor's registry of holds lists it
// under the cell. Nothing else records it: a plain Send, and a request
// without a target, cost nothing; a reply costs nothing either (a
// completed hold is dropped from its list later, when the list fills up,
// or when the incarnation ends).
//
// When the incarnation ends (terminateExt), its worker fails the holds of
// the requests it received (reqHold.delivered, set as an extended actor's
// delivery begins) and did not answer, after the Stopped hook (which may
// still answer) and before the actor's watchers are told, with
// errHeldEnded (ErrTerminated); a restart fails the same set with
// errHeldRestarted. A request still queued is not failed then: its
// envelope is the mailbox's until it is dropped as a dead letter, which
// fails it (dropped); failing it earlier would hand it back to its asker,
// who may reuse it, while a worker still holds the envelope and would read
// it when dropping it. A plain actor's deliveries are not marked (that
// would cost the fast path a test per delivery), so its ends (terminate, a
// plain actor's panic) fail nothing: what it kept is failed by a Stop, or
// ends with its asker's context. A Stop fails what is left with
// ErrStopped: every hold once no envelope is left (every worker exited),
// only delivered ones when a forced Stop gave up on a worker, whose batch
// may still hold requests. A request completed once is never completed
// again (its target's done CAS): a holder's later Reply or Fail returns
// ErrReplied and counts as a late reply.

// errHeldEnded fails a request whose holder's incarnation ended without
// answering it; errHeldRestarted one whose holder restarted.
var (
	errHeldEnded     = fmt.Errorf("%w: the actor ended without answering the request", ErrTerminated)
	errHeldRestarted = fmt.Errorf("%w: the actor restarted without answering the request", ErrTerminated)
)

// reqHold is a request target's record of the incarnation the request was
// sent to.
type reqHold struct {
	// e, c and inc: where the request was sent last, c nil while no
	// list holds it. Written under the lock of the shard of (e, c) that
	// lists the hold (holdAt adding it; holdAt, endHeld and endAllHeld
	// taking it out, which clear c). Atomic because holdAt loads them
	// before it knows which lock to take, then checks c again under it:
	// a Stop's endAllHeld may take the hold out meanwhile (a send that
	// fails at a stop puts its request back).
	e   atomic.Pointer[Executor]
	c   atomic.Pointer[Cell]
	inc atomic.Uint32
	// delivered is set (true) by the worker that begins delivering the
	// request to an extended actor, and read by that actor's restart, on
	// the same worker or one ordered after it by the mailbox; cleared by
	// holdAt when the request is forwarded. Atomic because the registry
	// reads it under a shard lock that the delivery does not take.
	delivered atomic.Bool
}

// heldTarget is a request's reply target as the registry sees it
// (*askTarget[R]).
type heldTarget interface {
	link() *reqHold
	isDone() bool
	failHeld(err error)
}

func (t *askTarget[R]) link() *reqHold { return &t.h }
func (t *askTarget[R]) isDone() bool   { return t.done.Load() }
func (t *askTarget[R]) failHeld(err error) {
	var zero R
	t.complete(zero, err, false)
}

// heldRequest is implemented by every request type (promoted from Asked).
type heldRequest interface{ heldTarget() heldTarget }

func (a *Asked[R]) heldTarget() heldTarget {
	if a.t == nil {
		return nil
	}
	return a.t
}

// heldOf returns msg's target if msg is a request with a target not yet
// completed, else nil.
func heldOf(msg any) heldTarget {
	r, ok := msg.(heldRequest)
	if !ok || erased.Data(msg) == nil { // a nil request: its behaviour gets nil
		return nil
	}
	t := r.heldTarget()
	if t == nil || t.isDone() {
		return nil
	}
	return t
}

// heldShards is the number of shards of a registry.
const heldShards = 16

// heldReg is an executor's registry of holds, by cell.
type heldReg struct {
	// cells counts the cells with a list, over all shards: changed under
	// the shard's lock, loaded without a lock by endHeld, which skips the
	// registry while it is zero (an executor where nobody asks). A list
	// made after that load is for a send that the end's state change
	// makes fail, or whose request is dropped as a dead letter (failed
	// then): see holdAt.
	cells  atomic.Int64
	shards [heldShards]heldShard
}

type heldShard struct {
	// mu guards by, and the changes of the e, c, inc of the holds it
	// lists (see reqHold).
	mu sync.Mutex
	by map[*Cell][]heldTarget
	_  cpu.CacheLinePad
}

func (r *heldReg) shard(c *Cell) *heldShard {
	return &r.shards[(uintptr(unsafe.Pointer(c))>>6)%heldShards]
}

// holdAt records t as sent to incarnation inc of c (in c's executor), out
// of the list it was in, if any; with c nil it only takes it out. It
// returns where t was before, for a send that fails to put it back. It is
// called before the send: an incarnation that ends after holdAt finds t
// in its list (endHeld); one that ended before makes the send fail, or the
// request a dead letter, which fails it.
func holdAt(t heldTarget, c *Cell, inc uint32) (pc *Cell, pinc uint32) {
	h := t.link()
	pc, pinc = h.c.Load(), h.inc.Load()
	if pc != nil {
		pe := h.e.Load()
		s := pe.held.shard(pc)
		s.mu.Lock()
		if h.c.Load() == pc { // else taken out meanwhile
			l := s.by[pc]
			for i := len(l) - 1; i >= 0; i-- {
				if l[i] == t {
					l = append(l[:i], l[i+1:]...)
					clear(l[len(l):cap(l)][:1])
					break
				}
			}
			if len(l) == 0 {
				delete(s.by, pc)
				pe.held.cells.Add(-1)
			} else {
				s.by[pc] = l
			}
			h.c.Store(nil)
		}
		s.mu.Unlock()
	}
	h.delivered.Store(false)
	if c == nil {
		return pc, pinc
	}
	e := c.executor()
	if e == nil {
		return pc, pinc // never spawned: the send fails
	}
	s := e.held.shard(c)
	s.mu.Lock()
	h.e.Store(e)
	h.inc.Store(inc)
	h.c.Store(c)
	if s.by == nil {
		s.by = make(map[*Cell][]heldTarget)
	}
	l, ok := s.by[c]
	if !ok {
		e.held.cells.Add(1)
	}
	if len(l) == cap(l) && len(l) >= 8 {
		// Full: drop the completed ones first (amortized: the list
		// at least halves, or doubles below).
		n := 0
		for _, x := range l {
			if !x.isDone() {
				l[n] = x
				n++
			}
		}
		clear(l[n:])
		l = l[:n]
	}
	s.by[c] = append(l, t)
	s.mu.Unlock()
	return pc, pinc
}

// endHeld fails the holds of incarnation inc of c that are not completed:
// all of them (delivered false), or only those whose request was
// delivered (every end and restart: see the top of this file). It takes them out of the registry first, and
// fails them after the lock (a failing completes the request: it may
// send a Reply or call an AskFunc function).
func (e *Executor) endHeld(c *Cell, inc uint32, delivered bool, err error) {
	if e.held.cells.Load() != 0 { // no hold anywhere: the common case, inlined
		e.endHeldIn(c, inc, delivered, err)
	}
}

// endHeldIn is endHeld when the registry holds something.
func (e *Executor) endHeldIn(c *Cell, inc uint32, delivered bool, err error) {
	s := e.held.shard(c)
	var fail []heldTarget
	s.mu.Lock()
	l, ok := s.by[c]
	if ok {
		n := 0
		for _, t := range l {
			h := t.link()
			switch {
			case t.isDone():
				// completed: dropped
			case h.inc.Load() == inc && (!delivered || h.delivered.Load()):
				h.c.Store(nil)
				fail = append(fail, t)
			default:
				l[n] = t
				n++
			}
		}
		clear(l[n:])
		if n == 0 {
			delete(s.by, c)
			e.held.cells.Add(-1)
		} else {
			s.by[c] = l[:n]
		}
	}
	s.mu.Unlock()
	for _, t := range fail {
		t.failHeld(err)
	}
}

// endAllHeld fails the holds left in the registry (a Stop: their
// incarnations ended with the executor) with err: every one when no
// envelope is left anywhere (every worker exited, the mailboxes closed),
// else (delivered true: a forced Stop gave up on a worker, whose batch may
// still hold requests) only those whose request was delivered.
func (e *Executor) endAllHeld(delivered bool, err error) {
	var fail []heldTarget
	for i := range e.held.shards {
		s := &e.held.shards[i]
		s.mu.Lock()
		for c, l := range s.by {
			for _, t := range l {
				if !t.isDone() && (!delivered || t.link().delivered.Load()) {
					t.link().c.Store(nil)
					fail = append(fail, t)
				}
			}
			delete(s.by, c)
			e.held.cells.Add(-1)
		}
		s.mu.Unlock()
	}
	for _, t := range fail {
		t.failHeld(err)
	}
}

// deliveredHeld marks the request msg, if it is one with a target, as
// delivered to the extended actor about to receive it (for a restart).
func deliveredHeld(msg any) {
	if t := heldOf(msg); t != nil {
		t.link().delivered.Store(true)
	}
}
