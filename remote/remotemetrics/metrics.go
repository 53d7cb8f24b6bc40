// Package remotemetrics exports the statistics of remote nodes to
// Prometheus: a prometheus.Collector that reads Node.Stats at scrape time,
// so the nodes count with plain atomic adds and nothing runs between
// scrapes.
//
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(remotemetrics.New(node))
//
// Every metric has a node label (the node's name); several nodes of one
// process may be registered, each with its own collector.
package remotemetrics

import (
	"github.com/actord/actord/remote"
	"github.com/prometheus/client_golang/prometheus"
)

// Metric names, all prefixed actord_remote_.
const (
	MessagesSent     = "actord_remote_messages_sent_total"
	MessagesReceived = "actord_remote_messages_received_total"
	FramesSent       = "actord_remote_frames_sent_total"
	FramesReceived   = "actord_remote_frames_received_total"
	BytesSent        = "actord_remote_sent_bytes_total"
	BytesReceived    = "actord_remote_received_bytes_total"
	EncodeErrors     = "actord_remote_encode_errors_total"
	DecodeErrors     = "actord_remote_decode_errors_total"
	Refused          = "actord_remote_refused_total"
	DeadLetters      = "actord_remote_dead_letters_total"
	NoResponders     = "actord_remote_no_responders_total"
	PublishErrors    = "actord_remote_publish_errors_total"
	DroppedFrames    = "actord_remote_dropped_frames_total"
	LostMessages     = "actord_remote_lost_messages_total"
	Disconnects      = "actord_remote_disconnects_total"
	AsksPending      = "actord_remote_asks_pending"
	AsksTimedOut     = "actord_remote_asks_timed_out_total"
	LateReplies      = "actord_remote_late_replies_total"
	PeersDown        = "actord_remote_peers_down"
	AskDuration      = "actord_remote_ask_duration_seconds"
)

type collector struct {
	n    *remote.Node
	desc map[string]*prometheus.Desc
}

var help = map[string]string{
	MessagesSent:     "Messages and requests sent to other nodes (handed to NATS).",
	MessagesReceived: "Messages and requests received from other nodes, refused ones included.",
	FramesSent:       "NATS messages published; each carries one or more messages.",
	FramesReceived:   "NATS messages received.",
	BytesSent:        "Bytes of NATS messages published.",
	BytesReceived:    "Bytes of NATS messages received.",
	EncodeErrors:     "Messages or replies the codec failed to encode.",
	DecodeErrors:     "Payloads or frames that failed to decode, dropped.",
	Refused:          "Received messages refused: reason is unknown_name (not exported here) or wrong_type.",
	DeadLetters:      "Decoded messages that the local port refused (actor terminated, system stopped).",
	NoResponders:     "Sends and asks that failed because the destination node had no responders.",
	PublishErrors:    "Frames the NATS connection refused to publish; their messages are lost.",
	DroppedFrames:    "Frames dropped by the NATS client because this node fell behind (slow consumer).",
	LostMessages:     "Messages and requests from other nodes that never arrived, found by gaps in their sequence numbers.",
	Disconnects:      "Times the node's NATS connection was lost (server restart, slow-consumer cut-off).",
	AsksPending:      "Asks waiting for their answer.",
	AsksTimedOut:     "Asks ended by their context before an answer came.",
	LateReplies:      "Answers that came after their ask had ended, dropped.",
	PeersDown:        "Nodes this node currently finds without responders.",
	AskDuration:      "Remote ask duration, from send to answer or failure.",
}

// New returns a collector for the node n.
func New(n *remote.Node) prometheus.Collector {
	c := &collector{n: n, desc: make(map[string]*prometheus.Desc)}
	labels := prometheus.Labels{"node": n.Name()}
	for name, h := range help {
		var vars []string
		if name == Refused {
			vars = []string{"reason"}
		}
		c.desc[name] = prometheus.NewDesc(name, h, vars, labels)
	}
	return c
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.desc {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.n.Stats()
	counter := func(name string, v uint64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(c.desc[name], prometheus.CounterValue, float64(v), lv...)
	}
	gauge := func(name string, v uint64) {
		ch <- prometheus.MustNewConstMetric(c.desc[name], prometheus.GaugeValue, float64(v))
	}
	counter(MessagesSent, s.Sent)
	counter(MessagesReceived, s.Received)
	counter(FramesSent, s.FramesSent)
	counter(FramesReceived, s.FramesRecv)
	counter(BytesSent, s.BytesSent)
	counter(BytesReceived, s.BytesRecv)
	counter(EncodeErrors, s.EncodeErrors)
	counter(DecodeErrors, s.DecodeErrors)
	counter(Refused, s.UnknownName, "unknown_name")
	counter(Refused, s.WrongType, "wrong_type")
	counter(DeadLetters, s.DeadLetters)
	counter(NoResponders, s.NoResponders)
	counter(PublishErrors, s.PublishErrors)
	counter(DroppedFrames, s.Dropped)
	counter(LostMessages, s.LostMessages)
	counter(Disconnects, s.Disconnects)
	gauge(AsksPending, s.AsksPending)
	counter(AsksTimedOut, s.AsksTimedOut)
	counter(LateReplies, s.LateReplies)
	gauge(PeersDown, s.PeersDown)
	h := s.AskLatency
	buckets := make(map[float64]uint64, len(h.Bounds))
	var cum uint64
	for i, b := range h.Bounds {
		cum += h.Counts[i]
		buckets[b] = cum
	}
	ch <- prometheus.MustNewConstHistogram(c.desc[AskDuration], h.Count, h.Sum, buckets)
}

// Names returns the names of the metrics the collector exports, the
// histogram's _bucket, _sum and _count series included.
func Names() []string {
	var ns []string
	for name := range help {
		if name == AskDuration {
			ns = append(ns, name+"_bucket", name+"_sum", name+"_count")
			continue
		}
		ns = append(ns, name)
	}
	return ns
}
