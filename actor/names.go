package actor

import (
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/actord/actord/executor"
)

// Errors of the name registry (Register, Lookup, Unregister).
var (
	// ErrNameTaken: Register of a name that a live port already holds in
	// that system.
	ErrNameTaken = errors.New("actor: name already registered")
	// ErrNoName: no live port holds the name in that system: it was never
	// registered, was unregistered, or its actor has terminated.
	ErrNoName = errors.New("actor: name not registered")
	// ErrWrongType: Lookup[M] of a name that holds a port of another
	// message type; the error says both types.
	ErrWrongType = errors.New("actor: name holds a port of another message type")
)

// Register gives the port p a name in sys, so that code that knows the name
// and the message type can find it with Lookup:
//
//	p, _ := actor.Bind(counter, (*Counter).Add)
//	err := actor.Register(sys, "counter", p)
//	...
//	add, err := actor.Lookup[*Add](sys, "counter") // add is a Port[*Add]
//
// Names are per system: two systems may use the same name for different
// ports. A name holds one port (one behaviour of one incarnation); register
// several names to publish several behaviours of an actor. Any string is a
// name, the empty string included.
//
// A name is released when its actor terminates: a name whose port is no
// longer alive (Port.Alive reports false: its actor terminated, or its
// system stopped) counts as absent, and Register may give it to a new port.
// The release is lazy: nothing runs when the actor terminates, and nothing
// is added to the send path; the registry notices when it next looks at the
// name.
//
// The port may be of an actor of another system: names are per system, the
// ports they hold are not. A stopped system has no names: Register on it
// fails, Lookup and Unregister find nothing, whatever the ports (of another
// system, alive) it named, and its registry holds no memory for long: it is
// dropped, at the latest, when another system registers its first name.
//
// Errors: ErrNotStarted (nil or zero System); ErrNotSpawned (the zero
// Port); ErrTerminated (p is not alive: its actor terminated or its system
// stopped); ErrStopped (sys has stopped: p is of another system);
// ErrNameTaken (a live port holds the name already, even p itself).
// Register is safe for concurrent use: of concurrent Registers of one name,
// exactly one succeeds.
func Register[M any](sys *System, name string, p Port[M]) error {
	if sys == nil || sys.e == nil {
		return ErrNotStarted
	}
	if p == (Port[M]{}) {
		return fmt.Errorf("%w: Register %q with the zero Port", ErrNotSpawned, name)
	}
	if !p.Alive() {
		return fmt.Errorf("%w: Register %q with a port whose actor is not alive", ErrTerminated, name)
	}
	e := sys.e
	if e.Stopped() {
		// Refused, so that no registry keeps the stopped executor
		// reachable for as long as p lives. A Register that checks just
		// before the stop succeeds; sweepAll drops that registry.
		return fmt.Errorf("%w: Register %q on a stopped system", ErrStopped, name)
	}
	for {
		v, ok := registries.Load(e)
		if !ok {
			// The system's first name: its registry is published with the
			// name in it, so that it is never found empty (and dropped by
			// another system's sweep) before it holds something.
			r := &registry{names: map[string]entry{name: named[M]{p}}, sweepAt: minSweep}
			if _, loaded := registries.LoadOrStore(e, r); loaded {
				continue // created meanwhile by another Register: use it
			}
			sweepAll(e)
			return nil
		}
		r := v.(*registry)
		r.mu.Lock()
		if r.dropped { // swept away between Load and Lock: take the new one
			r.mu.Unlock()
			continue
		}
		if old, ok := r.names[name]; ok && old.alive() {
			r.mu.Unlock()
			return fmt.Errorf("%w: %q holds a live Port[%s]", ErrNameTaken, name, old.msgType())
		}
		r.names[name] = named[M]{p}
		if len(r.names) >= r.sweepAt {
			r.sweepLocked()
		}
		r.mu.Unlock()
		return nil
	}
}

// Lookup returns the port registered under name in sys, typed: M is the
// message type the port accepts, as in Port[M]:
//
//	add, err := actor.Lookup[*Add](sys, "counter")
//
// Lookups are cheap (no allocation on success) and may run concurrently
// with each other and with Register from any goroutine, behaviours included.
// The port returned may terminate right after Lookup; its sends then fail
// with ErrTerminated, as for any port.
//
// Errors: ErrNotStarted (nil or zero System); ErrNoName (no port holds the
// name, or its port is no longer alive: Lookup then removes the name; or
// sys has stopped); ErrWrongType (the name holds a port of another message
// type; the error names both types).
func Lookup[M any](sys *System, name string) (Port[M], error) {
	if sys == nil || sys.e == nil {
		return Port[M]{}, ErrNotStarted
	}
	if sys.e.Stopped() {
		return Port[M]{}, fmt.Errorf("%w: %q (its system has stopped)", ErrNoName, name)
	}
	v, ok := registries.Load(sys.e)
	if !ok {
		return Port[M]{}, fmt.Errorf("%w: %q", ErrNoName, name)
	}
	r := v.(*registry)
	r.mu.RLock()
	n, ok := r.names[name]
	r.mu.RUnlock()
	if !ok {
		return Port[M]{}, fmt.Errorf("%w: %q", ErrNoName, name)
	}
	if !n.alive() {
		r.removeIfSame(name, n)
		return Port[M]{}, fmt.Errorf("%w: %q (its actor has terminated)", ErrNoName, name)
	}
	t, ok := n.(named[M])
	if !ok {
		return Port[M]{}, fmt.Errorf("%w: %q holds Port[%s], not Port[%s]", ErrWrongType, name, n.msgType(), typeName[M]())
	}
	return t.p, nil
}

// Unregister removes name from sys, whatever the type of its port; the port
// itself is unaffected. Unregistering is needed only to take a name away
// from an actor that is still alive: the names of terminated actors are
// released without it.
//
// Errors: ErrNotStarted (nil or zero System); ErrNoName (no live port holds
// the name, or sys has stopped; the name is removed all the same).
func Unregister(sys *System, name string) error {
	if sys == nil || sys.e == nil {
		return ErrNotStarted
	}
	v, ok := registries.Load(sys.e)
	if !ok {
		return fmt.Errorf("%w: %q", ErrNoName, name)
	}
	r := v.(*registry)
	r.mu.Lock()
	n, ok := r.names[name]
	delete(r.names, name)
	r.mu.Unlock()
	if !ok || !n.alive() || sys.e.Stopped() {
		return fmt.Errorf("%w: %q", ErrNoName, name)
	}
	return nil
}

// The registries: one per system that has used names, in a process-wide map
// keyed by the system's executor (System is a handle around it).
//
// Lifetime. Entries are checked lazily: a dead entry (Port.Alive false) is
// removed by the Lookup or Unregister that finds it, and Register sweeps its
// registry of dead entries whenever the registry has doubled since its last
// sweep (amortised O(1) per Register), so a running system whose named
// actors come and go keeps only about twice its live names. A stopped
// system has no names (Register refuses it; Lookup and Unregister find
// nothing), even where its entries hold live ports of other systems, so a
// sweep drops the registry of a stopped system whole, and a registry of a
// running system in which it finds no live entry, from the map, with the
// executor it keeps reachable. Every registry is swept that way each time
// a system registers its first name (once per system), so the registries
// of stopped systems do not accumulate as systems are started and stopped:
// at most those of the systems stopped since the last system that
// registered its first name are kept, until the next one does. (A Lookup
// on a stopped system returns before reading its registry; an Unregister
// removes the entry it names; both leave the registry, and so the
// executor, to that sweep.)
//
// A finalizer-style cleanup (runtime.AddCleanup on the *System) was not
// chosen: a named actor that holds its *System, which is common, keeps the
// System reachable from this map, so the cleanup would never run; and a
// copy of a System value would lose its names when the original is
// collected.
//
// Dropping an empty registry of a running system is harmless: absent names
// are exactly what an empty registry holds, and a later Register creates a
// new one. A registry dropped while a Register holds it is marked dropped
// under its lock, and that Register retries on the map's current registry.
var registries sync.Map // *executor.Executor -> *registry

// minSweep is the size below which a registry is never swept by Register.
const minSweep = 64

type registry struct {
	// mu guards names, sweepAt and dropped: Register, Unregister and
	// sweeps write under it, Lookup reads under its read lock.
	mu      sync.RWMutex
	names   map[string]entry
	sweepAt int  // Register sweeps when len(names) reaches it
	dropped bool // removed from registries; guarded by mu
}

// entry is a registered port with its message type erased; named[M] is the
// only implementation. Lookup[M] recovers the port with a type assertion.
type entry interface {
	alive() bool
	msgType() string
}

type named[M any] struct{ p Port[M] }

func (n named[M]) alive() bool     { return n.p.Alive() }
func (n named[M]) msgType() string { return typeName[M]() }

// typeName is the name of the type M, for error messages ("*pkg.Add").
func typeName[M any]() string { return reflect.TypeFor[M]().String() }

// sweepAll removes the dead entries of every registry but skip's, all the
// entries of the registries of stopped systems, and drops the registries
// left empty.
func sweepAll(skip *executor.Executor) {
	registries.Range(func(k, v any) bool {
		e := k.(*executor.Executor)
		if e == skip {
			return true
		}
		r := v.(*registry)
		r.mu.Lock()
		if !r.dropped {
			if e.Stopped() {
				clear(r.names) // a stopped system has no names
			} else {
				r.sweepLocked()
			}
			if len(r.names) == 0 {
				r.dropped = true
				registries.CompareAndDelete(k, r)
			}
		}
		r.mu.Unlock()
		return true
	})
}

// sweepLocked removes the dead entries of r and sets the next sweep point.
// r.mu is held.
func (r *registry) sweepLocked() {
	for name, n := range r.names {
		if !n.alive() {
			delete(r.names, name)
		}
	}
	r.sweepAt = max(minSweep, 2*len(r.names))
}

// removeIfSame removes name if it still holds n (and not a port registered
// since n was read).
func (r *registry) removeIfSame(name string, n entry) {
	r.mu.Lock()
	if cur, ok := r.names[name]; ok && cur == n {
		delete(r.names, name)
	}
	r.mu.Unlock()
}
