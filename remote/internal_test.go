package remote

// Tests of unexported parts: conversions and states that the public API
// cannot reach deterministically.

import (
	"context"
	"errors"
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
