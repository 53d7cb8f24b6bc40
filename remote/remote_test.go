package remote_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/remote"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestRoundTripTwoSystems(t *testing.T) {
	url := startNATS(t, 0)
	sysA, sysB, a, b := twoNodes(t, url)
	store := serveStore(t, sysB, b)
	c := importStore(t, a, "b")

	const n = 5000
	for i := range n {
		must(t, c.add.Send(&Add{N: i}))
	}
	if got := ask(t, c.echo, &Echo{S: "hello"}); got != "hello" {
		t.Fatalf("echo: %q", got)
	}
	var tot Totals
	waitFor(t, 10*time.Second, "all adds", func() bool {
		tot = ask(t, c.get, &Get{})
		return tot.Count == n
	})
	if tot.OutOfOrder != 0 || tot.Sum != n*(n-1)/2 {
		t.Fatalf("totals %+v", tot)
	}
	sa, sb := a.Stats(), b.Stats()
	if sa.Sent < n+2 || sb.Received < n+2 || sa.FramesSent >= sa.Sent {
		t.Errorf("stats a %+v, b %+v (frames should batch)", sa, sb)
	}
	if sa.AskLatency.Count < 2 || sa.AsksPending != 0 {
		t.Errorf("ask stats %+v", sa)
	}
	must(t, actor.SendPill(store, actor.FinishedMsg))
	closeAndStop(t, sysA, sysB, a, b)
}

func TestJSONDoesNotEncodeMessageHeader(t *testing.T) {
	b, err := remote.JSON[*Add]().Append(nil, &Add{N: 7})
	must(t, err)
	if string(b) != `{"N":7}` {
		t.Errorf("Add: %s", b)
	}
	b, err = remote.JSON[*Get]().Append(nil, &Get{Delay: 3})
	must(t, err)
	if string(b) != `{"Delay":3}` {
		t.Errorf("Get: %s", b)
	}
	plain := must2(remote.CBOR[struct{ N int }]().Append(nil, struct{ N int }{9}))
	if b := must2(remote.CBOR[*Add]().Append(nil, &Add{N: 9})); string(b) != string(plain) {
		t.Errorf("CBOR of Add %x, of the plain struct %x", b, plain)
	}
	m, err := remote.CBOR[*Add]().Decode(must2(remote.CBOR[*Add]().Append(nil, &Add{N: 9})))
	if err != nil || m.N != 9 {
		t.Errorf("cbor round trip: %v %v", m, err)
	}
}

func must2(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// badCodec encodes garbage for a valid type name, or fails to encode.
type badCodec[T any] struct{ failEncode bool }

var errBadCodec = errors.New("bad codec")

func (c badCodec[T]) Append(dst []byte, v T) ([]byte, error) {
	if c.failEncode {
		return dst, errBadCodec
	}
	return append(dst, 0xff, 0xfe, 0x00), nil
}

func (badCodec[T]) Decode([]byte) (T, error) {
	var zero T
	return zero, errBadCodec
}

type Other struct {
	actor.Request[string]
	X int
}

func TestRefused(t *testing.T) {
	url := startNATS(t, 0)
	sysA, sysB, a, b := twoNodes(t, url)
	store := serveStore(t, sysB, b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	// Unknown name.
	unknown, err := remote.ImportRequest(a, "b", "nope", remote.JSON[*Echo](), remote.JSON[string]())
	must(t, err)
	if _, err := unknown.Ask(ctx, &Echo{}); !errors.Is(err, remote.ErrUnknownName) || !errors.Is(err, remote.ErrRemote) {
		t.Errorf("unknown name: %v", err)
	}
	must(t, unknown.Send(&Echo{}))

	// Wrong type: "echo" takes *Echo, not *Other.
	wrong, err := remote.ImportRequest(a, "b", "echo", remote.JSON[*Other](), remote.JSON[string]())
	must(t, err)
	if _, err := wrong.Ask(ctx, &Other{}); !errors.Is(err, remote.ErrWrongType) {
		t.Errorf("wrong type: %v", err)
	}
	must(t, wrong.Send(&Other{}))
	// Asking a one-way export is a wrong type too.
	askAdd, err := remote.ImportRequest(a, "b", "add", remote.JSON[*Get](), remote.JSON[Totals]())
	must(t, err)
	if _, err := askAdd.Ask(ctx, &Get{}); !errors.Is(err, remote.ErrWrongType) {
		t.Errorf("ask of a one-way export: %v", err)
	}

	// Undecodable payload: a dead letter there, ErrDecode for an ask.
	garbled, err := remote.ImportRequest(a, "b", "echo", remote.Codec[*Echo](badCodec[*Echo]{}), remote.CBOR[string]())
	must(t, err)
	if _, err := garbled.Ask(ctx, &Echo{}); !errors.Is(err, remote.ErrDecode) {
		t.Errorf("undecodable: %v", err)
	}
	garbledAdd, err := remote.Import(a, "b", "add", remote.Codec[*Add](badCodec[*Add]{}))
	must(t, err)
	must(t, garbledAdd.Send(&Add{}))

	// Encode failure: a clear error to the sender, nothing sent.
	failing, err := remote.Import(a, "b", "add", remote.Codec[*Add](badCodec[*Add]{failEncode: true}))
	must(t, err)
	if err := failing.Send(&Add{}); !errors.Is(err, remote.ErrEncode) || !errors.Is(err, errBadCodec) {
		t.Errorf("encode failure: %v", err)
	}

	c := importStore(t, a, "b")
	waitFor(t, 5*time.Second, "refusals counted", func() bool {
		s := b.Stats()
		return s.UnknownName == 2 && s.WrongType == 3 && s.DecodeErrors == 2
	})
	// The node goes on serving.
	if got := ask(t, c.echo, &Echo{S: "still"}); got != "still" {
		t.Fatal(got)
	}
	if s := a.Stats(); s.EncodeErrors != 1 {
		t.Errorf("encode errors %d", s.EncodeErrors)
	}
	must(t, actor.SendPill(store, actor.FinishedMsg))
	stopSystem(t, sysA)
	stopSystem(t, sysB)
}

func TestTooLarge(t *testing.T) {
	url := startNATS(t, 4096)
	sys := startSystem(t)
	a := connect(t, sys, url, "a")
	p, err := remote.Import(a, "b", "echo", remote.JSON[*Echo]())
	must(t, err)
	big := make([]byte, 5000)
	for i := range big {
		big[i] = 'x'
	}
	if err := p.Send(&Echo{S: string(big)}); !errors.Is(err, remote.ErrTooLarge) {
		t.Fatalf("large send: %v", err)
	}
	stopSystem(t, sys)
}

func TestNodeRestart(t *testing.T) {
	url := startNATS(t, 0)
	sysA, sysB, a, b := twoNodes(t, url)
	store := serveStore(t, sysB, b)
	c := importStore(t, a, "b")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	for i := range 100 {
		must(t, c.add.Send(&Add{N: i}))
	}
	ask(t, c.echo, &Echo{S: "up"})

	// b goes away: asks fail with ErrNoResponders, then sends fail fast.
	b.Close()
	must(t, actor.SendPill(store, actor.FinishedMsg))
	if _, err := c.echo.Ask(ctx, &Echo{S: "down"}); !errors.Is(err, remote.ErrNoResponders) {
		t.Fatalf("ask to a stopped node: %v", err)
	}
	if err := c.add.Send(&Add{N: 100}); !errors.Is(err, remote.ErrNoResponders) {
		t.Fatalf("send to a stopped node: %v", err)
	}
	if s := a.Stats(); s.PeersDown != 1 || s.NoResponders < 2 {
		t.Errorf("stats while down: %+v", s)
	}

	// b comes back under the same name: the probe finds it, sends resume.
	b2 := connect(t, sysB, url, "b")
	store2 := serveStore(t, sysB, b2)
	waitFor(t, 5*time.Second, "sends to resume", func() bool {
		return c.add.Send(&Add{N: 0}) == nil
	})
	for i := 1; i < 50; i++ {
		must(t, c.add.Send(&Add{N: i}))
	}
	waitFor(t, 5*time.Second, "the resumed adds", func() bool {
		tot := ask(t, c.get, &Get{})
		return tot.Count == 50 && tot.OutOfOrder == 0
	})
	must(t, actor.SendPill(store2, actor.FinishedMsg))
	b2.Close()
	a.Close()
	stopSystem(t, sysA)
	stopSystem(t, sysB)
}

func TestSlowConsumer(t *testing.T) {
	url := startNATS(t, 0)
	sysA, sysB, a, b := twoNodes(t, url)
	store := serveStore(t, sysB, b)
	c := importStore(t, a, "b")

	// The store is busy for 600ms: sends do not wait for it, asks with a
	// shorter deadline end with it, and nothing is lost or reordered.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	must(t, c.get.Send(&Get{Delay: 600 * time.Millisecond}))
	start := time.Now()
	for i := range 2000 {
		must(t, c.add.Send(&Add{N: i}))
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("sends waited for the slow actor: %v", d)
	}
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err := c.echo.Ask(short, &Echo{S: "late"})
	cancelShort()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("short ask: %v", err)
	}
	tot := ask(t, c.get, &Get{})
	if tot.Count != 2000 || tot.OutOfOrder != 0 {
		t.Fatalf("totals %+v", tot)
	}
	if s := a.Stats(); s.AsksTimedOut != 1 {
		t.Errorf("asks timed out %d", s.AsksTimedOut)
	}
	// Two outcomes race, both ending the ask with its deadline: this
	// node's context ended first, and the serving node's timeout failure
	// then arrives late; or that failure, sent when the serving node's
	// timer (taken from the deadline) fired, arrived before this node's
	// asker saw its context end.
	if errors.Is(err, remote.ErrRemote) {
		if s := a.Stats(); s.LateReplies != 0 {
			t.Errorf("late replies %d after the serving node's timeout ended the ask", s.LateReplies)
		}
	} else {
		waitFor(t, 5*time.Second, "the late failure to be dropped", func() bool {
			return a.Stats().LateReplies == 1
		})
	}
	// The serving side timed the request out with the asker's deadline, and
	// dropped the actor's reply that came after it.
	waitFor(t, 5*time.Second, "the serving system to drop the late reply", func() bool {
		st, err := sysB.Stats()
		return err == nil && st.AsksTimedOut == 1 && st.LateReplies == 1
	})
	must(t, actor.SendPill(store, actor.FinishedMsg))
	closeAndStop(t, sysA, sysB, a, b)
}

func TestConcurrentAskers(t *testing.T) {
	url := startNATS(t, 0)
	sysA, sysB, a, b := twoNodes(t, url)
	store := serveStore(t, sysB, b)
	c := importStore(t, a, "b")

	const askers, asks = 32, 100
	var ok, timedOut atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for g := range askers {
		wg.Go(func() {
			for i := range asks {
				// Deadlines from 50µs (often too short) to 2s.
				d := 50 * time.Microsecond << (i % 16)
				ctx, cancel := context.WithTimeout(context.Background(), min(d, 2*time.Second))
				s := fmt.Sprint(g, "/", i)
				got, err := c.echo.Ask(ctx, &Echo{S: s})
				cancel()
				switch {
				case err == nil && got == s:
					ok.Add(1)
				case errors.Is(err, context.DeadlineExceeded):
					timedOut.Add(1)
				default:
					t.Errorf("ask %s: %q, %v", s, got, err)
				}
			}
		})
	}
	wg.Wait()
	if ok.Load()+timedOut.Load() != askers*asks || ok.Load() == 0 {
		t.Fatalf("ok %d, timed out %d", ok.Load(), timedOut.Load())
	}
	t.Logf("%d asks in %v: %d answered, %d timed out", askers*asks, time.Since(start), ok.Load(), timedOut.Load())
	if s := a.Stats(); s.AsksPending != 0 {
		t.Errorf("asks pending %d", s.AsksPending)
	}
	must(t, actor.SendPill(store, actor.FinishedMsg))
	closeAndStop(t, sysA, sysB, a, b)
}

func TestCloseEndsAsksAndForwarders(t *testing.T) {
	url := startNATS(t, 0)
	sysA, sysB, a, b := twoNodes(t, url)
	store := serveStore(t, sysB, b)
	c := importStore(t, a, "b")

	// A local port forwarding into the remote one, and a local asker.
	fwd, err := remote.Forward(sysA, c.add)
	must(t, err)
	var s remote.Sender[*Add] = fwd // a local port and a remote port are both Senders
	for i := range 10 {
		must(t, s.Send(&Add{N: i}))
	}
	waitFor(t, 5*time.Second, "forwarded adds", func() bool { return ask(t, c.get, &Get{}).Count == 10 })
	getPort, _ := actor.Bind(store, (*Store).OnGet)
	var local remote.Asker[*Get, Totals] = remote.Local(getPort)
	if tot := ask(t, local, &Get{}); tot.Count != 10 {
		t.Fatalf("local ask %+v", tot)
	}

	done := make(chan error, 1)
	go func() {
		_, err := c.get.Ask(context.Background(), &Get{Delay: 200 * time.Millisecond})
		done <- err
	}()
	waitFor(t, 5*time.Second, "the ask to be pending", func() bool { return a.Stats().AsksPending == 1 })
	a.Close()
	if err := <-done; !errors.Is(err, remote.ErrClosed) {
		t.Fatalf("pending ask at close: %v", err)
	}
	if err := c.add.Send(&Add{}); !errors.Is(err, remote.ErrClosed) {
		t.Fatalf("send after close: %v", err)
	}
	waitFor(t, 5*time.Second, "the forwarder to terminate", func() bool { return !fwd.Alive() })
	if err := fwd.Send(&Add{}); !errors.Is(err, actor.ErrTerminated) {
		t.Fatalf("forwarder after close: %v", err)
	}
	must(t, actor.SendPill(store, actor.FinishedMsg))
	b.Close()
	stopSystem(t, sysA)
	stopSystem(t, sysB)
}

func TestBadNames(t *testing.T) {
	url := startNATS(t, 0)
	sys := startSystem(t)
	if _, err := remote.Connect(sys, url, "a.b"); !errors.Is(err, remote.ErrBadName) {
		t.Errorf("connect: %v", err)
	}
	if _, err := remote.Connect(sys, url, strings.Repeat("n", 256)); !errors.Is(err, remote.ErrBadName) {
		t.Errorf("connect with a 256-byte name: %v", err)
	}
	a := connect(t, sys, url, "a")
	if _, err := remote.Import(a, "x*", "p", remote.JSON[*Add]()); !errors.Is(err, remote.ErrBadName) {
		t.Errorf("import: %v", err)
	}
	if _, err := remote.Import(a, strings.Repeat("n", 256), "p", remote.JSON[*Add]()); !errors.Is(err, remote.ErrBadName) {
		t.Errorf("import from a 256-byte name: %v", err)
	}
	if _, err := remote.Import(a, strings.Repeat("n", 255), "p", remote.JSON[*Add]()); err != nil {
		t.Errorf("import from a 255-byte name: %v", err)
	}
	st := must3(actor.Spawn(sys, &Store{}))
	p, _ := actor.Bind(st, (*Store).OnAdd)
	must(t, remote.Export(a, "add", p, remote.JSON[*Add]()))
	if err := remote.Export(a, "add", p, remote.JSON[*Add]()); !errors.Is(err, remote.ErrNameTaken) {
		t.Errorf("export twice: %v", err)
	}
	must(t, a.Unexport("add"))
	if err := a.Unexport("add"); !errors.Is(err, remote.ErrUnknownName) {
		t.Errorf("unexport twice: %v", err)
	}
	func() {
		defer func() {
			if r := recover(); r == nil || fmt.Sprint(r)[:8] != "remote: " {
				t.Errorf("panic %v", r)
			}
		}()
		remote.Export[*Add](a, "x", p, nil)
	}()
	a.Close()
	must(t, p.Send(&Add{}))
	must(t, actor.SendPill(st, actor.FinishedMsg))
	stopSystem(t, sys)
}

func must3[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A message type embedding a generated protobuf message (a well-known type
// here, so that the test needs no protoc).
type Label struct {
	actor.Message
	wrapperspb.StringValue
}

type OtherLabel struct {
	actor.Message
	wrapperspb.StringValue
}

func TestProtoCodec(t *testing.T) {
	c := remote.Proto[Label]()
	b, err := c.Append(nil, &Label{StringValue: wrapperspb.StringValue{Value: "tea"}})
	must(t, err)
	m, err := c.Decode(b)
	if err != nil || m.GetValue() != "tea" {
		t.Fatalf("round trip: %v, %v", m, err)
	}
	// The wire names the protobuf type: two Go types embedding the same
	// message match, whatever their Go names.
	if tn, ok := c.(interface{ TypeName() string }); !ok || tn.TypeName() != "google.protobuf.StringValue" {
		t.Errorf("type name %v", c)
	}
	if _, err := c.Decode([]byte{0xff, 0xff}); err == nil {
		t.Error("garbage decoded")
	}
	url := startNATS(t, 0)
	sys := startSystem(t)
	a := connect(t, sys, url, "a")
	sink, err := actor.Spawn(sys, &Sink{target: 1, done: make(chan struct{}, 1)})
	must(t, err)
	p, _ := actor.Bind(sink, (*Sink).OnLabel)
	must(t, remote.Export(a, "labels", p, remote.Proto[Label]()))
	rp, err := remote.Import(a, "a", "labels", remote.Proto[OtherLabel]())
	must(t, err)
	must(t, rp.Send(&OtherLabel{StringValue: wrapperspb.StringValue{Value: "x"}}))
	select {
	case <-sink.done:
	case <-time.After(5 * time.Second):
		t.Fatal("not delivered")
	}
	must(t, actor.SendPill(sink, actor.FinishedMsg))
	a.Close()
	stopSystem(t, sys)
}

// TestRestartMidStream keeps sending while the receiving node goes away and
// comes back: every send either succeeds or fails with ErrNoResponders, the
// sends fail while it is down, and resume once it is back.
func TestRestartMidStream(t *testing.T) {
	url := startNATS(t, 0)
	sysA, sysB, a, b := twoNodes(t, url)
	store := serveStore(t, sysB, b)
	c := importStore(t, a, "b")

	var phase atomic.Int32 // 0: up, 1: down, 2: back
	var okUp, failDown, okBack atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p := phase.Load()
			err := c.add.Send(&Add{N: i})
			switch {
			case err == nil && p == 0:
				okUp.Add(1)
			case err == nil && p == 2:
				okBack.Add(1)
			case errors.Is(err, remote.ErrNoResponders):
				failDown.Add(1)
			case err != nil:
				t.Errorf("send %d: %v", i, err)
				return
			}
			time.Sleep(50 * time.Microsecond)
		}
	}()
	waitFor(t, 5*time.Second, "sends while up", func() bool { return okUp.Load() > 100 })
	phase.Store(1)
	b.Close()
	must(t, actor.SendPill(store, actor.FinishedMsg))
	waitFor(t, 5*time.Second, "sends to fail", func() bool { return failDown.Load() > 10 })
	b2 := connect(t, sysB, url, "b")
	store2 := serveStore(t, sysB, b2)
	phase.Store(2)
	waitFor(t, 5*time.Second, "sends to resume", func() bool { return okBack.Load() > 100 })
	close(stop)
	<-done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	must(t, a.Flush(ctx))
	// After the restart, the new store received a contiguous, ordered run.
	tot := ask(t, c.get, &Get{})
	if tot.Count == 0 || tot.OutOfOrder > 1 { // the first one it gets is out of its order
		t.Errorf("after restart: %+v", tot)
	}
	t.Logf("sent while up %d, failed while down %d, sent after %d; received after %d", okUp.Load(), failDown.Load(), okBack.Load(), tot.Count)
	must(t, actor.SendPill(store2, actor.FinishedMsg))
	a.Close()
	b2.Close()
	stopSystem(t, sysA)
	stopSystem(t, sysB)
}

// slowCodec decodes slowly, so that the receiving node falls behind.
type slowCodec struct{ remote.Codec[*Add] }

func (c slowCodec) Decode(b []byte) (*Add, error) {
	time.Sleep(200 * time.Microsecond)
	return c.Codec.Decode(b)
}

// TestSlowConsumerNode makes the receiving node itself fall behind its NATS
// subscription's limits: the NATS client drops frames, the node counts them,
// nothing crashes, senders never block, and the node goes on serving.
func TestSlowConsumerNode(t *testing.T) {
	url := startNATS(t, 0)
	sysA, sysB, a, b := twoNodes(t, url, remote.WithPendingLimits(4, -1))
	store, err := actor.Spawn(sysB, &Store{})
	must(t, err)
	add, _ := actor.Bind(store, (*Store).OnAdd)
	get, _ := actor.Bind(store, (*Store).OnGet)
	must(t, remote.Export(b, "add", add, slowCodec{remote.CBOR[*Add]()}))
	must(t, remote.ExportRequest(b, "get", get, remote.JSON[*Get](), remote.JSON[Totals]()))
	c := importStore(t, a, "b")

	const n = 20000
	for i := range n {
		must(t, c.add.Send(&Add{N: i}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	must(t, a.Flush(ctx))
	waitFor(t, 10*time.Second, "frames dropped", func() bool { return b.Stats().Dropped > 0 })
	// The node still answers (an ask may itself be dropped: retry).
	var tot Totals
	waitFor(t, 20*time.Second, "an answer", func() bool {
		// Not derived from ctx: the flush's deadline may have passed
		// by now, and every retry would then fail at once.
		actx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		var err error
		tot, err = c.get.Ask(actx, &Get{})
		return err == nil
	})
	if tot.Count >= n || tot.Count == 0 {
		t.Errorf("received %d of %d with drops", tot.Count, n)
	}
	t.Logf("received %d of %d, %d frames dropped", tot.Count, n, b.Stats().Dropped)
	must(t, actor.SendPill(store, actor.FinishedMsg))
	closeAndStop(t, sysA, sysB, a, b)
}

// TestNATSOptionsPassThrough: credentials are NATS's, passed with WithNATS.
func TestNATSOptionsPassThrough(t *testing.T) {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, Authorization: "s3cret"})
	must(t, err)
	s.Start()
	defer func() { s.Shutdown(); s.WaitForShutdown() }()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("not ready")
	}
	sys := startSystem(t)
	if _, err := remote.Connect(sys, s.ClientURL(), "a", remote.WithLogger(quiet)); err == nil {
		t.Fatal("connected without the token")
	}
	n, err := remote.Connect(sys, s.ClientURL(), "a", remote.WithLogger(quiet), remote.WithNATS(nats.Token("s3cret"), nats.Name("token test")))
	must(t, err)
	if n.Conn().Opts.Name != "token test" {
		t.Errorf("options not applied")
	}
	n.Close()
	stopSystem(t, sys)
}

// An asker actor: its behaviour asks a remote port, which must refuse
// rather than block the worker; through actor.Go the same ask works.
type remoteAsker struct {
	actor.Actor
	echo  *remote.RequestPort[*Echo, string]
	errs  chan error
	reply actor.Port[*actor.Reply[string]]
	got   chan string
}

type askNow struct{ actor.Message }

func (a *remoteAsker) onAsk(*askNow) actor.Allocation {
	_, err := a.echo.Ask(context.Background(), &Echo{S: "inside"})
	a.errs <- err
	err = actor.Go(a.reply, func() (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return a.echo.Ask(ctx, &Echo{S: "through Go"})
	})
	a.errs <- err
	return actor.Nodelete
}

func (a *remoteAsker) onReply(m *actor.Reply[string]) actor.Allocation {
	if m.Err != nil {
		a.got <- m.Err.Error()
	} else {
		a.got <- m.Value
	}
	return actor.Nodelete
}

func TestAskInBehaviourRefused(t *testing.T) {
	url := startNATS(t, 0)
	sysA, sysB, a, b := twoNodes(t, url)
	store := serveStore(t, sysB, b)
	c := importStore(t, a, "b")

	ra := &remoteAsker{echo: c.echo, errs: make(chan error, 2), got: make(chan string, 1)}
	_, err := actor.Spawn(sysA, ra)
	must(t, err)
	ra.reply, _ = actor.Bind(ra, (*remoteAsker).onReply)
	p, _ := actor.Bind(ra, (*remoteAsker).onAsk)
	must(t, p.Send(&askNow{}))
	if err := <-ra.errs; !errors.Is(err, actor.ErrAskInBehaviour) {
		t.Fatalf("Ask in a behaviour: %v, want actor.ErrAskInBehaviour", err)
	}
	must(t, <-ra.errs)
	select {
	case v := <-ra.got:
		if v != "through Go" {
			t.Fatalf("reply through actor.Go: %q", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no reply through actor.Go")
	}
	// Only the ask through actor.Go was sent.
	if st := a.Stats(); st.Sent != 1 {
		t.Errorf("sent %d, want 1", st.Sent)
	}
	must(t, actor.SendPill(ra, actor.FinishedMsg))
	must(t, actor.SendPill(store, actor.FinishedMsg))
	closeAndStop(t, sysA, sysB, a, b)
}

// quitter ends without replying to a request.
type quitter struct{ actor.Actor }

func (*quitter) onEcho(*Echo) actor.Allocation { return actor.Finished }

func TestServedAskErrorsKeepIdentity(t *testing.T) {
	url := startNATS(t, 0)
	sysA, sysB, a, b := twoNodes(t, url)
	q, err := actor.Spawn(sysB, &quitter{})
	must(t, err)
	echo, _ := actor.Bind(q, (*quitter).onEcho)
	must(t, remote.ExportRequest(b, "quit", echo, remote.CBOR[*Echo](), remote.CBOR[string]()))
	p, err := remote.ImportRequest(a, "b", "quit", remote.CBOR[*Echo](), remote.CBOR[string]())
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// The actor terminates without replying, then is gone: both asks end
	// with actor.ErrTerminated from the remote node; only the second,
	// refused by the send, says it was not delivered.
	for i := range 2 {
		_, err := p.Ask(ctx, &Echo{S: "x"})
		if !errors.Is(err, actor.ErrTerminated) || !errors.Is(err, remote.ErrRemote) {
			t.Fatalf("ask %d: %v, want actor.ErrTerminated and remote.ErrRemote", i, err)
		}
		if undelivered := errors.Is(err, remote.ErrNotDelivered); undelivered != (i == 1) {
			t.Fatalf("ask %d: %v: remote.ErrNotDelivered %v, want %v", i, err, undelivered, i == 1)
		}
	}
	if st := b.Stats(); st.DeadLetters != 1 {
		t.Errorf("dead letters %d, want 1 (the ask to the terminated actor)", st.DeadLetters)
	}
	closeAndStop(t, sysA, sysB, a, b)
}
