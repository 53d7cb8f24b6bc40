package remote_test

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/remote"
	"github.com/nats-io/nats.go"
)

// The benchmarks put each remote operation beside raw nats.go doing the
// same work through the same embedded server, in the same run:
//
//	go test -run XXX -bench . -count 5 . > bench.txt
//	go run golang.org/x/perf/cmd/benchstat@latest -col /impl bench.txt

// BenchmarkRequestReply is one request/reply round trip between two
// connections: raw nats.go Request and Respond, and remote Ask of an actor
// on another node (another system) that replies.
func BenchmarkRequestReply(b *testing.B) {
	url := startNATS(b, 0)
	b.Run("impl=raw", func(b *testing.B) {
		srv, cli := natsConn(b, url), natsConn(b, url)
		sub, err := srv.Subscribe("echo", func(m *nats.Msg) { m.Respond(m.Data) })
		must(b, err)
		defer sub.Unsubscribe()
		must(b, srv.Flush())
		payload := []byte("hello")
		b.ResetTimer()
		for b.Loop() {
			if _, err := cli.Request("echo", payload, 5*time.Second); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=remote", func(b *testing.B) { benchAsk(b, url, startSystem(b)) })
}

// BenchmarkRequestReplyInterleaved runs the two round trips of
// BenchmarkRequestReply alternately, in blocks of 64, in one run: on a
// shared machine whose load drifts both see the same load, and remote/raw
// (the ratio of their total times) is steadier than the ratio of two
// separate benchmarks. ns/op is the time of one raw and one remote round
// trip.
func BenchmarkRequestReplyInterleaved(b *testing.B) {
	url := startNATS(b, 0)
	srv, cli := natsConn(b, url), natsConn(b, url)
	sub, err := srv.Subscribe("echo", func(m *nats.Msg) { m.Respond(m.Data) })
	must(b, err)
	defer sub.Unsubscribe()
	must(b, srv.Flush())
	payload := []byte("hello")

	sysA, sysB := startSystem(b), startSystem(b)
	a := connect(b, sysA, url, "a")
	n := connect(b, sysB, url, "b")
	store := serveStore(b, sysB, n)
	c := importStore(b, a, "b")
	ctx := context.Background()
	req := &Echo{S: "hello"}

	const block = 64
	var raw, rem time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i += block {
		k := min(block, b.N-i)
		start := time.Now()
		for range k {
			if _, err := cli.Request("echo", payload, 5*time.Second); err != nil {
				b.Fatal(err)
			}
		}
		mid := time.Now()
		for range k {
			if _, err := c.echo.Ask(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
		raw += mid.Sub(start)
		rem += time.Since(mid)
	}
	b.StopTimer()
	b.ReportMetric(float64(raw.Nanoseconds())/float64(b.N), "raw-ns/op")
	b.ReportMetric(float64(rem.Nanoseconds())/float64(b.N), "remote-ns/op")
	b.ReportMetric(float64(rem)/float64(raw), "remote/raw")
	must(b, actor.SendPill(store, actor.FinishedMsg))
	a.Close()
	n.Close()
	stopSystem(b, sysA)
	stopSystem(b, sysB)
}

func benchAsk(b *testing.B, url string, sysB *actor.System) {
	{
		sysA := startSystem(b)
		a := connect(b, sysA, url, "a")
		n := connect(b, sysB, url, "b")
		store := serveStore(b, sysB, n)
		c := importStore(b, a, "b")
		ctx := context.Background()
		req := &Echo{S: "hello"}
		b.ResetTimer()
		for b.Loop() {
			if _, err := c.echo.Ask(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		must(b, actor.SendPill(store, actor.FinishedMsg))
		a.Close()
		n.Close()
		stopSystem(b, sysA)
		stopSystem(b, sysB)
	}
}

// BenchmarkOneWay is the throughput of small one-way messages from one
// sender to one receiver, the time per message until the last has arrived:
// raw nats.go Publish to a subscription that counts, and remote Port.Send to
// an actor that counts.
func BenchmarkOneWay(b *testing.B) {
	url := startNATS(b, 0)
	b.Run("impl=raw", func(b *testing.B) {
		srv, cli := natsConn(b, url), natsConn(b, url)
		var got atomic.Int64
		done := make(chan struct{}, 1)
		target := int64(b.N)
		sub, err := srv.Subscribe("sink", func(*nats.Msg) {
			if got.Add(1) == target {
				done <- struct{}{}
			}
		})
		must(b, err)
		must(b, sub.SetPendingLimits(-1, -1))
		defer sub.Unsubscribe()
		must(b, srv.Flush())
		payload := []byte{1, 2, 3, 4, 5, 6, 7, 8}
		b.ResetTimer()
		for range b.N {
			if err := cli.Publish("sink", payload); err != nil {
				b.Fatal(err)
			}
		}
		waitDone(b, done)
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msg/s")
		if d, _ := sub.Dropped(); d > 0 {
			b.Fatalf("%d dropped", d)
		}
	})
	b.Run("impl=remote", func(b *testing.B) {
		sysA, sysB := startSystem(b), startSystem(b)
		a := connect(b, sysA, url, "a")
		n := connect(b, sysB, url, "b")
		sink, err := actor.Spawn(sysB, &Sink{target: b.N, done: make(chan struct{}, 1)})
		must(b, err)
		p, _ := actor.Bind(sink, (*Sink).OnAdd)
		must(b, remote.Export(n, "sink", p, remote.CBOR[*Add]()))
		port, err := remote.Import(a, "b", "sink", remote.CBOR[*Add]())
		must(b, err)
		msg := &Add{N: 12345}
		b.ResetTimer()
		for range b.N {
			if err := port.Send(msg); err != nil {
				b.Fatal(err)
			}
		}
		waitDone(b, sink.done)
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msg/s")
		b.StopTimer()
		must(b, actor.SendPill(sink, actor.FinishedMsg))
		a.Close()
		n.Close()
		stopSystem(b, sysA)
		stopSystem(b, sysB)
	})
}

type Sink struct {
	actor.Actor
	n, target int
	done      chan struct{}
}

func (s *Sink) OnAdd(*Add) actor.Allocation {
	if s.n++; s.n == s.target {
		s.done <- struct{}{}
	}
	return actor.Nodelete
}

func (s *Sink) OnLabel(*Label) actor.Allocation { return s.OnAdd(nil) }

func natsConn(b *testing.B, url string) *nats.Conn {
	nc, err := nats.Connect(url)
	must(b, err)
	b.Cleanup(nc.Close)
	return nc
}

func waitDone(b *testing.B, done chan struct{}) {
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		b.Fatal("messages lost")
	}
}

// BenchmarkRequestReplyHandoff interleaves, in blocks of 64, three round
// trips: raw nats.go request/reply; the same with the responder's handler
// handing each request to a goroutine locked to its OS thread that
// responds (the hop a remote ask takes through the serving system's
// worker, without the executor); and remote Ask. It reports each one's
// time per round trip and their ratios to raw: if handoff/raw is close to
// remote/raw, the remote round trip's extra time is that hop, not the
// remote package's own work.
func BenchmarkRequestReplyHandoff(b *testing.B) {
	url := startNATS(b, 0)
	srv, cli := natsConn(b, url), natsConn(b, url)
	sub, err := srv.Subscribe("echo", func(m *nats.Msg) { m.Respond(m.Data) })
	must(b, err)
	defer sub.Unsubscribe()
	reqs := make(chan *nats.Msg, 1)
	stopped := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer close(stopped)
		for m := range reqs {
			m.Respond(m.Data)
		}
	}()
	defer func() { close(reqs); <-stopped }()
	sub2, err := srv.Subscribe("echo2", func(m *nats.Msg) { reqs <- m })
	must(b, err)
	defer sub2.Unsubscribe()
	must(b, srv.Flush())
	payload := []byte("hello")

	sysA, sysB := startSystem(b), startSystem(b)
	a := connect(b, sysA, url, "a")
	n := connect(b, sysB, url, "b")
	store := serveStore(b, sysB, n)
	c := importStore(b, a, "b")
	ctx := context.Background()
	req := &Echo{S: "hello"}

	const block = 64
	var raw, hop, rem time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i += block {
		k := min(block, b.N-i)
		t0 := time.Now()
		for range k {
			if _, err := cli.Request("echo", payload, 5*time.Second); err != nil {
				b.Fatal(err)
			}
		}
		t1 := time.Now()
		for range k {
			if _, err := cli.Request("echo2", payload, 5*time.Second); err != nil {
				b.Fatal(err)
			}
		}
		t2 := time.Now()
		for range k {
			if _, err := c.echo.Ask(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
		raw += t1.Sub(t0)
		hop += t2.Sub(t1)
		rem += time.Since(t2)
	}
	b.StopTimer()
	b.ReportMetric(float64(raw.Nanoseconds())/float64(b.N), "raw-ns/op")
	b.ReportMetric(float64(hop.Nanoseconds())/float64(b.N), "handoff-ns/op")
	b.ReportMetric(float64(rem.Nanoseconds())/float64(b.N), "remote-ns/op")
	b.ReportMetric(float64(hop)/float64(raw), "handoff/raw")
	b.ReportMetric(float64(rem)/float64(raw), "remote/raw")
	must(b, actor.SendPill(store, actor.FinishedMsg))
	a.Close()
	n.Close()
	stopSystem(b, sysA)
	stopSystem(b, sysB)
}

// BenchmarkExportMany exports n ports under distinct names on one node, then
// unexports them all, as the cluster module does with one port per
// activation. ns/export is the cost of one Export plus its Unexport; it
// should not grow with n.
func BenchmarkExportMany(b *testing.B) {
	url := startNATS(b, 0)
	sys := startSystem(b)
	nd := connect(b, sys, url, "b")
	sink, err := actor.Spawn(sys, &Sink{done: make(chan struct{}, 1)})
	must(b, err)
	p, _ := actor.Bind(sink, (*Sink).OnAdd)
	codec := remote.CBOR[*Add]()
	for _, n := range []int{1_000, 10_000} {
		names := make([]string, n)
		for i := range names {
			names[i] = "p" + strconv.Itoa(i)
		}
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				for _, name := range names {
					must(b, remote.Export(nd, name, p, codec))
				}
				for _, name := range names {
					must(b, nd.Unexport(name))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/export")
		})
	}
	must(b, actor.SendPill(sink, actor.FinishedMsg))
	nd.Close()
	stopSystem(b, sys)
}
