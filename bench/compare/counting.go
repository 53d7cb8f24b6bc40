package compare

import (
	"context"

	hollywoodgo "github.com/anthdm/hollywood/actor"
	protoactorgo "github.com/asynkron/protoactor-go/actor"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/bench"
	"github.com/actord/actord/bench/compare/hollywood"
	"github.com/actord/actord/bench/compare/protoactor"
)

// ---- counting from an actor ----------------------------------------------------
//
// Savina's counting as Savina writes it: the producer is an actor, whose
// one behaviour sends n increments (one preallocated message) to a counter
// actor and then asks for the total, which comes back to the producer as a
// message. (Program counting sends from a goroutine outside the system.)
// The whole backlog is sent before the producer's behaviour ends. The
// goroutine version is bench.CountingChan: a producer goroutine sending on
// a buffered channel to a counter goroutine.

type counterActor struct {
	actor.Actor
	n int
}

type counterInc struct{ actor.Message }

type counterGet struct{ actor.Request[int] }

func (c *counterActor) inc(*counterInc) actor.Allocation {
	c.n++
	return actor.Nodelete
}

func (c *counterActor) get(m *counterGet) actor.Allocation {
	if err := m.Reply(c.n); err != nil {
		panic(err)
	}
	return actor.Finished
}

type producerActor struct {
	actor.Actor
	counter *counterActor
	get     actor.Port[*counterGet]
	replies actor.Port[*actor.Reply[int]]
	n       int
	total   chan int
	err     error
}

type producerStart struct{ actor.Message }

func (p *producerActor) start(*producerStart) actor.Allocation {
	m := &counterInc{}
	for i := 0; i < p.n; i++ {
		if err := actor.Send(p.counter, m, (*counterActor).inc); err != nil {
			p.err = err
			p.total <- -1
			return actor.Finished
		}
	}
	if err := actor.AskAsync(p.get, &counterGet{}, p.replies, 0); err != nil {
		p.err = err
		p.total <- -1
		return actor.Finished
	}
	return actor.Nodelete
}

func (p *producerActor) onTotal(r *actor.Reply[int]) actor.Allocation {
	p.err = r.Err
	p.total <- r.Value
	return actor.Finished
}

// countingActor runs counting from an actor on sys and stops it; it
// returns the total the producer received.
func countingActor(sys *actor.System, n int) (int, error) {
	c, err := actor.Spawn(sys, &counterActor{})
	if err != nil {
		return 0, err
	}
	p, err := actor.Spawn(sys, &producerActor{counter: c, n: n, total: make(chan int, 1)})
	if err != nil {
		return 0, err
	}
	if p.get, err = actor.Bind(c, (*counterActor).get); err != nil {
		return 0, err
	}
	if p.replies, err = actor.Bind(p, (*producerActor).onTotal); err != nil {
		return 0, err
	}
	if err := actor.Send(p, &producerStart{}, (*producerActor).start); err != nil {
		return 0, err
	}
	total := <-p.total
	if p.err != nil {
		return 0, p.err
	}
	return total, sys.Stop(context.Background())
}

func runCountingActor(system string, workers int, sz Sizes) (Result, error) {
	n := sz.Counting
	return counted(system, workers, Result{Actors: 2, Messages: n}, "total", n, onSystems[int]{
		chan_:      func() int { return bench.CountingChan(n) },
		protoactor: func(sys *protoactorgo.ActorSystem) int { return protoactor.CountingActor(sys, n) },
		hollywood:  func(e *hollywoodgo.Engine) int { return hollywood.CountingActor(e, n) },
		actord:     func(sys *actor.System) (int, error) { return countingActor(sys, n) },
	})
}
