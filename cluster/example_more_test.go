package cluster_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/cluster"
	"github.com/actord/actord/remote"
	"github.com/nats-io/nats-server/v2/server"
)

// exampleServer starts a nats-server with JetStream on 127.0.0.1 and
// returns its URL and a function that stops it.
func exampleServer() (string, func()) {
	dir, _ := os.MkdirTemp("", "cluster-example")
	ns, _ := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: dir})
	ns.Start()
	ns.ReadyForConnections(10 * time.Second)
	return ns.ClientURL(), func() {
		ns.Shutdown()
		ns.WaitForShutdown()
		os.RemoveAll(dir)
	}
}

// exampleMember joins a member named name to the cluster at url, with
// opts, and returns it and a function that makes it leave.
func exampleMember(ctx context.Context, url, name string, opts ...cluster.Option) (*cluster.Cluster, func()) {
	sys, _ := actor.Start()
	node, _ := remote.Connect(sys, url, name)
	c, _ := cluster.New(sys, node, append([]cluster.Option{cluster.WithTTL(2 * time.Second)}, opts...)...)
	if err := c.Join(ctx); err != nil {
		fmt.Println(err)
	}
	return c, func() {
		c.Leave(ctx)
		node.Close()
		sys.Shutdown(ctx)
	}
}

// Scheduler is an actor that must run once in the whole cluster.
type Scheduler struct{ actor.Actor }

// One scheduler cluster-wide: both members are candidates; a holds the
// singleton, and when a leaves, b starts its own scheduler (after a's has
// ended).
func ExampleRunSingleton() {
	url, stop := exampleServer()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	a, leaveA := exampleMember(ctx, url, "a")
	sa, _ := cluster.RunSingleton(a, "scheduler", func() *Scheduler { return &Scheduler{} })
	for !sa.Holding() && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	b, leaveB := exampleMember(ctx, url, "b")
	defer leaveB()
	sb, _ := cluster.RunSingleton(b, "scheduler", func() *Scheduler { return &Scheduler{} })
	fmt.Println("a holds:", sa.Holding(), "b holds:", sb.Holding())

	leaveA()
	for !sb.Holding() && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("after a left, b holds:", sb.Holding())
	// Output:
	// a holds: true b holds: false
	// after a left, b holds: true
}

// A member learns of the others joining and leaving.
func ExampleCluster_Subscribe() {
	url, stop := exampleServer()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	a, leaveA := exampleMember(ctx, url, "a")
	defer leaveA()
	events := make(chan cluster.Event, 16)
	unsubscribe := a.Subscribe(func(e cluster.Event) {
		if e.Type != cluster.MemberUpdated { // a leaving member's record changes first
			events <- e
		}
	})
	defer unsubscribe()

	_, leaveB := exampleMember(ctx, url, "b")
	e := <-events
	fmt.Println(e.Type, e.Member.Node)
	leaveB()
	e = <-events
	fmt.Println(e.Type, e.Member.Node)
	// Output:
	// joined b
	// left b
}

// Rebalancing on join: idle entities that placement puts on a new member
// move there, a few at a time.
func ExampleWithRebalance() {
	url, stop := exampleServer()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	_, leave := exampleMember(ctx, url, "a", cluster.WithRebalance(cluster.Rebalance{
		Idle:  time.Minute, // an entity moves only after a minute without requests
		Batch: 16,          // at most 16 moves per look
	}))
	defer leave()
	fmt.Println("joined")
	// Output:
	// joined
}
