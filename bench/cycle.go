package bench

import (
	"context"
	"fmt"
	"sync"

	"github.com/actord/actord/actor"
)

// ---- cycle -----------------------------------------------------------------
//
// Adapted from the scheduler chapter's cycle benchmark: actors form rings of
// RingSize (the scheduler chapter's 5) and each ring passes one preallocated
// token around; every receive forwards it to the next member. Every hop is a
// push onto the next actor's queue and a pop by whichever worker serves it,
// with no shortcut: the token is the only message of its ring, so a ring member
// always waits for a whole lap before it runs again. Many rings (the scheduler
// chapter's 100 per worker, "busy") keep every worker loaded; one ring per
// worker ("near idle") leaves the queues mostly empty, which exercises the
// workers' idle and wake-up path.
//
// The actors are created interleaved, member j of ring k at position
// k + j*Rings, as the scheduler chapter's source links its threads, so that
// with round-robin placement the members of a ring sit on different queues
// (neighbours are Rings tickets apart, and Rings is not a multiple of the
// queue count with the default 16 queues per worker). With few rings the
// actors fill only the first queues, which belong to worker 0: in the near
// idle case the other workers get work only by stealing it, which is what
// actord's placement gives a program that creates a handful of actors.
//
// The run is a fixed number of hops per ring rather than a fixed duration,
// so that it fits `go test -bench`. The last RingSize receives of each ring
// terminate their actor (each member exactly once) and the very last one
// does not forward: nothing is left in the queues when Stop returns.
// Messages: Rings*Hops.

// CycleSize is the shape of the cycle benchmark.
type CycleSize struct {
	Rings    int // number of rings (and tokens)
	RingSize int // actors per ring
	Hops     int // receives per ring, at least RingSize
}

// Messages is the number of hops (messages) of a run.
func (s CycleSize) Messages() int { return s.Rings * s.Hops }

// Actors is the number of actors (or goroutines) of a run.
func (s CycleSize) Actors() int { return s.Rings * s.RingSize }

// Check panics if s is not a valid cycle size.
func (s CycleSize) Check() {
	if s.Rings < 1 || s.RingSize < 1 || s.Hops < s.RingSize {
		panic(fmt.Sprintf("bench: invalid CycleSize %+v: need Rings >= 1, RingSize >= 1, Hops >= RingSize", s))
	}
}

// CycleDefault is the cycle benchmark's size on workers workers: rings of 5,
// 100 rings per worker when busy, else one ring per worker. The total number
// of hops does not depend on workers: 2 million busy and 200,000 near idle
// (20 million and 2 million with ACTORD_BENCH_FULL=1).
func CycleDefault(workers int, busy bool) CycleSize {
	workers = max(workers, 1)
	rings, total := workers, 200_000
	if busy {
		rings, total = 100*workers, 2_000_000
	}
	if Full() {
		total *= 10
	}
	const ringSize = 5
	return CycleSize{Rings: rings, RingSize: ringSize, Hops: max(total/rings, ringSize)}
}

type cycleActor struct {
	actor.Actor
	next *cycleActor // the next member of the ring
	size int         // the ring's size
	recs int         // receives so far (read after Stop by tests)
}

type cycleToken struct {
	actor.Message
	left int // receives still to come on this ring, this one included
}

func (a *cycleActor) receive(t *cycleToken) actor.Allocation {
	a.recs++
	left := t.left - 1 // t is ours until we send it on: read and write it first
	t.left = left
	if left > 0 {
		if err := actor.Send(a.next, t, (*cycleActor).receive); err != nil {
			panic(err)
		}
	}
	if left < a.size {
		return actor.Finished // one of the ring's last RingSize receives
	}
	return actor.Nodelete
}

// Cycle runs the cycle benchmark on a fresh sys and stops it.
func Cycle(sys *actor.System, sz CycleSize) error {
	_, err := cycle(sys, sz)
	return err
}

// cycle runs Cycle and returns the actors, for tests to count receives.
func cycle(sys *actor.System, sz CycleSize) ([]cycleActor, error) {
	sz.Check()
	// Ring k is actors[k*RingSize : (k+1)*RingSize].
	actors := make([]cycleActor, sz.Actors())
	for i := range actors {
		k, j := i/sz.RingSize, i%sz.RingSize
		actors[i].next = &actors[k*sz.RingSize+(j+1)%sz.RingSize]
		actors[i].size = sz.RingSize
	}
	for j := 0; j < sz.RingSize; j++ {
		for k := 0; k < sz.Rings; k++ {
			if _, err := actor.Spawn(sys, &actors[k*sz.RingSize+j]); err != nil {
				return nil, err
			}
		}
	}
	tokens := make([]cycleToken, sz.Rings)
	for k := range tokens {
		tokens[k].left = sz.Hops
		if err := actor.Send(&actors[k*sz.RingSize], &tokens[k], (*cycleActor).receive); err != nil {
			return nil, err
		}
	}
	return actors, sys.Stop(context.Background())
}

// CycleChan is Cycle with one goroutine and one channel (capacity 1: a ring
// has one token) per actor. It returns the number of hops it counted.
func CycleChan(sz CycleSize) int {
	sz.Check()
	n := sz.Actors()
	chans := make([]chan *cycleToken, n)
	for i := range chans {
		chans[i] = make(chan *cycleToken, 1)
	}
	recs := make([]int, n) // recs[i] is written by goroutine i only, read after wg.Wait
	var wg sync.WaitGroup
	wg.Add(n)
	for j := 0; j < sz.RingSize; j++ {
		for k := 0; k < sz.Rings; k++ {
			i := k*sz.RingSize + j
			next := chans[k*sz.RingSize+(j+1)%sz.RingSize]
			go func() {
				defer wg.Done()
				for {
					t := <-chans[i]
					recs[i]++
					left := t.left - 1
					t.left = left
					if left > 0 {
						next <- t
					}
					if left < sz.RingSize {
						return
					}
				}
			}()
		}
	}
	tokens := make([]cycleToken, sz.Rings)
	for k := range tokens {
		tokens[k].left = sz.Hops
		chans[k*sz.RingSize] <- &tokens[k]
	}
	wg.Wait()
	total := 0
	for _, r := range recs {
		total += r
	}
	return total
}
