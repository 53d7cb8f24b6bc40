package bench

import (
	"context"
	"sync"

	"github.com/actord/actord/actor"
)

// ---- executor --------------------------------------------------------------
//
// The Actors chapter's executor benchmark: Actors actors in groups of Set; each
// actor, on every receive, sends one shared message to the next member of its
// group in round-robin order (itself included), and deletes itself after
// Set*Rounds+1 receives. Every actor gets one kick-off message. There is no
// work but messaging, so the executor's send and scheduling paths are the
// bottleneck. Total messages: Actors*(Set*Rounds+1).

// ExecutorSize is the shape of the executor benchmark.
type ExecutorSize struct {
	Actors, Set, Rounds int
}

// Messages is the number of messages the program sends and receives.
func (s ExecutorSize) Messages() int { return s.Actors * (s.Set*s.Rounds + 1) }

type execActor struct {
	actor.Actor
	group      []*execActor // the actor's group, including itself
	recs, last int          // receives so far; receives before deleting
	sends      int
}

type execMsg struct{ actor.Message }

func (a *execActor) receive(m *execMsg) actor.Allocation {
	if a.recs == a.last {
		return actor.Delete
	}
	to := a.group[a.sends%len(a.group)]
	a.sends++
	a.recs++
	if err := actor.Send(to, m, (*execActor).receive); err != nil {
		panic(err)
	}
	return actor.Nodelete
}

// Executor runs the executor benchmark on sys and stops it.
func Executor(sys *actor.System, sz ExecutorSize) error {
	actors := make([]execActor, sz.Actors)
	for i := range actors {
		g := i - i%sz.Set
		end := min(g+sz.Set, sz.Actors)
		a := &actors[i]
		a.last = sz.Set * sz.Rounds
		a.group = make([]*execActor, 0, end-g)
		for j := g; j < end; j++ {
			a.group = append(a.group, &actors[j])
		}
		// Start with the member after itself, like a ring: spreads the
		// first round over the group.
		a.sends = i - g + 1
		if _, err := actor.Spawn(sys, a); err != nil {
			return err
		}
	}
	shared := &execMsg{}
	for i := range actors {
		if err := actor.Send(&actors[i], shared, (*execActor).receive); err != nil {
			return err
		}
	}
	return sys.Stop(context.Background())
}

// ExecutorChan is the executor benchmark with one goroutine and one buffered
// channel per actor. A group has at most Set messages in flight, so a
// channel capacity of Set never blocks a sender.
func ExecutorChan(sz ExecutorSize) {
	chans := make([]chan *execMsg, sz.Actors)
	for i := range chans {
		chans[i] = make(chan *execMsg, sz.Set)
	}
	var wg sync.WaitGroup
	wg.Add(sz.Actors)
	for i := range chans {
		g := i - i%sz.Set
		end := min(g+sz.Set, sz.Actors)
		group := chans[g:end]
		go func() {
			defer wg.Done()
			last := sz.Set * sz.Rounds
			sends := i - g + 1
			for recs := 0; ; recs++ {
				m := <-chans[i]
				if recs == last {
					return
				}
				group[sends%len(group)] <- m
				sends++
			}
		}()
	}
	shared := &execMsg{}
	for i := range chans {
		chans[i] <- shared
	}
	wg.Wait()
}
