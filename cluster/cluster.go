package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/remote"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// Errors returned by this package; test them with errors.Is.
var (
	// ErrJoined: a kind was defined or hosted after Join, or Join was
	// called twice (also after Leave: a Cluster is used once).
	ErrJoined = errors.New("cluster: already joined")
	// ErrNotJoined: the cluster has not joined yet, has left, or its
	// membership lease lapsed and it has not joined again yet.
	ErrNotJoined = errors.New("cluster: not a member")
	// ErrNameInUse: Join found a live member of the same name.
	ErrNameInUse = errors.New("cluster: a live member has this name")
	// ErrBadName: a node, kind, singleton name or entity id that this
	// package cannot use (see Join, NewKind, Kind.Get).
	ErrBadName = errors.New("cluster: invalid name")
	// ErrNoHost: no live member hosts the kind.
	ErrNoHost = errors.New("cluster: no live member hosts the kind")
	// ErrOwnerLost: the node that holds the activation left the cluster,
	// or NATS had no subscriber for it, while an ask was in flight, or
	// before it was sent. The message may or may not have been processed
	// (at most once); Get or Ask again to reach the next activation.
	ErrOwnerLost = errors.New("cluster: the activation's node is gone")
	// ErrKV: a JetStream key-value operation failed (the error wraps the
	// cause).
	ErrKV = errors.New("cluster: key-value store error")
	// ErrTTLMismatch: Join found the cluster's buckets made with another
	// TTL than this member's (WithTTL): every member must use the same.
	ErrTTLMismatch = errors.New("cluster: the cluster's TTL differs from this member's")
	// ErrFenced: the activation was refused or stopped because this node
	// no longer holds its key (its membership lease lapsed, or another
	// node took the key over). A request that the stopped activation's
	// gate refused undelivered fails with an error wrapping it (through a
	// remote port, a remote.ErrRemote with its text); Kind.Ask asks again.
	ErrFenced = errors.New("cluster: activation fenced")
)

// validName is what node, kind and singleton names may contain: one NATS
// subject token that is also a JetStream key-value key and bucket name.
var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// Option configures a Cluster (New).
type Option func(*config)

type config struct {
	ttl    time.Duration
	name   string
	reg    prometheus.Registerer
	log    *slog.Logger
	jsOpts []jetstream.JetStreamOpt

	rebalance Rebalance
}

// WithTTL sets the membership lease (default 5s): a member that has not
// refreshed its key for this long is out of the cluster, and its entities
// may be activated elsewhere. It refreshes every TTL/4 and stops its own
// activations when its last successful refresh was sent more than 4/5 of
// a TTL ago (the fence; see the package documentation). Every member of
// a cluster must use the same TTL: the first to join creates the buckets
// with it, and Join refuses a TTL other than theirs (ErrTTLMismatch). At
// least 200ms.
func WithTTL(d time.Duration) Option { return func(c *config) { c.ttl = d } }

// WithName sets the cluster's name (default "actord"): it prefixes the
// key-value buckets (<name>_members, <name>_activations,
// <name>_singletons) and the control subjects (<name>.cluster.>), so
// that several clusters may share one NATS account.
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithRegisterer registers the cluster's metrics (see metrics.go) with r.
func WithRegisterer(r prometheus.Registerer) Option { return func(c *config) { c.reg = r } }

// WithLogger sets the logger of the cluster's warnings (default: none).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// Member is one node of the cluster as its members' bucket shows it.
type Member struct {
	Node        string   `json:"node"`  // its remote.Node name, the key of its record
	Incarnation string   `json:"inc"`   // random, new at each Join and each rejoin after a lapse
	Kinds       []string `json:"kinds"` // the entity kinds it hosts, sorted
	// Leaving: the member has begun to Leave; placement skips it (its
	// activations run until they end, and their keys stay its).
	Leaving bool `json:"leaving,omitempty"`
	// Fenced: the member's lease lapsed and it waits, under its old
	// incarnation, for the activations that the fence stopped to end
	// (it refuses new ones meanwhile); placement skips it.
	Fenced   bool   `json:"fenced,omitempty"`
	Revision uint64 `json:"-"` // the record's key-value revision
}

func (m Member) hosts(kind string) bool {
	_, ok := slices.BinarySearch(m.Kinds, kind)
	return ok
}

// EventType says what happened to a member.
type EventType int

// The event types.
const (
	MemberJoined  EventType = iota + 1 // a member not in the view appeared
	MemberLeft                         // a member left, or its lease lapsed
	MemberUpdated                      // a member's record changed (a new incarnation)
)

func (e EventType) String() string {
	switch e {
	case MemberJoined:
		return "joined"
	case MemberLeft:
		return "left"
	case MemberUpdated:
		return "updated"
	}
	return "unknown"
}

// Event is a change of this node's view of the members.
type Event struct {
	Type   EventType
	Member Member
}

// Cluster is one node's membership of a cluster: made with New on top of a
// remote.Node, given its kinds (NewKind, Host), then Join. It is safe for
// concurrent use.
type Cluster struct {
	sys  *actor.System
	node *remote.Node
	nc   *nats.Conn
	cfg  config
	log  *slog.Logger
	m    *metrics

	// Set by Join, read-only afterwards.
	js          jetstream.JetStream
	members     jetstream.KeyValue
	activations jetstream.KeyValue
	singletons  jetstream.KeyValue
	ctl         *nats.Subscription

	// ctx is cancelled by Leave; it bounds every goroutine of the cluster,
	// which wg counts.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// mu guards the fields below it; kinds is written by NewKind and Host
	// before Join only, read by anyone after (joined is the barrier).
	mu     sync.Mutex
	kinds  map[string]kindRuntime
	joined bool
	left   bool
	// leaveCtx is Leave's context, set by Leave with left, before it
	// cancels ctx; read by the singletons, whose release it bounds.
	leaveCtx context.Context

	// refreshMu serializes the writes of this member's record after Join:
	// the refresher's (refresh) and Leave's, which marks it leaving.
	refreshMu sync.Mutex

	// lease guards the membership lease: written by the refresher
	// goroutine and by the fence timer, read by every activation (which
	// registers under it, so that the fence stops it or it sees the fence).
	lease leaseState

	// viewMu guards view, written by the membership goroutine, read by
	// Get, placement and Members.
	viewMu sync.RWMutex
	view   map[string]Member

	// subMu guards subs (written by Subscribe and its cancel; read by the
	// membership goroutine, which calls them) and inflight (asks in
	// flight per owner node: written by Kind.Ask, read by the membership
	// goroutine when a member leaves).
	subMu    sync.Mutex
	subs     map[int]func(Event)
	nextSub  int
	inflight map[string]map[*context.CancelCauseFunc]struct{}

	// joinedKick wakes the rebalancer when a member joins.
	joinedKick chan struct{}
}

type leaseState struct {
	mu    sync.Mutex
	held  bool      // the member key is ours and fresh: activations may run
	inc   string    // our incarnation while held (and the last one after)
	rev   uint64    // revision of our member record
	until time.Time // when the fence stops our activations unless refreshed
	timer *time.Timer
	epoch uint64 // incremented at each fence; an activation records it
	// leaving is set by Leave: the refresher no longer joins again, and
	// the fence timer stays armed for the activations still running.
	leaving bool
}

// New returns a cluster member for the node, not joined yet: define kinds
// (NewKind), host some (Host), then Join. The node's name is the member's
// name; it must match [A-Za-z0-9_-]{1,128}.
func New(sys *actor.System, node *remote.Node, opts ...Option) (*Cluster, error) {
	cfg := config{ttl: 5 * time.Second, name: "actord"}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.ttl < 200*time.Millisecond {
		return nil, fmt.Errorf("cluster: TTL %v below 200ms", cfg.ttl)
	}
	if !validName.MatchString(cfg.name) {
		return nil, fmt.Errorf("%w: cluster name %q", ErrBadName, cfg.name)
	}
	if !validName.MatchString(node.Name()) {
		return nil, fmt.Errorf("%w: node name %q", ErrBadName, node.Name())
	}
	cfg.rebalance = cfg.rebalance.withDefaults(cfg.ttl)
	log := cfg.log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	m := newMetrics()
	if cfg.reg != nil {
		if err := m.register(cfg.reg); err != nil {
			return nil, err
		}
	}
	return &Cluster{sys: sys, node: node, nc: node.Conn(), cfg: cfg, log: log, m: m,
		kinds: map[string]kindRuntime{}, view: map[string]Member{}, subs: map[int]func(Event){},
		inflight: map[string]map[*context.CancelCauseFunc]struct{}{}, joinedKick: make(chan struct{}, 1)}, nil
}

// Name returns this member's name (its remote.Node's).
func (c *Cluster) Name() string { return c.node.Name() }

// Incarnation returns this member's current incarnation, new at each Join
// and each rejoin after its lease lapsed; empty before Join.
func (c *Cluster) Incarnation() string {
	c.lease.mu.Lock()
	defer c.lease.mu.Unlock()
	return c.lease.inc
}

func newIncarnation() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Join creates the cluster's buckets if need be (the members' bucket with
// the TTL as its maximum age), writes this member's record, reads the
// members and starts the goroutines that keep the record fresh and the
// view current. It returns once this member is in its own view. Errors:
// ErrJoined, ErrNameInUse, ErrTTLMismatch, ErrKV (Join may then be
// called again), and,
// after the record was written, the context's error or the control
// subscription's (the member has then left).
func (c *Cluster) Join(ctx context.Context) (err error) {
	c.mu.Lock()
	if c.joined {
		c.mu.Unlock()
		return ErrJoined
	}
	c.joined = true
	c.mu.Unlock()
	defer func() {
		if err != nil && c.cancel == nil { // failed before starting anything: Join may be tried again
			c.mu.Lock()
			c.joined = false
			c.mu.Unlock()
		}
	}()

	js, err := jetstream.New(c.nc, c.cfg.jsOpts...)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrKV, err)
	}
	c.js = js
	marker := max(c.cfg.ttl, time.Second) // the server's floor for marker TTLs is 1s
	if c.members, err = bucket(ctx, js, jetstream.KeyValueConfig{Bucket: c.cfg.name + "_members", History: 1, TTL: c.cfg.ttl, LimitMarkerTTL: marker}); err != nil {
		return err
	}
	if c.activations, err = bucket(ctx, js, jetstream.KeyValueConfig{Bucket: c.cfg.name + "_activations", History: 1}); err != nil {
		return err
	}
	if c.singletons, err = bucket(ctx, js, jetstream.KeyValueConfig{Bucket: c.cfg.name + "_singletons", History: 1, TTL: c.cfg.ttl, LimitMarkerTTL: marker}); err != nil {
		return err
	}
	inc := newIncarnation()
	rec := c.record(inc, false, false)
	sent := time.Now()
	rev, err := c.members.Create(ctx, c.Name(), rec)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("%w: %q", ErrNameInUse, c.Name())
	}
	if err != nil {
		c.m.kvErrors.Inc()
		return fmt.Errorf("%w: writing the member record: %w", ErrKV, err)
	}
	c.mu.Lock() // RunSingleton and Leave read ctx and cancel under mu
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.mu.Unlock()
	c.lease.mu.Lock()
	c.lease.held, c.lease.inc, c.lease.rev = true, inc, rev
	c.armLocked(sent)
	c.lease.mu.Unlock()

	c.ctl, err = c.nc.Subscribe(c.ctlSubject(c.Name()), c.onControl)
	if err != nil {
		c.Leave(ctx)
		return fmt.Errorf("cluster: control subscription: %w", err)
	}
	seen := make(chan struct{})
	c.wg.Add(3)
	go c.refresher()
	go c.membership(seen)
	go c.fenceWatch()
	if !c.cfg.rebalance.Off {
		c.wg.Add(1)
		go c.rebalancer()
	}
	select {
	case <-seen:
		return nil
	case <-ctx.Done():
		c.Leave(context.Background())
		return fmt.Errorf("cluster: Join waiting for its own record: %w", ctx.Err())
	}
}

func bucket(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := js.CreateKeyValue(ctx, cfg)
	if errors.Is(err, jetstream.ErrBucketExists) {
		kv, err = js.KeyValue(ctx, cfg.Bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: bucket %s: %w", ErrKV, cfg.Bucket, err)
	}
	// A bucket made by another member: its entries' maximum age is the
	// lease every member counts on (see fenceAfter).
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: bucket %s: %w", ErrKV, cfg.Bucket, err)
	}
	if st.TTL() != cfg.TTL {
		return nil, fmt.Errorf("%w: bucket %s has a TTL of %v, this member's is %v", ErrTTLMismatch, cfg.Bucket, st.TTL(), cfg.TTL)
	}
	return kv, nil
}

func (c *Cluster) record(inc string, leaving, fenced bool) []byte {
	kinds := []string{}
	for name, k := range c.kinds {
		if k.hosted() {
			kinds = append(kinds, name)
		}
	}
	slices.Sort(kinds)
	b, _ := json.Marshal(Member{Node: c.Name(), Incarnation: inc, Kinds: kinds, Leaving: leaving, Fenced: fenced})
	return b
}

// fenceAfter is how long after sending its last successful refresh a
// member keeps its lease: the key, written after that send, expires on
// the server no sooner than a TTL later; the fifth left is the margin for
// the fence timer to run and for clocks running at different rates.
func (c *Cluster) fenceAfter() time.Duration { return c.cfg.ttl * 4 / 5 }

// armLocked extends the lease to sent+fenceAfter and (re)arms the fence
// timer. Called with lease.mu held.
func (c *Cluster) armLocked(sent time.Time) {
	c.lease.until = sent.Add(c.fenceAfter())
	d := time.Until(c.lease.until)
	if c.lease.timer == nil {
		c.lease.timer = time.AfterFunc(d, c.fenceTimer)
	} else {
		c.lease.timer.Reset(d)
	}
}

// fenceTimer runs when the lease may have lapsed: if no refresh extended it
// meanwhile, it fences this member.
func (c *Cluster) fenceTimer() {
	c.lease.mu.Lock()
	// While leaving the lease is no longer held (no new activation), but
	// the running ones still count on it until Leave has stopped them:
	// the fence stays armed for them.
	if !(c.lease.held || c.lease.leaving) || time.Now().Before(c.lease.until) {
		c.lease.mu.Unlock()
		return
	}
	c.fenceLocked("membership lease lapsed")
	c.lease.mu.Unlock()
}

// fenceLocked marks the lease lost and stops every local activation. Called
// with lease.mu held; activations register under it (see activate), so
// none starts after this without a new lease.
func (c *Cluster) fenceLocked(why string) {
	c.lease.held = false
	c.lease.epoch++
	c.m.leaseLapses.Inc()
	c.log.Warn("cluster: fencing this member's activations", "node", c.Name(), "why", why)
	for _, k := range c.kinds {
		k.fenceAll()
	}
}

// leaseEpoch returns the lease's epoch if it is held.
func (c *Cluster) leaseEpoch() (uint64, string, bool) {
	c.lease.mu.Lock()
	defer c.lease.mu.Unlock()
	return c.lease.epoch, c.lease.inc, c.lease.held && time.Now().Before(c.lease.until)
}

// refresher keeps the member record fresh (every TTL/4) and joins again,
// under a new incarnation, after a lapse.
func (c *Cluster) refresher() {
	defer c.wg.Done()
	tick := time.NewTicker(c.cfg.ttl / 4)
	defer tick.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-tick.C:
		}
		c.refresh()
	}
}

func (c *Cluster) refresh() {
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	c.lease.mu.Lock()
	held, inc, rev, epoch, leaving := c.lease.held, c.lease.inc, c.lease.rev, c.lease.epoch, c.lease.leaving
	c.lease.mu.Unlock()
	if leaving {
		// Never join again while leaving; keep the record, marked
		// leaving, while the activations end.
		c.writeLeaving(c.ctx)
		return
	}
	if !held && c.stopping() {
		c.keepFenced(inc, rev)
		return
	}
	if !held {
		inc = newIncarnation()
	}
	// A slow refresh still extends the lease from the moment it was sent:
	// wait for it as long as the lease lasts (the next tick waits for
	// this one).
	ctx, cancel := context.WithTimeout(c.ctx, c.fenceAfter())
	defer cancel()
	sent := time.Now()
	newRev, err := c.members.Update(ctx, c.Name(), c.record(inc, false, false), rev)
	if err != nil && !held {
		// The old record has expired (or never existed): join anew.
		newRev, err = c.members.Create(ctx, c.Name(), c.record(inc, false, false))
	}
	c.lease.mu.Lock()
	defer c.lease.mu.Unlock()
	if c.ctx.Err() != nil || c.lease.epoch != epoch {
		// Left meanwhile (Leave began), or fenced during the update. A
		// late success still wrote the record, under inc (a rejoin's new
		// incarnation included): keep both, so that Leave's leaving mark
		// and its delete, or the next tick's update, replace it instead
		// of failing on a wrong revision and leaving it live. The lease
		// stays not held.
		if err == nil {
			c.lease.inc, c.lease.rev = inc, newRev
		}
		return
	}
	if err != nil {
		c.m.refreshFailures.Inc()
		if held && isWrongRevision(err) {
			// Our record is gone or someone else's: our lease is over.
			c.fenceLocked("member record changed or expired")
		}
		return
	}
	if !held {
		c.log.Info("cluster: joined again", "node", c.Name(), "incarnation", inc)
	}
	c.lease.held, c.lease.inc, c.lease.rev = true, inc, newRev
	c.armLocked(sent)
}

// writeLeaving rewrites this member's record, marked leaving, under its
// incarnation (if its record is still there: a member whose lease lapsed
// has nothing to mark). Called with refreshMu held.
func (c *Cluster) writeLeaving(ctx context.Context) {
	c.lease.mu.Lock()
	inc, rev, epoch := c.lease.inc, c.lease.rev, c.lease.epoch
	c.lease.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, c.fenceAfter())
	defer cancel()
	sent := time.Now()
	newRev, err := c.members.Update(ctx, c.Name(), c.record(inc, true, false), rev)
	if err != nil {
		if !isWrongRevision(err) && ctx.Err() == nil {
			c.m.kvErrors.Inc()
		}
		return
	}
	c.lease.mu.Lock()
	if c.lease.inc == inc && c.lease.rev == rev {
		c.lease.rev = newRev
		if c.lease.epoch == epoch {
			// Not fenced meanwhile: the rewritten record keeps the
			// running activations' lease from its send.
			c.armLocked(sent)
		}
	}
	c.lease.mu.Unlock()
}

// stopping reports whether a local activation has not ended yet.
func (c *Cluster) stopping() bool {
	for _, k := range c.kinds {
		if k.stopping() {
			return true
		}
	}
	return false
}

// keepFenced runs instead of a rejoin while activations that a fence
// stopped have not ended: a new incarnation would make every key of the
// old one takeable at once. It rewrites the old incarnation's record (if
// it has not expired: a fence that the server's reach did not cause, a
// refresh that was only slow), so that the others do not take those keys
// over while the stopped activations end, marked fenced, so that the
// others' placement skips it; this member refuses new activations
// meanwhile (ErrNotJoined), and joins again under a new
// incarnation at the first refresh after the last one ended.
func (c *Cluster) keepFenced(inc string, rev uint64) {
	ctx, cancel := context.WithTimeout(c.ctx, c.fenceAfter())
	defer cancel()
	newRev, err := c.members.Update(ctx, c.Name(), c.record(inc, false, true), rev)
	c.lease.mu.Lock()
	defer c.lease.mu.Unlock()
	if err != nil {
		if !isWrongRevision(err) { // gone or replaced: nothing to keep
			c.m.refreshFailures.Inc()
		}
		return
	}
	if !c.lease.held && c.lease.inc == inc && c.lease.rev == rev {
		c.lease.rev = newRev
	}
}

func isWrongRevision(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyNotFound)
}

// Leave stops this member: it marks its record leaving (placement on the
// other members skips it from then on), stops its activations (the gate
// refuses the requests not delivered yet, then Unexport and
// actor.FinishedMsg) and waits for their ends, those that a fence or a
// move stopped before included, bounded by ctx, each releasing its key;
// it stops its singletons' actors, waits for their ends (bounded by ctx)
// and releases their keys (another candidate takes over at its next
// attempt), deletes its member record (the others see it leave at once),
// and stops its goroutines. The remote.Node and the actor.System are the
// caller's, closed after. Leave is idempotent. A Cluster is used once:
// Join after Leave returns ErrJoined; Leave unregisters the metrics
// (WithRegisterer), so that a new Cluster made with New on the same node
// and registerer can join again.
func (c *Cluster) Leave(ctx context.Context) error {
	c.mu.Lock()
	if !c.joined || c.left || c.cancel == nil {
		first := !c.left
		c.left = true
		c.mu.Unlock()
		if first {
			c.unregister()
		}
		return nil
	}
	c.left, c.leaveCtx = true, ctx
	c.mu.Unlock()
	defer c.unregister()

	// The fence timer stays armed: the leaving write below may take up to
	// 4/5 TTL (a member cut off from the server), and the activations run
	// until releaseAll stops them; past the lease the fence stops them
	// first, so that a takeover never finds one running.
	c.lease.mu.Lock()
	c.lease.held, c.lease.leaving = false, true
	c.lease.epoch++
	c.lease.mu.Unlock()
	// Marked leaving first, so that the others' placement skips this
	// member from now on (an activation request that reaches it anyway is
	// answered at once: look again).
	c.refreshMu.Lock()
	c.writeLeaving(ctx)
	c.refreshMu.Unlock()
	var errs []error
	for _, k := range c.kinds {
		errs = append(errs, k.releaseAll(ctx))
	}
	c.cancel() // stops singletons, refresher, membership, fence watch
	c.wg.Wait()
	if c.ctl != nil {
		_ = c.ctl.Unsubscribe()
	}
	c.lease.mu.Lock()
	rev := c.lease.rev // the refresher has stopped: the record's last revision
	if c.lease.timer != nil {
		c.lease.timer.Stop() // every activation has been stopped
	}
	c.lease.mu.Unlock()
	if err := c.members.Delete(ctx, c.Name(), jetstream.LastRevision(rev)); err != nil && !isWrongRevision(err) {
		c.m.kvErrors.Inc()
		errs = append(errs, fmt.Errorf("%w: deleting the member record: %w", ErrKV, err))
	}
	return errors.Join(errs...)
}

// unregister takes the metrics off the registerer, so that a new Cluster
// may register its own there; the view is then empty. Called once, by the
// Leave that set left.
func (c *Cluster) unregister() {
	c.m.members.Set(0)
	if c.cfg.reg != nil {
		c.m.unregister(c.cfg.reg)
	}
}

// Members returns this node's view of the live members, sorted by name.
func (c *Cluster) Members() []Member {
	c.viewMu.RLock()
	defer c.viewMu.RUnlock()
	out := make([]Member, 0, len(c.view))
	for _, m := range c.view {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Member) int {
		if a.Node < b.Node {
			return -1
		}
		if a.Node > b.Node {
			return 1
		}
		return 0
	})
	return out
}

// Subscribe calls f with every change of this node's view of the members,
// from now on, until cancel is called. Calls come from one goroutine, one at
// a time, in the order the view changed (for one member: joined, then
// updated or left; never left before joined); f must not block for long,
// since membership waits for it, and must not call Leave, which waits for
// membership. A subscriber learns the members present
// before it subscribed from Members.
func (c *Cluster) Subscribe(f func(Event)) (cancel func()) {
	c.subMu.Lock()
	id := c.nextSub
	c.nextSub++
	c.subs[id] = f
	c.subMu.Unlock()
	return func() {
		c.subMu.Lock()
		delete(c.subs, id)
		c.subMu.Unlock()
	}
}

// membership keeps the view: a key-value watch of the members' bucket,
// restarted every TTL (a watch does not recover by itself after a
// reconnection, and a restart reads every record afresh: the reconcile),
// and after any error. seen is closed once this member is in the view.
func (c *Cluster) membership(seen chan struct{}) {
	defer c.wg.Done()
	once := sync.OnceFunc(func() { close(seen) })
	for c.ctx.Err() == nil {
		c.watchMembers(once)
		select {
		case <-c.ctx.Done():
		case <-time.After(c.cfg.ttl / 20):
		}
	}
}

func (c *Cluster) watchMembers(seen func()) {
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	w, err := c.members.WatchAll(ctx)
	if err != nil {
		c.m.kvErrors.Inc()
		return
	}
	defer w.Stop()
	restart := time.NewTimer(c.cfg.ttl)
	defer restart.Stop()
	snapshot := map[string]Member{}
	initial := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-restart.C:
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if initial {
				if e == nil { // the end of the current records
					initial = false
					c.applySnapshot(snapshot)
					if _, ok := snapshot[c.Name()]; ok {
						seen()
					}
					continue
				}
				if m, ok := decodeMember(e); ok {
					snapshot[m.Node] = m
				}
				continue
			}
			if e == nil {
				continue
			}
			if m, ok := decodeMember(e); ok {
				c.applyChange(m.Node, &m)
				if m.Node == c.Name() {
					seen()
				}
			} else {
				c.applyChange(e.Key(), nil)
			}
		}
	}
}

// decodeMember decodes a put; it reports false for deletes, purges, and
// expiry markers.
func decodeMember(e jetstream.KeyValueEntry) (Member, bool) {
	if e.Operation() != jetstream.KeyValuePut {
		return Member{}, false
	}
	var m Member
	if json.Unmarshal(e.Value(), &m) != nil || m.Node != e.Key() {
		return Member{}, false
	}
	m.Revision = e.Revision()
	return m, true
}

// applySnapshot makes the view the snapshot's, and tells the differences.
func (c *Cluster) applySnapshot(s map[string]Member) {
	c.viewMu.RLock()
	var gone []string
	for name := range c.view {
		if _, ok := s[name]; !ok {
			gone = append(gone, name)
		}
	}
	c.viewMu.RUnlock()
	slices.Sort(gone)
	for _, name := range gone {
		c.applyChange(name, nil)
	}
	names := make([]string, 0, len(s))
	for name := range s {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		m := s[name]
		c.applyChange(name, &m)
	}
}

// applyChange sets (m non-nil) or removes the view's member of that name and
// tells subscribers. Only the membership goroutine calls it.
func (c *Cluster) applyChange(name string, m *Member) {
	c.viewMu.Lock()
	old, had := c.view[name]
	var ev Event
	switch {
	case m == nil && had:
		delete(c.view, name)
		ev = Event{Type: MemberLeft, Member: old}
	case m != nil && !had:
		c.view[name] = *m
		ev = Event{Type: MemberJoined, Member: *m}
	case m != nil && had && (old.Incarnation != m.Incarnation || !slices.Equal(old.Kinds, m.Kinds)):
		c.view[name] = *m
		ev = Event{Type: MemberUpdated, Member: *m}
	case m != nil:
		c.view[name] = *m // a refresh: the revision only
	}
	n := len(c.view)
	c.viewMu.Unlock()
	c.m.members.Set(float64(n))
	if ev.Type == 0 {
		return
	}
	if ev.Type == MemberLeft || ev.Type == MemberUpdated {
		c.ownerLost(name)
	}
	if ev.Type == MemberJoined || ev.Type == MemberUpdated {
		c.kickRebalance()
	}
	c.subMu.Lock()
	subs := make([]func(Event), 0, len(c.subs))
	ids := make([]int, 0, len(c.subs))
	for id := range c.subs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		subs = append(subs, c.subs[id])
	}
	c.subMu.Unlock()
	for _, f := range subs {
		f(ev)
	}
}

// ownerLost cancels the asks in flight to the node, with ErrOwnerLost.
func (c *Cluster) ownerLost(node string) {
	c.subMu.Lock()
	set := c.inflight[node]
	delete(c.inflight, node)
	c.subMu.Unlock()
	for f := range set {
		(*f)(fmt.Errorf("%w: member %q left", ErrOwnerLost, node))
	}
}

// trackAsk registers an ask in flight to node; the returned func unregisters it.
func (c *Cluster) trackAsk(node string, cancel *context.CancelCauseFunc) func() {
	c.subMu.Lock()
	set := c.inflight[node]
	if set == nil {
		set = map[*context.CancelCauseFunc]struct{}{}
		c.inflight[node] = set
	}
	set[cancel] = struct{}{}
	c.subMu.Unlock()
	return func() {
		c.subMu.Lock()
		if s := c.inflight[node]; s != nil {
			delete(s, cancel)
			if len(s) == 0 {
				delete(c.inflight, node)
			}
		}
		c.subMu.Unlock()
	}
}

// liveInView returns the view's member of that name and incarnation.
func (c *Cluster) liveInView(node, inc string) bool {
	c.viewMu.RLock()
	m, ok := c.view[node]
	c.viewMu.RUnlock()
	return ok && m.Incarnation == inc
}

// viewIncarnation returns the incarnation of the view's member of that name.
func (c *Cluster) viewIncarnation(node string) (string, bool) {
	c.viewMu.RLock()
	m, ok := c.view[node]
	c.viewMu.RUnlock()
	return m.Incarnation, ok
}

// liveInStore reads the member's record from the store: the authority
// before taking an activation over.
func (c *Cluster) liveInStore(ctx context.Context, node, inc string) (bool, error) {
	e, err := c.members.Get(ctx, node)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		c.m.kvErrors.Inc()
		return false, fmt.Errorf("%w: reading member %q: %w", ErrKV, node, err)
	}
	m, ok := decodeMember(e)
	return ok && m.Incarnation == inc, nil
}
