package cluster_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// benchNodes starts two hosting members, n0 and n1, on one embedded server.
func benchNodes(b *testing.B) []*cnode {
	ns := startNATS(b)
	reg := newRegistry()
	return startNodes(b, ns.url(), reg, 2, nodeConfig{ttl: 5 * time.Second, host: true})
}

// idOn returns an id that placement puts on node (asked from asker).
func idOn(b *testing.B, ctx context.Context, asker *cnode, node string) string {
	for i := 0; ; i++ {
		id := "b" + strconv.Itoa(i)
		r, err := asker.k.Ask(ctx, id, &Hit{})
		if err != nil {
			b.Fatal(err)
		}
		if r.Node == node {
			return id
		}
	}
}

// BenchmarkActivation: one op is an Ask of a new id from n0, which claims
// its key and activates it on the member placement chooses (n0 or n1,
// about half each), then answers.
func BenchmarkActivation(b *testing.B) {
	nodes := benchNodes(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := nodes[0].k.Ask(ctx, "a"+strconv.Itoa(i), &Hit{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAsk compares one request and reply: to an entity on this member
// (Kind.Ask: local port, no key read), to an entity on the other member
// through Kind.Ask (a key read, then the remote ask) and through the port
// Get returned (the remote ask only), and a raw NATS request and reply
// between the two members' connections (the floor).
func BenchmarkAsk(b *testing.B) {
	nodes := benchNodes(b)
	ctx := context.Background()
	local := idOn(b, ctx, nodes[0], "n0")
	remote := idOn(b, ctx, nodes[0], "n1")
	b.Run("local", func(b *testing.B) {
		for b.Loop() {
			if _, err := nodes[0].k.Ask(ctx, local, &Hit{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("remote-kind-ask", func(b *testing.B) {
		for b.Loop() {
			if _, err := nodes[0].k.Ask(ctx, remote, &Hit{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("remote-port", func(b *testing.B) {
		p, err := nodes[0].k.Get(ctx, remote)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := p.Ask(ctx, &Hit{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("nats-request", func(b *testing.B) {
		sub, err := nodes[1].node.Conn().Subscribe("bench.echo", func(m *nats.Msg) { _ = m.Respond(m.Data) })
		if err != nil {
			b.Fatal(err)
		}
		defer sub.Unsubscribe()
		if err := nodes[1].node.Conn().Flush(); err != nil { // the subscription is on the server
			b.Fatal(err)
		}
		nc := nodes[0].node.Conn()
		data := []byte("hit")
		for b.Loop() {
			if _, err := nc.Request("bench.echo", data, 5*time.Second); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkEntityMemory: one op activates a new entity on a single member
// (the only host, so placement keeps every entity there); after the loop
// it reports the live heap per activation (B/entity), measured after a
// collection: the actor, its cluster bookkeeping and its remote export,
// not the key-value server's memory.
func BenchmarkEntityMemory(b *testing.B) {
	ns := startNATS(b)
	nodes := startNodes(b, ns.url(), newRegistry(), 1, nodeConfig{ttl: 5 * time.Second, host: true})
	ctx := context.Background()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	n := 0
	for b.Loop() {
		if _, err := nodes[0].k.Ask(ctx, "m"+strconv.Itoa(n), &Hit{}); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(n), "B/entity")
}
