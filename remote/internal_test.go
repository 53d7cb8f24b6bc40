package remote

// Tests of unexported parts: conversions and states that the public API
// cannot reach deterministically.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/nats-io/nats-server/v2/server"
)

// testNode starts an embedded NATS server and an actor system, and connects
// a node named name to it; all end with the test.
func testNode(t testing.TB, name string, opts ...Option) *Node {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	sys, err := actor.Start(actor.WithWorkers(1), actor.WithQueues(4))
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]Option{WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)
	n, err := Connect(sys, s.ClientURL(), name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := sys.Stop(ctx); err != nil && !errors.Is(err, actor.ErrUndelivered) {
			t.Errorf("stop: %v", err)
		}
		s.Shutdown()
		s.WaitForShutdown()
	})
	return n
}

type tAdd struct {
	actor.Message
	N int
}

// otherPublisher makes p look as if another goroutine were publishing to
// it, between taking a frame and publishing it; the returned function
// resumes that goroutine, which publishes what is left.
func otherPublisher(p *peer) (resume func()) {
	p.mu.Lock()
	p.flushing = true
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		p.drain()
	}
}

// Flush covers the messages sent before it even while another goroutine
// is publishing to their node: it used to return at once, the records
// still batched. The test holds the other publisher until Flush has had
// ample time to return; a Flush that waits cannot return before it resumes.
func TestFlushWaitsForAnotherPublisher(t *testing.T) {
	n := testNode(t, "a")
	port, err := Import(n, "a", "add", CBOR[*tAdd]())
	if err != nil {
		t.Fatal(err)
	}
	p := port.p
	resume := otherPublisher(p)
	if err := port.Send(&tAdd{N: 1}); err != nil {
		t.Fatal(err)
	}
	flushed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		flushed <- n.Flush(ctx)
	}()
	select {
	case err := <-flushed:
		p.mu.Lock()
		pending := len(p.buf) - len(n.header)
		p.mu.Unlock()
		t.Errorf("Flush returned %v while another goroutine was publishing, %d bytes of records not published", err, pending)
		resume()
		return
	case <-time.After(100 * time.Millisecond):
	}
	resume()
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if s := n.Stats(); s.FramesSent != 1 {
		t.Errorf("%d frames sent, want 1", s.FramesSent)
	}
}

// A Flush waiting for another publisher ends with its context.
func TestFlushWaitingEndsWithContext(t *testing.T) {
	n := testNode(t, "a")
	port, err := Import(n, "a", "add", CBOR[*tAdd]())
	if err != nil {
		t.Fatal(err)
	}
	resume := otherPublisher(port.p)
	defer resume()
	if err := port.Send(&tAdd{N: 1}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	flushed := make(chan error, 1)
	go func() { flushed <- n.Flush(ctx) }()
	time.Sleep(50 * time.Millisecond) // most likely waiting by now: the cancel must wake it
	cancel()
	select {
	case err := <-flushed:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Flush: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Flush did not end with its context")
	}
}

// A request's timeout from the wire saturates instead of overflowing: a
// huge value multiplied out to microseconds used to wrap to a negative
// timeout (none) or to a tiny positive one (the request failed at once
// with context.DeadlineExceeded).
func TestWireTimeoutSaturates(t *testing.T) {
	wrapsToTiny := uint64(math.MaxUint64/1000) + 1 // times 1000 wraps to 384ns
	for _, c := range []struct {
		us   uint64
		want time.Duration
	}{
		{0, 0},
		{1, time.Microsecond},
		{uint64(time.Hour / time.Microsecond), time.Hour},
		{uint64(maxTimeoutMicros), time.Duration(maxTimeoutMicros) * time.Microsecond},
		{uint64(maxTimeoutMicros) + 1, math.MaxInt64},
		{math.MaxInt64, math.MaxInt64},
		{wrapsToTiny, math.MaxInt64},
		{math.MaxUint64, math.MaxInt64},
	} {
		if got := wireTimeout(c.us); got != c.want {
			t.Errorf("wireTimeout(%d) = %v, want %v", c.us, got, c.want)
		}
	}
}

// A peer evicted from n.peers keeps working for whoever holds it (a
// replier answering one of its requests), and a down peer's eviction
// keeps Stats.PeersDown consistent.
func TestEvictedPeerKeepsWorking(t *testing.T) {
	n := testNode(t, "b")
	p, _ := n.peer([]byte("x"), false)
	p.markDown()
	if d := n.Stats().PeersDown; d != 1 {
		t.Fatalf("%d peers down, want 1", d)
	}
	n.mu.Lock()
	n.evictTransient()
	_, kept := n.peers["x"]
	transient := n.transient
	n.mu.Unlock()
	if kept || transient != 0 {
		t.Errorf("after eviction: kept %v, %d transient peers", kept, transient)
	}
	if d := n.Stats().PeersDown; d != 0 {
		t.Errorf("%d peers down after the down peer's eviction, want 0", d)
	}
	reply := "actord.x.b.t"
	p.replyTo.Store(&reply)        // as the request's frame did
	p.fail(1, codeOther, "answer") // as a replier would
	if s := n.Stats(); s.FramesSent != 1 || s.PublishErrors != 0 {
		t.Errorf("evicted peer's answer: %d frames sent, %d publish errors; want 1, 0", s.FramesSent, s.PublishErrors)
	}
}

// Imported peers are never evicted, and importing from a node known only
// as a sender turns its peer from transient into imported.
func TestImportedPeersAreKept(t *testing.T) {
	n := testNode(t, "b")
	if _, err := Import(n, "imp", "add", CBOR[*tAdd]()); err != nil {
		t.Fatal(err)
	}
	for i := range maxTransientPeers + 10 {
		n.peer(fmt.Appendf(nil, "t%d", i), false)
	}
	n.mu.Lock()
	_, kept := n.peers["imp"]
	peers, transient := len(n.peers), n.transient
	n.mu.Unlock()
	if !kept || peers != maxTransientPeers+1 || transient != maxTransientPeers {
		t.Errorf("imported peer kept: %v; %d peers, %d transient; want true, %d, %d", kept, peers, transient, maxTransientPeers+1, maxTransientPeers)
	}
	var name string
	n.mu.Lock()
	for k, p := range n.peers {
		if !p.imported.Load() {
			name = k
			break
		}
	}
	n.mu.Unlock()
	port, err := Import(n, name, "add", CBOR[*tAdd]())
	if err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	transient = n.transient
	n.mu.Unlock()
	if !port.p.imported.Load() || transient != maxTransientPeers-1 {
		t.Errorf("after importing from transient peer %s: imported %v, %d transient; want true, %d", name, port.p.imported.Load(), transient, maxTransientPeers-1)
	}
}
