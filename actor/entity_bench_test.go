package actor_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/actord/actord/actor"
)

// benchNames are the names of the entity and name benchmarks: 100 live
// actors, found by name in turn.
var benchNames = func() []string {
	n := make([]string, 100)
	for i := range n {
		n[i] = "e" + strconv.Itoa(i)
	}
	return n
}()

// BenchmarkEntityGet: Entities.Get of a live entity (no spawn), to compare
// with BenchmarkLookup, which finds a registered port by name.
func BenchmarkEntityGet(b *testing.B) {
	sys, _ := actor.Start(actor.WithWorkers(1))
	es := actor.NewEntities(sys, func(string) *greeter { return &greeter{} })
	ctx := context.Background()
	for _, n := range benchNames {
		must(es.Get(ctx, n))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := es.Get(ctx, benchNames[i%len(benchNames)]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	for _, n := range benchNames {
		actor.SendPill(must(es.Get(ctx, n)), actor.FinishedMsg)
	}
	sys.Stop(ctx)
}

// BenchmarkEntityPort: EntityPort (Get, then Bind) of a live entity.
func BenchmarkEntityPort(b *testing.B) {
	sys, _ := actor.Start(actor.WithWorkers(1))
	es := actor.NewEntities(sys, func(string) *greeter { return &greeter{} })
	ctx := context.Background()
	for _, n := range benchNames {
		must(es.Get(ctx, n))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := actor.EntityPort(ctx, es, benchNames[i%len(benchNames)], (*greeter).onGreet); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	for _, n := range benchNames {
		actor.SendPill(must(es.Get(ctx, n)), actor.FinishedMsg)
	}
	sys.Stop(ctx)
}

// BenchmarkLookup: Lookup of a registered, live port.
func BenchmarkLookup(b *testing.B) {
	sys, _ := actor.Start(actor.WithWorkers(1))
	ctx := context.Background()
	gs := make([]*greeter, len(benchNames))
	for i, n := range benchNames {
		gs[i] = must(actor.Spawn(sys, &greeter{}))
		actor.Register(sys, n, must(actor.Bind(gs[i], (*greeter).onGreet)))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := actor.Lookup[*greet](sys, benchNames[i%len(benchNames)]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	for _, g := range gs {
		actor.SendPill(g, actor.FinishedMsg)
	}
	sys.Stop(ctx)
}
