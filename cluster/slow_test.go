package cluster_test

// The Slow entity, whose behaviour may take long, wait for a fence or end
// its actor, and the helpers of the tests that use it.

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/cluster"
	"github.com/actord/actord/remote"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Op is a request to a Slow entity: sleep in the behaviour, answer, and
// end the actor when End is set.
type Op struct {
	actor.Request[Reply]
	Sleep time.Duration
	End   bool
	// UntilFenced: the behaviour returns once a fence has stopped its
	// activation (a behaviour that started before the fence and returns
	// within the lease's margin).
	UntilFenced bool
}

// Slow is a test entity whose behaviour may take long or end the actor.
type Slow struct {
	actor.Actor
	id, node string
	reg      *registry
	k        *slowKind
	hits     int
}

func (s *Slow) Started()             { s.reg.started(s.id) }
func (s *Slow) Stopped(actor.Reason) { s.reg.stopped(s.id) }

func (s *Slow) OnOp(m *Op) actor.Allocation {
	if m.Sleep > 0 {
		time.Sleep(m.Sleep)
	}
	for m.UntilFenced && s.k.LocalCount() > 0 {
		time.Sleep(2 * time.Millisecond)
	}
	s.hits++
	m.Reply(Reply{Node: s.node, ID: s.id, Hits: s.hits})
	if m.End {
		return actor.Finished
	}
	return actor.Nodelete
}

type slowKind = cluster.Kind[Op, Reply, *Op]

type snode struct {
	name string
	sys  *actor.System
	node *remote.Node
	c    *cluster.Cluster
	k    *slowKind
}

func startSlow(t testing.TB, url, name string, reg *registry, ttl time.Duration, host bool, spawn ...actor.SpawnOption) *snode {
	t.Helper()
	sys, node, c := newMember(t, url, name, 2, cluster.WithTTL(ttl))
	k, err := cluster.NewKind(c, "slow", remote.CBOR[*Op](), remote.CBOR[Reply]())
	if err != nil {
		t.Fatal(err)
	}
	if host {
		if err := cluster.Host(k, func(id string) *Slow { return &Slow{id: id, node: name, reg: reg, k: k} }, (*Slow).OnOp, spawn...); err != nil {
			t.Fatal(err)
		}
	}
	joinMember(t, c)
	n := &snode{name: name, sys: sys, node: node, c: c, k: k}
	t.Cleanup(func() { n.stop(t) })
	return n
}

func (n *snode) stop(t testing.TB) {
	if n.sys == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = n.c.Leave(ctx)
	n.node.Close()
	_ = n.sys.Shutdown(ctx)
	n.sys = nil
}

// idPlacedOn returns an id with prefix that placement over members puts on want.
func idPlacedOn(prefix, want string, members ...string) string {
	for i := 0; ; i++ {
		id := prefix + strconv.Itoa(i)
		best, bs := "", uint64(0)
		for _, m := range members {
			if s := cluster.Score(m, "slow", id); best == "" || s > bs || s == bs && m < best {
				best, bs = m, s
			}
		}
		if best == want {
			return id
		}
	}
}

func waitMembers(t testing.TB, n int, nodes ...*snode) {
	t.Helper()
	for _, x := range nodes {
		waitFor(t, 5*time.Second, x.name+" sees all", func() bool { return len(x.c.Members()) == n })
	}
}

func jetstreamNew(nc *nats.Conn) (jetstream.JetStream, error) { return jetstream.New(nc) }
