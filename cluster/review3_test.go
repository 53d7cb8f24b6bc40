package cluster_test

import (
	"context"
	"fmt"
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
