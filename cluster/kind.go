package cluster

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/remote"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// kindRuntime is what the cluster needs of a Kind whatever its types.
type kindRuntime interface {
	hosted() bool
	// activate makes this node's activation of id, or finds who holds it;
	// it returns the node that holds it.
	activate(ctx context.Context, id string) (string, error)
	// fenceAll stops every local activation (the lease lapsed). Called
	// with the cluster's lease.mu held.
	fenceAll()
	// fenceKey stops the local activation of id if its key now has a
	// revision above the activation's (another node took it over).
	fenceKey(id string, rev uint64)
	// releaseAll stops every local activation and waits for their ends,
	// those already stopped by a fence or a move included (Leave).
	releaseAll(ctx context.Context) error
	// stopping reports whether a local activation has not ended yet.
	stopping() bool
	// rebalance asks up to budget idle local activations that placement
	// now puts on another member to move (see rebalance.go); it returns
	// how many it asked.
	rebalance(now time.Time, idle time.Duration, budget int) int
}

// Kind is an entity kind of the cluster: entities of one actor type,
// addressed by (kind, id), reached through one request behaviour whose
// request type is Req (it embeds actor.Request[R]) and reply type R, both
// encoded with the codecs given to NewKind. Every member that gets entities
// of the kind defines it (NewKind); the members that run them also Host it.
type Kind[TR, R any, Req actor.RequestPtr[TR, R]] struct {
	c     *Cluster
	name  string
	req   remote.Codec[Req]
	reply remote.Codec[R]

	// spawn is set by Host before Join, read-only afterwards: it makes a
	// fresh actor for id, whose requests pass through a gate that counts
	// them in u and refuses them once u.moving is set (see rebalance.go).
	spawn func(id string, u *usage) (spawned[Req], error)

	// mu guards acts: written by activate, by the end of an activation
	// (ended) and read by Get's fast path, the fences and Leave.
	mu   sync.Mutex
	acts map[string]*activation[Req]
	// movedAway (guarded by mu): ids whose activation here moved, until
	// when a claim here for them looks again (errRetry) while placement
	// puts them on another member; the rebalancer drops expired ones.
	movedAway map[string]time.Time
	// live (guarded by mu) holds every registered activation until its
	// end is over (key released, ended closed), which may be after acts
	// forgot it: written by claim and ended, read by Leave and by the
	// refresher, which does not join again while one is there.
	live map[*activation[Req]]struct{}

	// routeMu guards routes, the remote ports of the activations this
	// member found on others (a cache, so that Get of a known entity reads
	// no key): written by get (a new route, or a forced Get dropping one),
	// read by get. A route is used only while its member has the same
	// incarnation in the view; a stale one (the activation ended there)
	// costs one refused ask (remote.ErrUnknownName), after which Ask gets
	// again without it.
	routeMu sync.RWMutex
	routes  map[string]route[Req, R]

	// asks holds the requests that Ask sends through a local port, each
	// with a flag that the gate sets when it delivers the request to the
	// behaviour: a request that fails with actor.ErrTerminated without
	// the flag was never received (queued, then dropped at the actor's
	// end), and Ask sends it again. Written by Ask, read by the gate
	// (sync.Map: no lock pairs with it; the flag is atomic, set before the
	// behaviour runs, so before any end that fails the request).
	asks sync.Map // Req -> *atomic.Bool
}

// spawned is a fresh actor of a kind: its request port (through the
// gate), the port of its move check, and a func that stops it.
type spawned[Req any] struct {
	port  actor.Port[Req]
	check actor.Port[*moveCheck]
	stop  func()
}

// route is a cached way to a remote activation.
type route[Req, R any] struct {
	inc  string // its member's incarnation when the route was made
	port *remote.RequestPort[Req, R]
}

// maxRoutes bounds the route cache; when full it is emptied.
const maxRoutes = 1 << 16

// activation is one local activation of an id, from its claim to its end.
// Its fields are written by the goroutine that claims it before ready is
// closed (port, rev and owner under Kind.mu, since the fences read them
// from the registration on), and read after ready by anyone.
type activation[Req any] struct {
	ready chan struct{}   // closed when the claim is over (port or err set)
	err   error           // the claim failed: see owner
	owner string          // with err == nil and no port: the node holding it
	port  actor.Port[Req] // written under Kind.mu at the registration
	stop  func()          // unexports the activation and sends its actor FinishedMsg
	rev   uint64          // the key's revision at our claim: the fence
	ended chan struct{}   // closed once the actor ended and the key is released
	use   usage           // what the gate counts (see rebalance.go)
	check actor.Port[*moveCheck]

	// Guarded by Kind.mu, read and written by the rebalancer only: the
	// gate's count of delivered requests when it last changed, and when
	// the rebalancer saw it change.
	seen   uint64
	seenAt time.Time

	// Guarded by Kind.mu: fenced, set when a fence stops the activation;
	// takenRev, the highest revision of the key that the fence watch saw
	// while the claim was in progress (the claim refuses itself if it is
	// above its own).
	fenced   bool
	takenRev uint64
	// moved (guarded by Kind.mu, set with fenced): the activation ends
	// to move to the member placement chooses; a claim that finds it
	// waits for its end and looks again, instead of claiming here.
	moved bool
}

// entityKey is the activation key of (kind, id): the id is base64url
// encoded, since JetStream keys allow a few characters only.
func entityKey(kind, id string) string {
	return kind + "." + base64.RawURLEncoding.EncodeToString([]byte(id))
}

func parseKey(key string) (kind, id string, ok bool) {
	kind, enc, ok := strings.Cut(key, ".")
	if !ok {
		return "", "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(enc)
	return kind, string(b), err == nil
}

// exportName is the remote name of an activation on its node.
func exportName(kind, id string) string { return "cluster/" + kind + "/" + id }

// maxID bounds an entity id, so that its key fits JetStream's limits.
const maxID = 512

// ownerRecord is the value of an activation key: the holder's name and
// incarnation. The key is stale when that incarnation is not a live member.
type ownerRecord struct {
	Node        string `json:"node"`
	Incarnation string `json:"inc"`
}

// NewKind defines the entity kind name on c, whose entities take requests
// Req answered with R. The name must match [A-Za-z0-9_-]{1,128}. Kinds are
// defined before Join. Errors: ErrBadName, ErrJoined, remote.ErrUnencodable
// (a codec's type has fields it would not encode).
func NewKind[TR, R any, Req actor.RequestPtr[TR, R]](c *Cluster, name string, req remote.Codec[Req], reply remote.Codec[R]) (*Kind[TR, R, Req], error) {
	if req == nil || reply == nil {
		panic("cluster: NewKind with a nil codec")
	}
	if !validName.MatchString(name) {
		return nil, fmt.Errorf("%w: kind %q", ErrBadName, name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.joined {
		return nil, ErrJoined
	}
	if _, ok := c.kinds[name]; ok {
		return nil, fmt.Errorf("%w: kind %q defined twice", ErrBadName, name)
	}
	k := &Kind[TR, R, Req]{c: c, name: name, req: req, reply: reply, acts: map[string]*activation[Req]{},
		movedAway: map[string]time.Time{}, live: map[*activation[Req]]struct{}{},
		routes: map[string]route[Req, R]{}}
	c.kinds[name] = k
	return k, nil
}

// Host makes this member run entities of the kind k: factory makes the
// actor of an id each time the id is activated here, behaviour is the
// behaviour that requests reach, opts are the options of every Spawn
// (actor.WithPassivation among them ends an idle activation and releases
// its key). Host is called before Join; the member's record then lists
// the kind, and placement may choose it. Requests reach behaviour through
// a gate of the cluster's, which counts them for rebalancing and refuses
// them (ErrMoved) once the activation moves (see Rebalance); an entity
// type may implement Busy. Errors: ErrJoined.
func Host[T any, A actor.Ref[T], TR, R any, Req interface {
	actor.RequestPtr[TR, R]
	actor.Msg[TR]
	Fail(error) error
}](k *Kind[TR, R, Req], factory func(id string) A, behaviour func(A, Req) actor.Allocation, opts ...actor.SpawnOption) error {
	if factory == nil || behaviour == nil {
		panic("cluster: Host with a nil factory or behaviour")
	}
	k.c.mu.Lock()
	defer k.c.mu.Unlock()
	if k.c.joined {
		return ErrJoined
	}
	k.spawn = func(id string, u *usage) (spawned[Req], error) {
		a, err := actor.Spawn(k.c.sys, factory(id), opts...)
		if err != nil {
			return spawned[Req]{}, err
		}
		stop := func() { _ = actor.SendPill(a, actor.FinishedMsg) }
		// The gate: a request is counted, then delivered, unless the
		// activation is moving; then it is refused undelivered.
		p, err := actor.Bind(a, func(x A, m Req) actor.Allocation {
			if u.moving.Load() {
				_ = m.Fail(ErrMoved)
				k.c.m.movedRefusals.Inc()
				return actor.Nodelete
			}
			if u.stopped.Load() {
				_ = m.Fail(errGateFenced)
				return actor.Nodelete
			}
			u.delivered.Add(1)
			if f, ok := k.asks.Load(m); ok {
				f.(*atomic.Bool).Store(true)
			}
			al := behaviour(x, m)
			if al != actor.Nodelete {
				// The actor ends after this turn: a remote request that
				// comes from now on is refused as for an ended activation
				// (remote.ErrUnknownName, which Ask asks again), not
				// queued to be dropped (actor.ErrTerminated).
				_ = k.c.node.Unexport(exportName(k.name, id))
			}
			return al
		})
		if err != nil {
			stop()
			return spawned[Req]{}, err
		}
		check, err := actor.Bind(a, func(x A, m *moveCheck) actor.Allocation {
			if !u.moving.Load() && u.delivered.Load() == m.seen {
				if entityBusy(x) {
					u.busyAt.Store(m.seen + 1)
				} else {
					u.moving.Store(true)
					m.move()
				}
			}
			return actor.Nodelete
		})
		if err != nil {
			stop()
			return spawned[Req]{}, err
		}
		return spawned[Req]{port: p, check: check, stop: stop}, nil
	}
	return nil
}

// Name returns the kind's name.
func (k *Kind[TR, R, Req]) Name() string { return k.name }

func (k *Kind[TR, R, Req]) hosted() bool { return k.spawn != nil }

// Get returns a port to the one live activation of the entity id of the
// kind: a local port when it runs on this node, a remote one otherwise,
// activating the entity first if no live member holds it, on the member
// that placement chooses (rendezvous hashing of the id over the live
// members that host the kind, in this node's view). A Get right after the
// activation of id, on any node, finds it (the key is written before the
// activation answers). The port may outlive the activation (passivation,
// a node that leaves, a move): its asks then fail (remote.ErrUnknownName,
// actor.ErrTerminated, remote.ErrNotDelivered, ErrOwnerLost, ErrMoved) and
// a new Get finds the
// next one; Ask does that for you.
//
// Errors: ErrBadName (an empty id, or one over 512 bytes), ErrNotJoined
// (this member), ErrNoHost, ErrKV, ErrFenced (also when the member that
// holds the id, or that placement chose, has lost its lease and is still
// in this member's view, not marked fenced yet: placement skips a member
// marked fenced), ctx's error; actor.ErrAskInBehaviour, at once,
// from a behaviour (Get waits for round trips to the server).
func (k *Kind[TR, R, Req]) Get(ctx context.Context, id string) (remote.Asker[Req, R], error) {
	p, _, err := k.get(ctx, id, false)
	return p, err
}

// Ask asks the entity id: Get, then Ask on the port, again (with a new Get
// that goes to the key's holder) while the request was refused before
// delivery (remote.ErrUnknownName: the activation ended in between;
// ErrMoved: it is moving to another member; an error wrapping ErrFenced
// from its gate: it was stopped by a fence or Leave; actor.ErrTerminated
// from an activation, local or remote, whose gate had not delivered it:
// the actor ended with the request queued, at most 16 times per Ask; a
// remote activation's member says so with remote.ErrNotDelivered). The
// request is delivered at most once. A request that the gate delivered
// and whose activation ended without answering it fails with
// actor.ErrTerminated, returned as is (so does one queued on a member of
// an older build, which does not say whether it delivered it). A
// behaviour returning a status that ends its actor unexports the
// activation at once, so that few remote requests are queued behind its
// end. If the node that holds the
// activation leaves or dies while the ask waits, or NATS has no subscriber
// for it, Ask returns an error wrapping ErrOwnerLost (the request may have
// been processed); asking again reaches the next activation. Errors: those
// of Get, and those of the port's Ask (see remote.RequestPort.Ask and
// actor.Ask).
func (k *Kind[TR, R, Req]) Ask(ctx context.Context, id string, req Req) (R, error) {
	var zero R
	undeliveredTries := 0
	for attempt := 0; ; attempt++ {
		p, owner, err := k.get(ctx, id, attempt > 0)
		if err != nil {
			return zero, err
		}
		if owner == k.c.Name() {
			var delivered atomic.Bool
			_, tracked := k.asks.LoadOrStore(req, &delivered)
			tracked = !tracked // the same request asked twice at once: not tracked
			r, err := p.Ask(ctx, req)
			if tracked {
				k.asks.Delete(req)
			}
			undelivered := tracked && errors.Is(err, actor.ErrTerminated) && !delivered.Load() && undeliveredTries < maxUndelivered
			if undelivered {
				undeliveredTries++
			}
			// A refusal only if the gate did not deliver it: a behaviour
			// may fail a delivered request with an error wrapping ErrMoved.
			refused := tracked && isRefused(err) && !delivered.Load()
			if (refused || undelivered) && ctx.Err() == nil {
				if err := sleepCtx(ctx, time.Duration(min(attempt, 10))*time.Millisecond); err != nil {
					return zero, err
				}
				continue
			}
			return r, err
		}
		actx, cancel := context.WithCancelCause(ctx)
		untrack := k.c.trackAsk(owner, &cancel)
		if _, ok := k.c.viewIncarnation(owner); !ok {
			// It left between Get and the registration, whose cancel
			// the membership goroutine could not find then.
			cancel(fmt.Errorf("%w: member %q left", ErrOwnerLost, owner))
		}
		r, err := p.Ask(actx, req)
		untrack()
		cause := context.Cause(actx)
		cancel(nil)
		switch {
		case err == nil:
			return r, nil
		case ctx.Err() != nil:
			return zero, err
		case errors.Is(cause, ErrOwnerLost):
			return zero, fmt.Errorf("cluster: ask to %s/%s on %s: %w", k.name, id, owner, cause)
		case errors.Is(err, remote.ErrNoResponders):
			return zero, fmt.Errorf("cluster: ask to %s/%s on %s: %w: %w", k.name, id, owner, ErrOwnerLost, err)
		case errors.Is(err, remote.ErrNotDelivered) && errors.Is(err, actor.ErrTerminated) && undeliveredTries < maxUndelivered:
			// Not delivered: the activation ended with the request queued
			// (or was gone when it came).
			undeliveredTries++
			if err := sleepCtx(ctx, time.Duration(min(attempt, 10))*time.Millisecond); err != nil {
				return zero, err
			}
			continue
		case errors.Is(err, remote.ErrUnknownName), isRefused(err):
			// Not delivered: the activation ended before the request came,
			// or refused it as it moves to another member.
			if err := sleepCtx(ctx, time.Duration(min(attempt, 10))*time.Millisecond); err != nil {
				return zero, err
			}
			continue
		}
		return zero, err
	}
}

// serve is the OnServe function of an activation's export: it tracks a
// remote request as Ask tracks a local one (the gate sets its flag when it
// delivers it), and says to the asking member that one failed before the
// gate delivered it (a gate's refusal, or actor.ErrTerminated: the actor
// ended with it queued) was not delivered (remote.ErrNotDelivered), so
// that its Kind.Ask asks again.
func (k *Kind[TR, R, Req]) serve(m Req) func(error) error {
	delivered := new(atomic.Bool)
	if _, dup := k.asks.LoadOrStore(m, delivered); dup {
		return nil // decoded afresh by package remote: never one already tracked
	}
	return func(err error) error {
		k.asks.Delete(m)
		if err == nil || delivered.Load() || errors.Is(err, remote.ErrNotDelivered) {
			return err
		}
		if errors.Is(err, actor.ErrTerminated) || isRefused(err) {
			return fmt.Errorf("%w (%w)", err, remote.ErrNotDelivered)
		}
		return err
	}
}

// maxUndelivered bounds how many times one Ask sends again a request
// that a local activation's end dropped undelivered.
const maxUndelivered = 16

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// get resolves id to a port and the node it leads to. force skips the
// view: the holder of the key (or the placement's choice) is asked to
// activate, which it does if its activation has ended.
func (k *Kind[TR, R, Req]) get(ctx context.Context, id string, force bool) (remote.Asker[Req, R], string, error) {
	if id == "" || len(id) > maxID {
		return nil, "", fmt.Errorf("%w: entity id of %d bytes", ErrBadName, len(id))
	}
	if actor.InBehaviour() {
		return nil, "", fmt.Errorf("cluster: Get %s/%s: %w", k.name, id, actor.ErrAskInBehaviour)
	}
	c := k.c
	if _, _, ok := c.leaseEpoch(); !ok {
		return nil, "", ErrNotJoined
	}
	if force {
		k.routeMu.Lock()
		delete(k.routes, id)
		k.routeMu.Unlock()
	}
	for {
		if p, ok := k.localPort(id); ok {
			return remote.Local(p), c.Name(), nil
		}
		if !force {
			k.routeMu.RLock()
			r, ok := k.routes[id]
			k.routeMu.RUnlock()
			if ok && c.liveInView(r.port.Node(), r.inc) {
				return r.port, r.port.Node(), nil
			}
		}
		owner, target, err := k.lookup(ctx, id)
		if err != nil {
			return nil, "", err
		}
		if owner != "" && !force && owner != c.Name() {
			return k.port(owner, id)
		}
		if owner != "" {
			target = owner
		}
		if target == c.Name() {
			owner, err = k.activate(ctx, id)
		} else {
			owner, err = c.requestActivate(ctx, target, k.name, id)
		}
		if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, errRetry) {
			// The target is gone and our view does not know yet, or the
			// local activation ended as it was found: try again.
			if err := sleepCtx(ctx, c.cfg.ttl/20); err != nil {
				return nil, "", fmt.Errorf("cluster: Get %s/%s: %w", k.name, id, err)
			}
			if _, _, ok := c.leaseEpoch(); !ok {
				return nil, "", ErrNotJoined // this member left or lost its lease meanwhile
			}
			force = false
			continue
		}
		if err != nil {
			return nil, "", err
		}
		if owner == c.Name() {
			continue // the local fast path finds it
		}
		return k.port(owner, id)
	}
}

// port returns a remote port to the activation of id on owner, and caches
// it as id's route.
func (k *Kind[TR, R, Req]) port(owner, id string) (remote.Asker[Req, R], string, error) {
	p, err := remote.ImportRequest(k.c.node, owner, exportName(k.name, id), k.req, k.reply)
	if err != nil {
		return nil, "", err
	}
	if inc, ok := k.c.viewIncarnation(owner); ok {
		k.routeMu.Lock()
		if len(k.routes) >= maxRoutes {
			clear(k.routes)
		}
		k.routes[id] = route[Req, R]{inc: inc, port: p}
		k.routeMu.Unlock()
	}
	return p, owner, nil
}

// localPort returns the port of a live local activation of id.
func (k *Kind[TR, R, Req]) localPort(id string) (actor.Port[Req], bool) {
	k.mu.Lock()
	a := k.acts[id]
	fenced := a != nil && a.fenced
	k.mu.Unlock()
	if a == nil || fenced {
		return actor.Port[Req]{}, false
	}
	select {
	case <-a.ready:
	default:
		return actor.Port[Req]{}, false
	}
	select {
	case <-a.ended:
		return actor.Port[Req]{}, false
	default:
	}
	if a.err != nil || a.port == (actor.Port[Req]{}) {
		return actor.Port[Req]{}, false
	}
	return a.port, true
}

// lookup reads id's key: owner is its holder when that holder is live in
// this node's view; otherwise target is the member placement chooses.
func (k *Kind[TR, R, Req]) lookup(ctx context.Context, id string) (owner, target string, err error) {
	c := k.c
	e, err := c.activations.Get(ctx, entityKey(k.name, id))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
	case err != nil:
		c.m.kvErrors.Inc()
		return "", "", fmt.Errorf("%w: reading %s/%s: %w", ErrKV, k.name, id, err)
	default:
		var rec ownerRecord
		if json.Unmarshal(e.Value(), &rec) == nil && c.liveInView(rec.Node, rec.Incarnation) {
			return rec.Node, "", nil
		}
	}
	target = k.place(id)
	if target == "" {
		return "", "", fmt.Errorf("%w: %q", ErrNoHost, k.name)
	}
	return "", target, nil
}

// place chooses the member for id: the highest rendezvous score among the
// live members hosting the kind in this node's view, not leaving nor
// fenced.
func (k *Kind[TR, R, Req]) place(id string) string {
	c := k.c
	c.viewMu.RLock()
	defer c.viewMu.RUnlock()
	best, bestScore := "", uint64(0)
	for name, m := range c.view {
		if !m.hosts(k.name) || m.Leaving || m.Fenced {
			continue
		}
		if s := score(name, k.name, id); best == "" || s > bestScore || s == bestScore && name < best {
			best, bestScore = name, s
		}
	}
	return best
}

// score is the rendezvous hash of (node, kind, id): FNV-1a, then a 64-bit
// finalizer (splitmix64's) so that close inputs spread. It is the same in
// every process, which placement needs.
func score(node, kind, id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(node))
	h.Write([]byte{0})
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write([]byte(id))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// errRetry: the activation found ended as it was looked at; look again.
var errRetry = errors.New("cluster: retry")

// activate makes this node's activation of id unless one runs here, or
// finds the live member that holds it. Concurrent calls for one id share
// one claim.
func (k *Kind[TR, R, Req]) activate(ctx context.Context, id string) (string, error) {
	if k.spawn == nil {
		return "", fmt.Errorf("%w: %q is not hosted on %s", ErrNoHost, k.name, k.c.Name())
	}
	for {
		k.mu.Lock()
		a := k.acts[id]
		if a == nil && time.Now().Before(k.movedAway[id]) {
			k.mu.Unlock()
			// It moved from here a moment ago: a caller that read its
			// key before the release, or placed it by a view that lags,
			// looks again, while placement puts it elsewhere.
			if to := k.place(id); to != "" && to != k.c.Name() {
				return "", errRetry
			}
			k.mu.Lock()
			a = k.acts[id]
		}
		if a == nil {
			a = &activation[Req]{ready: make(chan struct{}), ended: make(chan struct{})}
			k.acts[id] = a
			k.mu.Unlock()
			// The claim runs on its own, bounded by two TTLs and by Leave,
			// so that a caller that gives up fails no other caller waiting
			// for the same claim, and leaves no claim half done.
			started := k.c.goTracked(func(ctx context.Context) {
				ctx, cancel := context.WithTimeout(ctx, 2*k.c.cfg.ttl)
				defer cancel()
				k.claim(ctx, id, a)
			})
			if !started {
				// Leave has begun: a refusal that a remote asker answers
				// by looking again (its view soon skips this member), not
				// a lapsed lease.
				k.failClaim(id, a, "", fmt.Errorf("%w: %s is leaving", errRetry, k.c.Name()))
			}
		} else {
			k.mu.Unlock()
		}
		select {
		case <-a.ready:
		case <-ctx.Done():
			return "", fmt.Errorf("cluster: activating %s/%s: %w", k.name, id, ctx.Err())
		}
		if a.err != nil || a.port == (actor.Port[Req]{}) {
			return a.owner, a.err // a claim that failed or found another holder
		}
		k.mu.Lock()
		fenced, moved := a.fenced, a.moved
		k.mu.Unlock()
		if !fenced {
			select {
			case <-a.ended:
				continue // ended after the claim (and removed): claim again
			default:
				return k.c.Name(), nil
			}
		}
		// Stopping: wait for its end, then claim again, unless it moves:
		// then the caller looks again (the key is released by then) and
		// asks the member that placement chooses.
		select {
		case <-a.ended:
		case <-ctx.Done():
			return "", fmt.Errorf("cluster: activating %s/%s: %w", k.name, id, ctx.Err())
		}
		if moved {
			return "", errRetry
		}
	}
}

// claim takes id's key (create, or update over a stale or own revision),
// spawns the actor and exports it; a's fields are set and ready is closed
// when it returns.
func (k *Kind[TR, R, Req]) claim(ctx context.Context, id string, a *activation[Req]) {
	c := k.c
	start := time.Now()
	fail := func(owner string, err error) { k.failClaim(id, a, owner, err) }
	epoch, inc, ok := c.leaseEpoch()
	if !ok {
		fail("", ErrNotJoined)
		return
	}
	key := entityKey(k.name, id)
	val, _ := json.Marshal(ownerRecord{Node: c.Name(), Incarnation: inc})
	var rev uint64
	for attempt := 0; ; attempt++ {
		if attempt == 16 {
			fail("", fmt.Errorf("%w: claiming %s/%s: too much contention", ErrKV, k.name, id))
			return
		}
		e, err := c.activations.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			rev, err = c.activations.Create(ctx, key, val)
			if errors.Is(err, jetstream.ErrKeyExists) {
				continue
			}
			if err != nil {
				c.m.kvErrors.Inc()
				fail("", fmt.Errorf("%w: claiming %s/%s: %w", ErrKV, k.name, id, err))
				return
			}
			break
		}
		if err != nil {
			c.m.kvErrors.Inc()
			fail("", fmt.Errorf("%w: reading %s/%s: %w", ErrKV, k.name, id, err))
			return
		}
		var rec ownerRecord
		takeover := false
		if json.Unmarshal(e.Value(), &rec) != nil || !validName.MatchString(rec.Node) || rec.Incarnation == "" {
			// A record that names no member (not ours: a bug, a version
			// skew, a hand-written key) is stale: take it over at its
			// revision, as one of a member no longer live (counted as
			// malformed, not as a takeover: no member held it).
			c.m.malformed.Inc()
			c.log.Warn("cluster: taking over a malformed activation record", "kind", k.name, "id", id)
		} else if rec.Node != c.Name() || rec.Incarnation != inc {
			live, err := c.liveInStore(ctx, rec.Node, rec.Incarnation)
			if err != nil {
				fail("", err)
				return
			}
			if live {
				fail(rec.Node, nil) // another live member holds it
				return
			}
			takeover = true
		}
		rev, err = c.activations.Update(ctx, key, val, e.Revision())
		if isWrongRevision(err) {
			continue
		}
		if err != nil {
			c.m.kvErrors.Inc()
			fail("", fmt.Errorf("%w: claiming %s/%s: %w", ErrKV, k.name, id, err))
			return
		}
		if takeover {
			c.m.takeovers.Inc()
		}
		break
	}
	release := func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ttl)
		defer cancel()
		if err := c.activations.Delete(ctx, key, jetstream.LastRevision(rev)); err != nil && !isWrongRevision(err) {
			c.m.kvErrors.Inc()
		}
	}
	sp, err := k.spawn(id, &a.use)
	port, stop := sp.port, sp.stop
	if err != nil {
		release()
		fail("", fmt.Errorf("cluster: spawning %s/%s: %w", k.name, id, err))
		return
	}
	name := exportName(k.name, id)
	a.stop = func() {
		a.use.stopped.Store(true) // before the pill: see usage.stopped
		_ = c.node.Unexport(name)
		stop()
	}
	// Register under the lease, before the export makes it reachable: a
	// fence either ran before (the epoch moved: refuse) or runs after and
	// finds the activation; a takeover that the fence watch saw during the
	// claim (takenRev) refuses it too.
	refused := ""
	c.lease.mu.Lock()
	k.mu.Lock()
	switch {
	case c.lease.epoch != epoch || !c.lease.held:
		refused = "the lease lapsed during the claim"
	case a.takenRev > rev:
		refused = "its key was taken over during the claim"
	default:
		a.port, a.rev, a.owner, a.check = port, rev, c.Name(), sp.check
		a.seenAt = start
		k.live[a] = struct{}{}
	}
	k.mu.Unlock()
	c.lease.mu.Unlock()
	if refused != "" {
		stop()
		release()
		fail("", fmt.Errorf("%w: %s/%s: %s", ErrFenced, k.name, id, refused))
		return
	}
	if err := remote.ExportRequest(c.node, name, port, k.req, k.reply, remote.OnServe(k.serve)); err != nil {
		// The node is closed (or the name exported twice, a bug): stop
		// it; the watch below sees its end and releases the key.
		c.log.Warn("cluster: exporting an activation", "kind", k.name, "id", id, "err", err)
		a.stop()
	}
	watch, err := actor.WatchChan(port)
	c.m.activations.Inc()
	c.m.activationSeconds.Observe(time.Since(start).Seconds())
	close(a.ready)
	if err != nil { // ended already
		k.ended(id, a)
		return
	}
	go func() {
		<-watch
		k.ended(id, a)
	}()
}

// failClaim ends a claim that made no activation: err, or the live
// member owner holds the key.
func (k *Kind[TR, R, Req]) failClaim(id string, a *activation[Req], owner string, err error) {
	a.owner, a.err = owner, err
	k.mu.Lock()
	if k.acts[id] == a {
		delete(k.acts, id)
	}
	k.mu.Unlock()
	close(a.ended)
	close(a.ready)
}

// ended cleans up after the activation's actor ended: unexport, forget,
// release the key if it is still ours.
func (k *Kind[TR, R, Req]) ended(id string, a *activation[Req]) {
	c := k.c
	_ = c.node.Unexport(exportName(k.name, id))
	forget := func() {
		k.mu.Lock()
		if k.acts[id] == a {
			delete(k.acts, id)
		}
		k.mu.Unlock()
	}
	k.mu.Lock()
	moved := a.moved
	k.mu.Unlock()
	// A moved activation stays registered until its key is released, so
	// that a claim here in between finds it (and looks again once it has
	// ended) instead of claiming the key over its own revision, here.
	if !moved {
		forget()
	}
	c.m.activations.Dec()
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ttl)
	defer cancel()
	if err := c.activations.Delete(ctx, entityKey(k.name, id), jetstream.LastRevision(a.rev)); err != nil && !isWrongRevision(err) {
		c.m.kvErrors.Inc()
		c.log.Warn("cluster: releasing an activation key", "kind", k.name, "id", id, "err", err)
	}
	if moved {
		forget()
	}
	k.mu.Lock()
	delete(k.live, a)
	k.mu.Unlock()
	close(a.ended)
}

// running marks fenced, and returns, the registered local activations
// (a port set: registration precedes ready, see claim) not fenced yet for
// which f is true.
func (k *Kind[TR, R, Req]) running(f func(id string, a *activation[Req]) bool) []*activation[Req] {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []*activation[Req]
	for id, a := range k.acts {
		if a.port != (actor.Port[Req]{}) && !a.fenced && f(id, a) {
			a.fenced = true
			out = append(out, a)
		}
	}
	return out
}

// registered returns the registered local activations whose end is not
// over, stopped or not.
func (k *Kind[TR, R, Req]) registered() []*activation[Req] {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]*activation[Req], 0, len(k.live))
	for a := range k.live {
		out = append(out, a)
	}
	return out
}

// stopping reports whether a registered local activation's end is not
// over yet.
func (k *Kind[TR, R, Req]) stopping() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.live) > 0
}

// fenceAll stops every local activation. Called with lease.mu held: it
// shuts every gate there (cheap, so that all are shut within the lease's
// margin however many there are), then leaves the unexports and the
// pills (a.stop, which costs more per activation) to a goroutine of its
// own, out of lease.mu. Leave waits for the stopped activations' ends
// (releaseAll), so that goroutine ends before Leave returns.
func (k *Kind[TR, R, Req]) fenceAll() {
	acts := k.running(func(string, *activation[Req]) bool { return true })
	for _, a := range acts {
		a.use.stopped.Store(true)
	}
	k.c.m.fenced.Add(float64(len(acts)))
	if len(acts) == 0 {
		return
	}
	go func() {
		for _, a := range acts {
			a.stop()
		}
	}()
}

func (k *Kind[TR, R, Req]) fenceKey(id string, rev uint64) {
	k.mu.Lock()
	a := k.acts[id]
	stop := false
	if a != nil {
		if a.port == (actor.Port[Req]{}) {
			// A claim in progress: it checks takenRev when it registers.
			a.takenRev = max(a.takenRev, rev)
		} else if rev > a.rev && !a.fenced {
			a.fenced, stop = true, true
		}
	}
	k.mu.Unlock()
	if stop {
		k.c.m.fenced.Inc()
		k.c.log.Warn("cluster: activation key taken over; stopping the local activation", "kind", k.name, "id", id)
		a.stop()
	}
}

func (k *Kind[TR, R, Req]) releaseAll(ctx context.Context) error {
	for _, a := range k.running(func(string, *activation[Req]) bool { return true }) {
		a.stop()
	}
	// Every registered activation is stopping now, those that a fence or
	// a move stopped before included: wait for them all.
	for _, a := range k.registered() {
		select {
		case <-a.ended:
		case <-ctx.Done():
			return fmt.Errorf("cluster: Leave waiting for the activations of %s to end: %w", k.name, ctx.Err())
		}
	}
	return nil
}

func (k *Kind[TR, R, Req]) rebalance(now time.Time, idle time.Duration, budget int) int {
	if budget <= 0 {
		return 0
	}
	type cand struct {
		id   string
		a    *activation[Req]
		seen uint64
	}
	var cands []cand
	k.mu.Lock()
	for id, until := range k.movedAway {
		if now.After(until) {
			delete(k.movedAway, id)
		}
	}
	for id, a := range k.acts {
		if a.port == (actor.Port[Req]{}) || a.fenced {
			continue
		}
		if n := a.use.delivered.Load(); n != a.seen {
			a.seen, a.seenAt = n, now
			continue
		}
		if now.Sub(a.seenAt) >= idle && a.use.busyAt.Load() != a.seen+1 {
			cands = append(cands, cand{id, a, a.seen})
		}
	}
	k.mu.Unlock()
	me, asked := k.c.Name(), 0
	for _, x := range cands {
		if asked == budget {
			break
		}
		if to := k.place(x.id); to == "" || to == me {
			continue
		}
		id, a := x.id, x.a
		// The check runs in the actor's own turn: it moves the activation
		// only if no request was delivered since the rebalancer saw the
		// count it carries, and the entity is not busy.
		if a.check.Send(&moveCheck{seen: x.seen, move: func() { k.moving(id, a) }}) == nil {
			asked++
		}
	}
	return asked
}

// moving stops a local activation that its move check found idle: from
// its behaviour, with its gate shut already.
func (k *Kind[TR, R, Req]) moving(id string, a *activation[Req]) {
	k.mu.Lock()
	if a.fenced || k.acts[id] != a {
		k.mu.Unlock()
		return // stopped meanwhile by a fence or Leave
	}
	a.fenced, a.moved = true, true
	k.movedAway[id] = time.Now().Add(k.c.cfg.ttl)
	k.mu.Unlock()
	k.c.m.moves.Inc()
	a.stop()
}

// LocalCount returns how many activations of the kind run on this node
// (registered, not stopped by a fence or Leave).
func (k *Kind[TR, R, Req]) LocalCount() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, a := range k.acts {
		if a.port != (actor.Port[Req]{}) && !a.fenced {
			n++
		}
	}
	return n
}
