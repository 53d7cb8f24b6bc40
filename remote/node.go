package remote

import (
	"context"
	crand "crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/actord/actord/actor"
	"github.com/nats-io/nats.go"
)

// Node is one actor system's presence on NATS: one connection, one
// subscription on its own subject, the ports it exports and the nodes it
// talks to. Create it with Connect and end it with Close; all its methods
// are safe for concurrent use.
type Node struct {
	sys     *actor.System
	nc      *nats.Conn
	sub     *nats.Subscription
	name    string
	prefix  string
	subject string // "<prefix>.<name>": the node receives on subject.>
	// prefixDot and subjectDot are prefix and subject followed by a dot,
	// for parsing subjects without allocating.
	prefixDot, subjectDot string
	log                   *slog.Logger
	probe                 time.Duration
	header                []byte // frame header: version and this node's name
	// maxRecord bounds one record (the server's max_payload less the frame
	// header); batchBytes is the size past which a frame is cut.
	maxRecord  int
	batchBytes int

	// exports holds the exported ports, with a lock of its own (see
	// exportTable): Export adds to it under mu as well, so that no port is
	// exported once Close has set closed.
	exports exportTable

	mu    sync.Mutex // guards peers, transient, closed (writes), and Export's check of closed
	peers map[string]*peer
	// transient counts the peers in peers that were never imported
	// (created to answer a request or a ping); at maxTransientPeers,
	// creating one evicts another.
	transient int
	closed    atomic.Bool // set under mu by Close; read anywhere
	// connLost is set by connClosed, under callsMu, when the NATS
	// connection closed for good without Close: later asks are refused by
	// register (under callsMu, so every ask is either refused or failed by
	// connClosed), and Send, Ask and Flush read it without lock and fail
	// at once with errConnClosed.
	connLost atomic.Bool
	atEnd    []func() // run by Close (forwarders' pills)

	callsMu sync.Mutex // guards calls and ids
	calls   map[uint64]*call
	// ids draws the ask ids: a ChaCha8 stream seeded from crypto/rand at
	// Connect, so that ids are unguessable (knowing some of them tells
	// nothing of the others) and a node restarted under the same name
	// does not reuse the ids of its previous incarnation.
	ids *rand.ChaCha8

	done chan struct{}  // closed by Close: flushers and probes return
	wg   sync.WaitGroup // flusher and probe goroutines

	lastLog   atomic.Int64 // unix nanos of the last warning logged (rate limit)
	downPeers atomic.Int64 // peers in peers whose down flag is set (see peer.markDown, evictTransient)
	st        counters
}

// export is one exported port: its message type's hash and the functions
// that decode a payload and deliver it.
type export struct {
	hash    uint32
	send    func(payload []byte)
	request func(from *peer, id uint64, timeout time.Duration, payload []byte) // nil: not a request port
}

// call is one ask waiting for its answer.
type call struct {
	peer *peer
	ch   chan result // capacity 1: the completer never blocks
}

type result struct {
	payload []byte
	code    byte // 0: payload is the reply
	text    string
}

// Option configures Connect.
type Option func(*config)

type config struct {
	nats      []nats.Option
	log       *slog.Logger
	prefix    string
	probe     time.Duration
	pendMsgs  int
	pendBytes int
}

// WithNATS passes options to nats.Connect: credentials, TLS, reconnect
// policy, connection name. They are used as given; this package implements
// none of them.
func WithNATS(opts ...nats.Option) Option {
	return func(c *config) { c.nats = append(c.nats, opts...) }
}

// WithLogger sets the logger for dead letters, refused and undecodable
// messages (default slog.Default()); warnings are logged at most once a
// second, every one of them is counted in Stats.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.log = l }
}

// WithSubjectPrefix sets the prefix of node subjects (default "actord"):
// node "a" receives on "<prefix>.a". Nodes talk only to nodes with the same
// prefix.
func WithSubjectPrefix(p string) Option {
	return func(c *config) { c.prefix = p }
}

// WithProbeInterval sets how soon a node found to have no responders is
// first probed (default 250ms); later probes back off to 8 times that.
func WithProbeInterval(d time.Duration) Option {
	return func(c *config) { c.probe = d }
}

// WithPendingLimits sets the limits of the node's NATS subscription: frames
// (NATS messages) and bytes received and not yet handed to the local ports
// (defaults nats.DefaultSubPendingMsgsLimit frames, 256 MiB). Past them the NATS client drops frames
// (a slow consumer), counted in Stats.Dropped. Negative: no limit.
func WithPendingLimits(frames, bytes int) Option {
	return func(c *config) { c.pendMsgs, c.pendBytes = frames, bytes }
}

// Connect connects a node named name of the system sys to the NATS server(s)
// at url and subscribes to the node's subject. The name must be a single
// NATS subject token (no '.', '*', '>' or white space) of at most
// maxNameLen (255) bytes.
//
// Before it subscribes, Connect checks that no node of that name (and
// prefix) is connected: a second one is refused with ErrNameInUse, so that
// two live nodes never share a name's traffic (two Connects at the same
// moment can both pass the check; see "Security" in the package
// documentation).
//
// Errors: ErrBadName, ErrNameInUse, and those of nats.Connect and
// Subscribe.
func Connect(sys *actor.System, url, name string, opts ...Option) (*Node, error) {
	if sys == nil {
		panic("remote: Connect with a nil system")
	}
	cfg := config{log: slog.Default(), prefix: "actord", probe: 250 * time.Millisecond,
		pendMsgs: nats.DefaultSubPendingMsgsLimit, pendBytes: 256 << 20}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if !validToken(name) {
		return nil, fmt.Errorf("%w: %q", ErrBadName, name)
	}
	n := &Node{
		sys:        sys,
		name:       name,
		prefix:     cfg.prefix,
		subject:    cfg.prefix + "." + name,
		prefixDot:  cfg.prefix + ".",
		subjectDot: cfg.prefix + "." + name + ".",
		log:        cfg.log,
		probe:      cfg.probe,
		peers:      make(map[string]*peer),
		calls:      make(map[uint64]*call),
		ids:        rand.NewChaCha8(randomSeed()),
		done:       make(chan struct{}),
	}
	// The closed handler is set by the last option, so that it wraps the
	// user's; set through the options it is in place before the connection
	// exists, so no closing can be missed.
	nc, err := nats.Connect(url, append(slices.Clip(cfg.nats), n.chainClosedHandler, n.chainConnHandlers, n.defaultErrorHandler)...)
	if err != nil {
		return nil, err
	}
	n.nc = nc
	n.st.init()
	n.header = appendString([]byte{wireVersion}, []byte(name))
	n.maxRecord = int(nc.MaxPayload()) - len(n.header)
	n.batchBytes = min(64<<10, int(nc.MaxPayload()))
	if err := n.claimName(); err != nil {
		nc.Close()
		return nil, err
	}
	sub, err := nc.Subscribe(n.subjectDot+">", n.onMsg)
	if err == nil {
		err = sub.SetPendingLimits(cfg.pendMsgs, cfg.pendBytes)
	}
	if err == nil {
		err = nc.Flush() // the subscription is known to the server
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	n.sub = sub
	return n, nil
}

// notInToken are the bytes a node name (a NATS subject token) must not
// contain.
const notInToken = ".*> \t\r\n"

// maxNameLen bounds a node name's length, so that the peers kept for
// senders never imported from (maxTransientPeers) hold bounded memory.
const maxNameLen = 255

func validToken(s string) bool {
	return s != "" && len(s) <= maxNameLen && !strings.ContainsAny(s, notInToken)
}

// Name returns the node's name.
func (n *Node) Name() string { return n.name }

// Subject returns the node's subject, "<prefix>.<name>": the node receives
// on the subjects below it (Subject()+".>"), see "Security" in the package
// documentation.
func (n *Node) Subject() string { return n.subject }

// randomSeed returns 32 bytes from crypto/rand.
func randomSeed() (seed [32]byte) {
	crand.Read(seed[:]) // never fails (Go 1.24+): it crashes the program instead
	return seed
}

// randomToken returns a random subject token of 26 characters (128 bits,
// base 32, lower case).
func randomToken() string {
	var b [16]byte
	crand.Read(b[:])
	const digits = "abcdefghijklmnopqrstuvwxyz234567"
	var out [26]byte
	var acc uint64
	bits := 0
	j := 0
	for _, c := range b {
		acc = acc<<8 | uint64(c)
		bits += 8
		for bits >= 5 {
			bits -= 5
			out[j] = digits[(acc>>bits)&31]
			j++
		}
	}
	out[j] = digits[(acc<<(5-bits))&31]
	return string(out[:])
}

// Conn returns the node's NATS connection, for status and statistics. Do
// not close it (Close does), nor replace its closed handler (pass yours to
// Connect with WithNATS and nats.ClosedHandler: the node calls it).
func (n *Node) Conn() *nats.Conn { return n.nc }

// flushBound bounds Flush when its context has no deadline.
const flushBound = time.Minute

// Flush publishes what the node has batched and waits until the NATS server
// has received it (a round trip to the server, not to the remote nodes), or
// ctx ends. Every message sent before Flush is called is covered, including
// those that another goroutine is publishing at the time: Flush waits for
// it. A ctx without deadline is given one of a minute (flushBound), since
// nats.go's flush needs one.
//
// Errors: ErrClosed, ctx.Err(), and those of nats.Conn.FlushWithContext.
func (n *Node) Flush(ctx context.Context) error {
	if n.closed.Load() {
		return ErrClosed
	}
	if n.connLost.Load() {
		return errConnClosed
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, flushBound)
		defer cancel()
	}
	for _, p := range n.peerList() {
		if err := p.flush(ctx); err != nil {
			return err
		}
	}
	return n.nc.FlushWithContext(ctx)
}

// Close unsubscribes the node (remote senders then get ErrNoResponders),
// publishes what it had batched (waiting for publishing in progress to
// end), fails its pending asks with ErrClosed and closes its NATS
// connection. It does not stop the actor system. Sends and asks after
// Close return ErrClosed; Close is idempotent. After the connection closed
// for good by itself, Close still releases the rest, and returns no error
// for the closed connection.
//
// Requests that this node received and has not answered yet are abandoned,
// not failed: a reply that its actor gives after Close is dropped (it is
// not counted in Stats), and the asking node learns nothing, so its ask
// ends by its own deadline. Give asks a deadline, as for a node that dies.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed.Load() {
		n.mu.Unlock()
		return nil
	}
	n.closed.Store(true)
	peers := make([]*peer, 0, len(n.peers))
	for _, p := range n.peers {
		peers = append(peers, p)
	}
	atEnd := n.atEnd
	n.atEnd = nil
	n.mu.Unlock()
	for _, f := range atEnd {
		f()
	}

	err := n.sub.Unsubscribe()
	if n.connLost.Load() && errors.Is(err, nats.ErrConnectionClosed) {
		err = nil // the connection closed itself before
	}
	for _, p := range peers {
		p.close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	if ferr := n.nc.FlushWithContext(ctx); ferr != nil && err == nil && !errors.Is(ferr, nats.ErrConnectionClosed) {
		err = ferr
	}
	cancel()
	close(n.done)
	n.wg.Wait()
	n.callsMu.Lock()
	calls := n.calls
	n.calls = make(map[uint64]*call)
	n.callsMu.Unlock()
	for _, c := range calls {
		c.ch <- result{code: codeClosed}
	}
	n.nc.Close()
	return err
}

// chainClosedHandler is a nats.Option, applied after the user's: it sets
// the connection's closed handler to connClosed followed by the handler
// the user's options set, if any.
func (n *Node) chainClosedHandler(o *nats.Options) error {
	user := o.ClosedCB
	o.ClosedCB = func(c *nats.Conn) {
		n.connClosed(c)
		if user != nil {
			user(c)
		}
	}
	return nil
}

// chainConnHandlers is a nats.Option, applied after the user's: it counts
// and logs each loss of the connection (Stats.Disconnects), whose frames in
// flight are lost (the receivers count them, Stats.LostMessages), and
// logs each reconnection, then calls the handlers the user's options set.
func (n *Node) chainConnHandlers(o *nats.Options) error {
	userDisc, userRecon := o.DisconnectedErrCB, o.ReconnectedCB
	o.DisconnectedErrCB = func(c *nats.Conn, err error) {
		if !n.closed.Load() {
			n.st.disconnects.Add(1)
			n.log.Warn("remote: NATS connection lost, messages in flight to and from this node are lost", "node", n.name, "err", err)
		}
		if userDisc != nil {
			userDisc(c, err)
		}
	}
	o.ReconnectedCB = func(c *nats.Conn) {
		n.log.Info("remote: NATS connection back", "node", n.name, "server", c.ConnectedUrlRedacted())
		if userRecon != nil {
			userRecon(c)
		}
	}
	return nil
}

// defaultErrorHandler is a nats.Option, applied after the user's: unless
// they set an asynchronous error handler, it sets one that logs nats.go's
// asynchronous errors (a slow consumer, counted in Stats.Dropped, above
// all) through the node's logger, rate-limited like its other warnings,
// instead of nats.go's own printing to standard error.
func (n *Node) defaultErrorHandler(o *nats.Options) error {
	if o.AsyncErrorCB == nil {
		o.AsyncErrorCB = func(_ *nats.Conn, _ *nats.Subscription, err error) {
			n.warn("remote: NATS asynchronous error", "err", err)
		}
	}
	return nil
}

// connClosed is the NATS connection nc's closed handler: it runs on
// nats.go's callback goroutine once the connection is closed for good.
// Unless Close closed it, the server went away with reconnection off or
// exhausted: the node can no longer send, so it sets connLost (Send, Ask and Flush then
// fail at once with errConnClosed) and fails the pending asks with it.
// Close must still be called to release the rest.
func (n *Node) connClosed(nc *nats.Conn) {
	if n.closed.Load() {
		return
	}
	n.callsMu.Lock()
	n.connLost.Store(true)
	calls := n.calls
	n.calls = make(map[uint64]*call)
	n.callsMu.Unlock()
	n.log.Warn("remote: NATS connection closed for good, the node cannot send", "node", n.name, "err", nc.LastError())
	for _, c := range calls {
		c.ch <- result{code: codeConnClosed}
	}
}

// Local failure codes, never on the wire: a failure record with one of
// them reads as codeOther.
const (
	codeConnClosed   = 253
	codeNoResponders = 254
	codeClosed       = 255
)

// onClose has f run by Close; false if the node is closed already.
func (n *Node) onClose(f func()) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed.Load() {
		return false
	}
	n.atEnd = append(n.atEnd, f)
	return true
}

func (n *Node) peerList() []*peer {
	n.mu.Lock()
	defer n.mu.Unlock()
	ps := make([]*peer, 0, len(n.peers))
	for _, p := range n.peers {
		ps = append(ps, p)
	}
	return ps
}

// claimTimeout bounds Connect's wait for an answer to its ping of its own
// name.
const claimTimeout = 2 * time.Second

// claimName refuses the node's name if a node of that name is connected:
// before subscribing, the node pings its own name, as a node of that name
// would ping another, on <prefix>.<name>.<name> with the reply subject
// <prefix>.<name>.<name>.<token>. The server answers "no responders" at
// once when nobody has subscribed to the name's subjects: the name is
// free. A node of that name answers with a pong: ErrNameInUse. So does
// silence until claimTimeout: something subscribed to the name's subjects
// and does not answer.
//
// Two nodes that connect under one name at the same moment can both find
// it free: this is a check, not a lock (with server permissions, only the
// holders of a node's credentials can subscribe to its subjects at all).
func (n *Node) claimName() error {
	inbox := n.subjectDot + n.name + "." + randomToken()
	sub, err := n.nc.SubscribeSync(inbox)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	ping := append(slices.Clip(n.header), 0, kindPing) // sequence number 0, a ping
	if err := n.nc.PublishRequest(n.subjectDot+n.name, inbox, ping); err != nil {
		return err
	}
	m, err := sub.NextMsg(claimTimeout)
	switch {
	case errors.Is(err, nats.ErrNoResponders), // how nats.go's NextMsg reports the status
		err == nil && len(m.Data) == 0 && m.Header.Get("Status") == "503":
		return nil
	case err == nil:
		return fmt.Errorf("%w: %q answered on %s", ErrNameInUse, n.name, n.subject)
	case errors.Is(err, nats.ErrTimeout):
		return fmt.Errorf("%w: %q: something subscribed to %s.> and did not answer in %v", ErrNameInUse, n.name, n.subject, claimTimeout)
	}
	return err
}

// maxTransientPeers bounds the peers that were never imported: they are
// created by remote input (a request or a ping from a node this node
// does not import from), which must not grow the node's memory without
// bound.
const maxTransientPeers = 1024

// peer returns the peer for the node named name, creating it if needed;
// nil once the node is closed.
//
// With imported set (Import), the peer is marked imported, and the first
// time it is, its flusher goroutine starts and nowImported is true.
// Otherwise (a request or ping from that node, on the subscription
// goroutine) a new peer has no flusher: only Port.Send, which needs
// Import, batches records for the flusher; answers are urgent and
// published by their caller. Such a transient peer is forgotten, when
// maxTransientPeers of them exist and another one is needed, so that
// senders under ever new names cannot grow the node without bound.
func (n *Node) peer(name []byte, imported bool) (p *peer, nowImported bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed.Load() {
		return nil, false
	}
	p = n.peers[string(name)]
	if p == nil {
		if !imported && n.transient >= maxTransientPeers {
			n.evictTransient()
		}
		p = newPeer(n, string(name))
		n.peers[p.name] = p
		n.transient++
	}
	if !imported || p.imported.Load() {
		return p, false
	}
	p.imported.Store(true)
	n.transient--
	n.wg.Add(1) // before Close's wg.Wait: Close sets closed under mu
	go p.flusher()
	return p, true
}

// evictTransient removes a peer that was never imported (the first that
// map iteration, which starts at random, finds) from n.peers. Called with
// n.mu held, on the subscription goroutine. The peer object keeps working
// for whoever holds it (a replier answering one of its requests), and the
// next frame from that node creates a new one.
//
// If the evicted peer was down, its down flag is cleared so that downPeers
// counts only peers in n.peers. The down flag of a peer never imported is
// set (noResponders) and cleared (onMsg) only on the subscription
// goroutine, after finding the peer in n.peers, so it cannot change once
// evicted.
func (n *Node) evictTransient() {
	for name, p := range n.peers {
		if p.imported.Load() {
			continue
		}
		delete(n.peers, name)
		n.transient--
		if p.down.Swap(false) {
			n.downPeers.Add(-1)
		}
		return
	}
}

func (n *Node) addExport(name string, ex *export) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed.Load() {
		return ErrClosed
	}
	if !n.exports.add(name, ex) {
		return fmt.Errorf("%w: %q", ErrNameTaken, name)
	}
	return nil
}

// Unexport withdraws the port exported under name: later messages for it are
// refused as for a name never exported. Error: ErrUnknownName.
func (n *Node) Unexport(name string) error {
	if !n.exports.remove(name) {
		return fmt.Errorf("%w: %q", ErrUnknownName, name)
	}
	return nil
}

// warn logs a warning, at most one a second.
func (n *Node) warn(msg string, args ...any) {
	now := time.Now().UnixNano()
	last := n.lastLog.Load()
	if now-last < int64(time.Second) || !n.lastLog.CompareAndSwap(last, now) {
		return
	}
	n.log.Warn(msg, append([]any{"node", n.name}, args...)...)
}

// register records a pending ask and returns its id; false if the
// connection was lost (connLost).
func (n *Node) register(c *call) (uint64, bool) {
	n.callsMu.Lock()
	if n.connLost.Load() {
		n.callsMu.Unlock()
		return 0, false
	}
	id := n.ids.Uint64()
	for id == 0 || n.calls[id] != nil {
		id = n.ids.Uint64()
	}
	n.calls[id] = c
	n.callsMu.Unlock()
	return id, true
}

// unregister removes the pending ask id and reports whether it was still
// pending (nobody completed it).
func (n *Node) unregister(id uint64) bool {
	n.callsMu.Lock()
	_, ok := n.calls[id]
	delete(n.calls, id)
	n.callsMu.Unlock()
	return ok
}

// complete hands the answer r, received on the reply subject of the peer
// from, to the pending ask id. An answer for an ask that gave up, or for
// an ask of another peer (which the peer from never saw), is counted as
// late and dropped; the ask stays pending.
func (n *Node) complete(id uint64, from *peer, r result) {
	n.callsMu.Lock()
	c := n.calls[id]
	if c == nil || c.peer != from {
		n.callsMu.Unlock()
		n.st.lateReplies.Add(1)
		return
	}
	delete(n.calls, id)
	n.callsMu.Unlock()
	c.ch <- r
}

// noResponders handles the server's no-responders status, received on the
// reply subject of the peer p (the server sends it there when a frame
// published to p found no subscription): the peer is marked down (sends
// fail fast and a probe starts), and its pending asks fail.
func (n *Node) noResponders(p *peer) {
	p.markDown()
	var failed []*call
	n.callsMu.Lock()
	for id, c := range n.calls {
		if c.peer == p {
			failed = append(failed, c)
			delete(n.calls, id)
		}
	}
	n.callsMu.Unlock()
	for _, c := range failed {
		n.st.noResponders.Add(1)
		c.ch <- result{code: codeNoResponders}
	}
}

// onMsg receives every NATS message on the node's subjects, on the one
// goroutine of the subscription, in the order the server delivers them.
// The subject says who sent it, as far as the server's permissions vouch
// for it (see "Security" in the package documentation):
//
//	<prefix>.<self>.<sender>          data: sends, requests and pings from sender
//	<prefix>.<self>.<sender>.<token>  answers from sender: replies, failures, pongs,
//	                                  and the server's "no responders" for sender
//
// where token is the random reply token this node gave the peer sender
// (peer.inbox): an answer on any other subject is refused. onMsg only
// dispatches on the subject: data frames to onData, answers and statuses
// to onAnswer, which check the frame and hand each record to the handler
// of its kind (onSend, onRequest, onPing; onReply, onFailure, onPong,
// onStatus). A subject outside the node's is malformed.
func (n *Node) onMsg(m *nats.Msg) {
	rest, ok := strings.CutPrefix(m.Subject, n.subjectDot)
	if !ok {
		n.malformed(m)
		return
	}
	if sender, token, isAnswer := strings.Cut(rest, "."); isAnswer {
		n.onAnswer(m, sender, token)
	} else {
		n.onData(m, rest)
	}
}

// frameBody checks a frame's version and sender field (which must name the
// node the subject says sent it) and returns a reader of its records.
func (n *Node) frameBody(m *nats.Msg, sender string) (reader, bool) {
	n.st.framesIn.Add(1)
	n.st.bytesIn.Add(uint64(len(m.Data)))
	r := reader{b: m.Data}
	if r.byte() != wireVersion || string(r.bytes()) != sender || r.err != nil {
		return r, false
	}
	return r, true
}

// validReply reports whether reply is the reply subject a node named
// sender gives its frames to this node: "<prefix>.<sender>.<self>.<token>".
// Answers go there and nowhere else, so that a frame cannot have this node
// publish to a subject of a third node.
func (n *Node) validReply(reply, sender string) bool {
	r, ok := strings.CutPrefix(reply, n.prefixDot)
	if ok {
		r, ok = strings.CutPrefix(r, sender)
	}
	if ok {
		r, ok = strings.CutPrefix(r, ".")
	}
	if ok {
		r, ok = strings.CutPrefix(r, n.name)
	}
	if ok {
		r, ok = strings.CutPrefix(r, ".")
	}
	return ok && validToken(r)
}

// onData handles a frame published to <prefix>.<self>.<sender>: one-way
// sends, requests and pings. It checks the frame (version, a sender field
// that names sender, a sequence number, a valid sender name and the reply
// subject validReply wants), takes the sender's peer (which a frame proves
// up), counts the gap in sequence numbers, then hands each record to the
// handler of its kind: onSend, onRequest, onPing. Answers there (replies,
// failures, pongs) are malformed: they come only on the reply subject this
// node gave the sender. A malformed frame is dropped from the first record
// that does not parse on; the records before it were handled.
func (n *Node) onData(m *nats.Msg, sender string) {
	r, ok := n.frameBody(m, sender)
	seq := r.uvarint()
	if !ok || r.err != nil || !validToken(sender) || !n.validReply(m.Reply, sender) {
		n.malformed(m)
		return
	}
	from := n.sender(sender, m.Reply)
	if from == nil {
		return // closed
	}
	if from.down.Load() {
		from.markUp() // a frame from a node proves it is connected again
	}
	n.sequence(from, seq)
	exports := &n.exports
	for len(r.b) > 0 {
		var err error
		switch r.byte() {
		case kindSend:
			err = n.onSend(from, exports, &r)
		case kindRequest:
			err = n.onRequest(from, exports, &r)
		case kindPing:
			err = n.onPing(from)
		default:
			err = errMalformed
		}
		if err != nil {
			n.malformed(m)
			return
		}
	}
}

// onSend handles the body of a send record, read from r, from the peer
// from: name(string) type(4 bytes) payload(string). A body cut short or
// with a string longer than what is left is malformed: it returns
// errMalformed and counts nothing. Otherwise the message is received
// (Stats.Received, and from's expected sequence number moves on) and
// delivered to the port exported under name, if it is exported and of that
// type; else it is refused, counted (Stats.UnknownName or
// Stats.WrongType) and logged. An undecodable payload is the export's to
// count (Stats.DecodeErrors), not malformed here.
func (n *Node) onSend(from *peer, exports *exportTable, r *reader) error {
	name := r.bytes()
	hash := r.u32()
	payload := r.bytes()
	if r.err != nil {
		return r.err
	}
	n.st.received.Add(1)
	from.rxNext++
	if ex, _ := n.exportFor(exports, name, hash, false, from.name); ex != nil {
		ex.send(payload)
	}
	return nil
}

// onRequest handles the body of a request record, read from r, from the
// peer from: name(string) type(4 bytes) id(uvarint) timeout-µs(uvarint)
// payload(string). A body cut short, with a varint that does not end or
// a string longer than what is left, is malformed: it returns errMalformed
// and counts nothing. Otherwise the request is received (Stats.Received,
// and from's expected sequence number moves on) and handed to the request
// port exported under name, with its timeout saturated (wireTimeout); if
// name is not exported, or not as a request port of that type, it is
// refused, counted, logged and failed back to from (codeUnknownName,
// codeWrongType).
func (n *Node) onRequest(from *peer, exports *exportTable, r *reader) error {
	name := r.bytes()
	hash := r.u32()
	id := r.uvarint()
	tmo := r.uvarint()
	payload := r.bytes()
	if r.err != nil {
		return r.err
	}
	n.st.received.Add(1)
	from.rxNext++
	ex, code := n.exportFor(exports, name, hash, true, from.name)
	if ex == nil {
		from.fail(id, code, string(name))
		return nil
	}
	ex.request(from, id, wireTimeout(tmo), payload)
	return nil
}

// exportFor returns the export of exports that a send or (request set) a
// request record from the node sender names, with its type's hash. If
// there is none it returns nil and the failure code to answer a request
// with, after counting and logging the refusal: codeUnknownName for a name
// not exported, codeWrongType for another type, or for a request to a port
// exported for one-way sends.
func (n *Node) exportFor(exports *exportTable, name []byte, hash uint32, request bool, sender string) (*export, byte) {
	ex := exports.lookup(name)
	switch {
	case ex == nil:
		n.st.unknownName.Add(1)
		n.warn("remote: message for a name not exported, refused", "name", string(name), "from", sender)
		return nil, codeUnknownName
	case ex.hash != hash || (request && ex.request == nil):
		n.st.wrongType.Add(1)
		n.warn("remote: message of the wrong type, refused", "name", string(name), "from", sender)
		return nil, codeWrongType
	}
	return ex, 0
}

// onPing handles a ping record (it has no body, so it is never malformed)
// from the peer from: it answers with a pong, in a frame of its own to the
// reply subject of the ping's frame. Pings are not numbered: from's
// expected sequence number stays.
func (n *Node) onPing(from *peer) error {
	_ = from.answer([]byte{kindPong}, nil, false)
	return nil
}

// sequence checks the sequence number seq of a data frame from the peer
// p: the messages between the last one received and seq never came (lost
// in a server restart, a slow-consumer cut-off, dropped here...) and are
// counted and logged. A smaller seq than expected is the sender's new
// incarnation (restarted under the same name, numbering from 0 again):
// what its previous one lost at the end is not known. The first frame
// from a peer (or after its peer was evicted) sets where counting starts.
// On the subscription goroutine only.
func (n *Node) sequence(p *peer, seq uint64) {
	if p.rxSeen && seq > p.rxNext {
		lost := seq - p.rxNext
		n.st.lost.Add(lost)
		n.warn("remote: messages from a node never arrived (a NATS server restart or a slow consumer?), lost", "from", p.name, "lost", lost)
	}
	p.rxNext, p.rxSeen = seq, true
}

// sender returns the peer for the node named name, which sent a frame with
// the (valid) reply subject reply, creating it if need be; nil once the
// node is closed. The peer's answers go to reply from now on.
func (n *Node) sender(name, reply string) *peer {
	p, _ := n.peer([]byte(name), false)
	if p != nil {
		if r := p.replyTo.Load(); r == nil || *r != reply {
			p.replyTo.Store(&reply)
		}
	}
	return p
}

// onAnswer handles a message on <prefix>.<self>.<sender>.<token>, the reply
// subject of the frames this node publishes to sender. If token is the
// peer's, it takes the server's "no responders" status for sender
// (onStatus), or a frame from sender (version and a sender field that
// names sender), which proves the peer up, and hands each of its records
// to the handler of its kind: onReply, onFailure, onPong. Anything else is
// malformed: an answer on another token (made up, or given to a previous
// incarnation of this node), data records (sends, requests, pings), and a
// status anywhere else. This node's own pong to another Connect's check
// of its name (claimName) is dropped without a count. A malformed frame is
// dropped from the first record that does not parse on; the records before
// it were handled.
func (n *Node) onAnswer(m *nats.Msg, sender, token string) {
	n.mu.Lock()
	p := n.peers[sender]
	n.mu.Unlock()
	if p == nil || subtle.ConstantTimeCompare([]byte(token), []byte(p.token)) != 1 {
		if sender == n.name {
			// This node's own pong to another Connect's check of the
			// name (claimName), heard on its own subjects: not malformed.
			return
		}
		n.st.framesIn.Add(1)
		n.malformed(m)
		return
	}
	if len(m.Data) == 0 && m.Header != nil {
		n.st.framesIn.Add(1)
		if err := n.onStatus(p, m.Header); err != nil {
			n.malformed(m)
		}
		return
	}
	r, ok := n.frameBody(m, sender)
	if !ok {
		n.malformed(m)
		return
	}
	if p.down.Load() {
		p.markUp() // it answered: it is up
	}
	for len(r.b) > 0 {
		var err error
		switch r.byte() {
		case kindReply:
			err = n.onReply(p, &r)
		case kindFailure:
			err = n.onFailure(p, &r)
		case kindPong:
			err = n.onPong(p)
		default:
			err = errMalformed
		}
		if err != nil {
			n.malformed(m)
			return
		}
	}
}

// onStatus handles a NATS status message (no data, a header) on the reply
// subject of the peer p, which the server sends there when a frame
// published to p found no subscription: status 503, "no responders",
// marks p down and fails its pending asks (noResponders). Any other status
// (or none) is malformed: it returns errMalformed and changes nothing.
func (n *Node) onStatus(p *peer, h nats.Header) error {
	if h.Get("Status") != "503" {
		return errMalformed
	}
	n.noResponders(p)
	return nil
}

// onReply handles the body of a reply record, read from r, from the peer
// p: id(uvarint) payload(string). A body cut short, with a varint that
// does not end or a string longer than what is left, is malformed: it
// returns errMalformed and completes nothing. Otherwise the payload
// completes the pending ask id if p was asked it (complete); an answer to
// no such ask is late (Stats.LateReplies) and dropped, not malformed.
func (n *Node) onReply(p *peer, r *reader) error {
	id := r.uvarint()
	payload := r.bytes()
	if r.err != nil {
		return r.err
	}
	n.complete(id, p, result{payload: payload})
	return nil
}

// onFailure handles the body of a failure record, read from r, from the
// peer p: id(uvarint) code(1 byte) text(string). A body cut short, with a
// varint that does not end or a string longer than what is left, is
// malformed: it returns errMalformed and completes nothing. Otherwise it
// fails the pending ask id if p was asked it (complete), with the code, or
// codeOther for 0 and the local codes (codeConnClosed and above) that no
// node sends; an answer to no such ask is late (Stats.LateReplies) and
// dropped, not malformed.
func (n *Node) onFailure(p *peer, r *reader) error {
	id := r.uvarint()
	code := r.byte()
	text := r.bytes()
	if r.err != nil {
		return r.err
	}
	if code == 0 || code >= codeConnClosed {
		code = codeOther
	}
	n.complete(id, p, result{code: code, text: string(text)})
	return nil
}

// onPong handles a pong record from the peer p, the answer to a probe
// (prober) or to claimName's ping. It has no body, so it is never
// malformed, and does nothing of its own: the frame that carried it marked
// p up, as any answer frame from p does.
func (n *Node) onPong(p *peer) error {
	return nil
}

func (n *Node) malformed(m *nats.Msg) {
	n.st.decodeErrors.Add(1)
	n.warn("remote: malformed frame dropped", "bytes", len(m.Data))
}

// decodeFailed counts and logs a payload that did not decode (a dead letter).
func (n *Node) decodeFailed(name string, err error) {
	n.st.decodeErrors.Add(1)
	n.warn("remote: undecodable message dropped", "name", name, "err", err)
}

// deadLetter counts and logs a decoded message that the local port refused.
func (n *Node) deadLetter(name string, err error) {
	n.st.deadLetters.Add(1)
	n.warn("remote: message not delivered to the local port", "name", name, "err", err)
}

// failureErr turns a failure code from the wire into an error.
func failureErr(code byte, text string) error {
	switch code {
	case codeUnknownName:
		return fmt.Errorf("%w (%w): %q", ErrUnknownName, ErrRemote, text)
	case codeWrongType:
		return fmt.Errorf("%w (%w): %q", ErrWrongType, ErrRemote, text)
	case codeDecode:
		return fmt.Errorf("%w (%w): %s", ErrDecode, ErrRemote, text)
	case codeEncode:
		return fmt.Errorf("%w (%w): %s", ErrEncode, ErrRemote, text)
	case codeTerminated:
		return fmt.Errorf("%w (%w)", actor.ErrTerminated, ErrRemote)
	case codeUndelivered:
		return fmt.Errorf("%w (%w, %w)", actor.ErrTerminated, ErrNotDelivered, ErrRemote)
	case codeRefused:
		return fmt.Errorf("%w (%w): %s", ErrNotDelivered, ErrRemote, text)
	case codeStopped:
		return fmt.Errorf("%w (%w)", actor.ErrStopped, ErrRemote)
	case codeDeadline:
		return fmt.Errorf("%w (%w)", context.DeadlineExceeded, ErrRemote)
	case codeClosed:
		return ErrClosed
	case codeConnClosed:
		return errConnClosed
	case codeNoResponders:
		return ErrNoResponders
	}
	return fmt.Errorf("%w: %s", ErrRemote, text)
}

// failureCode is the code sent for a local error.
func failureCode(err error) byte {
	switch {
	case errors.Is(err, ErrNotDelivered):
		if errors.Is(err, actor.ErrTerminated) {
			return codeUndelivered
		}
		return codeRefused
	case errors.Is(err, actor.ErrTerminated), errors.Is(err, actor.ErrNotSpawned):
		return codeTerminated
	case errors.Is(err, actor.ErrStopped), errors.Is(err, actor.ErrNotStarted):
		return codeStopped
	case errors.Is(err, context.DeadlineExceeded):
		return codeDeadline
	}
	return codeOther
}
