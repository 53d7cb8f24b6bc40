package remote

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// peer is the link from this node to one other node: the frame being
// filled, frames waiting to be published, and, once the node imported a
// port of it, the goroutine that publishes one-way sends.
//
// Batching: a one-way send appends its record to buf and, if nobody is
// publishing, wakes the flusher goroutine; asks, replies, failures, pings
// and pongs (urgent) publish at once from the caller's goroutine if nobody
// is publishing. A peer created only to answer another node (a request, a
// ping) has no flusher: it only ever gets urgent records. Whoever
// publishes (flushing set) takes frames until none is left, so records
// appended meanwhile ride in the next frame: under load frames grow, idle
// links cost one frame per record. Records are appended and frames taken
// under mu, and one publisher at a time publishes them, on the node's one
// connection: the remote node receives them in append order.
//
// Flushing: frames are numbered in the order they are closed (cut into
// full, or taken from buf by the publisher), which is the order they are
// published in; framed counts the frames closed and published those whose
// publish has returned. flush, for Node.Flush and close, waits until every
// frame closed or being filled when it was called is published, taking
// over the publishing if nobody is at it.
//
// Subjects: frames to the peer are published to its data subject
// "<prefix>.<peer>.<self>" with the reply subject inbox,
// "<prefix>.<self>.<peer>.<token>", where token is random, made for this
// peer alone: the peer's answers, and the server's "no responders" for
// the peer, come back there (see Node.onAnswer). The peer's answers to
// requests it sent are published to the reply subject of its frames,
// replyTo.
type peer struct {
	n       *Node
	name    string
	subject string        // data subject: <prefix>.<name>.<self>
	token   string        // reply token this node gave the peer
	inbox   string        // reply subject of frames to the peer: <prefix>.<self>.<name>.<token>
	kick    chan struct{} // capacity 1: wakes the flusher

	// replyTo is the reply subject of the last frame from the peer (a
	// valid one, see Node.validReply): answers to its requests and pings
	// are published there. Nil until the peer sent a frame.
	replyTo atomic.Pointer[string]

	// rxNext is the sequence number of the next message (send or
	// request) expected from the peer, rxSeen whether one came: read and
	// written only by the node's subscription goroutine (Node.onData,
	// onSend and onRequest).
	rxNext uint64
	rxSeen bool

	mu      sync.Mutex // guards everything below
	buf     []byte     // the frame being filled; starts with n.header and a sequence number
	bufHead int        // the length of buf's header: buf holds no record if len(buf) == bufHead
	// txSeq is the sequence number of the next send or request put: each
	// data frame carries the number of its first one, so that the peer
	// finds the gaps (Stats.LostMessages).
	txSeq    uint64
	full     [][]byte // frames cut at batchBytes, waiting
	spare    []byte   // a published frame's storage, for reuse
	flushing bool     // a goroutine is publishing (it drains all)
	kicked   bool     // the flusher has been woken and has not run yet
	closed   bool
	probing  bool // a probe goroutine runs
	// framed counts the frames closed, published those whose publish has
	// returned (in that order: published <= framed).
	framed, published uint64
	// progress is broadcast, with mu held, when published grows and when
	// flushing is cleared; flush waits on it. Its L is &mu.
	progress sync.Cond

	// down is set when the server reported no responders for the node's
	// subject and cleared by its pong or any frame from it, or by
	// Node.evictTransient; read without lock by senders. Its transitions
	// update n.downPeers.
	down atomic.Bool
	// imported is set by Import, under n.mu, never cleared: the peer then
	// has a flusher goroutine, is probed while down, and is never evicted
	// from n.peers (see Node.peer). Read without lock by put and markDown;
	// read under n.mu where it decides eviction.
	imported atomic.Bool
}

func newPeer(n *Node, name string) *peer {
	token := randomToken()
	p := &peer{n: n, name: name, subject: n.prefixDot + name + "." + n.name,
		token: token, inbox: n.subjectDot + name + "." + token, kick: make(chan struct{}, 1)}
	p.progress.L = &p.mu
	p.buf = p.frameHead(make([]byte, 0, 512))
	return p
}

// put appends one record, head then (withPayload) payload as a string, and
// publishes it at once (urgent) or has the flusher publish it.
func (p *peer) put(head, payload []byte, urgent, withPayload bool) error {
	n := p.n
	size := len(head)
	if withPayload {
		size += binary.MaxVarintLen32 + len(payload)
	}
	if size > n.maxRecord {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, size, n.maxRecord)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	if len(p.buf) > p.bufHead && len(p.buf)+size > n.batchBytes {
		p.framed++
		p.full = append(p.full, p.buf)
		p.buf = p.frameHead(make([]byte, 0, n.batchBytes))
	}
	p.buf = append(p.buf, head...)
	if withPayload {
		p.buf = appendString(p.buf, payload)
	}
	if head[0] == kindSend || head[0] == kindRequest {
		p.txSeq++
	}
	switch {
	case p.flushing:
		p.mu.Unlock()
	case urgent || !p.imported.Load(): // no flusher without Import
		p.flushing = true
		p.drain()
	case !p.kicked:
		p.kicked = true
		p.mu.Unlock()
		select {
		case p.kick <- struct{}{}:
		default:
		}
	default:
		p.mu.Unlock()
	}
	return nil
}

// frameHead appends a data frame's header to b: the node's header and the
// sequence number of the frame's first message; sets bufHead. Called with
// mu held.
func (p *peer) frameHead(b []byte) []byte {
	b = binary.AppendUvarint(append(b, p.n.header...), p.txSeq)
	p.bufHead = len(b)
	return b
}

// drain publishes frames until none is left, then clears flushing. Called
// with mu held and flushing set by the caller; returns with mu released.
func (p *peer) drain() {
	n := p.n
	for {
		var frame []byte
		fromBuf := false
		switch {
		case len(p.full) > 0:
			frame = p.full[0]
			p.full[0] = nil
			p.full = p.full[1:]
		case len(p.buf) > p.bufHead:
			p.framed++
			frame = p.buf
			p.buf = p.frameHead(p.spare[:0])
			p.spare = nil
			fromBuf = true
		default:
			p.flushing = false
			p.progress.Broadcast()
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		// The reply subject is where the peer answers, and where the
		// server answers "no responders" when the peer has no
		// subscription. Publish copies the frame into the connection's
		// buffer.
		if err := n.nc.PublishRequest(p.subject, p.inbox, frame); err != nil {
			n.st.publishErrors.Add(1)
			n.warn("remote: frame not published, its messages are lost", "to", p.name, "err", err)
		} else {
			n.st.framesOut.Add(1)
			n.st.bytesOut.Add(uint64(len(frame)))
		}
		p.mu.Lock()
		p.published++
		p.progress.Broadcast()
		if fromBuf && cap(frame) <= 2*n.batchBytes {
			p.spare = frame[:0]
		}
	}
}

// flusher publishes one-way sends: woken by put, it drains unless another
// goroutine is publishing already.
func (p *peer) flusher() {
	defer p.n.wg.Done()
	for {
		select {
		case <-p.kick:
		case <-p.n.done:
			return
		}
		p.flushNow()
	}
}

// flushNow publishes what is batched unless someone is publishing already
// (who then publishes it): it never waits for another publisher. The
// flusher goroutine uses it.
func (p *peer) flushNow() {
	p.mu.Lock()
	p.kicked = false
	if p.flushing {
		p.mu.Unlock()
		return
	}
	p.flushing = true
	p.drain()
}

// flush returns once every record put before it was called has been
// handed to the NATS connection (published, or refused and counted in
// Stats.PublishErrors), or with ctx.Err() if ctx ends first. If another
// goroutine is publishing, flush waits for it to publish those records (it
// publishes until nothing is left); otherwise flush publishes them itself.
func (p *peer) flush(ctx context.Context) error {
	p.mu.Lock()
	target := p.framed // the frames to wait for: those closed, and buf
	if len(p.buf) > p.bufHead {
		target++
	}
	if p.flushing && p.published < target {
		// Wake the wait below when ctx ends.
		stop := context.AfterFunc(ctx, func() {
			p.mu.Lock()
			p.progress.Broadcast()
			p.mu.Unlock()
		})
		defer stop()
		for p.flushing && p.published < target {
			if err := ctx.Err(); err != nil {
				p.mu.Unlock()
				return err
			}
			p.progress.Wait()
		}
	}
	if p.published >= target {
		p.mu.Unlock()
		return nil
	}
	p.flushing = true
	p.drain()
	return nil
}

// close refuses later records and publishes those put before, waiting for
// another goroutine's publishing to end if need be.
func (p *peer) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	_ = p.flush(context.Background())
}

// fail sends a failure record answering the request id.
func (p *peer) fail(id uint64, code byte, text string) {
	var hb [16]byte
	head := append(hb[:0], kindFailure)
	head = binary.AppendUvarint(head, id)
	head = append(head, code)
	if len(text) > 1024 {
		text = text[:1024]
	}
	_ = p.answer(head, []byte(text), true)
}

// answer publishes one answer record (a reply, failure or pong), head then
// (withPayload) payload as a string, in a frame of its own to the peer's
// reply subject, from the caller's goroutine: answers are not batched,
// since each goes to the subject that the request's frame named and waits
// for nobody. Errors: ErrTooLarge; a frame NATS refuses is counted in
// Stats.PublishErrors, and one for a peer that never sent a reply subject
// is dropped.
func (p *peer) answer(head, payload []byte, withPayload bool) error {
	n := p.n
	size := len(head)
	if withPayload {
		size += binary.MaxVarintLen32 + len(payload)
	}
	if size > n.maxRecord {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, size, n.maxRecord)
	}
	to := p.replyTo.Load()
	if to == nil {
		return nil
	}
	buf := getScratch()
	frame := append(append((*buf)[:0], n.header...), head...)
	if withPayload {
		frame = appendString(frame, payload)
	}
	if err := n.nc.Publish(*to, frame); err != nil {
		n.st.publishErrors.Add(1)
		n.warn("remote: answer not published, it is lost", "to", p.name, "err", err)
	} else {
		n.st.framesOut.Add(1)
		n.st.bytesOut.Add(uint64(len(frame)))
	}
	putScratch(buf, frame)
	return nil
}

// markDown marks the peer down and, if this node imported ports of it,
// starts probing it. A peer that only asked this node is not probed: the
// next frame it sends marks it up again.
func (p *peer) markDown() {
	if !p.down.Swap(true) {
		p.n.downPeers.Add(1)
	}
	if !p.imported.Load() {
		return
	}
	p.mu.Lock()
	if p.probing || p.closed {
		p.mu.Unlock()
		return
	}
	p.probing = true
	p.n.wg.Add(1) // before Close's wg.Wait: Close sets closed first, under mu
	p.mu.Unlock()
	go p.prober()
}

// markUp clears down: the peer answered a probe, or sent a frame.
func (p *peer) markUp() {
	if p.down.CompareAndSwap(true, false) {
		p.n.downPeers.Add(-1)
	}
}

// prober sends a ping while the peer is down, after the probe interval,
// then at doubling intervals up to 8 times that; the peer's pong (or any
// frame from it) clears down.
func (p *peer) prober() {
	n := p.n
	defer n.wg.Done()
	d := n.probe
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-n.done:
			return
		}
		// down is read under mu: a markDown that set it after this read
		// finds probing false and starts another prober.
		p.mu.Lock()
		if !p.down.Load() {
			p.probing = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		_ = p.put([]byte{kindPing}, nil, true, false)
		d = min(2*d, 8*n.probe)
		t.Reset(d)
	}
}
