package remote

// Unit tests of the handlers onMsg dispatches to, one record kind at a
// time, with hand-built records and subjects. Most run on a bareNode, which
// has no connection: nothing they do may publish. Answers that must be
// published (a pong, a refused request's failure) are tested on a
// testNode, through a subscription on the reply subject.

import (
	"encoding/binary"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// bareNode is a node named name as Connect builds it, with prefix "actord"
// and no NATS connection nor subscription: enough for the handlers that
// do not publish. It must not be closed.
// tableOf returns an export table holding the exports of m (the handlers
// take the table as a parameter, so that tests can give them one).
func tableOf(m map[string]*export) *exportTable { return &exportTable{m: m} }

func bareNode(t testing.TB, name string) *Node {
	t.Helper()
	n := &Node{
		name:       name,
		prefix:     "actord",
		subject:    "actord." + name,
		prefixDot:  "actord.",
		subjectDot: "actord." + name + ".",
		log:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		probe:      time.Hour,
		peers:      make(map[string]*peer),
		calls:      make(map[uint64]*call),
		ids:        rand.NewChaCha8(randomSeed()),
		done:       make(chan struct{}),
		maxRecord:  1 << 20,
		batchBytes: 64 << 10,
	}
	n.st.init()
	n.header = appendString([]byte{wireVersion}, []byte(name))
	return n
}

// Record bodies, as peer.put writes them after the kind byte.

func sendBody(name string, hash uint32, payload string) []byte {
	b := appendString(nil, []byte(name))
	b = binary.LittleEndian.AppendUint32(b, hash)
	return appendString(b, []byte(payload))
}

func requestBody(name string, hash uint32, id, tmo uint64, payload string) []byte {
	b := appendString(nil, []byte(name))
	b = binary.LittleEndian.AppendUint32(b, hash)
	b = binary.AppendUvarint(binary.AppendUvarint(b, id), tmo)
	return appendString(b, []byte(payload))
}

func replyBody(id uint64, payload string) []byte {
	return appendString(binary.AppendUvarint(nil, id), []byte(payload))
}

func failureBody(id uint64, code byte, text string) []byte {
	return appendString(append(binary.AppendUvarint(nil, id), code), []byte(text))
}

// unending is a uvarint that never ends (every byte has its high bit set).
var unending = []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80}

// withNext returns a reader of body followed, unless body is malformed
// (cut short: the next record would be read as its rest), by the kind
// byte of a next record, which the handler must leave.
func withNext(body []byte, malformed bool, next byte) reader {
	if malformed {
		return reader{b: body}
	}
	return reader{b: append(slices.Clip(body), next)}
}

// recorder is an export that records what it is handed.
type recorder struct {
	sends    [][]byte
	requests []recorded
}

type recorded struct {
	from    *peer
	id      uint64
	timeout time.Duration
	payload []byte
}

// export returns an export of type hash; a request port if request.
func (rec *recorder) export(hash uint32, request bool) *export {
	ex := &export{hash: hash, send: func(p []byte) { rec.sends = append(rec.sends, p) }}
	if request {
		ex.request = func(from *peer, id uint64, tmo time.Duration, p []byte) {
			rec.requests = append(rec.requests, recorded{from, id, tmo, p})
		}
	}
	return ex
}

const (
	hashAdd  = 0xadd
	hashEcho = 0xec0
)

// onSend delivers a well-formed send to the export it names, refuses one
// for a name not exported or of another type (received all the same), and
// finds a body cut short malformed, counting nothing. The bytes after the
// body are left for the next record.
func TestOnSend(t *testing.T) {
	for _, c := range []struct {
		name      string
		body      []byte
		err       bool
		delivered string // "": none
		unknown   uint64
		wrongType uint64
	}{
		{name: "delivered", body: sendBody("add", hashAdd, "p1"), delivered: "p1"},
		{name: "empty payload", body: sendBody("add", hashAdd, ""), delivered: ""},
		{name: "to a request port", body: sendBody("echo", hashEcho, "p2"), delivered: "p2"},
		{name: "not exported", body: sendBody("nope", hashAdd, "p"), unknown: 1},
		{name: "empty name", body: sendBody("", hashAdd, "p"), unknown: 1},
		{name: "wrong type", body: sendBody("add", hashEcho, "p"), wrongType: 1},
		{name: "no body", body: nil, err: true},
		{name: "name cut short", body: sendBody("add", hashAdd, "p")[:2], err: true},
		{name: "name length unending", body: unending, err: true},
		{name: "type cut short", body: sendBody("add", hashAdd, "p")[:6], err: true},
		{name: "no payload", body: sendBody("add", hashAdd, "p")[:8], err: true},
		{name: "payload cut short", body: sendBody("add", hashAdd, "payload")[:12], err: true},
		{name: "payload length unending", body: append(sendBody("add", hashAdd, "")[:8], unending...), err: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := bareNode(t, "b")
			from, _ := n.peer([]byte("x"), false)
			from.rxNext = 7
			var rec recorder
			exports := tableOf(map[string]*export{"add": rec.export(hashAdd, false), "echo": rec.export(hashEcho, true)})
			r := withNext(c.body, c.err, kindPing)
			err := n.onSend(from, exports, &r)
			s := n.Stats()
			if c.err {
				if err == nil || r.err == nil {
					t.Fatalf("onSend(%x) = %v, want errMalformed", c.body, err)
				}
				if s.Received != 0 || from.rxNext != 7 || len(rec.sends) != 0 {
					t.Errorf("malformed: %d received, rxNext %d, %d delivered; want 0, 7, 0", s.Received, from.rxNext, len(rec.sends))
				}
				return
			}
			if err != nil {
				t.Fatalf("onSend(%x) = %v", c.body, err)
			}
			if s.Received != 1 || from.rxNext != 8 {
				t.Errorf("%d received, rxNext %d; want 1, 8", s.Received, from.rxNext)
			}
			if !slices.Equal(r.b, []byte{kindPing}) {
				t.Errorf("left %x for the next record, want %x", r.b, []byte{kindPing})
			}
			wantSends := 0
			if c.unknown == 0 && c.wrongType == 0 {
				wantSends = 1
			}
			if len(rec.sends) != wantSends || wantSends == 1 && string(rec.sends[0]) != c.delivered {
				t.Errorf("delivered %q, want %d: %q", rec.sends, wantSends, c.delivered)
			}
			if s.UnknownName != c.unknown || s.WrongType != c.wrongType || s.DecodeErrors != 0 {
				t.Errorf("unknown name %d, wrong type %d, decode errors %d; want %d, %d, 0", s.UnknownName, s.WrongType, s.DecodeErrors, c.unknown, c.wrongType)
			}
			if len(rec.requests) != 0 {
				t.Errorf("a send handed as a request: %v", rec.requests)
			}
		})
	}
}

// onRequest hands a well-formed request to the request port it names, its
// timeout saturated; refuses (and fails back to its sender, here a peer
// without reply subject, so that nothing is published) one for a name not
// exported, of another type, or for a one-way port; and finds a body cut
// short malformed, counting nothing.
func TestOnRequest(t *testing.T) {
	for _, c := range []struct {
		name      string
		body      []byte
		err       bool
		id        uint64
		timeout   time.Duration
		payload   string
		unknown   uint64
		wrongType uint64
	}{
		{name: "handed", body: requestBody("echo", hashEcho, 42, 1500, "hi"), id: 42, timeout: 1500 * time.Microsecond, payload: "hi"},
		{name: "no timeout", body: requestBody("echo", hashEcho, 1, 0, "hi"), id: 1, payload: "hi"},
		{name: "id 0", body: requestBody("echo", hashEcho, 0, 1, ""), id: 0, timeout: time.Microsecond},
		{name: "largest id", body: requestBody("echo", hashEcho, math.MaxUint64, 1, "x"), id: math.MaxUint64, timeout: time.Microsecond, payload: "x"},
		{name: "timeout saturates", body: requestBody("echo", hashEcho, 3, math.MaxUint64, "x"), id: 3, timeout: math.MaxInt64, payload: "x"},
		{name: "not exported", body: requestBody("nope", hashEcho, 4, 0, "x"), unknown: 1},
		{name: "wrong type", body: requestBody("echo", hashAdd, 5, 0, "x"), wrongType: 1},
		{name: "one-way port", body: requestBody("add", hashAdd, 6, 0, "x"), wrongType: 1},
		{name: "no body", body: nil, err: true},
		{name: "type cut short", body: requestBody("echo", hashEcho, 1, 1, "x")[:7], err: true},
		{name: "no id", body: requestBody("echo", hashEcho, 1, 1, "x")[:9], err: true},
		{name: "id unending", body: append(requestBody("echo", hashEcho, 1, 1, "x")[:9], unending...), err: true},
		{name: "no timeout field", body: requestBody("echo", hashEcho, 1, 1, "x")[:10], err: true},
		{name: "timeout unending", body: append(requestBody("echo", hashEcho, 1, 1, "x")[:10], unending...), err: true},
		{name: "no payload", body: requestBody("echo", hashEcho, 1, 1, "x")[:11], err: true},
		{name: "payload cut short", body: requestBody("echo", hashEcho, 1, 1, "xyz")[:13], err: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := bareNode(t, "b")
			from, _ := n.peer([]byte("x"), false)
			var rec recorder
			exports := tableOf(map[string]*export{"add": rec.export(hashAdd, false), "echo": rec.export(hashEcho, true)})
			r := withNext(c.body, c.err, kindPong)
			err := n.onRequest(from, exports, &r)
			s := n.Stats()
			if c.err {
				if err == nil || r.err == nil {
					t.Fatalf("onRequest(%x) = %v, want errMalformed", c.body, err)
				}
				if s.Received != 0 || from.rxNext != 0 || len(rec.requests) != 0 {
					t.Errorf("malformed: %d received, rxNext %d, %d handed; want 0, 0, 0", s.Received, from.rxNext, len(rec.requests))
				}
				return
			}
			if err != nil {
				t.Fatalf("onRequest(%x) = %v", c.body, err)
			}
			if s.Received != 1 || from.rxNext != 1 || !slices.Equal(r.b, []byte{kindPong}) {
				t.Errorf("%d received, rxNext %d, left %x; want 1, 1, %x", s.Received, from.rxNext, r.b, []byte{kindPong})
			}
			if s.UnknownName != c.unknown || s.WrongType != c.wrongType || s.FramesSent != 0 {
				t.Errorf("unknown name %d, wrong type %d, frames sent %d; want %d, %d, 0", s.UnknownName, s.WrongType, s.FramesSent, c.unknown, c.wrongType)
			}
			if len(rec.sends) != 0 {
				t.Errorf("a request delivered as a send: %q", rec.sends)
			}
			if c.unknown+c.wrongType > 0 {
				if len(rec.requests) != 0 {
					t.Errorf("refused request handed: %v", rec.requests)
				}
				return
			}
			want := recorded{from, c.id, c.timeout, []byte(c.payload)}
			if len(rec.requests) != 1 {
				t.Fatalf("%d requests handed, want 1", len(rec.requests))
			}
			got := rec.requests[0]
			if got.from != want.from || got.id != want.id || got.timeout != want.timeout || string(got.payload) != c.payload {
				t.Errorf("handed %+v, want %+v", got, want)
			}
		})
	}
}

// answers subscribes, on n's connection, to the reply subject "actord.x.b.t"
// that the peer x of n (node b) is given, and returns the subscription
// and the peer.
func answers(t *testing.T, n *Node) (*nats.Subscription, *peer) {
	t.Helper()
	sub, err := n.nc.SubscribeSync("actord.x.b.t")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	if err := n.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return sub, n.sender("x", "actord.x.b.t")
}

// nextFrame returns the next frame on sub, less n's frame header.
func nextFrame(t *testing.T, n *Node, sub *nats.Subscription) []byte {
	t.Helper()
	m, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	body, ok := slices.Clip(m.Data), slices.Equal(m.Data[:min(len(n.header), len(m.Data))], n.header)
	if !ok {
		t.Fatalf("frame %x does not start with the header %x", m.Data, n.header)
	}
	return body[len(n.header):]
}

// A refused request is failed back to its sender, on the reply subject of
// its frame, with the code saying why and the name it asked for.
func TestOnRequestRefusalAnswered(t *testing.T) {
	n := testNode(t, "b")
	sub, from := answers(t, n)
	var rec recorder
	exports := tableOf(map[string]*export{"add": rec.export(hashAdd, false), "echo": rec.export(hashEcho, true)})
	for _, c := range []struct {
		body []byte
		want []byte
	}{
		{requestBody("nope", hashEcho, 9, 0, "x"), append([]byte{kindFailure}, failureBody(9, codeUnknownName, "nope")...)},
		{requestBody("echo", hashAdd, 10, 0, "x"), append([]byte{kindFailure}, failureBody(10, codeWrongType, "echo")...)},
		{requestBody("add", hashAdd, 11, 0, "x"), append([]byte{kindFailure}, failureBody(11, codeWrongType, "add")...)},
	} {
		if err := n.onRequest(from, exports, &reader{b: c.body}); err != nil {
			t.Fatalf("onRequest(%x) = %v", c.body, err)
		}
		if got := nextFrame(t, n, sub); !slices.Equal(got, c.want) {
			t.Errorf("onRequest(%x) answered %x, want %x", c.body, got, c.want)
		}
	}
	if len(rec.requests) != 0 {
		t.Errorf("refused requests handed: %v", rec.requests)
	}
}

// onPing answers with a pong, in a frame of its own to the reply subject
// of the ping's frame, and leaves the sequence numbers alone.
func TestOnPing(t *testing.T) {
	n := testNode(t, "b")
	sub, from := answers(t, n)
	from.rxNext = 5
	if err := n.onPing(from); err != nil {
		t.Fatalf("onPing = %v", err)
	}
	if got := nextFrame(t, n, sub); !slices.Equal(got, []byte{kindPong}) {
		t.Errorf("answered %x, want a pong %x", got, []byte{kindPong})
	}
	if from.rxNext != 5 || n.Stats().Received != 0 {
		t.Errorf("rxNext %d, %d received; want 5, 0", from.rxNext, n.Stats().Received)
	}
}

// askOf registers a pending ask of the peer p on n and returns its id and
// the channel its answer comes on.
func askOf(t *testing.T, n *Node, p *peer) (uint64, chan result) {
	t.Helper()
	c := &call{peer: p, ch: make(chan result, 1)}
	id, ok := n.register(c)
	if !ok {
		t.Fatal("register refused")
	}
	return id, c.ch
}

// onReply completes the pending ask it names with its payload, if the peer
// it came from was asked it; any other reply is late, not malformed; a
// body cut short is malformed and completes nothing.
func TestOnReply(t *testing.T) {
	for _, c := range []struct {
		name string
		body func(id uint64) []byte
		from string // the peer the reply comes from: "x", who was asked, or "y"
		err  bool
		late bool
	}{
		{name: "completes", body: func(id uint64) []byte { return replyBody(id, "answer") }, from: "x"},
		{name: "empty payload", body: func(id uint64) []byte { return replyBody(id, "") }, from: "x"},
		{name: "another id", body: func(id uint64) []byte { return replyBody(id+1, "answer") }, from: "x", late: true},
		{name: "id 0", body: func(uint64) []byte { return replyBody(0, "answer") }, from: "x", late: true},
		{name: "from another peer", body: func(id uint64) []byte { return replyBody(id, "answer") }, from: "y", late: true},
		{name: "no body", body: func(uint64) []byte { return nil }, from: "x", err: true},
		{name: "id unending", body: func(uint64) []byte { return unending }, from: "x", err: true},
		{name: "no payload", body: func(id uint64) []byte { return binary.AppendUvarint(nil, id) }, from: "x", err: true},
		{name: "payload cut short", body: func(id uint64) []byte { b := replyBody(id, "answer"); return b[:len(b)-1] }, from: "x", err: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := bareNode(t, "b")
			x, _ := n.peer([]byte("x"), false)
			from, _ := n.peer([]byte(c.from), false)
			id, ch := askOf(t, n, x)
			body := c.body(id)
			r := withNext(body, c.err, kindPong)
			err := n.onReply(from, &r)
			s := n.Stats()
			switch {
			case c.err:
				if err == nil || r.err == nil {
					t.Fatalf("onReply(%x) = %v, want errMalformed", body, err)
				}
			case err != nil:
				t.Fatalf("onReply(%x) = %v", body, err)
			case !slices.Equal(r.b, []byte{kindPong}):
				t.Errorf("left %x for the next record, want %x", r.b, []byte{kindPong})
			}
			if c.err || c.late {
				if s.AsksPending != 1 || len(ch) != 0 {
					t.Errorf("%d asks pending, %d answers; want the ask still pending", s.AsksPending, len(ch))
				}
				if want := uint64(map[bool]int{true: 1}[c.late]); s.LateReplies != want {
					t.Errorf("%d late replies, want %d", s.LateReplies, want)
				}
				return
			}
			select {
			case res := <-ch:
				if res.code != 0 || string(res.payload) != string(body[len(binary.AppendUvarint(nil, id))+1:]) {
					t.Errorf("ask completed with %+v", res)
				}
			default:
				t.Fatal("ask not completed")
			}
			if s.AsksPending != 0 || s.LateReplies != 0 {
				t.Errorf("%d asks pending, %d late replies; want 0, 0", s.AsksPending, s.LateReplies)
			}
		})
	}
}

// onFailure fails the pending ask it names with its code and text, if the
// peer it came from was asked it, with codeOther for the codes no node
// sends (0, and the local codes); any other failure is late, not
// malformed; a body cut short is malformed and completes nothing.
func TestOnFailure(t *testing.T) {
	for _, c := range []struct {
		name     string
		body     func(id uint64) []byte
		from     string
		err      bool
		late     bool
		wantCode byte
		wantText string
	}{
		{name: "decode", body: func(id uint64) []byte { return failureBody(id, codeDecode, "bad") }, from: "x", wantCode: codeDecode, wantText: "bad"},
		{name: "unknown name", body: func(id uint64) []byte { return failureBody(id, codeUnknownName, "nope") }, from: "x", wantCode: codeUnknownName, wantText: "nope"},
		{name: "other", body: func(id uint64) []byte { return failureBody(id, codeOther, "") }, from: "x", wantCode: codeOther},
		{name: "unassigned code", body: func(id uint64) []byte { return failureBody(id, 99, "t") }, from: "x", wantCode: 99, wantText: "t"},
		{name: "code 0", body: func(id uint64) []byte { return failureBody(id, 0, "t") }, from: "x", wantCode: codeOther, wantText: "t"},
		{name: "local conn closed", body: func(id uint64) []byte { return failureBody(id, codeConnClosed, "t") }, from: "x", wantCode: codeOther, wantText: "t"},
		{name: "local no responders", body: func(id uint64) []byte { return failureBody(id, codeNoResponders, "t") }, from: "x", wantCode: codeOther, wantText: "t"},
		{name: "local closed", body: func(id uint64) []byte { return failureBody(id, codeClosed, "t") }, from: "x", wantCode: codeOther, wantText: "t"},
		{name: "another id", body: func(id uint64) []byte { return failureBody(id^1, codeDecode, "t") }, from: "x", late: true},
		{name: "from another peer", body: func(id uint64) []byte { return failureBody(id, codeDecode, "t") }, from: "y", late: true},
		{name: "no body", body: func(uint64) []byte { return nil }, from: "x", err: true},
		{name: "id unending", body: func(uint64) []byte { return unending }, from: "x", err: true},
		{name: "no code", body: func(id uint64) []byte { return binary.AppendUvarint(nil, id) }, from: "x", err: true},
		{name: "no text", body: func(id uint64) []byte { return append(binary.AppendUvarint(nil, id), codeDecode) }, from: "x", err: true},
		{name: "text cut short", body: func(id uint64) []byte { b := failureBody(id, codeDecode, "bad"); return b[:len(b)-1] }, from: "x", err: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := bareNode(t, "b")
			x, _ := n.peer([]byte("x"), false)
			from, _ := n.peer([]byte(c.from), false)
			id, ch := askOf(t, n, x)
			body := c.body(id)
			r := withNext(body, c.err, kindPong)
			err := n.onFailure(from, &r)
			s := n.Stats()
			switch {
			case c.err:
				if err == nil || r.err == nil {
					t.Fatalf("onFailure(%x) = %v, want errMalformed", body, err)
				}
			case err != nil:
				t.Fatalf("onFailure(%x) = %v", body, err)
			case !slices.Equal(r.b, []byte{kindPong}):
				t.Errorf("left %x for the next record, want %x", r.b, []byte{kindPong})
			}
			if c.err || c.late {
				if s.AsksPending != 1 || len(ch) != 0 {
					t.Errorf("%d asks pending, %d answers; want the ask still pending", s.AsksPending, len(ch))
				}
				if want := uint64(map[bool]int{true: 1}[c.late]); s.LateReplies != want {
					t.Errorf("%d late replies, want %d", s.LateReplies, want)
				}
				return
			}
			select {
			case res := <-ch:
				if res.code != c.wantCode || res.text != c.wantText || res.payload != nil {
					t.Errorf("ask failed with %+v, want code %d, text %q", res, c.wantCode, c.wantText)
				}
			default:
				t.Fatal("ask not failed")
			}
		})
	}
}

// onStatus takes the server's "no responders" (503) for the peer: marks
// it down and fails its pending asks, and only its own. Any other status
// is malformed and changes nothing.
func TestOnStatus(t *testing.T) {
	for _, c := range []struct {
		name   string
		header nats.Header
		err    bool
	}{
		{name: "no responders", header: nats.Header{"Status": []string{"503"}}},
		{name: "no responders with description", header: nats.Header{"Status": []string{"503"}, "Description": []string{"No Responders"}}},
		{name: "another status", header: nats.Header{"Status": []string{"408"}}, err: true},
		{name: "no status", header: nats.Header{"X": []string{"503"}}, err: true},
		{name: "empty header", header: nats.Header{}, err: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := bareNode(t, "b")
			x, _ := n.peer([]byte("x"), false)
			y, _ := n.peer([]byte("y"), false)
			_, chX := askOf(t, n, x)
			_, chY := askOf(t, n, y)
			err := n.onStatus(x, c.header)
			s := n.Stats()
			if c.err {
				if err == nil {
					t.Fatalf("onStatus(%v) = nil, want errMalformed", c.header)
				}
				if x.down.Load() || s.AsksPending != 2 || s.NoResponders != 0 || s.PeersDown != 0 {
					t.Errorf("down %v, %d asks pending, %d no responders, %d peers down; want false, 2, 0, 0", x.down.Load(), s.AsksPending, s.NoResponders, s.PeersDown)
				}
				return
			}
			if err != nil {
				t.Fatalf("onStatus(%v) = %v", c.header, err)
			}
			if !x.down.Load() || y.down.Load() || s.PeersDown != 1 {
				t.Errorf("x down %v, y down %v, %d peers down; want true, false, 1", x.down.Load(), y.down.Load(), s.PeersDown)
			}
			if s.AsksPending != 1 || s.NoResponders != 1 || len(chY) != 0 {
				t.Errorf("%d asks pending, %d no responders, y's ask answered %v; want 1, 1, false", s.AsksPending, s.NoResponders, len(chY) != 0)
			}
			select {
			case res := <-chX:
				if res.code != codeNoResponders {
					t.Errorf("x's ask failed with %+v, want codeNoResponders", res)
				}
			default:
				t.Fatal("x's ask not failed")
			}
		})
	}
}

// onPong does nothing of its own: the frame that carries it marks the peer
// up (see TestOnMsgDispatch).
func TestOnPong(t *testing.T) {
	n := bareNode(t, "b")
	x, _ := n.peer([]byte("x"), false)
	id, ch := askOf(t, n, x)
	if err := n.onPong(x); err != nil {
		t.Fatalf("onPong = %v", err)
	}
	if s := n.Stats(); s.AsksPending != 1 || len(ch) != 0 || s.LateReplies != 0 || s.DecodeErrors != 0 || x.down.Load() {
		t.Errorf("after a pong: %+v, answer %v, down %v (ask %d)", s, len(ch) != 0, x.down.Load(), id)
	}
}

// onMsg hands each record to the handler of its kind only on the subject
// where that kind belongs: data records on the data subject, answer records
// on the peer's reply subject; elsewhere, and on a subject not the node's,
// the frame is malformed. Answer frames mark their peer up. No frame here
// makes the node publish (no ping on the data subject).
func TestOnMsgDispatch(t *testing.T) {
	data := func(sender string, recs ...[]byte) []byte {
		b := append(appendString([]byte{wireVersion}, []byte(sender)), 0)
		for _, r := range recs {
			b = append(b, r...)
		}
		return b
	}
	answer := func(sender string, recs ...[]byte) []byte {
		b := appendString([]byte{wireVersion}, []byte(sender))
		for _, r := range recs {
			b = append(b, r...)
		}
		return b
	}
	rec := func(kind byte, body []byte) []byte { return append([]byte{kind}, body...) }
	send := rec(kindSend, sendBody("add", hashAdd, "p"))
	for _, c := range []struct {
		name      string
		msg       func(x *peer, ask uint64) *nats.Msg
		malformed bool
		sends     int
		answered  bool
		up        bool // x was marked up
	}{
		{name: "send", msg: func(*peer, uint64) *nats.Msg {
			return &nats.Msg{Subject: "actord.b.x", Reply: "actord.x.b.t", Data: data("x", send, send)}
		}, sends: 2, up: true},
		{name: "send then garbage", msg: func(*peer, uint64) *nats.Msg {
			return &nats.Msg{Subject: "actord.b.x", Reply: "actord.x.b.t", Data: data("x", send, []byte{99})}
		}, sends: 1, malformed: true, up: true},
		{name: "reply on the data subject", msg: func(_ *peer, ask uint64) *nats.Msg {
			return &nats.Msg{Subject: "actord.b.x", Reply: "actord.x.b.t", Data: data("x", rec(kindReply, replyBody(ask, "r")))}
		}, malformed: true, up: true},
		{name: "pong on the data subject", msg: func(*peer, uint64) *nats.Msg {
			return &nats.Msg{Subject: "actord.b.x", Reply: "actord.x.b.t", Data: data("x", []byte{kindPong})}
		}, malformed: true, up: true},
		{name: "another sender field", msg: func(*peer, uint64) *nats.Msg {
			return &nats.Msg{Subject: "actord.b.x", Reply: "actord.x.b.t", Data: data("y", send)}
		}, malformed: true},
		{name: "reply subject of a third node", msg: func(*peer, uint64) *nats.Msg {
			return &nats.Msg{Subject: "actord.b.x", Reply: "actord.z.b.t", Data: data("x", send)}
		}, malformed: true},
		{name: "not the node's subject", msg: func(*peer, uint64) *nats.Msg {
			return &nats.Msg{Subject: "actord.c.x", Reply: "actord.x.b.t", Data: data("x", send)}
		}, malformed: true},
		{name: "reply", msg: func(x *peer, ask uint64) *nats.Msg {
			return &nats.Msg{Subject: x.inbox, Data: answer("x", []byte{kindPong}, rec(kindReply, replyBody(ask, "r")))}
		}, answered: true, up: true},
		{name: "failure", msg: func(x *peer, ask uint64) *nats.Msg {
			return &nats.Msg{Subject: x.inbox, Data: answer("x", rec(kindFailure, failureBody(ask, codeDecode, "t")))}
		}, answered: true, up: true},
		{name: "pong", msg: func(x *peer, _ uint64) *nats.Msg {
			return &nats.Msg{Subject: x.inbox, Data: answer("x", []byte{kindPong})}
		}, up: true},
		{name: "send on the reply subject", msg: func(x *peer, _ uint64) *nats.Msg {
			return &nats.Msg{Subject: x.inbox, Data: answer("x", send)}
		}, malformed: true, up: true},
		{name: "ping on the reply subject", msg: func(x *peer, _ uint64) *nats.Msg {
			return &nats.Msg{Subject: x.inbox, Data: answer("x", []byte{kindPing})}
		}, malformed: true, up: true},
		{name: "reply on another token", msg: func(_ *peer, ask uint64) *nats.Msg {
			return &nats.Msg{Subject: "actord.b.x.t", Data: answer("x", rec(kindReply, replyBody(ask, "r")))}
		}, malformed: true},
		{name: "no responders", msg: func(x *peer, _ uint64) *nats.Msg {
			return &nats.Msg{Subject: x.inbox, Header: nats.Header{"Status": []string{"503"}}}
		}, answered: true},
		{name: "no responders on another token", msg: func(*peer, uint64) *nats.Msg {
			return &nats.Msg{Subject: "actord.b.x.t", Header: nats.Header{"Status": []string{"503"}}}
		}, malformed: true},
		{name: "another status", msg: func(x *peer, _ uint64) *nats.Msg {
			return &nats.Msg{Subject: x.inbox, Header: nats.Header{"Status": []string{"408"}}}
		}, malformed: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := bareNode(t, "b")
			var r recorder
			n.exports.m = map[string]*export{"add": r.export(hashAdd, false)}
			x, _ := n.peer([]byte("x"), false)
			x.markDown() // not imported: no prober
			id, ch := askOf(t, n, x)
			n.onMsg(c.msg(x, id))
			s := n.Stats()
			if got := s.DecodeErrors != 0; got != c.malformed {
				t.Errorf("%d decode errors, malformed %v", s.DecodeErrors, c.malformed)
			}
			if len(r.sends) != c.sends {
				t.Errorf("%d sends delivered, want %d", len(r.sends), c.sends)
			}
			if got := len(ch) != 0; got != c.answered {
				t.Errorf("ask answered %v, want %v", got, c.answered)
			}
			if got := !x.down.Load(); got != c.up {
				t.Errorf("x up %v, want %v", got, c.up)
			}
		})
	}
}
