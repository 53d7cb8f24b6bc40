package remote_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/remote"
	"github.com/nats-io/nats-server/v2/server"
)

// A greeter on node "b", asked and sent to from node "a". The two nodes
// could be two processes anywhere on the NATS network; here they share one
// process and an embedded NATS server.

type Greet struct {
	actor.Request[string]
	Name string
}

type Note struct {
	actor.Message
	Text string
}

type Greeter struct {
	actor.Actor
	notes chan string
}

func (g *Greeter) OnGreet(m *Greet) actor.Allocation {
	m.Reply("hello, " + m.Name)
	return actor.Nodelete
}

func (g *Greeter) OnNote(m *Note) actor.Allocation {
	g.notes <- m.Text
	return actor.Nodelete
}

func Example() {
	ns, _ := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	ns.Start()
	defer ns.WaitForShutdown()
	defer ns.Shutdown()
	ns.ReadyForConnections(10 * time.Second)

	// Node b exports two behaviours of a greeter.
	sysB, _ := actor.Start()
	b, _ := remote.Connect(sysB, ns.ClientURL(), "b")
	g, _ := actor.Spawn(sysB, &Greeter{notes: make(chan string, 1)})
	greet, _ := actor.Bind(g, (*Greeter).OnGreet)
	note, _ := actor.Bind(g, (*Greeter).OnNote)
	remote.ExportRequest(b, "greet", greet, remote.JSON[*Greet](), remote.JSON[string]())
	remote.Export(b, "note", note, remote.CBOR[*Note]())

	// Node a imports them: typed ports, same call shapes as local ones.
	sysA, _ := actor.Start()
	a, _ := remote.Connect(sysA, ns.ClientURL(), "a")
	greetB, _ := remote.ImportRequest(a, "b", "greet", remote.JSON[*Greet](), remote.JSON[string]())
	noteB, _ := remote.Import(a, "b", "note", remote.CBOR[*Note]())

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	reply, err := greetB.Ask(ctx, &Greet{Name: "a"})
	fmt.Println(reply, err)
	noteB.Send(&Note{Text: "sent one way"})
	fmt.Println(<-g.notes)

	// Names b does not export are refused.
	nope, _ := remote.ImportRequest(a, "b", "nope", remote.JSON[*Greet](), remote.JSON[string]())
	_, err = nope.Ask(ctx, &Greet{})
	fmt.Println(err)

	a.Close()
	b.Close()
	actor.SendPill(g, actor.FinishedMsg)
	sysA.Stop(ctx)
	sysB.Stop(ctx)
	// Output:
	// hello, a <nil>
	// sent one way
	// remote: name not exported (remote: error on the remote node): "nope"
}

// exampleNATS starts an embedded NATS server on a free local port.
func exampleNATS() *server.Server {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		panic(err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		panic("NATS server not ready")
	}
	return ns
}

// greetEveryone asks through any Asker: it does not care whether the
// greeter is local or on another node.
func greetEveryone(ctx context.Context, g remote.Asker[*Greet, string], names ...string) {
	for _, n := range names {
		reply, err := g.Ask(ctx, &Greet{Name: n})
		fmt.Println(reply, err)
	}
}

// Local adapts a local port to the interface remote request ports satisfy,
// so that code written against remote.Asker serves both.
func ExampleLocal() {
	ns := exampleNATS()
	defer ns.WaitForShutdown()
	defer ns.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	sysB, _ := actor.Start()
	b, _ := remote.Connect(sysB, ns.ClientURL(), "b")
	g, _ := actor.Spawn(sysB, &Greeter{})
	greet, _ := actor.Bind(g, (*Greeter).OnGreet)
	remote.ExportRequest(b, "greet", greet, remote.JSON[*Greet](), remote.JSON[string]())

	sysA, _ := actor.Start()
	a, _ := remote.Connect(sysA, ns.ClientURL(), "a")
	greetB, _ := remote.ImportRequest(a, "b", "greet", remote.JSON[*Greet](), remote.JSON[string]())

	greetEveryone(ctx, remote.Local(greet), "local") // on node b itself
	greetEveryone(ctx, greetB, "remote")             // from node a

	a.Close()
	b.Close()
	actor.SendPill(g, actor.FinishedMsg)
	sysA.Stop(ctx)
	sysB.Stop(ctx)
	// Output:
	// hello, local <nil>
	// hello, remote <nil>
}

// Forward gives a remote port a local actor.Port, for the local features
// that take one: here a timer sends to an actor on another node.
func ExampleForward() {
	ns := exampleNATS()
	defer ns.WaitForShutdown()
	defer ns.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	sysB, _ := actor.Start()
	b, _ := remote.Connect(sysB, ns.ClientURL(), "b")
	g, _ := actor.Spawn(sysB, &Greeter{notes: make(chan string, 1)})
	note, _ := actor.Bind(g, (*Greeter).OnNote)
	remote.Export(b, "note", note, remote.CBOR[*Note]())

	sysA, _ := actor.Start()
	a, _ := remote.Connect(sysA, ns.ClientURL(), "a")
	noteB, _ := remote.Import(a, "b", "note", remote.CBOR[*Note]())
	local, err := remote.Forward(sysA, noteB) // an actor.Port[*Note] of sysA
	fmt.Println("forwarder:", err)
	actor.SendAfter(local, 10*time.Millisecond, &Note{Text: "from a timer on node a"})
	fmt.Println(<-g.notes)

	a.Close() // the forwarder terminates with its node, so sysA can stop
	b.Close()
	actor.SendPill(g, actor.FinishedMsg)
	sysA.Stop(ctx)
	sysB.Stop(ctx)
	// Output:
	// forwarder: <nil>
	// from a timer on node a
}

// OnServe sees each request an export serves and how it ended: here the
// serving side logs the requests that failed.
func ExampleOnServe() {
	ns := exampleNATS()
	defer ns.WaitForShutdown()
	defer ns.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	sysB, _ := actor.Start()
	b, _ := remote.Connect(sysB, ns.ClientURL(), "b")
	g, _ := actor.Spawn(sysB, &Greeter{})
	greet, _ := actor.Bind(g, (*Greeter).OnGreet)
	remote.ExportRequest(b, "greet", greet, remote.JSON[*Greet](), remote.JSON[string](),
		remote.OnServe(func(m *Greet) func(error) error {
			name := m.Name // the request is the receiver's once sent: read it now
			return func(err error) error {
				if err != nil {
					fmt.Println("served", name+":", err)
				}
				return err // unchanged
			}
		}))

	sysA, _ := actor.Start()
	a, _ := remote.Connect(sysA, ns.ClientURL(), "a")
	greetB, _ := remote.ImportRequest(a, "b", "greet", remote.JSON[*Greet](), remote.JSON[string]())
	fmt.Println(greetB.Ask(ctx, &Greet{Name: "Ada"}))

	actor.SendPill(g, actor.FinishedMsg)
	for g.Alive() {
		time.Sleep(time.Millisecond)
	}
	_, err := greetB.Ask(ctx, &Greet{Name: "Bob"})
	fmt.Println(errors.Is(err, actor.ErrTerminated), errors.Is(err, remote.ErrNotDelivered))

	a.Close()
	b.Close()
	sysA.Stop(ctx)
	sysB.Stop(ctx)
	// Output:
	// hello, Ada <nil>
	// served Bob: executor: actor terminated
	// true true
}
