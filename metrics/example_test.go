package metrics_test

import (
	"context"
	"fmt"

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
