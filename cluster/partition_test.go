package cluster_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/actord/actord/cluster"
)

// proxy is a TCP relay between one member and the NATS server that can
// hold every byte in both directions (a silent partition: nothing is
// closed or refused, the member's client still believes it is connected)
// and let them through again (the partition heals: nothing was lost).
type proxy struct {
	ln     net.Listener
	target string

	// mu guards gate and conns: gate is nil while traffic flows, and a
	// channel closed at the heal while it is held; conns are the relayed
	// connections, closed by close.
	mu    sync.Mutex
	gate  chan struct{}
	conns []net.Conn
	wg    sync.WaitGroup
}

func startProxy(t testing.TB, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *proxy) url() string { return "nats://" + p.ln.Addr().String() }

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Go(func() { p.relay(s, c) })
		p.wg.Go(func() { p.relay(c, s) })
	}
}

// relay copies from src to dst, waiting at the gate before each write.
func (p *proxy) relay(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			gate := p.gate
			p.mu.Unlock()
			if gate != nil {
				<-gate
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			return
		}
	}
}

func (p *proxy) partition() {
	p.mu.Lock()
	if p.gate == nil {
		p.gate = make(chan struct{})
	}
	p.mu.Unlock()
}

func (p *proxy) heal() {
	p.mu.Lock()
	if p.gate != nil {
		close(p.gate)
		p.gate = nil
	}
	p.mu.Unlock()
}

func (p *proxy) close() {
	p.heal()
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// A member is cut off from the server by a silent partition (its bytes
// held, its connection open) while the others keep asking its entities:
// it fences its activations before its lease can expire, the others take
// the entities over once its key expired, and when the partition heals
// (the held bytes, stale claims and refreshes included, arrive late) it
// joins again under a new incarnation; no id ever had two activations, and
// every member reaches the one activation of each id afterwards.
func TestPartitionHeal(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	const ttl = 2 * time.Second
	px := startProxy(t, fmt.Sprintf("127.0.0.1:%d", ns.opts.Port))
	nodes := []*cnode{
		startNode(t, ns.url(), "n0", reg, nodeConfig{ttl: ttl, host: true}),
		startNode(t, ns.url(), "n1", reg, nodeConfig{ttl: ttl, host: true}),
		startNode(t, px.url(), "n2", reg, nodeConfig{ttl: ttl, host: true}),
	}
	for _, n := range nodes {
		waitFor(t, 3*time.Second, n.name+" sees 3", func() bool { return len(n.c.Members()) == 3 })
	}
	ids := make([]string, 200)
	for i := range ids {
		ids[i] = "p" + strconv.Itoa(i)
	}
	owner := askAll(t, nodes, ids, 4)
	cut := nodes[2]
	inc := cut.c.Incarnation()
	var theirs []string
	for id, o := range owner {
		if o == cut.name {
			theirs = append(theirs, id)
		}
	}

	px.partition()
	start := time.Now()
	waitFor(t, 2*ttl, "the cut member fences its activations", func() bool { return cut.k.LocalCount() == 0 })
	t.Logf("fenced %v after the partition (%d activations)", time.Since(start), len(theirs))
	// The others reach its entities on themselves after its key expired.
	ctx, cancel := context.WithTimeout(context.Background(), 20*ttl)
	defer cancel()
	for _, id := range theirs {
		for {
			r, err := nodes[0].k.Ask(ctx, id, &Hit{})
			if err == nil {
				if r.Node == cut.name {
					t.Fatalf("%s answered by the cut member", id)
				}
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: %v", id, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Logf("its entities answered elsewhere %v after the partition", time.Since(start))

	px.heal()
	waitFor(t, 10*ttl, "the cut member joined again under a new incarnation, seen by all", func() bool {
		cur := cut.c.Incarnation()
		if cur == inc {
			return false
		}
		for _, n := range nodes {
			ms := n.c.Members()
			i := slices.IndexFunc(ms, func(m cluster.Member) bool { return m.Node == cut.name })
			if len(ms) != 3 || i < 0 || ms[i].Incarnation != cur {
				return false
			}
		}
		return true
	})
	after := askAll(t, nodes, ids, 4)
	for _, id := range theirs {
		if after[id] == cut.name {
			t.Errorf("%s back on the cut member", id)
		}
	}
	reg.check(t)
}

// Leave racing the fence: a member cut off from the server that begins
// to Leave shortly before its fence would fire waits for its leaving
// write (bounded by 4/5 TTL) before it stops its activations. Its fence
// stays armed meanwhile and stops them at the lease's end, so that the
// member that takes the id over (once the key expired) never runs it
// alongside.
func TestLeaveDuringPartitionFencesAtLease(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	const ttl = 2 * time.Second
	px := startProxy(t, fmt.Sprintf("127.0.0.1:%d", ns.opts.Port))
	n0 := startSlow(t, ns.url(), "n0", reg, ttl, true)
	n2 := startSlow(t, px.url(), "n2", reg, ttl, true)
	waitMembers(t, 2, n0, n2)
	id := idPlacedOn("lv-", "n2", "n0", "n2")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if r, err := n0.k.Ask(ctx, id, &Op{}); err != nil || r.Node != "n2" {
		t.Fatalf("first ask: %+v %v", r, err)
	}
	px.partition()
	start := time.Now()
	// The fence would fire between 0.55 and 0.8 TTL after the partition
	// (4/5 TTL after the last refresh sent, at most TTL/4 before it).
	time.Sleep(ttl / 2)
	leaveCtx, leaveCancel := context.WithTimeout(ctx, 2*ttl)
	defer leaveCancel()
	left := make(chan struct{})
	go func() { defer close(left); _ = n2.c.Leave(leaveCtx) }()
	for ctx.Err() == nil {
		actx, acancel := context.WithTimeout(ctx, 150*time.Millisecond)
		r, err := n0.k.Ask(actx, id, &Op{})
		acancel()
		if err == nil && r.Node == "n0" {
			t.Logf("taken over by n0 %v after the partition", time.Since(start))
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	reg.check(t)
	px.heal()
	<-left
}
