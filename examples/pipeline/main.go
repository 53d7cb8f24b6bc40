// Command pipeline shows message lifetime in actord: pooled messages travel
// a pipeline of stage actors with no copy and no lock. Each stage owns a
// message while its behaviour runs; forwarding it (sending it on) hands it
// to the next stage, and the last stage sets Delete so that the executor
// returns it to its pool after that behaviour.
//
//	go run ./examples/pipeline -jobs 100000 -stages 8
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"sync"
	"sync/atomic"
	"time"

	"github.com/actord/actord/actor"
)

// job is a pooled message.
type job struct {
	actor.Message
	sum  int
	pool *sync.Pool
	news *atomic.Int64 // counts jobs the pool had to allocate
}

// Release is job's Release hook, run after a behaviour set Delete.
func (j *job) Release() { j.pool.Put(j) }

// stage adds its number to each job and forwards it.
type stage struct {
	actor.Actor
	n    int
	next *stage
	out  chan<- int // last stage only
}

func (s *stage) onJob(j *job) actor.Allocation {
	j.sum += s.n
	if s.next != nil {
		if err := actor.Send(s.next, j, (*stage).onJob); err != nil {
			panic(err)
		}
		return actor.Nodelete // moved: the job is the next stage's now
	}
	s.out <- j.sum
	j.SetAllocation(actor.Delete) // back to the pool after this behaviour
	return actor.Nodelete
}

// result is what run reports.
type result struct {
	Jobs, Allocated int64
	Sum             int
	Elapsed         time.Duration
}

// run pushes jobs through a pipeline of stages, at most window in flight.
func run(jobs, stages, window int) (result, error) {
	if jobs < 0 || stages < 1 || window < 1 {
		return result{}, errors.New("-stages and -window must be at least 1, -jobs not negative")
	}
	sys, err := actor.Start()
	if err != nil {
		return result{}, err
	}
	out := make(chan int, window)
	var first *stage
	all := make([]*stage, stages)
	for i := stages - 1; i >= 0; i-- {
		s := &stage{n: i + 1, next: first}
		if i == stages-1 {
			s.out = out
		}
		if _, err := actor.Spawn(sys, s); err != nil {
			return result{}, err
		}
		all[i], first = s, s
	}
	var news atomic.Int64
	pool := &sync.Pool{}
	pool.New = func() any { news.Add(1); return &job{pool: pool, news: &news} }
	start := time.Now()
	res := result{Jobs: int64(jobs)}
	sent, got := 0, 0
	for got < jobs {
		for sent < jobs && sent-got < window {
			j := pool.Get().(*job)
			j.sum = 0
			if err := actor.Send(first, j, (*stage).onJob); err != nil {
				return res, err
			}
			sent++
		}
		res.Sum += <-out
		got++
	}
	res.Elapsed = time.Since(start)
	for _, s := range all {
		if err := actor.SendPill(s, actor.FinishedMsg); err != nil {
			return res, err
		}
	}
	res.Allocated = news.Load()
	return res, sys.Stop(context.Background())
}

func main() {
	jobs := flag.Int("jobs", 100000, "jobs to push through the pipeline")
	stages := flag.Int("stages", 8, "stage actors")
	window := flag.Int("window", 256, "jobs in flight at most")
	flag.Parse()
	r, err := run(*jobs, *stages, *window)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d jobs through %d stages in %v (%.0f jobs/s); checksum %d; %d job messages allocated for %d jobs\n",
		r.Jobs, *stages, r.Elapsed.Round(time.Millisecond), float64(r.Jobs)/r.Elapsed.Seconds(), r.Sum, r.Allocated, r.Jobs)
}
