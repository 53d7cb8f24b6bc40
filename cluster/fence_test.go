package cluster_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// A member cut off from the server fences its activation while a request
// runs in its behaviour and another is queued behind it. The fence cannot
// interrupt the running behaviour (here it returns as soon as it sees the
// fence, within the lease's margin), but the gate refuses the queued one
// undelivered, so the actor ends before its key can expire; a survivor
// then takes the id over, and the two activations never overlap. Without
// the gate, the queued request (3 TTLs of work) ran after the fence, while
// the survivor's activation ran.
func TestFenceRefusesQueuedRequests(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	const ttl = time.Second
	px := startProxy(t, fmt.Sprintf("127.0.0.1:%d", ns.opts.Port))
	n0 := startSlow(t, ns.url(), "n0", reg, ttl, true)
	n1 := startSlow(t, ns.url(), "n1", reg, ttl, true)
	n2 := startSlow(t, px.url(), "n2", reg, ttl, true)
	waitMembers(t, 3, n0, n1, n2)
	id := idPlacedOn("r1-", "n2", "n0", "n1", "n2")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := n0.k.Ask(ctx, id, &Op{})
	if err != nil || r.Node != "n2" {
		t.Fatalf("first ask: %+v %v", r, err)
	}
	done := make(chan struct{}, 2)
	for _, op := range []*Op{{UntilFenced: true}, {Sleep: 3 * ttl}} {
		go func() {
			defer func() { done <- struct{}{} }()
			actx, acancel := context.WithTimeout(ctx, 5*ttl)
			defer acancel()
			_, _ = n0.k.Ask(actx, id, op) // the first runs, the second is queued behind it
		}()
		time.Sleep(100 * time.Millisecond)
	}
	px.partition()
	waitFor(t, 2*ttl, "n2 fences", func() bool { return n2.k.LocalCount() == 0 })
	for {
		r, err := n0.k.Ask(ctx, id, &Op{})
		if err == nil && r.Node != "n2" {
			t.Logf("taken over by %s", r.Node)
			break
		}
		if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	reg.check(t)
	px.heal()
	<-done
	<-done
}

// After a fence whose cause was a slow refresh, not a partition (here the
// member's traffic is stalled for about 0.9 TTL), the member does not join
// again under a new incarnation, which would make every key of the old one
// takeable at once, while a fenced activation still runs a behaviour (3
// TTLs long): it keeps its old record alive meanwhile, and joins again
// once the activation has ended; the id is then activated elsewhere.
func TestRejoinWaitsForFencedActivations(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	const ttl = time.Second
	px := startProxy(t, fmt.Sprintf("127.0.0.1:%d", ns.opts.Port))
	// n2 activates, alone, an id that placement will later put on n0.
	n2 := startSlow(t, px.url(), "n2", reg, ttl, true)
	id := idPlacedOn("r1b-", "n0", "n0", "n2")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if r, err := n2.k.Ask(ctx, id, &Op{}); err != nil || r.Node != "n2" {
		t.Fatalf("first ask: %+v %v", r, err)
	}
	n0 := startSlow(t, ns.url(), "n0", reg, ttl, true)
	waitMembers(t, 2, n0, n2)
	inc := n2.c.Incarnation()
	done := make(chan struct{})
	go func() {
		defer close(done)
		actx, acancel := context.WithTimeout(ctx, 6*ttl)
		defer acancel()
		_, _ = n2.k.Ask(actx, id, &Op{Sleep: 3 * ttl}) // local, in progress on n2
	}()
	time.Sleep(50 * time.Millisecond)
	// A stall shorter than the TTL: the key does not expire, but n2 fences.
	px.partition()
	waitFor(t, 2*ttl, "n2 fences", func() bool { return n2.k.LocalCount() == 0 })
	px.heal()
	// Meanwhile n2 is in n0's view (its old record kept, marked fenced)
	// and refuses activations: placement skips it, and n0's Get of an id
	// that would be placed on n2 activates it on n0.
	time.Sleep(ttl / 2)
	gctx, gcancel := context.WithTimeout(ctx, ttl/2)
	fresh := idPlacedOn("r1b-fresh", "n2", "n0", "n2")
	gr, gerr := n0.k.Ask(gctx, fresh, &Op{})
	gcancel()
	if gerr != nil || gr.Node != "n0" {
		t.Errorf("Ask of an id placed on a fenced member: %+v %v, want it activated on n0", gr, gerr)
	}
	waitFor(t, 3*ttl, "n2 rejoins", func() bool {
		if n2.c.Incarnation() == inc {
			return false
		}
		for _, m := range n0.c.Members() {
			if m.Node == "n2" && m.Incarnation == n2.c.Incarnation() {
				return true
			}
		}
		return false
	})
	r, err := n0.k.Ask(ctx, id, &Op{})
	t.Logf("after the rejoin: %+v %v", r, err)
	reg.check(t)
	<-done
}

// Leave waits for the end of every local activation, those that a fence
// already stopped (here its key was taken over) included: none runs after
// Leave returns.
func TestLeaveWaitsForFencedActivation(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	n0 := startSlow(t, ns.url(), "n0", reg, 2*time.Second, true)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const id = "r9"
	if _, err := n0.k.Ask(ctx, id, &Op{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _, _ = n0.k.Ask(ctx, id, &Op{Sleep: 2 * time.Second}) }()
	time.Sleep(50 * time.Millisecond)
	nc, err := nats.Connect(ns.url())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstreamNew(nc)
	kv, err := js.KeyValue(ctx, "actord_activations")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "slow."+base64.RawURLEncoding.EncodeToString([]byte(id)), []byte(`{"node":"rival","inc":"00"}`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "fenced", func() bool { return n0.k.LocalCount() == 0 })
	if err := n0.c.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	reg.mu.Lock()
	live := reg.live[id]
	reg.mu.Unlock()
	if live != 0 {
		t.Errorf("Leave returned while a local activation of %s still runs", id)
	}
	<-done
}
