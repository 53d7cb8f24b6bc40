package cluster_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/cluster"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// entityCount is the number of entities of the concurrency test: 2,000, or
// ACTORD_CLUSTER_ENTITIES (say 10000).
func entityCount(t testing.TB) int {
	if s := os.Getenv("ACTORD_CLUSTER_ENTITIES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("ACTORD_CLUSTER_ENTITIES: %v", err)
		}
		return n
	}
	if testing.Short() {
		return 300
	}
	return 2000
}

func startNodes(t testing.TB, url string, reg *registry, n int, cfg nodeConfig) []*cnode {
	nodes := make([]*cnode, n)
	for i := range nodes {
		nodes[i] = startNode(t, url, fmt.Sprintf("n%d", i), reg, cfg)
	}
	for _, n := range nodes {
		waitFor(t, 3*time.Second, n.name+" sees everyone", func() bool { return len(n.c.Members()) == len(nodes) })
	}
	return nodes
}

// askAll asks every id from every node at once (each node in its own random
// order, with workers goroutines per node) and returns, per id, the node
// that answered; it fails the test if two nodes got different answers.
func askAll(t testing.TB, nodes []*cnode, ids []string, workers int) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	owner := map[string]string{}
	var wg sync.WaitGroup
	var failed atomic.Int64
	for _, n := range nodes {
		order := rand.Perm(len(ids))
		var next atomic.Int64
		for range workers {
			wg.Go(func() {
				for {
					i := int(next.Add(1)) - 1
					if i >= len(order) {
						return
					}
					id := ids[order[i]]
					r, err := n.k.Ask(ctx, id, &Hit{N: 1})
					if err != nil {
						if failed.Add(1) < 5 {
							t.Errorf("%s: ask %s: %v", n.name, id, err)
						}
						continue
					}
					mu.Lock()
					if o, ok := owner[id]; ok && o != r.Node {
						t.Errorf("%s: id %s answered by %s and by %s", n.name, id, o, r.Node)
					}
					owner[id] = r.Node
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	return owner
}

// Thousands of entities, asked from every node at once: each is activated
// exactly once (counted by the entities themselves), every node reaches the
// same activation, and placement spreads them over the hosting members.
func TestManyEntitiesExactlyOnce(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	nodes := startNodes(t, ns.url(), reg, 4, nodeConfig{ttl: 5 * time.Second, host: true})
	n := entityCount(t)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "e" + strconv.Itoa(i)
	}
	start := time.Now()
	owner := askAll(t, nodes, ids, 8)
	t.Logf("%d entities asked from %d nodes (%d asks) in %v", n, len(nodes), n*len(nodes), time.Since(start))
	reg.check(t)
	reg.mu.Lock()
	for _, id := range ids {
		if reg.total[id] != 1 {
			t.Errorf("id %s activated %d times", id, reg.total[id])
		}
	}
	reg.mu.Unlock()
	per := map[string]int{}
	for _, o := range owner {
		per[o]++
	}
	t.Logf("activations per node: %v", per)
	for _, nd := range nodes {
		if per[nd.name] < n/len(nodes)/2 {
			t.Errorf("node %s got %d of %d entities", nd.name, per[nd.name], n)
		}
		if got := nd.k.LocalCount(); got != per[nd.name] {
			t.Errorf("node %s: LocalCount %d, answered for %d", nd.name, got, per[nd.name])
		}
	}
}

// A Get right after an activation, from another node, finds it: the key
// is written before the activation answers.
func TestLookupRightAfterActivation(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	nodes := startNodes(t, ns.url(), reg, 3, nodeConfig{ttl: 2 * time.Second, host: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 50 {
		id := "x" + strconv.Itoa(i)
		a, b := nodes[i%3], nodes[(i+1)%3]
		r1, err := a.k.Ask(ctx, id, &Hit{})
		if err != nil {
			t.Fatal(err)
		}
		r2, err := b.k.Ask(ctx, id, &Hit{})
		if err != nil {
			t.Fatal(err)
		}
		if r1.Node != r2.Node || r2.Hits != 2 {
			t.Fatalf("%s: first on %s, then %s with %d hits", id, r1.Node, r2.Node, r2.Hits)
		}
	}
	reg.check(t)
}

// Passivation ends an idle activation and releases its key: the next ask
// activates the entity again (after the first one ended, never beside it).
func TestPassivationReleasesKey(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	nodes := startNodes(t, ns.url(), reg, 2, nodeConfig{ttl: 2 * time.Second, host: true,
		spawnOpts: []actor.SpawnOption{actor.WithPassivation(100 * time.Millisecond)}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Both members ask: one of them reaches it remotely and keeps a route.
	for _, n := range nodes {
		if _, err := n.k.Ask(ctx, "p", &Hit{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 2*time.Second, "the activation passivates", func() bool {
		return nodes[0].k.LocalCount()+nodes[1].k.LocalCount() == 0
	})
	kv := kvOf(t, nodes[0], "actord_activations")
	waitFor(t, time.Second, "its key is released", func() bool {
		keys, err := kv.ListKeys(ctx)
		if err != nil {
			return false
		}
		n := 0
		for range keys.Keys() {
			n++
		}
		return n == 0
	})
	r, err := nodes[1].k.Ask(ctx, "p", &Hit{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Hits != 1 {
		t.Errorf("second activation has %d hits", r.Hits)
	}
	// The other member's route to the first activation is stale: its ask
	// is refused there, and Ask finds the second one.
	r2, err := nodes[0].k.Ask(ctx, "p", &Hit{})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Node != r.Node || r2.Hits != 2 {
		t.Errorf("then from n0: %+v, want the second activation (on %s) with 2 hits", r2, r.Node)
	}
	reg.mu.Lock()
	total := reg.total["p"]
	reg.mu.Unlock()
	if total != 2 {
		t.Errorf("%d activations, want 2", total)
	}
	reg.check(t)
}

// kvOf opens a bucket on its own connection.
func kvOf(t testing.TB, n *cnode, bucket string) jetstream.KeyValue {
	t.Helper()
	nc, err := nats.Connect(n.node.Conn().ConnectedUrl())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(context.Background(), bucket)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// The revision fence: when an activation's key is taken over (here written
// by hand, as a partitioned node's rival would), the local activation stops
// at once and asks are refused there; the next ask finds the new holder's
// record stale (no such live member) and activates the entity again.
func TestFenceOnTakeover(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	nodes := startNodes(t, ns.url(), reg, 2, nodeConfig{ttl: 2 * time.Second, host: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := nodes[0].k.Ask(ctx, "z", &Hit{})
	if err != nil {
		t.Fatal(err)
	}
	kv := kvOf(t, nodes[0], "actord_activations")
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var key string
	for k := range keys.Keys() {
		key = k
	}
	if _, err := kv.Put(ctx, key, []byte(`{"node":"rival","inc":"00"}`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "the activation on "+r.Node+" stops", func() bool {
		reg.mu.Lock()
		defer reg.mu.Unlock()
		return reg.live["z"] == 0
	})
	r2, err := nodes[1].k.Ask(ctx, "z", &Hit{})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Hits != 1 {
		t.Errorf("after the takeover: %d hits, want a fresh activation", r2.Hits)
	}
	reg.check(t)
}

// An activation key whose value names no valid member (not JSON, no node,
// a node name that is not a key) is stale: a Get takes it over instead of
// failing with ErrKV for good.
func TestMalformedActivationRecordTakenOver(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	pr := prometheus.NewPedanticRegistry()
	n0 := startSlowOpts(t, ns.url(), "n0", reg, cluster.WithTTL(2*time.Second), cluster.WithRegisterer(pr))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := n0.k.Ask(ctx, "warm", &Op{}); err != nil { // creates the buckets' keys
		t.Fatal(err)
	}
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
	for i, v := range []string{`{}`, `not json`, `{"node":"has space","inc":"1"}`} {
		id := "r7-" + strconv.Itoa(i)
		if _, err := kv.Put(ctx, "slow."+base64.RawURLEncoding.EncodeToString([]byte(id)), []byte(v)); err != nil {
			t.Fatal(err)
		}
		if _, err := n0.k.Ask(ctx, id, &Op{}); err != nil {
			t.Errorf("id whose key holds %q: %v", v, err)
		}
	}
	// Counted as malformed, not as takeovers (from members no longer live).
	want := `
# HELP actord_cluster_malformed_total Activation requests and activation records this node refused or overrode because they were malformed (bad kind or id, undecodable).
# TYPE actord_cluster_malformed_total counter
actord_cluster_malformed_total 3
# HELP actord_cluster_takeovers_total Activation keys this node took over from a member that was no longer live (placement moves after a failure).
# TYPE actord_cluster_takeovers_total counter
actord_cluster_takeovers_total 0
`
	if err := testutil.GatherAndCompare(pr, strings.NewReader(want), "actord_cluster_malformed_total", "actord_cluster_takeovers_total"); err != nil {
		t.Error(err)
	}
}

// An activation that ends by itself (here a status; passivation is the
// same race) while asks are on their way. Through the local port, a
// request queued behind the end and dropped undelivered is sent again by
// Kind.Ask (the gate says whether it delivered it), which activates the
// entity again: no failure. Through a remote port the same: the serving
// member's export tells the asker that the request was not delivered
// (remote.ErrNotDelivered), and Kind.Ask sends it again: no failure.
func TestAskRacingEndOfActivation(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	const ttl = 2 * time.Second
	n0 := startSlow(t, ns.url(), "n0", reg, ttl, true)
	n1 := startSlow(t, ns.url(), "n1", reg, ttl, false)
	waitMembers(t, 2, n0, n1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var local, remoteErrs []error
	for i := range 40 {
		id := "r2-" + strconv.Itoa(i)
		if _, err := n0.k.Ask(ctx, id, &Op{}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var errE, errL, errR error
		wg.Go(func() { _, errE = n0.k.Ask(ctx, id, &Op{End: true}) })
		wg.Go(func() { _, errL = n0.k.Ask(ctx, id, &Op{}) })
		wg.Go(func() { _, errR = n1.k.Ask(ctx, id, &Op{}) })
		wg.Wait()
		errL = errors.Join(errE, errL)
		if errL != nil {
			local = append(local, errL)
		}
		if errR != nil {
			remoteErrs = append(remoteErrs, errR)
		}
	}
	if len(local) > 0 {
		t.Errorf("Kind.Ask failed %d times locally racing the end of an activation (first: %v)", len(local), local[0])
	}
	if len(remoteErrs) > 0 {
		t.Errorf("Kind.Ask failed %d times from another member racing the end of an activation (first: %v)", len(remoteErrs), remoteErrs[0])
	}
}

// Relay is an entity whose behaviour relays the failure of a downstream
// call: here it fails every request it receives with an error wrapping
// cluster.ErrMoved, as an entity would that asks another entity through a
// port that Get returned (which gives ErrMoved as is) and fails its own
// request with the error it got.
type Relay struct {
	actor.Actor
	n *atomic.Int64
}

func (r *Relay) OnHit(m *Hit) actor.Allocation {
	r.n.Add(1)
	_ = m.Fail(fmt.Errorf("downstream inventory: %w", cluster.ErrMoved))
	return actor.Nodelete
}

func startRelay(t *testing.T, url, name string, host bool, n *atomic.Int64) *cnode {
	t.Helper()
	return startCustom(t, url, name, nil, func(k *testKind) error {
		if !host {
			return nil
		}
		return cluster.Host(k, func(string) *Relay { return &Relay{n: n} }, (*Relay).OnHit)
	})
}

// Kind.Ask promises at-most-once delivery, and retries only requests
// refused before delivery. But it recognizes a refusal by the error alone
// (errors.Is ErrMoved locally, the error's text through package remote):
// a request that WAS delivered and that the behaviour failed with an error
// wrapping ErrMoved (a relayed downstream failure) is sent again, and
// again, until the caller's deadline: delivered many times.
func TestAskDoesNotResendDeliveredRequestFailedWithErrMoved(t *testing.T) {
	ns := startNATS(t)
	var n atomic.Int64
	n0 := startRelay(t, ns.url(), "n0", true, &n)
	n1 := startRelay(t, ns.url(), "n1", false, &n)
	waitFor(t, 5*time.Second, "2 members", func() bool { return len(n1.c.Members()) == 2 })
	for _, tc := range []struct {
		from *cnode
		id   string
	}{{n0, "local"}, {n1, "remote"}} {
		n.Store(0)
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		_, err := tc.from.k.Ask(ctx, tc.id, &Hit{})
		cancel()
		if got := n.Load(); got != 1 {
			t.Errorf("%s ask: the request was delivered %d times (want 1, at most once); Ask returned %v", tc.id, got, err)
		}
	}
}
