package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/remote"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
)

func startTestNATS(t *testing.T) string {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats not ready")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s.ClientURL()
}

// heldKV wraps a bucket: once armed, the next Update is performed, then
// held (its result not returned) until release is closed.
type heldKV struct {
	jetstream.KeyValue
	mu      sync.Mutex
	armed   bool
	entered chan struct{}
	release chan struct{}
}

func (w *heldKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	w.mu.Lock()
	armed := w.armed
	w.armed = false
	w.mu.Unlock()
	n, err := w.KeyValue.Update(ctx, key, value, rev)
	if armed {
		close(w.entered)
		<-w.release
	}
	return n, err
}

func newTestMember(t *testing.T, url, name string, opts ...Option) (*Cluster, func()) {
	t.Helper()
	sys, err := actor.Start(actor.WithWorkers(1))
	if err != nil {
		t.Fatal(err)
	}
	node, err := remote.Connect(sys, url, name)
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]Option{WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)
	c, err := New(sys, node, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Leave(ctx)
		node.Close()
		_ = sys.Shutdown(ctx)
	}
}

// Leave racing the refresher's rejoin: a member whose lease lapsed (no
// activation to wait for) rejoins under a new incarnation; Leave begins
// while that write is in flight. refresh sees the epoch moved and keeps
// the new incarnation and revision that its write left on the server (the
// lease stays not held), so that Leave's leaving mark and its final
// Delete replace that record: after Leave no live record remains on
// which the others would place ids.
func TestLeaveRacingRejoinDeletesRecord(t *testing.T) {
	url := startTestNATS(t)
	const ttl = 20 * time.Second // the refresher's own tick (TTL/4) stays out of the way
	c, stop := newTestMember(t, url, "m0", WithTTL(ttl), WithRebalance(Rebalance{Off: true}))
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Join(ctx); err != nil {
		t.Fatal(err)
	}
	w := &heldKV{KeyValue: c.members, armed: true, entered: make(chan struct{}), release: make(chan struct{})}
	c.members = w // the refresher has not read it yet (first tick at TTL/4)

	c.lease.mu.Lock()
	c.fenceLocked("test: lease lapsed")
	c.lease.mu.Unlock()

	refreshed := make(chan struct{})
	go func() { defer close(refreshed); c.refresh() }() // the rejoin
	<-w.entered                                         // its Update is done on the server
	left := make(chan error, 1)
	go func() { left <- c.Leave(ctx) }()
	for {
		c.lease.mu.Lock()
		l := c.lease.leaving
		c.lease.mu.Unlock()
		if l {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(w.release)
	<-refreshed
	if err := <-left; err != nil {
		t.Logf("Leave: %v", err)
	}
	e, err := w.KeyValue.Get(ctx, "m0")
	if !errors.Is(err, jetstream.ErrKeyNotFound) {
		m, _ := decodeMember(e)
		t.Errorf("after Leave returned, the member record is still there: %+v (err %v); Leave's Incarnation %s", m, err, c.Incarnation())
	}
}

type testGuard struct{ actor.Actor }

// A singleton refresh racing its own fence timer: the refresh (Update)
// succeeds on the server, but the fence fired meanwhile (epoch moved).
// attempt keeps the new revision (the key is this member's on the
// server, not held), so that Leave deletes it, as the doc promises,
// instead of leaving it fresh, held by nobody, for a TTL.
func TestSingletonRefreshRacingFenceKeepsKey(t *testing.T) {
	url := startTestNATS(t)
	const ttl = 20 * time.Second
	c, stop := newTestMember(t, url, "s0", WithTTL(ttl), WithRebalance(Rebalance{Off: true}))
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Join(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := RunSingleton(c, "g", func() *testGuard { return &testGuard{} })
	if err != nil {
		t.Fatal(err)
	}
	for !s.Holding() {
		time.Sleep(5 * time.Millisecond)
	}
	w := &heldKV{KeyValue: c.singletons, armed: true, entered: make(chan struct{}), release: make(chan struct{})}
	c.singletons = w // the run goroutine's next attempt is TTL/4 away
	done := make(chan struct{})
	go func() { defer close(done); s.attempt() }() // a refresh
	<-w.entered                                    // done on the server
	s.mu.Lock()
	s.until = time.Now().Add(-time.Millisecond) // its lease ran out meanwhile
	s.mu.Unlock()
	s.fenceTimer()
	close(w.release)
	<-done
	s.mu.Lock()
	known := s.rev
	s.mu.Unlock()
	if err := c.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	e, err := w.KeyValue.Get(ctx, "g")
	switch {
	case err == nil:
		t.Errorf("after Leave the singleton's key is still there, revision %d (the member knew %d): Leave deletes the key this member wrote last", e.Revision(), known)
	case !errors.Is(err, jetstream.ErrKeyNotFound):
		t.Errorf("reading the singleton's key after Leave: %v", err)
	}
}

type fenceReq struct {
	actor.Request[int]
}

type fenceEnt struct{ actor.Actor }

// The fence must shut every local activation's gate "at once": within
// the lease's margin (TTL/5), since the key may expire then, and all
// under lease.mu. Stopping activations one by one (each a.stop does an
// Unexport and more) would hold lease.mu for all of them; the fence shuts
// every gate first and leaves the stops to a goroutine of its own.
func TestFenceOfManyActivationsShutsGatesWithinMargin(t *testing.T) {
	url := startTestNATS(t)
	const ttl = time.Second
	const n = 5000
	c, stop := newTestMember(t, url, "f0", WithTTL(ttl), WithRebalance(Rebalance{Off: true}))
	defer stop()
	k, err := NewKind(c, "k", remote.CBOR[*fenceReq](), remote.CBOR[int]())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Join(ctx); err != nil {
		t.Fatal(err)
	}
	ent, err := actor.Spawn(c.sys, &fenceEnt{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := actor.Bind(ent, func(*fenceEnt, *fenceReq) actor.Allocation { return actor.Nodelete })
	if err != nil {
		t.Fatal(err)
	}
	// n registered activations, as claims leave them (exported, in acts).
	var last *activation[*fenceReq]
	k.mu.Lock()
	for i := range n {
		id := fmt.Sprintf("id-%d", i)
		name := exportName(k.name, id)
		a := &activation[*fenceReq]{ready: make(chan struct{}), ended: make(chan struct{}), port: p, owner: c.Name()}
		close(a.ready)
		a.stop = func() { a.use.stopped.Store(true); _ = c.node.Unexport(name) }
		k.acts[id] = a
		last = a
	}
	k.mu.Unlock()
	t0 := time.Now()
	for i := range n {
		if err := remote.ExportRequest(c.node, exportName(k.name, fmt.Sprintf("id-%d", i)), p, k.req, k.reply); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("exporting %d activations took %v", n, time.Since(t0))
	_ = last
	start := time.Now()
	c.lease.mu.Lock()
	c.fenceLocked("test")
	c.lease.mu.Unlock()
	took := time.Since(start)
	stopped := 0
	for _, a := range k.acts {
		if a.use.stopped.Load() {
			stopped++
		}
	}
	if took > ttl/5 {
		t.Errorf("fencing %d activations took %v (lease.mu held throughout; %d gates shut by then): the last gates shut past the lease's margin of %v", n, took, stopped, ttl/5)
	}
	_ = actor.SendPill(ent, actor.FinishedMsg)
}

// An activation that Leave's start refuses (no claim may start then) is a
// refusal to look again (errRetry, which a remote asker gets as such and
// answers by looking again), not a lapsed lease (ErrNotJoined, which a
// remote asker would take for ErrFenced).
func TestActivateWhileLeavingIsRetriable(t *testing.T) {
	url := startTestNATS(t)
	c, stop := newTestMember(t, url, "l0", WithTTL(2*time.Second), WithRebalance(Rebalance{Off: true}))
	defer stop()
	k, err := NewKind(c, "k", remote.CBOR[*fenceReq](), remote.CBOR[int]())
	if err != nil {
		t.Fatal(err)
	}
	if err := Host(k, func(string) *fenceEnt { return &fenceEnt{} }, func(*fenceEnt, *fenceReq) actor.Allocation { return actor.Nodelete }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Join(ctx); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.left = true // Leave has begun, as goTracked sees it
	c.mu.Unlock()
	_, err = k.activate(ctx, "x")
	c.mu.Lock()
	c.left = false
	c.mu.Unlock()
	if !errors.Is(err, errRetry) || errors.Is(err, ErrNotJoined) {
		t.Errorf("activate once Leave began: %v, want errRetry", err)
	}
}
