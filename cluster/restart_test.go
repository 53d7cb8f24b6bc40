package cluster_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/cluster"
)

// The NATS server is down for longer than the TTL, then restarts (same
// port, same JetStream store): every member's lease lapses, so each fences
// its activations; once the server is back the members reconnect, join
// again under new incarnations, their watches are restarted and their
// views show every member's new incarnation; entities are reachable again,
// each activated anew, never two at once.
func TestNATSServerRestart(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	const ttl = 2 * time.Second
	nodes := startNodes(t, ns.url(), reg, 3, nodeConfig{ttl: ttl, host: true})
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = "r" + strconv.Itoa(i)
	}
	askAll(t, nodes, ids, 4)

	incs := map[string]string{}
	for _, n := range nodes {
		incs[n.name] = n.c.Incarnation()
	}
	ns.stop()
	waitFor(t, 2*ttl, "every activation fenced while the server is down", func() bool {
		for _, n := range nodes {
			if n.k.LocalCount() != 0 {
				return false
			}
		}
		return true
	})
	time.Sleep(ttl)
	ns.start()
	start := time.Now()
	for _, n := range nodes {
		waitFor(t, 10*ttl, n.name+" sees every member's new incarnation", func() bool {
			ms := n.c.Members()
			if !slices.Equal(memberNames(n.c), []string{"n0", "n1", "n2"}) {
				return false
			}
			for i, m := range ms {
				cur := nodes[i].c.Incarnation()
				if m.Incarnation != cur || cur == incs[m.Node] {
					return false
				}
			}
			return true
		})
	}
	t.Logf("views whole %v after the server came back", time.Since(start))
	waitFor(t, 10*ttl, "every entity answers from every node", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), ttl)
		defer cancel()
		for _, n := range nodes {
			for _, id := range ids {
				if _, err := n.k.Ask(ctx, id, &Hit{}); err != nil {
					return false
				}
			}
		}
		return true
	})
	reg.check(t)
}

// Guard is the test singleton: it counts its live instances.
type Guard struct {
	actor.Actor
	live *singletonCount
}

type singletonCount struct {
	mu       sync.Mutex
	live     int
	max      int
	starts   int
	lastNode string
}

func (g *Guard) Started() {
	g.live.mu.Lock()
	g.live.live++
	g.live.starts++
	g.live.max = max(g.live.max, g.live.live)
	g.live.mu.Unlock()
}

func (g *Guard) Stopped(actor.Reason) {
	g.live.mu.Lock()
	g.live.live--
	g.live.mu.Unlock()
}

// One singleton instance cluster-wide: one candidate holds the key and
// runs it; when the holder dies (its connection closed), another takes
// over after the key expires; when a holder leaves, another takes over
// at once; two never run at once.
func TestSingletonFailover(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	const ttl = 2 * time.Second
	nodes := startNodes(t, ns.url(), reg, 3, nodeConfig{ttl: ttl})
	count := &singletonCount{}
	singles := make([]*cluster.Singleton, len(nodes))
	for i, n := range nodes {
		s, err := cluster.RunSingleton(n.c, "guard", func() *Guard { return &Guard{live: count} })
		if err != nil {
			t.Fatal(err)
		}
		singles[i] = s
	}
	holder := func() int {
		h := -1
		for i, s := range singles {
			if s.Holding() {
				if h >= 0 {
					t.Errorf("%s and %s both hold the singleton", nodes[h].name, nodes[i].name)
				}
				h = i
			}
		}
		return h
	}
	waitFor(t, 2*ttl, "a holder", func() bool { return holder() >= 0 })
	time.Sleep(ttl) // stays put
	h := holder()
	start := time.Now()
	nodes[h].kill()
	waitFor(t, 5*ttl, "another holder", func() bool { i := holder(); return i >= 0 && i != h })
	t.Logf("singleton moved from %s %v after the kill", nodes[h].name, time.Since(start))
	waitFor(t, ttl, "one instance runs", func() bool {
		count.mu.Lock()
		defer count.mu.Unlock()
		return count.live == 1
	})
	// The new holder leaves: it releases the key, and the last candidate
	// takes it at its next attempt (TTL/4), without waiting for a TTL.
	h2 := holder()
	start = time.Now()
	nodes[h2].stop(t)
	waitFor(t, ttl*3/4, "the last candidate holds it", func() bool { i := holder(); return i >= 0 && i != h && i != h2 })
	t.Logf("after a Leave, taken over in %v", time.Since(start))
	waitFor(t, ttl, "one instance runs", func() bool {
		count.mu.Lock()
		defer count.mu.Unlock()
		return count.live == 1
	})
	count.mu.Lock()
	defer count.mu.Unlock()
	if count.max != 1 || count.starts != 3 {
		t.Errorf("at most %d at once, %d starts; want 1 and 3", count.max, count.starts)
	}
}

// A short NATS server restart, well within the TTL: leases hold, and the
// key-value watches, which do not recover by themselves, are restarted: a
// member that joins afterwards is seen by all, and a takeover written
// afterwards still fences the activation it takes.
func TestWatchesRecoverAfterReconnect(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	const ttl = 2 * time.Second
	nodes := startNodes(t, ns.url(), reg, 2, nodeConfig{ttl: ttl, host: true})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := nodes[0].k.Ask(ctx, "w", &Hit{})
	if err != nil {
		t.Fatal(err)
	}
	incs := []string{nodes[0].c.Incarnation(), nodes[1].c.Incarnation()}

	ns.stop()
	time.Sleep(ttl / 8)
	ns.start()
	waitFor(t, ttl, "both reconnected", func() bool {
		return nodes[0].node.Conn().IsConnected() && nodes[1].node.Conn().IsConnected()
	})
	time.Sleep(ttl / 2) // the restarted watches are in place
	if nodes[0].c.Incarnation() != incs[0] || nodes[1].c.Incarnation() != incs[1] {
		t.Fatal("a lease lapsed during a short restart")
	}
	late := startNode(t, ns.url(), "late", reg, nodeConfig{ttl: ttl, host: true})
	for _, n := range append(nodes, late) {
		waitFor(t, 2*ttl, n.name+" sees the member that joined after the restart", func() bool {
			return len(n.c.Members()) == 3
		})
	}
	kv := kvOf(t, nodes[0], "actord_activations")
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for k := range keys.Keys() {
		if _, err := kv.Put(ctx, k, []byte(`{"node":"rival","inc":"00"}`)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, ttl, "the activation on "+r.Node+" is fenced by the takeover", func() bool {
		reg.mu.Lock()
		defer reg.mu.Unlock()
		return reg.live["w"] == 0
	})
	reg.check(t)
}

// SlowGuard is a test singleton whose behaviour may take long.
type SlowGuard struct {
	actor.Actor
	live *singletonCount
}

type Nap struct {
	actor.Message
	D time.Duration
}

func (g *SlowGuard) Started() {
	g.live.mu.Lock()
	g.live.live++
	g.live.starts++
	g.live.max = max(g.live.max, g.live.live)
	g.live.mu.Unlock()
}

func (g *SlowGuard) Stopped(actor.Reason) {
	g.live.mu.Lock()
	g.live.live--
	g.live.mu.Unlock()
}

func (g *SlowGuard) OnNap(m *Nap) actor.Allocation { time.Sleep(m.D); return actor.Nodelete }

// A singleton holder that leaves while its actor is inside a behaviour
// keeps its key until the actor has ended: the other candidate starts its
// instance after, never beside it.
func TestSingletonLeaveWaitsForItsActor(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	const ttl = time.Second
	a := startSlow(t, ns.url(), "a", reg, ttl, false)
	b := startSlow(t, ns.url(), "b", reg, ttl, false)
	waitMembers(t, 2, a, b)
	count := &singletonCount{}
	var mu sync.Mutex
	var guards []*SlowGuard
	factory := func() *SlowGuard {
		g := &SlowGuard{live: count}
		mu.Lock()
		guards = append(guards, g)
		mu.Unlock()
		return g
	}
	sa, err := cluster.RunSingleton(a.c, "g", factory)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*ttl, "a holds", sa.Holding)
	if _, err := cluster.RunSingleton(b.c, "g", factory); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	g := guards[0]
	mu.Unlock()
	if err := actor.Send(g, &Nap{D: 2 * ttl}, (*SlowGuard).OnNap); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	a.stop(t) // Leave waits for the nap, keeping the key, then deletes it
	waitFor(t, 2*ttl, "b takes over", func() bool {
		count.mu.Lock()
		defer count.mu.Unlock()
		return count.starts == 2
	})
	count.mu.Lock()
	defer count.mu.Unlock()
	if count.max > 1 {
		t.Errorf("two singleton instances ran at once (%d starts)", count.starts)
	}
}

// A singleton whose actor cannot be spawned (here the factory returns an
// actor spawned already) holds its key, trying the spawn again at each
// refresh, but Holding says false: it runs no actor.
func TestSingletonHoldingAfterFailedSpawn(t *testing.T) {
	ns := startNATS(t)
	a := startSlow(t, ns.url(), "a", newRegistry(), time.Second, false)
	g, err := actor.Spawn(a.sys, &Guard{live: &singletonCount{}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := cluster.RunSingleton(a.c, "broken", func() *Guard { return g })
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond) // two attempts or more
	if s.Holding() {
		t.Error("Holding after a failed spawn")
	}
	_ = actor.SendPill(g, actor.FinishedMsg)
}
