package remotemetrics_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/remote"
	"github.com/actord/actord/remote/remotemetrics"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// A node's collector registered with a Prometheus registry, served over
// HTTP as a program would, and read back after some traffic.
func ExampleNew() {
	ns, _ := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	ns.Start()
	defer ns.WaitForShutdown()
	defer ns.Shutdown()
	ns.ReadyForConnections(10 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	sys, _ := actor.Start()
	node, _ := remote.Connect(sys, ns.ClientURL(), "a")
	p, _ := actor.Spawn(sys, &Pinger{})
	port, _ := actor.Bind(p, (*Pinger).OnPing)
	remote.ExportRequest(node, "ping", port, remote.CBOR[*Ping](), remote.CBOR[int]())
	ping, _ := remote.ImportRequest(node, "a", "ping", remote.CBOR[*Ping](), remote.CBOR[int]())

	reg := prometheus.NewRegistry()
	reg.MustRegister(remotemetrics.New(node))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})) // the program's /metrics
	defer srv.Close()

	for i := 0; i < 3; i++ {
		ping.Ask(ctx, &Ping{N: i})
	}
	resp, _ := http.Get(srv.URL)
	resp.Body.Close()
	fmt.Println("scrape:", resp.Status)
	families, _ := reg.Gather()
	for _, f := range families {
		if f.GetName() == remotemetrics.MessagesReceived {
			m := f.GetMetric()[0]
			fmt.Println(f.GetName(), m.GetLabel()[0].GetValue(), m.GetCounter().GetValue())
		}
	}

	node.Close()
	actor.SendPill(p, actor.FinishedMsg)
	sys.Stop(ctx)
	// Output:
	// scrape: 200 OK
	// actord_remote_messages_received_total a 3
}
