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

// Add adds to a cart; the reply is the cart's item count.
type Add struct {
	actor.Request[int]
	Items int
}

// Cart is a virtual entity: one live activation per cart id, cluster-wide.
type Cart struct {
	actor.Actor
	items int
}

func (c *Cart) OnAdd(m *Add) actor.Allocation {
	c.items += m.Items
	m.Reply(c.items)
	return actor.Nodelete
}

// Two members, both hosting carts: the same cart asked from both reaches
// the one activation.
func Example() {
	dir, _ := os.MkdirTemp("", "cluster-example")
	defer os.RemoveAll(dir)
	ns, _ := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: dir})
	ns.Start()
	defer ns.WaitForShutdown()
	defer ns.Shutdown()
	ns.ReadyForConnections(10 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	member := func(name string) (*cluster.Cluster, *cluster.Kind[Add, int, *Add], func()) {
		sys, _ := actor.Start()
		node, _ := remote.Connect(sys, ns.ClientURL(), name)
		c, _ := cluster.New(sys, node, cluster.WithTTL(2*time.Second))
		carts, _ := cluster.NewKind(c, "cart", remote.CBOR[*Add](), remote.CBOR[int]())
		cluster.Host(carts, func(id string) *Cart { return &Cart{} }, (*Cart).OnAdd)
		if err := c.Join(ctx); err != nil {
			fmt.Println(err)
		}
		return c, carts, func() {
			c.Leave(ctx)
			node.Close()
			sys.Shutdown(ctx)
		}
	}
	a, cartsA, stopA := member("a")
	_, cartsB, stopB := member("b")
	defer stopA()
	defer stopB()
	for len(a.Members()) < 2 {
		time.Sleep(10 * time.Millisecond)
	}

	n, err := cartsA.Ask(ctx, "cart-42", &Add{Items: 2})
	fmt.Println(n, err)
	n, err = cartsB.Ask(ctx, "cart-42", &Add{Items: 3})
	fmt.Println(n, err)
	// Output:
	// 2 <nil>
	// 5 <nil>
}
