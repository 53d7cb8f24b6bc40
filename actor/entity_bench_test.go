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

// BenchmarkAskByName: an Ask from a goroutine outside the system, two
// workers, to one of 100 actors chosen in turn, reached through a port
// kept from before (port), a Lookup of its registered name (lookup), or
// EntityPort of its entity name (entity). The differences are the cost of
// finding the actor by name on the service path.
func BenchmarkAskByName(b *testing.B) {
	ctx := context.Background()
	run := func(b *testing.B, port func(i int) (actor.Port[*greet], error)) {
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			p, err := port(i % len(benchNames))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := actor.Ask(ctx, p, &greet{Who: "b"}); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
	}
	b.Run("via=port", func(b *testing.B) {
		sys, _ := actor.Start(actor.WithWorkers(2))
		gs := make([]*greeter, len(benchNames))
		ports := make([]actor.Port[*greet], len(benchNames))
		for i := range ports {
			gs[i] = must(actor.Spawn(sys, &greeter{}))
			ports[i] = must(actor.Bind(gs[i], (*greeter).onGreet))
		}
		run(b, func(i int) (actor.Port[*greet], error) { return ports[i], nil })
		for _, g := range gs {
			actor.SendPill(g, actor.FinishedMsg)
		}
		sys.Stop(ctx)
	})
	b.Run("via=lookup", func(b *testing.B) {
		sys, _ := actor.Start(actor.WithWorkers(2))
		gs := make([]*greeter, len(benchNames))
		for i, n := range benchNames {
			gs[i] = must(actor.Spawn(sys, &greeter{}))
			actor.Register(sys, n, must(actor.Bind(gs[i], (*greeter).onGreet)))
		}
		run(b, func(i int) (actor.Port[*greet], error) { return actor.Lookup[*greet](sys, benchNames[i]) })
		for _, g := range gs {
			actor.SendPill(g, actor.FinishedMsg)
		}
		sys.Stop(ctx)
	})
	b.Run("via=entity", func(b *testing.B) {
		sys, _ := actor.Start(actor.WithWorkers(2))
		es := actor.NewEntities(sys, func(string) *greeter { return &greeter{} })
		run(b, func(i int) (actor.Port[*greet], error) {
			return actor.EntityPort(ctx, es, benchNames[i], (*greeter).onGreet)
		})
		for _, n := range benchNames {
			actor.SendPill(must(es.Get(ctx, n)), actor.FinishedMsg)
		}
		sys.Stop(ctx)
	})
}

// BenchmarkAskEntity: Ask from a goroutine to one entity (an extended
// actor: Entities watches it) on one worker, through a port kept from
// before, beside the same Ask to a plain actor: the cost of an entity's
// request on the service path, which a caller that helps serves itself
// when the worker is parked.
func BenchmarkAskEntity(b *testing.B) {
	ctx := context.Background()
	run := func(b *testing.B, p actor.Port[*greet]) {
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := actor.Ask(ctx, p, &greet{Who: "b"}); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
	}
	b.Run("kind=entity", func(b *testing.B) {
		sys, _ := actor.Start(actor.WithWorkers(1))
		es := actor.NewEntities(sys, func(string) *greeter { return &greeter{} })
		p := must(actor.EntityPort(ctx, es, "e", (*greeter).onGreet))
		run(b, p)
		actor.SendPill(must(es.Get(ctx, "e")), actor.FinishedMsg)
		sys.Stop(ctx)
	})
	b.Run("kind=plain", func(b *testing.B) {
		sys, _ := actor.Start(actor.WithWorkers(1))
		g := must(actor.Spawn(sys, &greeter{}))
		run(b, must(actor.Bind(g, (*greeter).onGreet)))
		actor.SendPill(g, actor.FinishedMsg)
		sys.Stop(ctx)
	})
}
