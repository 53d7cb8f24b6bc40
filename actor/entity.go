package actor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/actord/actord/executor"
)

// Entities is a set of named actors of one type, an entity type (accounts,
// sessions, devices, chat rooms): Get returns the live actor of a name, or
// spawns it with the set's factory and spawn options if the name has none.
//
//	accounts := actor.NewEntities(sys, func(id string) *Account { return &Account{id: id} })
//	acc, err := accounts.Get(ctx, "alice") // *Account, alive
//	actor.Send(acc, &Deposit{N: 5}, (*Account).OnDeposit)
//	get, err := actor.EntityPort(ctx, accounts, "alice", (*Account).OnGet)
//
// A name has at most one live actor at any time, its incarnation: a
// concurrent Get of a name without one spawns exactly one, and the others
// get it. An entity ends as any actor does (a behaviour's status, a pill, a
// panic past its supervision, its system's stop), and its name is released
// when the end is over: its Stopped, Destroy and Release hooks have run
// (Alive reports false). A Get that finds the name's actor terminating
// waits until then, bounded by its context, and spawns the next
// incarnation, instead of returning the one that refuses sends.
//
// With WithPassivation among the options, an entity that receives nothing
// for the duration ends by itself (ReasonPassivated) and its name is
// released: idle entities hold no memory but their slot, swept later. The
// documented way to reach an entity by its name, EntitySend (or Get, or
// EntityPort, then a send that is retried after ErrTerminated), then
// reaches the next incarnation: a message is either accepted by the
// incarnation it was sent to, which receives it before it passivates, or
// refused with ErrTerminated and not queued, and EntitySend sends it again
// to the next one, so it is delivered exactly once. A message sent to a
// stale port or pointer of a passivated incarnation, outside the Entities,
// gets ErrTerminated from its Send, as for any actor that has ended.
//
// Names are per Entities value: two sets in one system may use the same
// name for different actors, and the names are not those of Register and
// Lookup. An Entities is safe for concurrent use; its methods may be called
// from any goroutine, behaviours included (see Get for what a behaviour
// does not wait for).
type Entities[T any, A Ref[T]] struct {
	sys     *System
	factory func(name string) A
	opts    []SpawnOption
	// probe is the behaviour of the ports that recognise incarnations,
	// kept as one func value: inside generic code, each evaluation of
	// probeBehaviour[T, A] may make a new one, and ports compare it.
	probe func(A, *entityProbe) Allocation

	mu      sync.RWMutex
	slots   map[string]*entitySlot[T, A]
	sweepAt int
}

// entitySlot is one incarnation of a name, from its creation by Get to its
// end. Its fields after ready are written once, before ready is closed.
type entitySlot[T any, A Ref[T]] struct {
	ready   chan struct{} // closed when a, port, watch and err are set
	isReady atomic.Bool   // set just before ready is closed: the fast path's check
	a       A
	port    Port[*entityProbe] // bound at the spawn: the incarnation, compared by Get
	err     error              // Spawn's error (the slot is then removed)
	watch   <-chan *Terminated // one notice when the incarnation has ended; nil if Bind failed
	once    sync.Once          // closes gone
	gone    chan struct{}      // closed once the incarnation has ended
}

// entityProbe is the message type of the port an Entities binds to each
// incarnation to watch it and recognise it; nothing is ever sent to it.
type entityProbe struct{ Message }

func probeBehaviour[T any, A Ref[T]](A, *entityProbe) Allocation { return Nodelete }

// minEntitySweep is the size below which the slots of ended entities are
// not swept (they are replaced by the next Get of their name).
const minEntitySweep = 64

// NewEntities returns an empty set of entities of sys. factory makes the
// actor of a name (a fresh value, or one from a pool) each time the name
// needs an incarnation; opts are the options of every Spawn (supervision,
// mailbox bound). Neither factory nor opts is called or checked here: a
// Get that spawns returns their errors. It panics if factory is nil.
func NewEntities[T any, A Ref[T]](sys *System, factory func(name string) A, opts ...SpawnOption) *Entities[T, A] {
	if factory == nil {
		panic("actor: NewEntities with a nil factory")
	}
	return &Entities[T, A]{sys: sys, factory: factory, opts: opts,
		probe: probeBehaviour[T, A], slots: map[string]*entitySlot[T, A]{}, sweepAt: minEntitySweep}
}

// Get returns the live actor of name, spawning it if the name has none
// (never spawned, or its last incarnation has ended). The actor returned
// was alive, and not terminating, when Get found it; it may end right
// after, and then sends to it fail with ErrTerminated, as for any actor:
// Get again to have the next incarnation.
//
// Concurrent Gets of one name return one actor. A Get that finds the
// name's actor terminating (its Stopped hook running, say) waits for the
// end, and one waiting for another Get's spawn waits for that spawn; both
// are bounded by ctx. Inside a behaviour, Get does not wait for an end,
// since the ending actor may need this worker: it returns an error
// wrapping ErrTerminated instead (the next Get, from a later message,
// will find the name free).
//
// Errors: those of Spawn (ErrNotStarted, ErrStopped, ErrConfig for
// invalid options), returned to every Get waiting for that spawn;
// ErrTerminated, from a behaviour, as above; ctx's error, wrapped, when
// ctx ends first. A panic in the factory goes up through the Get that
// called it; the Gets waiting for that spawn try again.
func (es *Entities[T, A]) Get(ctx context.Context, name string) (A, error) {
	for {
		es.mu.RLock()
		s := es.slots[name]
		es.mu.RUnlock()
		if s == nil {
			var created bool
			if s, created = es.create(name); created {
				es.spawn(name, s)
			}
		}
		if !s.isReady.Load() {
			select {
			case <-s.ready:
			case <-ctx.Done():
				return nil, fmt.Errorf("actor: Get of entity %q: waiting for its spawn: %w", name, ctx.Err())
			}
		}
		if s.err != nil {
			if s.err == errFactoryPanicked {
				continue // the factory's caller has the panic; try again
			}
			return nil, s.err
		}
		if es.live(s) {
			return s.a, nil
		}
		if err := es.awaitEnd(ctx, name, s); err != nil {
			return nil, err
		}
	}
}

// EntitySend sends msg to the live actor of name, spawning it if needed
// (Get), with behaviour: it is Get then Send, again while the Send fails
// with ErrTerminated (the incarnation Get returned ended, or passivated,
// in between; the message was not queued), so that msg reaches the next
// incarnation. It returns nil once one incarnation accepted msg, as Send
// does: that incarnation receives it once, before its passivation if it
// passivates (see WithPassivation); an end by a status, a pill or a panic
// past supervision that comes first makes it a dead letter, as for any
// send. Errors:
// those of Get, and of Send but ErrTerminated (ErrMailboxFull from a
// bounded entity). From a behaviour, Get does not wait for an ending
// entity, so EntitySend returns its error wrapping ErrTerminated.
func EntitySend[T any, A Ref[T], TM any, M Msg[TM]](ctx context.Context, es *Entities[T, A], name string, msg M, behaviour func(A, M) Allocation) error {
	if msg == nil || behaviour == nil {
		nilSend()
	}
	for {
		a, err := es.Get(ctx, name)
		if err != nil {
			return err
		}
		err = Send(a, msg, behaviour)
		if !errors.Is(err, ErrTerminated) {
			return err
		}
		// It ended, or passivated, after Get: Get waits for the end and
		// spawns the next incarnation.
	}
}

// EntityPort is Get followed by Bind: it returns a port for one behaviour
// of the live actor of name, spawning the actor if needed. Errors: those of
// Get. Every behaviour of an entity is reachable from its name this way,
// each port bound to the incarnation Get returned.
func EntityPort[T any, A Ref[T], TM any, M Msg[TM]](ctx context.Context, es *Entities[T, A], name string, behaviour func(A, M) Allocation) (Port[M], error) {
	if behaviour == nil {
		panic("actor: EntityPort with a nil behaviour")
	}
	for {
		a, err := es.Get(ctx, name)
		if err != nil {
			return Port[M]{}, err
		}
		p, err := Bind(a, behaviour)
		if err == nil {
			return p, nil
		}
		// It began to end between Get and Bind: Get waits for the end.
	}
}

// live reports whether the incarnation of s is alive and not terminating
// (nor passivating: it refuses sends already): a port bound now is the one
// bound at its spawn (not a later incarnation of the same actor value,
// spawned again by whoever got it back).
func (es *Entities[T, A]) live(s *entitySlot[T, A]) bool {
	if s.port == (Port[*entityProbe]{}) {
		return false
	}
	p, err := Bind(s.a, es.probe)
	return err == nil && p == s.port && !executor.Passivating(s.a.actorCell())
}

// create adds a slot for name unless one exists; created reports whether
// the caller must spawn it.
func (es *Entities[T, A]) create(name string) (s *entitySlot[T, A], created bool) {
	es.mu.Lock()
	defer es.mu.Unlock()
	if s := es.slots[name]; s != nil {
		return s, false
	}
	if len(es.slots) >= es.sweepAt {
		es.sweepLocked()
	}
	s = &entitySlot[T, A]{ready: make(chan struct{}), gone: make(chan struct{})}
	es.slots[name] = s
	return s, true
}

// errFactoryPanicked marks the slot of a spawn whose factory panicked.
var errFactoryPanicked = errors.New("actor: entity factory panicked")

// spawn makes the incarnation of the new slot s and publishes it.
func (es *Entities[T, A]) spawn(name string, s *entitySlot[T, A]) {
	ok := false
	defer func() {
		if !ok { // the factory (or Spawn, for a nil actor) panicked
			s.err = errFactoryPanicked
			es.remove(name, s)
			s.isReady.Store(true)
			close(s.ready)
		}
	}()
	a, err := Spawn(es.sys, es.factory(name), es.opts...)
	ok = true
	if err != nil {
		s.err = fmt.Errorf("actor: Get of entity %q: %w", name, err)
		es.remove(name, s)
		s.isReady.Store(true)
		close(s.ready)
		return
	}
	s.a = a
	// Bound and watched at once; if the actor has already begun to end
	// (its Started hook panicked), Bind fails: Get then sees it not live
	// and waits for Alive to turn false instead of the watch.
	if p, err := Bind(a, es.probe); err == nil {
		if w, err := WatchChan(p); err == nil {
			s.port, s.watch = p, w
		}
	}
	s.isReady.Store(true)
	close(s.ready)
}

// awaitEnd waits until the incarnation of s has ended, then removes s.
func (es *Entities[T, A]) awaitEnd(ctx context.Context, name string, s *entitySlot[T, A]) error {
	if es.ended(s) {
		es.end(name, s)
		return nil
	}
	if InBehaviour() {
		return fmt.Errorf("%w: entity %q is terminating (Get from a behaviour does not wait)", ErrTerminated, name)
	}
	if s.watch == nil { // not watched: poll
		tick := time.NewTicker(100 * time.Microsecond)
		defer tick.Stop()
		for !es.ended(s) {
			select {
			case <-s.gone:
				return nil
			case <-tick.C:
			case <-ctx.Done():
				return fmt.Errorf("actor: Get of entity %q: waiting for its end: %w", name, ctx.Err())
			}
		}
		es.end(name, s)
		return nil
	}
	select {
	case <-s.gone:
	case <-s.watch: // the one notice: whoever takes it ends the slot for all
		es.end(name, s)
	case <-ctx.Done():
		return fmt.Errorf("actor: Get of entity %q: waiting for its end: %w", name, ctx.Err())
	}
	return nil
}

// ended reports whether the incarnation of s is over (Alive false).
func (es *Entities[T, A]) ended(s *entitySlot[T, A]) bool {
	select {
	case <-s.gone:
		return true
	default:
	}
	if s.port != (Port[*entityProbe]{}) {
		return !s.port.Alive()
	}
	return !s.a.actorCell().Alive()
}

// end marks the incarnation of s over and releases its name.
func (es *Entities[T, A]) end(name string, s *entitySlot[T, A]) {
	s.once.Do(func() { close(s.gone) })
	es.remove(name, s)
}

// remove deletes name's slot if it is still s.
func (es *Entities[T, A]) remove(name string, s *entitySlot[T, A]) {
	es.mu.Lock()
	if es.slots[name] == s {
		delete(es.slots, name)
	}
	es.mu.Unlock()
}

// sweepLocked drops the slots of ended incarnations, so that names used
// once do not hold memory for ever, and doubles the size of the next sweep.
func (es *Entities[T, A]) sweepLocked() {
	for name, s := range es.slots {
		select {
		case <-s.ready:
		default:
			continue // being spawned
		}
		if s.err == nil && es.ended(s) {
			s.once.Do(func() { close(s.gone) })
			delete(es.slots, name)
		}
	}
	es.sweepAt = max(minEntitySweep, 2*len(es.slots))
}
