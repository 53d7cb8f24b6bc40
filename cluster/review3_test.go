package cluster_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/cluster"
)

// BusyCounter is a Counter that always says it is Busy (it keeps work of
// its own), so that rebalancing leaves it where it is.
type BusyCounter struct{ Counter }

func (*BusyCounter) Busy() bool { return true }

// Idle passivation (actor.WithPassivation) ends an actor that has
// received no message for d. The rebalancer sends a move check, a
// message, to every idle activation that placement puts elsewhere at
// every look (Rebalance.Every), and a Busy entity refuses to move: so
// each look resets its passivation, and the entity never passivates
// while placement puts it on another member (here it should end about
// 400ms after its last request; it still runs 3s later).
func TestReview3BusyEntityPlacedElsewhereNeverPassivates(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	rb := cluster.WithRebalance(cluster.Rebalance{Idle: 100 * time.Millisecond, Every: 50 * time.Millisecond})
	host := func(name string) func(*testKind) error {
		return func(k *testKind) error {
			return cluster.Host(k, func(id string) *BusyCounter { return &BusyCounter{Counter{id: id, node: name, reg: reg}} },
				(*BusyCounter).OnHit, actor.WithPassivation(400*time.Millisecond))
		}
	}
	n0 := startCustom(t, ns.url(), "n0", []cluster.Option{rb}, host("n0"))
	id := ""
	for i := 0; id == ""; i++ {
		if x := fmt.Sprintf("busy-%d", i); placeAmong([]string{"n0", "n1"}, x) == "n1" {
			id = x
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r, err := n0.k.Ask(ctx, id, &Hit{}); err != nil || r.Node != "n0" {
		t.Fatalf("%+v %v", r, err)
	}
	// Control: without another member, it passivates.
	waitFor(t, 2*time.Second, "passivation alone", func() bool { return n0.k.LocalCount() == 0 })
	if r, err := n0.k.Ask(ctx, id, &Hit{}); err != nil || r.Node != "n0" {
		t.Fatalf("%+v %v", r, err)
	}
	startCustom(t, ns.url(), "n1", []cluster.Option{rb}, host("n1"))
	waitFor(t, 3*time.Second, "n0 sees n1", func() bool { return len(n0.c.Members()) == 2 })
	time.Sleep(3 * time.Second)
	if n := n0.k.LocalCount(); n != 0 {
		t.Errorf("the Busy entity idle for 3s with a 400ms passivation still runs on n0 (%d activations): the move checks keep it alive", n)
	}
}

// Coverage for Leave's leaving mark (passes on main): while Leave waits
// for a long behaviour (2 TTLs, so several refresher ticks), the others
// see the member marked leaving, under its one incarnation, throughout.
// No test caught a refresher that, during Leave, wrote the record as
// usual (keepFenced without the mark, or a rejoin under a new
// incarnation): the other tests' Leaves end within a tick.
func TestReview3LeavingMarkHeldWhileLeaveWaits(t *testing.T) {
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

// A fenced member that waits for a long behaviour keeps its old record
// (keepFenced), unmarked: the others' placement still chooses it, so
// their rebalancers move idle entities that run fine on them to a member
// that refuses every activation (ErrFenced) until it joins again, which
// a behaviour that never returns postpones forever. Here an entity
// served by n0 becomes unavailable once it idles, for as long as n2
// waits for its fenced activation.
func TestReview3RebalanceMovesEntitiesToFencedMember(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	const ttl = time.Second
	rb := cluster.WithRebalance(cluster.Rebalance{Idle: 100 * time.Millisecond, Every: 50 * time.Millisecond})
	px := startProxy(t, fmt.Sprintf("127.0.0.1:%d", ns.opts.Port))
	n0 := startSlowOpts(t, ns.url(), "n0", reg, cluster.WithTTL(ttl), rb)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	x := idPlacedOn("rf-x", "n2", "n0", "n2")    // activated on n0 alone, placed on n2 later
	long := idPlacedOn("rf-l", "n2", "n0", "n2") // n2's own, busy across the fence
	if r, err := n0.k.Ask(ctx, x, &Op{}); err != nil || r.Node != "n0" {
		t.Fatalf("%+v %v", r, err)
	}
	// Keep x busy so that it does not move when n2 joins.
	var stopTraffic atomic.Bool
	traffic := make(chan struct{})
	go func() {
		defer close(traffic)
		for !stopTraffic.Load() {
			_, _ = n0.k.Ask(ctx, x, &Op{})
			time.Sleep(20 * time.Millisecond)
		}
	}()
	n2 := startSlowOpts(t, px.url(), "n2", reg, cluster.WithTTL(ttl), rb)
	waitMembers(t, 2, n0, n2)
	if r, err := n2.k.Ask(ctx, long, &Op{}); err != nil || r.Node != "n2" {
		t.Fatalf("%+v %v", r, err)
	}
	go func() { _, _ = n2.k.Ask(ctx, long, &Op{Sleep: 6 * ttl}) }()
	time.Sleep(50 * time.Millisecond)
	px.partition() // a stall shorter than the TTL: n2 fences, its record survives
	waitFor(t, 2*ttl, "n2 fences", func() bool { return n2.k.LocalCount() == 0 })
	px.heal()
	time.Sleep(ttl / 2)
	stopTraffic.Store(true)
	<-traffic
	if r, err := n0.k.Ask(ctx, x, &Op{}); err != nil || r.Node != "n0" {
		t.Fatalf("x before it idles: %+v %v", r, err)
	}
	time.Sleep(time.Second) // x idles on n0: Idle is 100ms
	actx, acancel := context.WithTimeout(ctx, ttl)
	r, err := n0.k.Ask(actx, x, &Op{})
	acancel()
	if err != nil {
		t.Errorf("x, served by n0 until it idled, is now unavailable: %v (n2 is fenced, in n0's view %v)", err, n0.c.Members())
	} else {
		t.Logf("x answered by %s", r.Node)
	}
}
