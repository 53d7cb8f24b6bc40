// Command supervision shows actord's failure handling and flow control:
//
//   - a worker spawned WithRestart: a task that makes it panic is dropped,
//     the worker's state is reset and it goes on with the tasks queued
//     behind, within a restart budget; past the budget it terminates;
//   - a watcher actor that Watches the worker and receives its *Terminated,
//     saying why it ended;
//   - a slow sink spawned WithMailbox (bounded, Reject), fed by a goroutine
//     outside the system with SendContext, which waits for room instead of
//     failing or growing the queue.
//
// Run it with:
//
//	go run ./examples/supervision -tasks 20 -poison 4 -budget 3
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"sync/atomic"
	"time"

	"github.com/actord/actord/actor"
)

// ---- a restarting worker ----------------------------------------------------

// task is a unit of work; a poisoned one makes the worker panic.
type task struct {
	actor.Message
	n      int
	poison bool
}

// worker sums its tasks. done counts every task it completed, across
// restarts; sum is its state, reset by a restart.
type worker struct {
	actor.Actor
	sum    int
	done   atomic.Int64
	starts atomic.Int64
}

// Started implements actor.Starter: it runs before the first message and
// after each restart.
func (w *worker) Started() { w.starts.Add(1) }

func (w *worker) do(t *task) actor.Allocation {
	if t.poison {
		panic(fmt.Sprintf("poisoned task %d", t.n))
	}
	w.sum += t.n
	w.done.Add(1)
	return actor.Nodelete
}

// ---- a watcher ----------------------------------------------------------------

// watcher receives the worker's *Terminated and passes it on.
type watcher struct {
	actor.Actor
	out chan<- *actor.Terminated
}

func (w *watcher) terminated(t *actor.Terminated) actor.Allocation {
	w.out <- t
	return actor.Finished // one notice per watch: the watcher's job is done
}

// ---- a bounded, slow sink -----------------------------------------------------

type item struct {
	actor.Message
	n int
}

// last is the sink's final message: it terminates the sink.
type last struct{ actor.Message }

type sink struct {
	actor.Actor
	got  atomic.Int64
	cost time.Duration
}

func (s *sink) take(*item) actor.Allocation {
	time.Sleep(s.cost) // stands in for slow work (a real one would use actor.Go)
	s.got.Add(1)
	return actor.Nodelete
}

func (s *sink) finish(*last) actor.Allocation { return actor.Finished }

// result is what run observed.
type result struct {
	Tasks, Completed int64        // tasks sent, tasks completed
	Starts           int64        // Started hook runs: 1 + restarts
	Reason           actor.Reason // why the worker terminated
	Items, Received  int64        // items offered to the sink, items it received
	Restarts         uint64       // from the system's statistics
	BudgetExhausted  uint64
	WatchNotices     uint64
}

// run sends tasks tasks to a worker whose budget allows budget restarts,
// the last poison of them poisoned (so the worker runs out of budget when
// poison > budget), and items items to a sink bounded to bound messages.
func run(tasks, poison, budget, items, bound int) (result, error) {
	var r result
	// The worker terminates exactly when poison > budget, at the last
	// task: a budget below 1 would mean the default (0) or no limit, and
	// more poisoned tasks than budget+1 would leave tasks undelivered.
	switch {
	case budget < 1 || tasks < 1 || items < 0 || bound < 1:
		return r, errors.New("-budget, -tasks and -bound must be at least 1, -items not negative")
	case poison < 0 || poison > tasks || poison > budget+1:
		return r, fmt.Errorf("-poison must be 0 to min(-tasks, -budget+1) = %d", min(tasks, budget+1))
	}
	sys, err := actor.Start(actor.WithErrorHandler(func(err error) {
		log.Printf("reported: %v", firstLine(err))
	}))
	if err != nil {
		return r, err
	}

	// The worker restarts at most budget times a minute, pausing 1ms
	// before the first restart of a window, doubling up to 20ms.
	w := &worker{}
	if _, err := actor.Spawn(sys, w, actor.WithRestart(func() { w.sum = 0 },
		actor.Budget{MaxRestarts: budget, Within: time.Minute, MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond})); err != nil {
		return r, err
	}
	wp, err := actor.Bind(w, (*worker).do)
	if err != nil {
		return r, err
	}
	notices := make(chan *actor.Terminated, 1)
	wa, err := actor.Spawn(sys, &watcher{out: notices})
	if err != nil {
		return r, err
	}
	wap, err := actor.Bind(wa, (*watcher).terminated)
	if err != nil {
		return r, err
	}
	if err := actor.Watch(wp, wap); err != nil {
		return r, err
	}
	for i := range tasks {
		if err := wp.Send(&task{n: i, poison: i >= tasks-poison}); err != nil {
			return r, err
		}
	}
	r.Tasks = int64(tasks)

	// The sink holds at most bound queued items; the producer, a goroutine
	// outside the system, waits for room with SendContext.
	s := &sink{cost: 200 * time.Microsecond}
	if _, err := actor.Spawn(sys, s, actor.WithMailbox(bound, actor.Reject)); err != nil {
		return r, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fed := make(chan error, 1)
	go func() {
		for i := range items {
			if err := actor.SendContext(ctx, s, &item{n: i}, (*sink).take); err != nil {
				fed <- err
				return
			}
		}
		fed <- actor.SendContext(ctx, s, &last{}, (*sink).finish)
	}()
	if err := <-fed; err != nil {
		return r, err
	}
	r.Items = int64(items)

	var t *actor.Terminated
	if poison > budget {
		// Past its budget the worker terminates; the watcher hears why.
		t = <-notices
	} else if err := actor.SendPill(w, actor.FinishedMsg); err != nil {
		return r, err
	} else {
		t = <-notices
	}
	r.Reason = t.Reason

	// Stop reports only what ended actors badly: the panic past the budget
	// at most (ErrPanic).
	if err := sys.Stop(ctx); err != nil && !onlyPanics(err) {
		return r, err
	}
	st, err := sys.Stats()
	if err != nil {
		return r, err
	}
	tot := st.Total()
	r.Completed, r.Starts, r.Received = w.done.Load(), w.starts.Load(), s.got.Load()
	r.Restarts, r.BudgetExhausted, r.WatchNotices = tot.Restarts, tot.BudgetExhausted, st.WatchNotices
	return r, nil
}

// onlyPanics reports whether err holds nothing but panic reports.
func onlyPanics(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !onlyPanics(e) {
				return false
			}
		}
		return true
	}
	return errors.Is(err, actor.ErrPanic)
}

func firstLine(err error) string {
	s := err.Error()
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}

func main() {
	tasks := flag.Int("tasks", 20, "tasks sent to the worker")
	poison := flag.Int("poison", 4, "how many of the last tasks make it panic")
	budget := flag.Int("budget", 3, "restarts the worker may make per minute")
	items := flag.Int("items", 2000, "items sent to the bounded sink")
	bound := flag.Int("bound", 16, "the sink's mailbox bound")
	flag.Parse()
	log.SetFlags(0)
	r, err := run(*tasks, *poison, *budget, *items, *bound)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("worker: %d of %d tasks completed, started %d times (%d restarts), terminated: %v (budget exhausted: %d)\n",
		r.Completed, r.Tasks, r.Starts, r.Restarts, r.Reason, r.BudgetExhausted)
	fmt.Printf("watch notices: %d\n", r.WatchNotices)
	fmt.Printf("sink: received %d of %d items through a mailbox bounded to %d (SendContext waited for room)\n",
		r.Received, r.Items, *bound)
}
