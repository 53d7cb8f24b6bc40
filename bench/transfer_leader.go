package bench

import (
	"context"
	"fmt"
	"github.com/actord/actord/actortest"
	"sync/atomic"
	"time"

	"github.com/actord/actord/actor"
)

// ---- transfer, the scheduler chapter's leader version ----------------------
//
// The scheduler chapter's transfer experiment, park variant, with actors:
// one actor at a time is the leader. The leader starts epoch e by sending
// every other actor an epoch message, then spins in its behaviour until
// every other actor has acknowledged e (each stores e in its own slot of a
// shared array when it receives the message), then picks the next leader at
// random and sends it the lead. While it spins, the leader monopolises its
// worker: the epoch messages queued on that worker's other queues are
// received only if another worker steals those queues. Without stealing (or
// with a heuristic that never finds them) the leader waits forever: after
// Timeout it gives up and the run did not complete (DNC), as the scheduler
// chapter reports such runs.
//
// Each actor needs its own queue, or an actor sharing the leader's queue
// could not run before the leader's behaviour returns, whatever the
// stealing: the program uses as many actors as the system has queues, one
// per queue by round-robin placement on a fresh system.
//
// At the end (or at the DNC) the leader sends every actor a FinishedMsg
// pill, which arrives after any epoch message still queued, and finishes.

// TransferLeaderResult is what a leader-transfer run measured.
type TransferLeaderResult struct {
	Actors    int
	Transfers int           // completed transfers
	Elapsed   time.Duration // from the first lead to the last transfer (or the DNC)
	DNC       bool          // a leader waited longer than the timeout
	Stuck     int           // at the DNC: actors that had not acknowledged
}

// PerTransfer returns the mean time of a completed transfer.
func (r TransferLeaderResult) PerTransfer() time.Duration {
	if r.Transfers == 0 {
		return 0
	}
	return r.Elapsed / time.Duration(r.Transfers)
}

type leaderRun struct {
	actors   []leaderActor
	seen     []atomic.Int64 // seen[i]: the last epoch actor i received; stored by actor i, loaded by the spinning leader
	epoch    leaderEpoch    // shared by all: only read
	lead     leaderLead     // the one lead message: one leader at a time
	rng      ChurnRNG       // used by the leader of the moment only (the lead message orders them)
	timeout  time.Duration
	want     int // transfers to run
	start    time.Time
	result   TransferLeaderResult // written by the last leader; read after Stop
	epochNum int64                // the current epoch, written by the leader only
}

type leaderActor struct {
	actor.Actor
	run *leaderRun
	id  int
}

type leaderEpoch struct{ actor.Message }
type leaderLead struct{ actor.Message }

func (a *leaderActor) onEpoch(*leaderEpoch) actor.Allocation {
	// The leader's epoch number is stable while its messages are out (the
	// next leader is chosen after every actor acknowledged), and the send
	// of the epoch message orders this read after the leader's write.
	a.run.seen[a.id].Store(a.run.epochNum)
	return actor.Nodelete
}

func (a *leaderActor) onLead(*leaderLead) actor.Allocation {
	r := a.run
	if r.result.Transfers == 0 && r.epochNum == 0 {
		r.start = time.Now()
	}
	r.epochNum++
	e := r.epochNum
	r.seen[a.id].Store(e)
	for i := range r.actors {
		if i != a.id {
			if err := actor.Send(&r.actors[i], &r.epoch, (*leaderActor).onEpoch); err != nil {
				panic(err)
			}
		}
	}
	deadline := time.Now().Add(r.timeout)
	for i := 0; i < len(r.actors); {
		if r.seen[i].Load() == e {
			i++
			continue
		}
		if time.Now().After(deadline) {
			r.result.DNC = true
			for j := range r.actors {
				if r.seen[j].Load() != e {
					r.result.Stuck++
				}
			}
			return a.finish()
		}
		// busy: a leader that spins, as in the scheduler chapter
	}
	r.result.Transfers++
	if r.result.Transfers == r.want {
		return a.finish()
	}
	next := int(r.rng.Next() % uint64(len(r.actors)))
	if err := actor.Send(&r.actors[next], &r.lead, (*leaderActor).onLead); err != nil {
		panic(err)
	}
	return actor.Nodelete
}

// finish ends the run: pills for every other actor, Finished for the leader.
func (a *leaderActor) finish() actor.Allocation {
	r := a.run
	r.result.Elapsed = time.Since(r.start)
	for i := range r.actors {
		if i != a.id {
			if err := actor.SendPill(&r.actors[i], actor.FinishedMsg); err != nil {
				panic(err)
			}
		}
	}
	return actor.Finished
}

// TransferLeader runs transfers leader transfers on a fresh sys (one actor
// per queue), giving up after timeout on one transfer, and stops it.
func TransferLeader(sys *actor.System, transfers int, timeout time.Duration) (TransferLeaderResult, error) {
	if transfers < 1 || timeout <= 0 {
		panic(fmt.Sprintf("bench: TransferLeader needs transfers >= 1 and timeout > 0, got %d and %v", transfers, timeout))
	}
	n := actortest.MustConfig(sys).Queues
	r := &leaderRun{actors: make([]leaderActor, n), seen: make([]atomic.Int64, n), timeout: timeout, want: transfers, rng: NewChurnRNG(n)}
	for i := range r.actors {
		r.actors[i] = leaderActor{run: r, id: i}
		if _, err := actor.Spawn(sys, &r.actors[i]); err != nil {
			return TransferLeaderResult{}, err
		}
	}
	if err := actor.Send(&r.actors[0], &r.lead, (*leaderActor).onLead); err != nil {
		return TransferLeaderResult{}, err
	}
	if err := sys.Stop(context.Background()); err != nil {
		return TransferLeaderResult{}, err
	}
	r.result.Actors = n
	return r.result, nil
}
