package cluster_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/cluster"
	"github.com/actord/actord/remote"
)

const testTTL = time.Second

// Members join and leave within a fraction of the TTL, every member's view
// agrees, records say which kinds a member hosts, and subscribers get the
// changes in order.
func TestMembershipJoinLeave(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	a := startNode(t, ns.url(), "a", reg, nodeConfig{ttl: testTTL, host: true})

	var mu sync.Mutex
	var events []string
	cancel := a.c.Subscribe(func(e cluster.Event) {
		mu.Lock()
		events = append(events, e.Type.String()+":"+e.Member.Node)
		mu.Unlock()
	})
	defer cancel()

	b := startNode(t, ns.url(), "b", reg, nodeConfig{ttl: testTTL, host: true})
	c := startNode(t, ns.url(), "c", reg, nodeConfig{ttl: testTTL, host: false})
	for _, n := range []*cnode{a, b, c} {
		waitFor(t, 2*time.Second, n.name+" sees a, b, c", func() bool {
			return slices.Equal(memberNames(n.c), []string{"a", "b", "c"})
		})
	}
	for _, m := range a.c.Members() {
		want := []string{"counter"}
		if m.Node == "c" {
			want = []string{}
		}
		if !slices.Equal(m.Kinds, want) || m.Incarnation == "" {
			t.Errorf("member %s: kinds %v, incarnation %q", m.Node, m.Kinds, m.Incarnation)
		}
	}

	start := time.Now()
	b.stop(t)
	waitFor(t, testTTL/2, "a sees b leave", func() bool {
		return slices.Equal(memberNames(a.c), []string{"a", "c"})
	})
	t.Logf("leave seen after %v", time.Since(start))
	mu.Lock()
	got := slices.Clone(events)
	mu.Unlock()
	want := []string{"joined:b", "joined:c", "left:b"}
	if !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

// A member that stops refreshing (its NATS connection closed, no Leave) is
// out of every view after about one TTL, and Join refuses a live name.
func TestMemberExpires(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	a := startNode(t, ns.url(), "a", reg, nodeConfig{ttl: testTTL, host: true})
	b := startNode(t, ns.url(), "b", reg, nodeConfig{ttl: testTTL, host: true})
	waitFor(t, 2*time.Second, "a sees b", func() bool { return len(a.c.Members()) == 2 })

	start := time.Now()
	b.kill()
	waitFor(t, 3*testTTL, "a sees b expire", func() bool { return len(a.c.Members()) == 1 })
	took := time.Since(start)
	t.Logf("expiry seen after %v (TTL %v)", took, testTTL)
	if took < testTTL/2 {
		t.Errorf("b out after %v, before half its TTL", took)
	}
}

// A member whose TTL differs from the cluster's is refused at Join: its
// lease would be counted over its own TTL while its record expires after
// the bucket's, and its entities could be taken over while it runs them.
func TestJoinRefusesAnotherTTL(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	startSlow(t, ns.url(), "a", reg, time.Second, true)
	sys, err := actor.Start(actor.WithWorkers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Shutdown(context.Background())
	node, err := remote.Connect(sys, ns.url(), "b", remote.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	c, err := cluster.New(sys, node, cluster.WithTTL(8*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = c.Join(ctx)
	if !errors.Is(err, cluster.ErrTTLMismatch) {
		_ = c.Leave(ctx)
		t.Fatalf("Join with a TTL of 8s over a cluster of 1s: %v, want ErrTTLMismatch", err)
	}
	t.Log(err)
}
