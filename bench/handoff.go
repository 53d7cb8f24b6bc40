package bench

import (
	"context"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/actortest"
)

// ---- cross-worker handoff: ping-pong and token ring -------------------------
//
// Two shapes of the cycle benchmark (cycle.go) where one token is the only
// message in flight, so that every hop is a handoff from the actor that
// sends to the actor that receives, and nothing else keeps the workers busy:
//
//   - ping-pong: two actors pass a token back and forth. In actord they are
//     placed on different workers' queues (with two or more workers), so
//     that every hop crosses between workers unless a worker steals the
//     other's queue;
//   - token ring: one ring of 100 actors (Savina's "thread ring") placed
//     round-robin over the queues, so that the token crosses between
//     workers every 16 hops with the default 16 queues per worker.

// PingPongSize is ping-pong as a cycle: one ring of two actors.
func PingPongSize(hops int) CycleSize { return CycleSize{Rings: 1, RingSize: 2, Hops: max(hops, 2)} }

// TokenRingSize is the token ring as a cycle: one ring of 100 actors.
func TokenRingSize(hops int) CycleSize {
	return CycleSize{Rings: 1, RingSize: 100, Hops: max(hops, 100)}
}

// PingPongDefault and TokenRingDefault are the hops of a run: 200,000 and
// 1,000,000 (ten times as many with ACTORD_BENCH_FULL=1).
func PingPongDefault() int  { return 200_000 * fullScale() }
func TokenRingDefault() int { return 1_000_000 * fullScale() }

func fullScale() int {
	if Full() {
		return 10
	}
	return 1
}

// PingPong runs ping-pong for hops receives on a fresh sys and stops it. The
// second actor is placed on the first queue of worker 1 (sys must be fresh:
// placement follows the global round-robin ticket, see BalanceOne); the
// queues skipped get one actor each that terminates on its first message.
func PingPong(sys *actor.System, hops int) error {
	_, err := pingPong(sys, hops)
	return err
}

func pingPong(sys *actor.System, hops int) ([]cycleActor, error) {
	sz := PingPongSize(hops)
	actors := make([]cycleActor, 2)
	actors[0] = cycleActor{next: &actors[1], size: 2}
	actors[1] = cycleActor{next: &actors[0], size: 2}
	if _, err := actor.Spawn(sys, &actors[0]); err != nil {
		return nil, err
	}
	if cfg := actortest.MustConfig(sys); cfg.Workers > 1 {
		for i := 1; i < cfg.Queues/cfg.Workers; i++ {
			d, err := actor.Spawn(sys, &dummyActor{})
			if err != nil {
				return nil, err
			}
			if err := actor.Send(d, &dummyMsg{}, (*dummyActor).receive); err != nil {
				return nil, err
			}
		}
	}
	if _, err := actor.Spawn(sys, &actors[1]); err != nil {
		return nil, err
	}
	if err := actor.Send(&actors[0], &cycleToken{left: sz.Hops}, (*cycleActor).receive); err != nil {
		return nil, err
	}
	return actors, sys.Stop(context.Background())
}

// TokenRing runs the token ring for hops receives on a fresh sys and stops
// it.
func TokenRing(sys *actor.System, hops int) error { return Cycle(sys, TokenRingSize(hops)) }

// PingPongChan and TokenRingChan are the same on goroutines and channels
// (CycleChan); they return the hops counted.
func PingPongChan(hops int) int  { return CycleChan(PingPongSize(hops)) }
func TokenRingChan(hops int) int { return CycleChan(TokenRingSize(hops)) }
