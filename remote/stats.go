package remote

import (
	"sync/atomic"
	"time"
)

// Stats are a node's counters since Connect. Messages are records (one-way
// sends, requests); frames are the NATS messages that carry them.
type Stats struct {
	Sent          uint64 // messages and requests handed to NATS by Send and Ask
	Received      uint64 // messages and requests received (refused ones included)
	FramesSent    uint64 // NATS messages published
	FramesRecv    uint64 // NATS messages received
	BytesSent     uint64 // bytes of frames published
	BytesRecv     uint64 // bytes of frames received
	EncodeErrors  uint64 // messages or replies the codec failed to encode
	DecodeErrors  uint64 // payloads or frames that failed to decode (dropped, logged)
	UnknownName   uint64 // received messages for names this node does not export
	WrongType     uint64 // received messages of another type than the export's
	DeadLetters   uint64 // decoded messages the local port refused (actor terminated, system stopped)
	NoResponders  uint64 // sends and asks failed with ErrNoResponders
	PublishErrors uint64 // frames NATS refused to publish (connection closed or its buffer full)
	AsksPending   uint64 // asks waiting for an answer
	AsksTimedOut  uint64 // asks ended by their deadline: their context, or the serving node's timeout taken from it
	LateReplies   uint64 // answers that came after their ask gave up
	Dropped       uint64 // frames dropped by the NATS client as a slow consumer
	// LostMessages counts messages and requests from other nodes that
	// never arrived, found by the gaps in their per-link sequence numbers
	// (see "Delivery" in the package documentation): lost in a NATS server
	// restart, a slow-consumer cut-off, a frame NATS refused to publish, or
	// dropped here (Dropped).
	LostMessages uint64
	Disconnects  uint64 // times the NATS connection was lost (a server restart, a slow-consumer cut-off...), logged
	PeersDown    uint64 // nodes currently found to have no responders (0 once the node is closed)
	// AskLatency is the distribution of remote ask durations, from send to
	// answer or failure (context endings excluded).
	AskLatency Histogram
}

// Histogram is a non-cumulative histogram: Counts[i] counts the
// observations at most Bounds[i] and above Bounds[i-1]; the last count, those
// above every bound.
type Histogram struct {
	Bounds []float64 // seconds, increasing
	Counts []uint64  // len(Bounds)+1
	Sum    float64   // seconds
	Count  uint64
}

// AskLatencyBounds are the bounds of Stats.AskLatency, in seconds.
var AskLatencyBounds = []float64{25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1, 2.5, 5}

// counters are the node's statistics: each an atomic counter, written by
// whichever goroutine does the counted thing, read by Stats.
type counters struct {
	sent, received, framesOut, framesIn, bytesOut, bytesIn atomic.Uint64
	encodeErrors, decodeErrors, unknownName, wrongType     atomic.Uint64
	deadLetters, noResponders, publishErrors               atomic.Uint64
	asksTimedOut, lateReplies                              atomic.Uint64
	lost, disconnects                                      atomic.Uint64
	latCounts                                              []atomic.Uint64
	latSum                                                 atomic.Int64 // nanoseconds
}

func (c *counters) init() { c.latCounts = make([]atomic.Uint64, len(AskLatencyBounds)+1) }

func (c *counters) observe(d time.Duration) {
	s := d.Seconds()
	i := 0
	for i < len(AskLatencyBounds) && s > AskLatencyBounds[i] {
		i++
	}
	c.latCounts[i].Add(1)
	c.latSum.Add(int64(d))
}

// Stats returns a snapshot of the node's counters (each read atomically,
// not all at one instant).
func (n *Node) Stats() Stats {
	c := &n.st
	s := Stats{
		Sent: c.sent.Load(), Received: c.received.Load(),
		FramesSent: c.framesOut.Load(), FramesRecv: c.framesIn.Load(),
		BytesSent: c.bytesOut.Load(), BytesRecv: c.bytesIn.Load(),
		EncodeErrors: c.encodeErrors.Load(), DecodeErrors: c.decodeErrors.Load(),
		UnknownName: c.unknownName.Load(), WrongType: c.wrongType.Load(),
		DeadLetters: c.deadLetters.Load(), NoResponders: c.noResponders.Load(),
		PublishErrors: c.publishErrors.Load(),
		AsksTimedOut:  c.asksTimedOut.Load(), LateReplies: c.lateReplies.Load(),
		LostMessages: c.lost.Load(), Disconnects: c.disconnects.Load(),
	}
	n.callsMu.Lock()
	s.AsksPending = uint64(len(n.calls))
	n.callsMu.Unlock()
	if d, err := n.sub.Dropped(); err == nil && d > 0 {
		s.Dropped = uint64(d)
	}
	if !n.closed.Load() {
		s.PeersDown = uint64(max(n.downPeers.Load(), 0))
	}
	h := Histogram{Bounds: AskLatencyBounds, Counts: make([]uint64, len(c.latCounts))}
	for i := range c.latCounts {
		h.Counts[i] = c.latCounts[i].Load()
		h.Count += h.Counts[i]
	}
	h.Sum = time.Duration(c.latSum.Load()).Seconds()
	s.AskLatency = h
	return s
}
