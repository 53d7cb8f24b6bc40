package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/cluster"
	"github.com/actord/actord/remote"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if name := os.Getenv(testNodeEnv); name != "" {
		// Started by TestProcessesKill: this process is one member.
		os.Exit(testNodeMain(name))
	}
	goleak.VerifyTestMain(m)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// natsServer is an embedded nats-server with JetStream on 127.0.0.1, its
// store in a temporary directory; restart keeps port and store.
type natsServer struct {
	t    testing.TB
	opts *server.Options
	s    *server.Server
}

func startNATS(t testing.TB) *natsServer {
	t.Helper()
	ns := &natsServer{t: t, opts: &server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: t.TempDir()}}
	ns.start()
	ns.opts.Port = ns.s.Addr().(*net.TCPAddr).Port
	t.Cleanup(ns.stop)
	return ns
}

func (ns *natsServer) start() {
	s, err := server.NewServer(ns.opts)
	if err != nil {
		ns.t.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		ns.t.Fatal("nats server not ready")
	}
	ns.s = s
}

func (ns *natsServer) stop() {
	if ns.s != nil {
		ns.s.Shutdown()
		ns.s.WaitForShutdown()
		ns.s = nil
	}
}

func (ns *natsServer) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", ns.opts.Port) }

// Hit asks an entity to count one hit; the reply says where it ran.
type Hit struct {
	actor.Request[Reply]
	N     int
	Seq   int64         // when not 0, the entity records its delivery in the registry
	Sleep time.Duration // the behaviour sleeps this long first (blocking its worker)
}

// Reply is an entity's answer.
type Reply struct {
	Node string
	ID   string
	Hits int
}

// Counter is the test entity: it records its activations in a registry
// shared by every node of the test.
type Counter struct {
	actor.Actor
	id, node string
	reg      *registry
	hits     int
	held     []*Hit
}

func (c *Counter) Started()             { c.reg.started(c.id) }
func (c *Counter) Stopped(actor.Reason) { c.reg.stopped(c.id) }

func (c *Counter) OnHit(m *Hit) actor.Allocation {
	if m.N < 0 {
		c.held = append(c.held, m) // never answered: an ask left in flight
		return actor.Nodelete
	}
	time.Sleep(m.Sleep)
	if m.Seq != 0 {
		c.reg.delivered(m.Seq)
	}
	c.hits++
	m.Reply(Reply{Node: c.node, ID: c.id, Hits: c.hits})
	return actor.Nodelete
}

// registry counts the activations of each id across all the test's nodes:
// live now, ever, and the most live at once (which must stay at 1).
type registry struct {
	mu      sync.Mutex
	live    map[string]int
	total   map[string]int
	maxLive int
	doubles []string
	seqs    map[int64]int // deliveries per request sequence number
}

func newRegistry() *registry {
	return &registry{live: map[string]int{}, total: map[string]int{}, seqs: map[int64]int{}}
}

func (r *registry) delivered(seq int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seqs[seq]++
}

func (r *registry) started(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live[id]++
	r.total[id]++
	if r.live[id] > r.maxLive {
		r.maxLive = r.live[id]
	}
	if r.live[id] > 1 {
		r.doubles = append(r.doubles, id)
	}
}

func (r *registry) stopped(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live[id]--
}

func (r *registry) check(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.maxLive > 1 {
		t.Errorf("two activations of one id at once: %d ids, first %v", len(r.doubles), r.doubles[:min(5, len(r.doubles))])
	}
}

type testKind = cluster.Kind[Hit, Reply, *Hit]

// cnode is one member of a test cluster.
type cnode struct {
	name string
	sys  *actor.System
	node *remote.Node
	c    *cluster.Cluster
	k    *testKind
}

type nodeConfig struct {
	ttl       time.Duration
	host      bool
	spawnOpts []actor.SpawnOption
	opts      []cluster.Option
}

// newMember starts a system of workers workers, connects it to the NATS
// server at url as node name (reconnecting every 50 ms, forever, without
// jitter) and makes its cluster with opts (logging to quiet), not joined:
// the steps every member starter of these tests shares.
func newMember(t testing.TB, url, name string, workers int, opts ...cluster.Option) (*actor.System, *remote.Node, *cluster.Cluster) {
	t.Helper()
	sys, err := actor.Start(actor.WithWorkers(workers), actor.WithQueues(16))
	if err != nil {
		t.Fatal(err)
	}
	node, err := remote.Connect(sys, url, name, remote.WithLogger(quiet),
		remote.WithNATS(nats.ReconnectWait(50*time.Millisecond), nats.MaxReconnects(-1), nats.ReconnectJitter(0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.New(sys, node, append([]cluster.Option{cluster.WithLogger(quiet)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return sys, node, c
}

// joinMember joins c within 10 seconds or fails the test.
func joinMember(t testing.TB, c *cluster.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Join(ctx); err != nil {
		t.Fatal(err)
	}
}

func startNode(t testing.TB, url, name string, reg *registry, cfg nodeConfig) *cnode {
	t.Helper()
	sys, node, c := newMember(t, url, name, 1, append([]cluster.Option{cluster.WithTTL(cfg.ttl)}, cfg.opts...)...)
	k, err := cluster.NewKind(c, "counter", remote.CBOR[*Hit](), remote.CBOR[Reply]())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.host {
		err := cluster.Host(k, func(id string) *Counter { return &Counter{id: id, node: name, reg: reg} }, (*Counter).OnHit, cfg.spawnOpts...)
		if err != nil {
			t.Fatal(err)
		}
	}
	joinMember(t, c)
	n := &cnode{name: name, sys: sys, node: node, c: c, k: k}
	t.Cleanup(func() { n.stop(t) })
	return n
}

// stop leaves, closes the node and stops the system; again is a no-op.
func (n *cnode) stop(t testing.TB) {
	if n.sys == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n.c.Leave(ctx); err != nil && n.node.Conn().IsConnected() {
		t.Errorf("%s: leave: %v", n.name, err)
	}
	n.node.Close()
	if err := n.sys.Shutdown(ctx); err != nil && !errors.Is(err, actor.ErrUndelivered) {
		t.Errorf("%s: shutdown: %v", n.name, err)
	}
	n.sys = nil
}

// kill closes the node's NATS connection without leaving: to the others it
// is a node that stopped refreshing.
func (n *cnode) kill() { n.node.Conn().Close() }

func waitFor(t testing.TB, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func memberNames(c *cluster.Cluster) []string {
	var out []string
	for _, m := range c.Members() {
		out = append(out, m.Node)
	}
	return out
}

func startCustom(t *testing.T, url, name string, opts []cluster.Option, host func(*testKind) error) *cnode {
	t.Helper()
	sys, node, c := newMember(t, url, name, 1, append([]cluster.Option{cluster.WithTTL(2 * time.Second)}, opts...)...)
	k, err := cluster.NewKind(c, "counter", remote.CBOR[*Hit](), remote.CBOR[Reply]())
	if err != nil {
		t.Fatal(err)
	}
	if err := host(k); err != nil {
		t.Fatal(err)
	}
	joinMember(t, c)
	cn := &cnode{name: name, sys: sys, node: node, c: c, k: k}
	t.Cleanup(func() { cn.stop(t) })
	return cn
}

func startSlowOpts(t *testing.T, url, name string, reg *registry, opts ...cluster.Option) *snode {
	t.Helper()
	sys, node, c := newMember(t, url, name, 2, opts...)
	k, err := cluster.NewKind(c, "slow", remote.CBOR[*Op](), remote.CBOR[Reply]())
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.Host(k, func(id string) *Slow { return &Slow{id: id, node: name, reg: reg, k: k} }, (*Slow).OnOp); err != nil {
		t.Fatal(err)
	}
	joinMember(t, c)
	n := &snode{name: name, sys: sys, node: node, c: c, k: k}
	t.Cleanup(func() { n.stop(t) })
	return n
}
