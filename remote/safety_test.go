package remote_test

// Tests of a node's robustness against what other nodes send it: malformed
// or hostile payloads and frames must be refused and counted, never crash
// the node, kill its actors or grow its memory without bound.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"runtime"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/remote"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Raw frames, built by hand as a hostile or buggy node could (see the wire
// format in wire.go).

const (
	rawKindSend    = 1
	rawKindRequest = 2
	rawKindReply   = 3
	rawKindFailure = 4
	rawKindPing    = 5

	rawCodeDecode = 3
)

func typeHash(name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return h.Sum32()
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// rawFrame returns a frame header from sender, to which records are
// appended.
func rawFrame(sender string) []byte { return append(rawAnswer(sender), 0) } // sequence number 0

// rawAnswer returns the header of an answer frame (no sequence number)
// from sender.
func rawAnswer(sender string) []byte { return appendStr([]byte{2}, sender) }

// pubTo publishes the data frame frame to node to's data subject for the sender the frame
// names, with that sender's reply subject, as a node would.
func pubTo(nc *nats.Conn, to string, frame []byte) error {
	l, k := binary.Uvarint(frame[1:])
	from := string(frame[1+k : 1+k+int(l)])
	return nc.PublishRequest("actord."+to+"."+from, "actord."+from+"."+to+".t", frame)
}

func appendSend(b []byte, name, typ, payload string) []byte {
	b = append(b, rawKindSend)
	b = appendStr(b, name)
	b = binary.LittleEndian.AppendUint32(b, typeHash(typ))
	return appendStr(b, payload)
}

func appendRequest(b []byte, name, typ string, id, timeoutMicros uint64, payload string) []byte {
	b = append(b, rawKindRequest)
	b = appendStr(b, name)
	b = binary.LittleEndian.AppendUint32(b, typeHash(typ))
	b = binary.AppendUvarint(b, id)
	b = binary.AppendUvarint(b, timeoutMicros)
	return appendStr(b, payload)
}

// answer is a reply or failure record parsed from a frame.
type answer struct {
	kind byte
	id   uint64
	code byte // failures only
}

// parseAnswers returns the reply and failure records of frame, and its
// sender.
func parseAnswers(t testing.TB, frame []byte) (sender string, as []answer) {
	t.Helper()
	rd := frame[1:]
	l, k := binary.Uvarint(rd)
	sender, rd = string(rd[k:k+int(l)]), rd[k+int(l):]
	for len(rd) > 0 {
		a := answer{kind: rd[0]}
		rd = rd[1:]
		if a.kind != rawKindReply && a.kind != rawKindFailure {
			t.Fatalf("record of kind %d in an answer frame", a.kind)
		}
		a.id, k = binary.Uvarint(rd)
		rd = rd[k:]
		if a.kind == rawKindFailure {
			a.code, rd = rd[0], rd[1:]
		}
		l, k := binary.Uvarint(rd)
		rd = rd[k+int(l):]
		as = append(as, a)
	}
	return sender, as
}

// rawClient connects to url as a bare NATS client posing as node name: it
// returns the connection and a subscription on that node's subject.
func rawClient(t testing.TB, url, name string) (*nats.Conn, *nats.Subscription) {
	t.Helper()
	nc, err := nats.Connect(url)
	must(t, err)
	t.Cleanup(nc.Close)
	sub, err := nc.SubscribeSync("actord." + name + ".>")
	must(t, err)
	must(t, sub.SetPendingLimits(-1, -1))
	must(t, nc.Flush())
	return nc, sub
}

// nextAnswers waits for the next frame on sub and returns its answers.
func nextAnswers(t testing.TB, sub *nats.Subscription) []answer {
	t.Helper()
	m, err := sub.NextMsg(10 * time.Second)
	must(t, err)
	_, as := parseAnswers(t, m.Data)
	return as
}

var cborHi = "\xa1\x61S\x62hi" // CBOR {"S": "hi"}

// A CBOR null payload for a one-way send decodes to a nil *Add without
// error: it must be dropped as undecodable, not delivered (the behaviour
// would dereference it, panic, and the actor would be terminated by one
// frame from anyone). The frame carries the null send and then a request
// to the same actor: the records of a frame are delivered in order, so the
// request's answer shows whether the actor survived the null.
func TestNullSendIsDecodeError(t *testing.T) {
	url := startNATS(t, 0)
	sys := startSystem(t)
	b := connect(t, sys, url, "b")
	store := serveStore(t, sys, b)
	nc, replies := rawClient(t, url, "evil")

	frame := appendSend(rawFrame("evil"), "add", "Add", "\xf6")
	frame = appendRequest(frame, "echo", "Echo", 7, 0, cborHi)
	must(t, pubTo(nc, "b", frame))
	as := nextAnswers(t, replies)
	if len(as) != 1 || as[0].kind != rawKindReply || as[0].id != 7 {
		t.Errorf("request after a null send answered with %+v, want a reply to 7", as)
	}
	if s := b.Stats(); s.DecodeErrors != 1 || s.DeadLetters != 0 {
		t.Errorf("%d decode errors, %d dead letters; want 1 and 0", s.DecodeErrors, s.DeadLetters)
	}
	must(t, actor.SendPill(store, actor.FinishedMsg))
	b.Close()
	stopSystem(t, sys)
}

// A JSON null request payload decodes to a nil *Get without error; handed
// to actor.AskFunc it panicked on the node's subscription goroutine and
// crashed the process. It must be answered with an ErrDecode failure.
func TestNullRequestIsDecodeError(t *testing.T) {
	url := startNATS(t, 0)
	sys := startSystem(t)
	b := connect(t, sys, url, "b")
	store := serveStore(t, sys, b)
	nc, replies := rawClient(t, url, "evil")

	must(t, pubTo(nc, "b", appendRequest(rawFrame("evil"), "get", "Get", 1, 0, "null")))
	as := nextAnswers(t, replies)
	if len(as) != 1 || as[0].kind != rawKindFailure || as[0].id != 1 || as[0].code != rawCodeDecode {
		t.Errorf("null request answered with %+v, want a decode failure for 1", as)
	}
	if s := b.Stats(); s.DecodeErrors != 1 {
		t.Errorf("%d decode errors, want 1", s.DecodeErrors)
	}
	must(t, actor.SendPill(store, actor.FinishedMsg))
	b.Close()
	stopSystem(t, sys)
}

// panicCodec is CBOR, except that its Decode panics on a payload of one
// byte 0x00.
type panicCodec[T any] struct{ remote.Codec[T] }

func (c panicCodec[T]) Decode(b []byte) (T, error) {
	if len(b) == 1 && b[0] == 0 {
		panic("panicCodec: bad input")
	}
	return c.Codec.Decode(b)
}

// A codec whose Decode panics on some remote input must not crash the node:
// the panic is a decode error, for sends, requests and replies alike.
func TestPanickingCodecIsDecodeError(t *testing.T) {
	url := startNATS(t, 0)
	sysA, sysB, a, b := twoNodes(t, url)
	g, err := actor.Spawn(sysB, &Gate{})
	must(t, err)
	echo, _ := actor.Bind(g, (*Gate).OnEcho)
	must(t, remote.ExportRequest(b, "echo", echo, panicCodec[*Echo]{remote.CBOR[*Echo]()}, panicCodec[string]{remote.CBOR[string]()}))
	nc, replies := rawClient(t, url, "evil")

	frame := appendSend(rawFrame("evil"), "echo", "Echo", "\x00")
	frame = appendRequest(frame, "echo", "Echo", 1, 0, "\x00")
	frame = appendRequest(frame, "echo", "Echo", 2, 0, cborHi)
	must(t, pubTo(nc, "b", frame))
	as := nextAnswers(t, replies)
	for len(as) < 2 {
		as = append(as, nextAnswers(t, replies)...)
	}
	if as[0].kind != rawKindFailure || as[0].id != 1 || as[0].code != rawCodeDecode || as[1].kind != rawKindReply || as[1].id != 2 {
		t.Errorf("answers %+v, want a decode failure for 1 and a reply to 2", as)
	}
	if s := b.Stats(); s.DecodeErrors != 2 {
		t.Errorf("%d decode errors, want 2", s.DecodeErrors)
	}

	// On the asking node, a reply codec that panics on the reply.
	e, err := remote.ImportRequest(a, "b", "echo", remote.CBOR[*Echo](), remote.Codec[string](alwaysPanic[string]{}))
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.Ask(ctx, &Echo{S: "x"}); !errors.Is(err, remote.ErrDecode) {
		t.Errorf("Ask with a panicking reply codec: %v, want ErrDecode", err)
	}
	must(t, actor.SendPill(g, actor.FinishedMsg))
	closeAndStop(t, sysA, sysB, a, b)
}

// alwaysPanic is a codec that encodes as CBOR and panics in Decode.
type alwaysPanic[T any] struct{}

func (alwaysPanic[T]) Append(dst []byte, v T) ([]byte, error) { return remote.CBOR[T]().Append(dst, v) }
func (alwaysPanic[T]) Decode([]byte) (T, error)               { panic("alwaysPanic") }

// Gate is an actor whose OnBlock waits until its message's channel is
// closed, holding up the requests behind it; OnEcho answers.
type Gate struct{ actor.Actor }

type Block struct {
	actor.Message
	ch chan struct{}
}

func (g *Gate) OnBlock(m *Block) actor.Allocation { <-m.ch; return actor.Nodelete }
func (g *Gate) OnEcho(m *Echo) actor.Allocation   { m.Reply(m.S); return actor.Nodelete }

// A node restarted under the same name must not take a reply meant for its
// previous incarnation as the answer to its own ask: ask ids used to
// restart at 1, so the first incarnation's pending request and the second
// one's had the same id and the stale reply ("old") answered the new ask.
func TestStaleReplyAfterRestart(t *testing.T) {
	url := startNATS(t, 0)
	sysA, sysB := startSystem(t), startSystem(t)
	b := connect(t, sysB, url, "b")
	g, err := actor.Spawn(sysB, &Gate{})
	must(t, err)
	block, _ := actor.Bind(g, (*Gate).OnBlock)
	echo, _ := actor.Bind(g, (*Gate).OnEcho)
	must(t, remote.ExportRequest(b, "echo", echo, remote.CBOR[*Echo](), remote.CBOR[string]()))
	gate := make(chan struct{})
	must(t, block.Send(&Block{ch: gate})) // the actor waits: requests queue behind it

	a1 := connect(t, sysA, url, "a")
	e1, err := remote.ImportRequest(a1, "b", "echo", remote.CBOR[*Echo](), remote.CBOR[string]())
	must(t, err)
	done1 := make(chan error, 1)
	go func() { _, err := e1.Ask(context.Background(), &Echo{S: "old"}); done1 <- err }()
	waitFor(t, 10*time.Second, "first request received", func() bool { return b.Stats().Received == 1 })
	a1.Close() // the first incarnation ends; its ask fails with ErrClosed
	if err := <-done1; !errors.Is(err, remote.ErrClosed) {
		t.Errorf("first incarnation's ask: %v, want ErrClosed", err)
	}

	a2 := connect(t, sysA, url, "a") // restarted, same name
	e2, err := remote.ImportRequest(a2, "b", "echo", remote.CBOR[*Echo](), remote.CBOR[string]())
	must(t, err)
	type res struct {
		v   string
		err error
	}
	done2 := make(chan res, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		v, err := e2.Ask(ctx, &Echo{S: "new"})
		done2 <- res{v, err}
	}()
	waitFor(t, 10*time.Second, "second request received", func() bool { return b.Stats().Received == 2 })
	close(gate)
	if r := <-done2; r.err != nil || r.v != "new" {
		t.Errorf("restarted node's Ask(\"new\") = %q, %v", r.v, r.err)
	}
	if s := a2.Stats(); s.LateReplies != 1 {
		t.Errorf("restarted node: %d late replies, want 1 (the reply to \"old\")", s.LateReplies)
	}
	a2.Close()
	b.Close()
	must(t, actor.SendPill(g, actor.FinishedMsg))
	stopSystem(t, sysA)
	stopSystem(t, sysB)
}

// An answer to an ask from another node than the one asked is refused
// (counted as malformed) and leaves the ask pending: only the node asked
// can answer, on the reply subject the ask's frame gave it. Node "b" is a
// bare NATS client here, so that the test sees the request's id.
func TestAnswerFromAnotherNodeIsRefused(t *testing.T) {
	url := startNATS(t, 0)
	sys := startSystem(t)
	a := connect(t, sys, url, "a")
	bConn, bSub := rawClient(t, url, "b")
	evil, _ := rawClient(t, url, "evil")
	e, err := remote.ImportRequest(a, "b", "echo", remote.CBOR[*Echo](), remote.CBOR[string]())
	must(t, err)
	type res struct {
		v   string
		err error
	}
	done := make(chan res, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		v, err := e.Ask(ctx, &Echo{S: "x"})
		done <- res{v, err}
	}()
	m, err := bSub.NextMsg(10 * time.Second)
	must(t, err)
	id := requestID(t, m.Data)

	// reply is a frame from sender answering the request with s (a CBOR
	// text string of fewer than 24 bytes).
	reply := func(sender, s string) []byte {
		f := append(rawAnswer(sender), rawKindReply)
		f = binary.AppendUvarint(f, id)
		return appendStr(f, string([]byte{0x60 + byte(len(s))})+s)
	}
	must(t, evil.Publish("actord.a.evil.t", reply("evil", "forged")))
	must(t, evil.Publish("actord.a.evil", reply("evil", "forged")))
	waitFor(t, 10*time.Second, "the forged replies counted", func() bool { return a.Stats().DecodeErrors == 2 })
	if s := a.Stats(); s.AsksPending != 1 {
		t.Fatalf("%d asks pending after a reply from another node, want 1", s.AsksPending)
	}
	must(t, bConn.Publish(m.Reply, reply("b", "ok")))
	if r := <-done; r.err != nil || r.v != "ok" {
		t.Errorf("Ask = %q, %v; want the reply from b", r.v, r.err)
	}
	a.Close()
	stopSystem(t, sys)
}

// requestID returns the id of the request that is the only record of
// frame.
func requestID(t testing.TB, frame []byte) uint64 {
	t.Helper()
	rd := frame[1:]
	l, k := binary.Uvarint(rd)
	rd = rd[k+int(l):]
	_, k = binary.Uvarint(rd) // sequence number
	rd = rd[k:]
	if rd[0] != rawKindRequest {
		t.Fatalf("record of kind %d, want a request", rd[0])
	}
	rd = rd[1:]
	l, k = binary.Uvarint(rd) // name
	rd = rd[k+int(l)+4:]      // and type
	id, _ := binary.Uvarint(rd)
	return id
}

// Sends and asks after Close return ErrClosed, also to a node found down
// before Close (they returned ErrNoResponders), and a closed node has no
// peer down.
func TestClosedWhileDown(t *testing.T) {
	url := startNATS(t, 0)
	sys := startSystem(t)
	a := connect(t, sys, url, "a")
	c := importStore(t, a, "nobody")
	_ = c.add.Send(&Add{N: 1}) // nobody answers "no responders"
	waitFor(t, 10*time.Second, "peer down", func() bool { return a.Stats().PeersDown == 1 })
	a.Close()
	if err := c.add.Send(&Add{N: 2}); !errors.Is(err, remote.ErrClosed) {
		t.Errorf("Send after Close: %v, want ErrClosed", err)
	}
	if _, err := c.echo.Ask(context.Background(), &Echo{S: "x"}); !errors.Is(err, remote.ErrClosed) {
		t.Errorf("Ask after Close: %v, want ErrClosed", err)
	}
	if s := a.Stats(); s.PeersDown != 0 {
		t.Errorf("%d peers down after Close, want 0", s.PeersDown)
	}
	stopSystem(t, sys)
}

// Flush with a context without deadline works (nats.go's flush refuses
// such a context: Flush gives it a bound).
func TestFlushWithoutDeadline(t *testing.T) {
	url := startNATS(t, 0)
	sysA, sysB, a, b := twoNodes(t, url)
	store := serveStore(t, sysB, b)
	c := importStore(t, a, "b")
	must(t, c.add.Send(&Add{N: 0}))
	must(t, a.Flush(context.Background()))
	must(t, actor.SendPill(store, actor.FinishedMsg))
	closeAndStop(t, sysA, sysB, a, b)
}

// Every new sender name in a ping (or a request) used to create a peer,
// with its own flusher goroutine, kept as long as the node: frames from
// made-up senders grew goroutines and memory without bound. Now a peer
// that was never imported has no goroutine, and at most
// MaxTransientPeers of them are kept. The ghosts do not exist, but answers
// (the pongs) ask for no "no responders": no peer is marked down.
func TestSendersUnderNewNamesAreBounded(t *testing.T) {
	url := startNATS(t, 0)
	sys := startSystem(t)
	b := connect(t, sys, url, "b")
	nc, last := rawClient(t, url, "last")
	before := runtime.NumGoroutine()
	const rounds, per = 2, remote.MaxTransientPeers
	for r := range rounds {
		for i := range per {
			must(t, pubTo(nc, "b", append(rawFrame(fmt.Sprintf("ghost%d-%d", r, i)), rawKindPing)))
		}
		// The pong to "last" comes after the pongs to the ghosts, and the
		// answer to a request then after the server's "no responders" for
		// them: the node has handled those when the answer comes.
		must(t, pubTo(nc, "b", append(rawFrame("last"), rawKindPing)))
		_, err := last.NextMsg(10 * time.Second)
		must(t, err)
		must(t, pubTo(nc, "b", appendRequest(rawFrame("last"), "nope", "Echo", 1, 0, "")))
		nextAnswers(t, last)
	}

	if g := runtime.NumGoroutine() - before; g >= per/2 {
		t.Errorf("pings from %d made-up senders left %d more goroutines", rounds*per, g)
	}
	peers := remote.PeerCount(b)
	if peers > remote.MaxTransientPeers {
		t.Errorf("%d peers kept after pings from %d senders, want at most %d", peers, rounds*per+1, remote.MaxTransientPeers)
	}
	if s := b.Stats(); s.PeersDown != 0 {
		t.Errorf("%d peers down of %d kept, want 0", s.PeersDown, peers)
	}
	b.Close()
	stopSystem(t, sys)
}

// A frame whose sender field is not the node its subject names, and a
// message on a subject no node publishes to, are malformed: dropped,
// counted, and they create no peer.
func TestInvalidSenderIsMalformed(t *testing.T) {
	url := startNATS(t, 0)
	sys := startSystem(t)
	b := connect(t, sys, url, "b")
	nc, last := rawClient(t, url, "last")
	bad := []string{"", "a.b", "*", ">", "a b", "a\nb", "other"}
	for _, s := range bad {
		must(t, nc.PublishRequest("actord.b.last", "actord.last.b.t", append(rawFrame(s), rawKindPing)))
	}
	must(t, nc.PublishRequest("actord.b.last.x.y", "actord.last.b.t", append(rawFrame("last"), rawKindPing)))
	must(t, nc.PublishRequest("actord.b.last", "actord.other.b.t", append(rawFrame("last"), rawKindPing)))
	must(t, nc.Publish("actord.b.last", append(rawFrame("last"), rawKindPing)))
	must(t, pubTo(nc, "b", append(rawFrame("last"), rawKindPing)))
	_, err := last.NextMsg(10 * time.Second) // the frames before were handled
	must(t, err)
	if s := b.Stats(); s.DecodeErrors != uint64(len(bad)+3) {
		t.Errorf("%d decode errors, want %d", s.DecodeErrors, len(bad)+3)
	}
	if p := remote.PeerCount(b); p != 1 {
		t.Errorf("%d peers, want 1 (last)", p)
	}
	b.Close()
	stopSystem(t, sys)
}

// When the NATS connection closes for good without Close (the server gone,
// no reconnection), the node fails its pending asks, and Send, Ask and
// Flush fail at once, with an error wrapping ErrClosed and
// nats.ErrConnectionClosed: Send used to return nil and Ask to wait for its
// context. The closed handler passed with WithNATS is still called, after
// the node's: once it has run, the node knows. Node "b" is a bare NATS
// client that never answers.
func TestConnectionClosedForGood(t *testing.T) {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	must(t, err)
	s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	sys := startSystem(t)
	userClosed := make(chan struct{})
	a := connect(t, sys, s.ClientURL(), "a", remote.WithNATS(nats.NoReconnect(), nats.ClosedHandler(func(*nats.Conn) { close(userClosed) })))
	_, bSub := rawClient(t, s.ClientURL(), "b")
	c := importStore(t, a, "b")
	pending := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := c.echo.Ask(ctx, &Echo{S: "x"})
		pending <- err
	}()
	_, err = bSub.NextMsg(10 * time.Second) // the request is out
	must(t, err)

	s.Shutdown()
	s.WaitForShutdown()
	closedForGood := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, remote.ErrClosed) || !errors.Is(err, nats.ErrConnectionClosed) {
			t.Errorf("%s on a connection closed for good: %v, want ErrClosed and nats.ErrConnectionClosed", what, err)
		}
	}
	closedForGood("pending Ask", <-pending)
	<-userClosed
	closedForGood("Send", c.add.Send(&Add{N: 1}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = c.echo.Ask(ctx, &Echo{S: "x"})
	closedForGood("Ask", err)
	closedForGood("Flush", a.Flush(ctx))
	if err := a.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	stopSystem(t, sys)
}

// Every request is answered exactly once, also when its timeout (1µs from
// the wire) fires while actor.AskFunc is sending it to a terminated actor:
// the timeout's completion and the failed send used to both answer it (and
// put its replier into the pool twice). The race is hit often enough with
// many requests; the test cannot fail where it is not hit.
func TestRequestAnsweredOnce(t *testing.T) {
	url := startNATS(t, 0)
	sys := startSystem(t)
	b := connect(t, sys, url, "b")
	store, err := actor.Spawn(sys, &Store{})
	must(t, err)
	echo, _ := actor.Bind(store, (*Store).OnEcho)
	add, _ := actor.Bind(store, (*Store).OnAdd)
	must(t, remote.ExportRequest(b, "echo", echo, remote.CBOR[*Echo](), remote.CBOR[string]()))
	must(t, actor.SendPill(store, actor.FinishedMsg))
	waitFor(t, 10*time.Second, "the store to terminate", func() bool { return add.Send(&Add{}) != nil })
	nc, replies := rawClient(t, url, "evil")

	const frames, per = 100, 500
	id := uint64(0)
	for range frames {
		f := rawFrame("evil")
		for range per {
			id++
			f = appendRequest(f, "echo", "Echo", id, 1, cborHi)
		}
		must(t, pubTo(nc, "b", f))
	}
	must(t, nc.Flush())
	seen := make(map[uint64]int, frames*per)
	for total := 0; total < frames*per; {
		for _, a := range nextAnswers(t, replies) {
			total++
			if seen[a.id]++; seen[a.id] == 2 {
				t.Errorf("request %d answered twice", a.id)
			}
		}
	}
	// Ask once more and read up to its answer, to catch extra answers
	// published by then.
	must(t, pubTo(nc, "b", appendRequest(rawFrame("evil"), "echo", "Echo", id+1, 0, cborHi)))
	for done := false; !done; {
		for _, a := range nextAnswers(t, replies) {
			if a.id == id+1 {
				done = true
			} else {
				t.Errorf("request %d answered again", a.id)
			}
		}
	}
	b.Close()
	stopSystem(t, sys)
}
