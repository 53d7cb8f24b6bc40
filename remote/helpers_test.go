package remote_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/remote"
	"github.com/nats-io/nats-server/v2/server"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// startNATS starts an embedded NATS server on 127.0.0.1 at a random port and
// returns its URL; it is shut down at the end of the test.
func startNATS(t testing.TB, maxPayload int32) string {
	t.Helper()
	opts := &server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, MaxPayload: maxPayload}
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s.ClientURL()
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func startSystem(t testing.TB) *actor.System {
	t.Helper()
	sys, err := actor.Start(actor.WithWorkers(1), actor.WithQueues(4))
	if err != nil {
		t.Fatal(err)
	}
	return sys
}

// stopSystem stops sys once its actors have been sent pills; undelivered
// messages are expected (pills overtake nothing, but remote traffic may
// come after them).
func stopSystem(t testing.TB, sys *actor.System) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sys.Stop(ctx); err != nil && !errors.Is(err, actor.ErrUndelivered) {
		t.Errorf("stop: %v", err)
	}
}

// twoNodes starts two systems and connects node "a" on the first and "b"
// (with bOpts) on the second.
func twoNodes(t testing.TB, url string, bOpts ...remote.Option) (sysA, sysB *actor.System, a, b *remote.Node) {
	t.Helper()
	sysA, sysB = startSystem(t), startSystem(t)
	return sysA, sysB, connect(t, sysA, url, "a"), connect(t, sysB, url, "b", bOpts...)
}

// closeAndStop closes the nodes, then stops both systems.
func closeAndStop(t testing.TB, sysA, sysB *actor.System, nodes ...*remote.Node) {
	t.Helper()
	for _, n := range nodes {
		n.Close()
	}
	stopSystem(t, sysA)
	stopSystem(t, sysB)
}

func connect(t testing.TB, sys *actor.System, url, name string, opts ...remote.Option) *remote.Node {
	t.Helper()
	opts = append([]remote.Option{remote.WithLogger(quiet), remote.WithProbeInterval(20 * time.Millisecond)}, opts...)
	n, err := remote.Connect(sys, url, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// Test actor: a store that sums what it is sent and checks the order.

type Add struct {
	actor.Message
	N int
}

type Totals struct {
	Sum, Count, OutOfOrder int
}

type Get struct {
	actor.Request[Totals]
	Delay time.Duration
}

type Echo struct {
	actor.Request[string]
	S string
}

type Store struct {
	actor.Actor
	t    Totals
	next int
}

func (s *Store) OnAdd(m *Add) actor.Allocation {
	if m.N != s.next {
		s.t.OutOfOrder++
	}
	s.next = m.N + 1
	s.t.Sum += m.N
	s.t.Count++
	return actor.Nodelete
}

func (s *Store) OnGet(m *Get) actor.Allocation {
	if m.Delay > 0 {
		time.Sleep(m.Delay)
	}
	m.Reply(s.t)
	return actor.Nodelete
}

func (s *Store) OnEcho(m *Echo) actor.Allocation {
	m.Reply(m.S)
	return actor.Nodelete
}

// serveStore spawns a Store in sys and exports it on n as "add", "get" and
// "echo".
func serveStore(t testing.TB, sys *actor.System, n *remote.Node) *Store {
	t.Helper()
	s, err := actor.Spawn(sys, &Store{})
	if err != nil {
		t.Fatal(err)
	}
	add, _ := actor.Bind(s, (*Store).OnAdd)
	get, _ := actor.Bind(s, (*Store).OnGet)
	echo, _ := actor.Bind(s, (*Store).OnEcho)
	must(t, remote.Export(n, "add", add, remote.CBOR[*Add]()))
	must(t, remote.ExportRequest(n, "get", get, remote.JSON[*Get](), remote.JSON[Totals]()))
	must(t, remote.ExportRequest(n, "echo", echo, remote.CBOR[*Echo](), remote.CBOR[string]()))
	return s
}

type client struct {
	add  *remote.Port[*Add]
	get  *remote.RequestPort[*Get, Totals]
	echo *remote.RequestPort[*Echo, string]
}

func importStore(t testing.TB, n *remote.Node, node string) client {
	t.Helper()
	var c client
	var err error
	c.add, err = remote.Import(n, node, "add", remote.CBOR[*Add]())
	must(t, err)
	c.get, err = remote.ImportRequest(n, node, "get", remote.JSON[*Get](), remote.JSON[Totals]())
	must(t, err)
	c.echo, err = remote.ImportRequest(n, node, "echo", remote.CBOR[*Echo](), remote.CBOR[string]())
	must(t, err)
	return c
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func ask[Req, R any](t testing.TB, p remote.Asker[Req, R], req Req) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := p.Ask(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
