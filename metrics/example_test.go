package metrics_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/metrics"
)

type counter struct {
	actor.Actor
	n int
}

type add struct{ actor.Message }

func (c *counter) add(*add) actor.Allocation {
	c.n++
	return actor.Nodelete
}

// A Collector follows one system at a time; counters keep the counts of the
// systems it replaced, so they never go back.
func ExampleCollector() {
	coll := metrics.NewCollector()
	reg, err := metrics.NewRegistry(coll, metrics.NewWorkload("example"))
	if err != nil {
		panic(err)
	}
	// A server would now serve it: http.Handle("/metrics", metrics.Handler(reg)).

	for range 2 {
		sys, err := actor.Start(actor.WithWorkers(2))
		if err != nil {
			panic(err)
		}
		coll.Attach(sys) // retires the previous system, keeping its counts
		c, _ := actor.Spawn(sys, &counter{})
		for range 10 {
			_ = actor.Send(c, &add{}, (*counter).add)
		}
		_ = actor.SendPill(c, actor.FinishedMsg)
		if err := sys.Stop(context.Background()); err != nil {
			panic(err)
		}
	}

	fams, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range fams {
		switch f.GetName() {
		case "actord_messages_sent_total", "actord_live_actors":
			fmt.Println(f.GetName(), f.Metric[0].GetCounter().GetValue()+f.Metric[0].GetGauge().GetValue())
		}
	}
	// Output:
	// actord_live_actors 0
	// actord_messages_sent_total 22
}

// Handler serves a registry in Prometheus' text format; here through
// httptest, in a server with http.Handle("/metrics", metrics.Handler(reg)).
func ExampleHandler() {
	sys, err := actor.Start(actor.WithWorkers(1))
	if err != nil {
		panic(err)
	}
	coll := metrics.NewCollector()
	coll.Attach(sys)
	reg, err := metrics.NewRegistry(coll)
	if err != nil {
		panic(err)
	}
	c, _ := actor.Spawn(sys, &counter{})
	for range 3 {
		_ = actor.Send(c, &add{}, (*counter).add)
	}

	srv := httptest.NewServer(metrics.Handler(reg))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	fmt.Println(resp.Status)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "actord_messages_sent_total ") || strings.HasPrefix(line, "actord_live_actors ") {
			fmt.Println(line)
		}
	}

	_ = actor.SendPill(c, actor.FinishedMsg)
	if err := sys.Stop(context.Background()); err != nil {
		panic(err)
	}
	// Output:
	// 200 OK
	// actord_live_actors 1
	// actord_messages_sent_total 3
}
