package cluster

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/remote"
)

// Rebalancing: when a member joins, the entities that placement now puts on
// it move there, gradually and only when idle. Each member's rebalancer
// looks at its local activations every Rebalance.Every; an activation
// whose gate has delivered no request for Rebalance.Idle, and whose
// placement (in this member's view) is another live member hosting the
// kind, gets a move check, at most Rebalance.Batch per look. The check is
// a message to the actor, so it runs in the actor's own turn: if no
// request was delivered since the count it carries (nothing queued before
// it was delivered meanwhile) and the entity is not Busy, it shuts the
// gate (requests are then refused undelivered, with ErrMoved), marks the
// activation moved, unexports it and sends it FinishedMsg. Its end
// releases its key; the next Get finds no key and asks the member that
// placement chooses. A claim that finds a moved activation still ending
// waits for its end and looks again instead of claiming here. The old
// activation ends before its key is released, and the new one is claimed
// after: there are never two.

// ErrMoved: the activation refused the request, undelivered, because it
// is moving to another member. Kind.Ask asks again; a caller asking
// through a port that Get returned gets it as is from a local port, and
// from a remote one as a failure wrapping remote.ErrNotDelivered and
// remote.ErrRemote whose text is this error's. Get again, or use Kind.Ask.
var ErrMoved = errors.New("cluster: the entity is moving to another member; ask again")

// errGateFenced is the gate's refusal of a request after its activation
// was stopped (a fence, Leave): the request was not delivered. It wraps
// ErrFenced.
var errGateFenced = fmt.Errorf("%w: the request was refused undelivered; ask again", ErrFenced)

// isRefused reports whether err may be a gate's refusal of an
// undelivered request. A local error wrapping ErrMoved or errGateFenced
// is one only if the gate did not deliver the request (a behaviour may
// fail a delivered request with an error wrapping them, relaying a
// downstream failure): the local asker checks its delivered flag too
// (Kind.Ask, Kind.serve). Across package remote only the member's word
// counts: remote.ErrNotDelivered (see Kind.serve), never the error's
// text, so that a delivered request is never sent again.
func isRefused(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, remote.ErrRemote) {
		return errors.Is(err, remote.ErrNotDelivered) && !errors.Is(err, actor.ErrTerminated)
	}
	return errors.Is(err, ErrMoved) || errors.Is(err, errGateFenced)
}

// Busy is an optional method of an entity's actor type. A member about to
// move the entity to another member (see Rebalance) calls it in the
// actor's own turn and leaves the entity where it is while it returns true:
// an entity that keeps requests to answer later, or is in the middle of
// work of its own, says so here. An entity found Busy is checked again
// only after a request was delivered to it since (so that the checks do
// not keep it from passivating): it stays where it is until then.
type Busy interface {
	Busy() bool
}

func entityBusy(a any) bool {
	b, ok := a.(Busy)
	return ok && b.Busy()
}

// Rebalance configures the moves of idle entities to the members that
// placement chooses for them (WithRebalance). Zero fields take their
// defaults.
type Rebalance struct {
	// Idle: an activation moves only after its gate has delivered no
	// request for this long (default 30s).
	Idle time.Duration
	// Batch: at most this many move checks per look, per member
	// (default 32).
	Batch int
	// Every: the time between two looks (default TTL/4). Looks are at
	// least this far apart, also when a member joins (which makes a look
	// at once if the last one is that old).
	Every time.Duration
	// Off: no rebalancing; activations stay where they are until they end.
	Off bool
}

// WithRebalance sets how a member moves its idle entities to the members
// that placement now chooses for them (see Rebalance and the package
// documentation).
func WithRebalance(r Rebalance) Option { return func(c *config) { c.rebalance = r } }

func (r Rebalance) withDefaults(ttl time.Duration) Rebalance {
	if r.Idle <= 0 {
		r.Idle = 30 * time.Second
	}
	if r.Batch <= 0 {
		r.Batch = 32
	}
	if r.Every <= 0 {
		r.Every = ttl / 4
	}
	return r
}

// usage is what an activation's gate shares with the rebalancer.
type usage struct {
	delivered atomic.Uint64 // requests delivered to the behaviour
	moving    atomic.Bool   // set by the move check: the gate refuses all (ErrMoved)
	// stopped is set by activation.stop (a fence, Leave, a move), and by
	// the fence before it calls stop (fenceAll), before
	// the actor is sent FinishedMsg: the gate refuses every request it
	// has not delivered yet (errGateFenced), queued ones included, so
	// that nothing runs in the behaviour after the stop but what had
	// started. Read by the gate, in the actor's turn.
	stopped atomic.Bool
	// busyAt is 1 + the delivered count at which a move check found the
	// entity Busy (0: never): the rebalancer checks it again only once a
	// request was delivered since, so that its checks (messages, which
	// actor.WithPassivation counts as activity) do not keep an idle Busy
	// entity from passivating. Written by the move check in the actor's
	// turn, read by the rebalancer.
	busyAt atomic.Uint64
}

// moveCheck is the message of a move check: the count of delivered
// requests that the rebalancer saw unchanged for Rebalance.Idle, and the
// func that stops the activation if the check decides to move it.
type moveCheck struct {
	actor.Message
	seen uint64
	move func()
}

// rebalancer looks at the local activations every Rebalance.Every, and at
// once when a member joins (or comes back under a new incarnation) if the
// last look is that old.
func (c *Cluster) rebalancer() {
	defer c.wg.Done()
	r := c.cfg.rebalance
	tick := time.NewTimer(r.Every)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-tick.C:
		case <-c.joinedKick:
			if d := time.Since(last); d < r.Every {
				tick.Reset(r.Every - d)
				continue
			}
		}
		last = time.Now()
		tick.Reset(r.Every)
		if _, _, ok := c.leaseEpoch(); !ok {
			continue
		}
		budget := r.Batch
		for _, k := range c.kinds {
			if k.hosted() {
				budget -= k.rebalance(last, r.Idle, budget)
			}
		}
	}
}

// kickRebalance wakes the rebalancer without waiting (a member joined).
func (c *Cluster) kickRebalance() {
	select {
	case c.joinedKick <- struct{}{}:
	default:
	}
}
