package bench

import (
	"context"
	"github.com/actord/actord/actortest"

	"github.com/actord/actord/actor"
)

// ---- balance-one and balance-multi ----------------------------------------
//
// The Actors chapter's stealing benchmarks exploit round-robin placement:
// actor number t lives on queue t mod Q, and worker w owns a contiguous range
// of queues. The programs create actors in ticket order and keep only those
// whose queue belongs to a loaded worker as working actors (the executor
// workload, fewer rounds); every other actor is a dummy that terminates after
// one message. Balance-one loads worker 0 only; balance-multi loads every
// other worker (0, 2, 4, ...). Without stealing the loaded workers do all the
// work; with stealing the idle ones take queues from them. With stealing, the
// ideal is that all N workers share the work: balance-one then runs N times
// faster than without stealing (2 times on 2 workers), balance-multi 2 times
// faster (half the workers were loaded). (The Actors chapter states its ideal
// speedup as "N / N - 1", in a normalisation it does not spell out.)
//
// The programs must run on a fresh system (tickets start at 0) whose
// configuration they read to find which queues each worker owns.

// BalanceSize is the work on the loaded workers (executor-benchmark shape).
type BalanceSize struct {
	Working, Set, Rounds int
}

// Messages is the number of messages of the working actors (dummies excluded).
func (s BalanceSize) Messages() int { return s.Working * (s.Set*s.Rounds + 1) }

// BalanceDefault: 4,000 working actors in groups of 100 for 40 rounds with
// ACTORD_BENCH_FULL=1 (the Actors chapter does not give its round count), else
// 1,600 working actors for 10 rounds (1.6 million messages).
func BalanceDefault() BalanceSize {
	if Full() {
		return BalanceSize{Working: 4000, Set: 100, Rounds: 40}
	}
	return BalanceSize{Working: 1600, Set: 100, Rounds: 10}
}

type dummyActor struct{ actor.Actor }

type dummyMsg struct{ actor.Message }

func (*dummyActor) receive(*dummyMsg) actor.Allocation { return actor.Finished }

// BalanceOne runs balance-one on a fresh sys and stops it.
func BalanceOne(sys *actor.System, sz BalanceSize) error {
	return balance(sys, sz, func(worker int) bool { return worker == 0 })
}

// BalanceMulti runs balance-multi on a fresh sys and stops it.
func BalanceMulti(sys *actor.System, sz BalanceSize) error {
	return balance(sys, sz, func(worker int) bool { return worker%2 == 0 })
}

func balance(sys *actor.System, sz BalanceSize, loaded func(worker int) bool) error {
	cfg := actortest.MustConfig(sys)
	queueWorker := func(q int) int {
		// Worker w owns queues [w*Q/W, (w+1)*Q/W), as the executor assigns them.
		for w := 0; w < cfg.Workers; w++ {
			if q < (w+1)*cfg.Queues/cfg.Workers {
				return w
			}
		}
		return cfg.Workers - 1
	}
	working := make([]execActor, sz.Working)
	var dummies []*dummyActor
	n := 0
	for t := 0; n < sz.Working; t++ {
		if !loaded(queueWorker(t % cfg.Queues)) {
			d := &dummyActor{}
			if _, err := actor.Spawn(sys, d); err != nil {
				return err
			}
			dummies = append(dummies, d)
			continue
		}
		a := &working[n]
		g := n - n%sz.Set
		end := min(g+sz.Set, sz.Working)
		a.last = sz.Set * sz.Rounds
		a.group = make([]*execActor, 0, end-g)
		for j := g; j < end; j++ {
			a.group = append(a.group, &working[j])
		}
		a.sends = n - g + 1
		if _, err := actor.Spawn(sys, a); err != nil {
			return err
		}
		n++
	}
	dm := &dummyMsg{}
	for _, d := range dummies {
		if err := actor.Send(d, dm, (*dummyActor).receive); err != nil {
			return err
		}
	}
	shared := &execMsg{}
	for i := range working {
		if err := actor.Send(&working[i], shared, (*execActor).receive); err != nil {
			return err
		}
	}
	return sys.Stop(context.Background())
}
