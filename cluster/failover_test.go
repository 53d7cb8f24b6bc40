package cluster_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/actord/actord/cluster"
)

// A node stopped abruptly (its NATS connection closed, no Leave) in the
// middle of traffic: asks to its entities fail with ErrOwnerLost, never
// hang, and within about one TTL plus an activation they are answered by
// activations on the other nodes; no id ever has two live activations
// (the dead node fences its own before its key can expire).
func TestFailoverAbruptStop(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	const ttl = 2 * time.Second
	nodes := startNodes(t, ns.url(), reg, 3, nodeConfig{ttl: ttl, host: true})
	ids := make([]string, 300)
	for i := range ids {
		ids[i] = "f" + strconv.Itoa(i)
	}
	owner := askAll(t, nodes[:1], ids, 8)
	victim := nodes[2]
	var theirs []string
	for id, o := range owner {
		if o == victim.name {
			theirs = append(theirs, id)
		}
	}
	if len(theirs) == 0 {
		t.Fatal("no entity on the victim")
	}

	// Traffic from the two survivors, on every id, until stop.
	var (
		stop       atomic.Bool
		wg         sync.WaitGroup
		lost       atomic.Int64
		unexpected atomic.Int64
		mu         sync.Mutex
		movedAt    = map[string]time.Duration{}
	)
	var killedAt atomic.Pointer[time.Time]
	for _, n := range nodes[:2] {
		for w := range 4 {
			wg.Go(func() {
				for i := w; !stop.Load(); i = (i + 4) % len(ids) {
					id := ids[i]
					ctx, cancel := context.WithTimeout(context.Background(), 10*ttl)
					r, err := n.k.Ask(ctx, id, &Hit{})
					cancel()
					switch {
					case err == nil:
						if k := killedAt.Load(); k != nil && owner[id] == victim.name && r.Node != victim.name {
							mu.Lock()
							if _, ok := movedAt[id]; !ok {
								movedAt[id] = time.Since(*k)
							}
							mu.Unlock()
						}
					case errors.Is(err, cluster.ErrOwnerLost):
						lost.Add(1)
						time.Sleep(5 * time.Millisecond)
					default:
						if unexpected.Add(1) <= 5 {
							t.Errorf("%s: ask %s: %v", n.name, id, err)
						}
					}
				}
			})
		}
	}
	time.Sleep(200 * time.Millisecond)
	now := time.Now()
	killedAt.Store(&now)
	victim.kill()

	waitFor(t, 8*ttl, "every entity of the dead node answered elsewhere", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(movedAt) == len(theirs)
	})
	stop.Store(true)
	wg.Wait()
	var worst time.Duration
	for _, d := range movedAt {
		worst = max(worst, d)
	}
	t.Logf("%d entities of %s back on other nodes, the last %v after the kill (TTL %v); %d asks failed with ErrOwnerLost",
		len(theirs), victim.name, worst, ttl, lost.Load())
	if worst < ttl*4/5 {
		t.Errorf("an entity moved %v after the kill, before the dead node's lease could lapse", worst)
	}
	reg.check(t)
}

// A member that leaves (Leave) stops its activations and releases their
// keys and its record at once: its entities are activated elsewhere on the
// next ask, without waiting for a TTL.
func TestLeaveReleasesEntities(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	const ttl = 5 * time.Second // long: the test must not wait for it
	nodes := startNodes(t, ns.url(), reg, 3, nodeConfig{ttl: ttl, host: true})
	ids := make([]string, 200)
	for i := range ids {
		ids[i] = "l" + strconv.Itoa(i)
	}
	owner := askAll(t, nodes, ids, 4)
	start := time.Now()
	nodes[2].stop(t)
	waitFor(t, time.Second, "the others see it leave", func() bool {
		return len(nodes[0].c.Members()) == 2 && len(nodes[1].c.Members()) == 2
	})
	after := askAll(t, nodes[:2], ids, 4)
	took := time.Since(start)
	moved := 0
	for id, o := range owner {
		if o == "n2" {
			moved++
			if after[id] == "n2" {
				t.Errorf("%s still on n2", id)
			}
		} else if after[id] != o {
			t.Errorf("%s moved from %s to %s", id, o, after[id])
		}
	}
	t.Logf("%d entities of the leaving member activated elsewhere, all asks done %v after Leave (TTL %v)", moved, took, ttl)
	if took > ttl/2 {
		t.Errorf("took %v", took)
	}
	reg.check(t)
}

// While a member leaves (here it waits for a busy activation), its record
// says so and placement skips it: a Get of a fresh id that placement put
// on it activates it on another member at once instead of waiting for its
// deadline.
func TestGetSkipsLeavingMember(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	const ttl = 2 * time.Second
	n0 := startSlow(t, ns.url(), "n0", reg, ttl, true)
	n1 := startSlow(t, ns.url(), "n1", reg, ttl, true)
	waitMembers(t, 2, n0, n1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	busy := idPlacedOn("busy", "n1", "n0", "n1")
	if r, err := n1.k.Ask(ctx, busy, &Op{}); err != nil || r.Node != "n1" {
		t.Fatalf("%+v %v", r, err)
	}
	go func() { _, _ = n1.k.Ask(ctx, busy, &Op{Sleep: 3 * time.Second}) }() // Leave waits for it
	time.Sleep(50 * time.Millisecond)
	left := make(chan struct{})
	go func() { defer close(left); _ = n1.c.Leave(ctx) }()
	time.Sleep(100 * time.Millisecond)
	fresh := idPlacedOn("fresh", "n1", "n0", "n1")
	gctx, gcancel := context.WithTimeout(ctx, 2*time.Second)
	defer gcancel()
	start := time.Now()
	_, err := n0.k.Get(gctx, fresh)
	took := time.Since(start)
	t.Logf("Get during the other member's Leave: %v after %v", err, took)
	if err != nil {
		t.Errorf("Get of a fresh id while n1 leaves: %v after %v (no answer from n1; n0 hosts the kind too)", err, took)
	}
	<-left
}

// Leave's leaving mark: while Leave waits for a long behaviour (2 TTLs,
// so several refresher ticks), the others see the member marked leaving,
// under its one incarnation, throughout (a refresher that wrote the
// record as usual during Leave, unmarked or under a new incarnation,
// would fail it).
func TestLeavingMarkHeldWhileLeaveWaits(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	const ttl = time.Second
	n0 := startSlow(t, ns.url(), "n0", reg, ttl, true)
	n1 := startSlow(t, ns.url(), "n1", reg, ttl, true)
	waitMembers(t, 2, n0, n1)
	id := idPlacedOn("lm-", "n1", "n0", "n1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if r, err := n0.k.Ask(ctx, id, &Op{}); err != nil || r.Node != "n1" {
		t.Fatalf("first ask: %+v %v", r, err)
	}
	inc := n1.c.Incarnation()
	go func() { _, _ = n1.k.Ask(ctx, id, &Op{Sleep: 2 * ttl}) }()
	time.Sleep(50 * time.Millisecond)
	left := make(chan error, 1)
	go func() { left <- n1.c.Leave(ctx) }()
	waitFor(t, ttl, "n1 marked leaving", func() bool {
		for _, m := range n0.c.Members() {
			if m.Node == "n1" && m.Leaving {
				return true
			}
		}
		return false
	})
	for {
		select {
		case err := <-left:
			if err != nil {
				t.Fatal(err)
			}
			return
		case <-time.After(10 * time.Millisecond):
		}
		for _, m := range n0.c.Members() {
			if m.Node == "n1" && (!m.Leaving || m.Incarnation != inc) {
				t.Fatalf("during n1's Leave, n0 sees %+v (incarnation was %s)", m, inc)
			}
		}
	}
}
