package remote

import (
	"context"
	"encoding/binary"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/executor"
)

// Sender is what code that only sends needs: both actor.Port[M] and
// *remote.Port[M] satisfy it, so such code does not care where the actor
// lives.
type Sender[M any] interface {
	Send(msg M) error
}

// Asker is what code that asks needs: *RequestPort satisfies it, and Local
// adapts a local actor.Port.
type Asker[Req, R any] interface {
	Sender[Req]
	Ask(ctx context.Context, req Req) (R, error)
}

// Port is a port of an actor on another node, typed by the message it
// accepts, obtained with Import. It is safe for concurrent use.
type Port[M any] struct {
	n     *Node
	p     *peer
	name  string
	hash  uint32
	codec Codec[M]
}

// RequestPort is a Port for a request type Req whose reply type is R,
// obtained with ImportRequest: it sends and asks.
type RequestPort[Req, R any] struct {
	Port[Req]
	reply Codec[R]
}

// Export makes the local port p reachable by other nodes under name, its
// messages decoded with c. Any string is a valid name, the empty one
// included: it travels in each message, not in a NATS subject. Messages for it are delivered with p.Send, in the
// order the node received them; one that fails to decode, or that p refuses
// (its actor terminated), is counted and logged, never delivered. A payload
// that decodes to a nil message (JSON or CBOR null for a pointer type), or
// on which the codec's Decode panics, counts as failing to decode.
//
// Errors: ErrNameTaken, ErrClosed, ErrUnencodable (see JSON).
func Export[M any](n *Node, name string, p actor.Port[M], c Codec[M]) error {
	if c == nil {
		panic("remote: Export with a nil codec")
	}
	if err := checkCodec(c); err != nil {
		return err
	}
	return n.addExport(name, &export{hash: typeHash(c), send: deliverFunc(n, name, p, c)})
}

func deliverFunc[M any](n *Node, name string, p actor.Port[M], c Codec[M]) func([]byte) {
	return func(payload []byte) {
		m, err := decodeMsg(c, payload)
		if err != nil {
			n.decodeFailed(name, err)
			return
		}
		if err := p.Send(m); err != nil {
			n.deadLetter(name, err)
		}
	}
}

// ExportRequest exports a port whose messages are requests (they embed
// actor.Request[R]): remote asks through it are delivered as by
// actor.AskFunc, with the remaining time of the asker's context as
// timeout, and the actor's Reply is encoded with reply and published back
// to the asking node by the goroutine that completes the request (the
// replying worker, inside its Reply call; the timer's goroutine for a
// timeout). No actor or goroutine is created per request. A request the
// port refuses is answered with the error (actor.ErrTerminated,
// actor.ErrStopped); so is one whose actor terminates before replying, or
// that times out (context.DeadlineExceeded). A request that fails to
// decode (as for Export: nil messages and panicking codecs included) is
// answered with ErrDecode. Plain sends through the port work as for
// Export.
//
// What the asker can tell: a request the port refuses at once with
// actor.ErrTerminated (or actor.ErrNotSpawned) was never queued, and the
// asker's error wraps ErrNotDelivered as well as actor.ErrTerminated; so
// does a request failed with an error that wraps both. An error that
// wraps ErrNotDelivered only reaches the asker wrapping ErrNotDelivered,
// with its text. Any other actor.ErrTerminated (the actor ended after the
// request was queued) does not say whether a behaviour received it: the
// executor fails a request dropped from a queue and one whose receiver
// ended without answering it alike. The serving side that knows the
// difference (its behaviour marks what it receives) says so with OnServe.
//
// Errors: ErrNameTaken, ErrClosed, ErrUnencodable (see JSON).
func ExportRequest[TR, R any, Req executor.RequestPtr[TR, R]](n *Node, name string, p actor.Port[Req], req Codec[Req], reply Codec[R], opts ...ExportOption[Req]) error {
	if req == nil || reply == nil {
		panic("remote: ExportRequest with a nil codec")
	}
	if err := checkCodec(req); err != nil {
		return err
	}
	if err := checkCodec(reply); err != nil {
		return err
	}
	var o exportOpts[Req]
	for _, opt := range opts {
		opt(&o)
	}
	pool := &sync.Pool{}
	request := func(from *peer, id uint64, timeout time.Duration, payload []byte) {
		m, err := decodeMsg(req, payload)
		if err != nil {
			n.decodeFailed(name, err)
			from.fail(id, codeDecode, err.Error())
			return
		}
		r, _ := pool.Get().(*replier[R])
		if r == nil {
			r = &replier[R]{n: n, codec: reply, pool: pool}
			r.fn = r.done
		}
		r.from, r.id = from, id
		if o.serve != nil {
			r.served = o.serve(m)
		}
		if err := actor.AskFunc(p, m, timeout, r.fn); err != nil {
			if r.served != nil {
				if e := r.served(err); e != nil {
					err = e
				}
			}
			r.release() // AskFunc does not call fn after an error
			n.deadLetter(name, err)
			code := failureCode(err)
			if code == codeTerminated {
				code = codeUndelivered // refused by the send: never queued
			}
			from.fail(id, code, err.Error())
		}
	}
	return n.addExport(name, &export{hash: typeHash(req), send: deliverFunc(n, name, p, req), request: request})
}

// ExportOption is an option of ExportRequest.
type ExportOption[Req any] func(*exportOpts[Req])

type exportOpts[Req any] struct {
	serve func(Req) func(error) error
}

// OnServe has ExportRequest call f with each decoded request before it
// sends it to the port, and the function f returns (if not nil) exactly
// once with the error the request ends with (nil when it was answered
// with a value), before the answer is sent back: a non-nil error it
// returns for a non-nil one is sent instead (its result for a value, or
// a nil result, is ignored). A serving side whose behaviour marks the
// requests it receives can so tell the asker that a request failed with
// actor.ErrTerminated never reached it: it returns an error wrapping both
// actor.ErrTerminated and ErrNotDelivered. f runs on the node's
// subscription goroutine, the function it returns on the goroutine that
// completes the request (a worker, inside Reply or at its actor's end;
// a timer's; the node's when the port refuses the request): neither may
// block.
func OnServe[Req any](f func(m Req) (done func(error) error)) ExportOption[Req] {
	return func(o *exportOpts[Req]) { o.serve = f }
}

// replier answers one remote request: its done, the AskFunc completion,
// encodes the reply (or the error) and publishes it to the asking node.
// Repliers are pooled per export, with their completion function bound
// once, so that a request allocates no closure.
type replier[R any] struct {
	n     *Node
	codec Codec[R]
	pool  *sync.Pool
	fn    func(R, error) // r.done, bound once
	from  *peer
	id    uint64
	// served, if not nil, is the OnServe function of this request.
	served func(error) error
}

// done is called exactly once per request, by the goroutine that completes
// it; it must not block. peer.put copies the record into the frame and,
// unless another goroutine is publishing to that peer already (it then
// takes the record), publishes it with nats.Conn.PublishRequest, which
// copies the frame into the connection's write buffer and wakes the
// connection's flusher goroutine. It does not wait for the network, with
// two exceptions of nats.go: when that buffer reaches its size
// (nats.WriteBufferSize, 32 KiB by default) the publishing goroutine
// writes it to the socket itself, which can wait for the kernel's socket
// buffer (bounded by nats.FlusherTimeout, a minute by default, after which
// the connection is closed and reconnects); while the connection
// reconnects, frames go to its reconnect buffer (nats.ReconnectBufSize,
// 8 MiB), and once that is full publishing fails at once
// (nats.ErrReconnectBufExceeded, counted in Stats.PublishErrors: the
// reply is lost and the ask ends with its context).
func (r *replier[R]) done(v R, err error) {
	from, id, served := r.from, r.id, r.served
	r.release()
	if served != nil {
		if e := served(err); err != nil && e != nil {
			err = e
		}
	}
	if err != nil {
		from.fail(id, failureCode(err), err.Error())
		return
	}
	var hb [16]byte
	head := append(hb[:0], kindReply)
	head = binary.AppendUvarint(head, id)
	buf := getScratch()
	payload, err := r.codec.Append((*buf)[:0], v)
	if err != nil {
		r.n.st.encodeErrors.Add(1)
		r.n.warn("remote: reply not encoded", "err", err)
		from.fail(id, codeEncode, err.Error())
	} else if err := from.answer(head, payload, true); err != nil {
		from.fail(id, codeEncode, err.Error()) // too large
	}
	putScratch(buf, payload)
}

// release returns the replier to its pool.
func (r *replier[R]) release() {
	r.from, r.id, r.served = nil, 0, nil
	r.pool.Put(r)
}

// calls pools the asks' calls. A call goes back once its ask owns it
// alone: unregistered (so no completer will send) and its channel drained.
var calls = sync.Pool{New: func() any { return &call{ch: make(chan result, 1)} }}

func getCall(p *peer) *call {
	c := calls.Get().(*call)
	c.peer = p
	return c
}

func putCall(c *call) {
	c.peer = nil
	calls.Put(c)
}

var scratch = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

func getScratch() *[]byte { return scratch.Get().(*[]byte) }

func putScratch(b *[]byte, used []byte) {
	if cap(used) <= 64<<10 {
		*b = used[:0]
		scratch.Put(b)
	}
}

// Import returns a port for the port exported as name by the node named
// node, whose messages are encoded with c. Nothing is sent: a name that the
// node does not export, or exports with another type, is refused there.
//
// Errors: ErrBadName (node is not a valid node name), ErrClosed,
// ErrUnencodable (see JSON).
func Import[M any](n *Node, node, name string, c Codec[M]) (*Port[M], error) {
	if c == nil {
		panic("remote: Import with a nil codec")
	}
	if err := checkCodec(c); err != nil {
		return nil, err
	}
	if !validToken(node) {
		return nil, fmt.Errorf("%w: %q", ErrBadName, node)
	}
	p, nowImported := n.peer([]byte(node), true)
	if p == nil {
		return nil, ErrClosed
	}
	if nowImported && p.down.Load() {
		p.markDown() // start probing it
	}
	return &Port[M]{n: n, p: p, name: name, hash: typeHash(c), codec: c}, nil
}

// ImportRequest is Import for a request port: the port also asks, its
// replies decoded with reply.
func ImportRequest[TR, R any, Req executor.RequestPtr[TR, R]](n *Node, node, name string, req Codec[Req], reply Codec[R]) (*RequestPort[Req, R], error) {
	if reply == nil {
		panic("remote: ImportRequest with a nil codec")
	}
	if err := checkCodec(reply); err != nil {
		return nil, err
	}
	p, err := Import(n, node, name, req)
	if err != nil {
		return nil, err
	}
	return &RequestPort[Req, R]{Port: *p, reply: reply}, nil
}

// Node returns the name of the node the port sends to.
func (p *Port[M]) Node() string { return p.p.name }

// Name returns the name the port was exported under.
func (p *Port[M]) Name() string { return p.name }

// Send encodes msg and sends it to the remote port, fire and forget: a nil
// error means the message was handed to this node's NATS connection, not
// that it arrived (see "Delivery" in the package documentation). msg may be
// reused as soon as Send returns. Messages sent through ports of one node to
// one other node arrive in the order of their Sends.
//
// Errors: ErrEncode (wrapping the codec's error), ErrTooLarge,
// ErrNoResponders (the remote node is known to be down), ErrClosed (the
// node is closed; or its NATS connection closed for good, and the error
// wraps nats.ErrConnectionClosed too).
func (p *Port[M]) Send(msg M) error {
	if p.n.closed.Load() {
		return ErrClosed
	}
	if p.n.connLost.Load() {
		return errConnClosed
	}
	if p.p.down.Load() {
		p.n.st.noResponders.Add(1)
		return ErrNoResponders
	}
	var hb [64]byte
	head := append(hb[:0], kindSend)
	head = appendString(head, []byte(p.name))
	head = binary.LittleEndian.AppendUint32(head, p.hash)
	buf := getScratch()
	payload, err := p.codec.Append((*buf)[:0], msg)
	if err == nil {
		err = p.p.put(head, payload, false, true)
	} else {
		p.n.st.encodeErrors.Add(1)
		err = p.encodeErr(err)
	}
	putScratch(buf, payload)
	if err == nil {
		p.n.st.sent.Add(1)
	}
	return err
}

func (p *Port[M]) encodeErr(err error) error {
	return fmt.Errorf("%w: %s for %s/%s: %w", ErrEncode, reflect.TypeFor[M](), p.p.name, p.name, err)
}

// Ask sends the request req and waits for the reply, or for ctx to end. The
// remote actor receives the request as by actor.AskFunc with the time left
// to ctx as its timeout. No goroutine is created per ask.
//
// Errors: those of Send; ErrNoResponders (the remote node had no
// subscription when this node sent to it: the request was most likely not
// delivered, and an answer that still comes is dropped as late); ErrUnknownName,
// ErrWrongType, ErrDecode (the remote node refused the request);
// actor.ErrTerminated, actor.ErrStopped (the remote actor ended before
// replying); ErrEncode, ErrDecode for the reply; ErrClosed; ctx.Err() when
// ctx ends first (a later reply is counted as late and dropped). Errors from
// the remote node wrap ErrRemote too.
//
// Ask must not be called from a behaviour, where it would hold up a worker
// for a network round trip: there it returns actor.ErrAskInBehaviour at
// once, as actor.Ask does, and sends nothing. Behaviours ask a remote actor
// through actor.Go (a goroutine that calls Ask and delivers the reply as a
// message), or send to it and have it answer with a message.
func (p *RequestPort[Req, R]) Ask(ctx context.Context, req Req) (R, error) {
	var zero R
	n := p.n
	if actor.InBehaviour() {
		return zero, actor.ErrAskInBehaviour
	}
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if n.closed.Load() {
		return zero, ErrClosed
	}
	if n.connLost.Load() {
		return zero, errConnClosed
	}
	if p.p.down.Load() {
		n.st.noResponders.Add(1)
		return zero, ErrNoResponders
	}
	var tmo uint64
	if dl, ok := ctx.Deadline(); ok {
		tmo = uint64(max(time.Until(dl), time.Microsecond) / time.Microsecond)
	}
	buf := getScratch()
	payload, err := p.codec.Append((*buf)[:0], req)
	if err != nil {
		putScratch(buf, payload)
		n.st.encodeErrors.Add(1)
		return zero, p.encodeErr(err)
	}
	c := getCall(p.p)
	id, ok := n.register(c)
	if !ok {
		putCall(c)
		putScratch(buf, payload)
		return zero, errConnClosed
	}
	var hb [80]byte
	head := append(hb[:0], kindRequest)
	head = appendString(head, []byte(p.name))
	head = binary.LittleEndian.AppendUint32(head, p.hash)
	head = binary.AppendUvarint(head, id)
	head = binary.AppendUvarint(head, tmo)
	start := time.Now()
	err = p.p.put(head, payload, true, true)
	putScratch(buf, payload)
	if err != nil {
		if n.unregister(id) {
			putCall(c)
		} else {
			<-c.ch // failed by Close or no responders meanwhile
			putCall(c)
		}
		return zero, err
	}
	n.st.sent.Add(1)
	var res result
	select {
	case res = <-c.ch:
	case <-ctx.Done():
		if n.unregister(id) {
			putCall(c)
			n.st.asksTimedOut.Add(1)
			return zero, ctx.Err()
		}
		res = <-c.ch // answered just as ctx ended
	}
	putCall(c) // answered: no longer registered, its channel drained
	n.st.observe(time.Since(start))
	if res.code != 0 {
		if res.code == codeDeadline {
			// The serving node's timeout, which it took from ctx's
			// deadline: the ask ended by its deadline, as if ctx had
			// ended first (which of the two comes first is a race).
			n.st.asksTimedOut.Add(1)
		}
		return zero, failureErr(res.code, res.text)
	}
	v, err := decode(p.reply, res.payload)
	if err != nil {
		n.st.decodeErrors.Add(1)
		return zero, fmt.Errorf("%w: reply from %s/%s: %w", ErrDecode, p.p.name, p.name, err)
	}
	return v, nil
}

// Local adapts a local request port to Asker, so that code written against
// Asker works with local and remote actors alike.
func Local[TR, R any, Req executor.RequestPtr[TR, R]](p actor.Port[Req]) Asker[Req, R] {
	return localAsker[TR, R, Req]{p}
}

type localAsker[TR, R any, Req executor.RequestPtr[TR, R]] struct{ p actor.Port[Req] }

func (l localAsker[TR, R, Req]) Send(req Req) error { return l.p.Send(req) }

func (l localAsker[TR, R, Req]) Ask(ctx context.Context, req Req) (R, error) {
	return actor.Ask(ctx, l.p, req)
}

// Forward returns a local port whose messages are sent on to the remote
// port to, by an actor spawned in sys for the purpose: local code (timers,
// AskAsync replies, other actors) can then address the remote actor with an
// ordinary actor.Port. A message the remote port refuses (ErrNoResponders,
// ErrEncode...) is counted and logged as a dead letter. The forwarder
// terminates when the remote port's node is closed (so that sys can stop):
// sends to the local port then return actor.ErrTerminated.
//
// Errors: those of actor.Spawn, and ErrClosed.
func Forward[T any, M actor.Msg[T]](sys *actor.System, to *Port[M]) (actor.Port[M], error) {
	if to == nil {
		panic("remote: Forward to a nil port")
	}
	f, err := actor.Spawn(sys, &forwarder[T, M]{to: to})
	if err != nil {
		return actor.Port[M]{}, err
	}
	p, err := actor.Bind(f, (*forwarder[T, M]).forward)
	if err == nil && !to.n.onClose(func() { _ = actor.SendPill(f, actor.FinishedMsg) }) {
		err = ErrClosed
	}
	if err != nil {
		_ = actor.SendPill(f, actor.FinishedMsg)
		return actor.Port[M]{}, err
	}
	return p, nil
}

type forwarder[T any, M actor.Msg[T]] struct {
	actor.Actor
	to *Port[M]
}

func (f *forwarder[T, M]) forward(m M) actor.Allocation {
	if err := f.to.Send(m); err != nil {
		f.to.n.deadLetter(f.to.name, err)
	}
	return actor.Nodelete
}
