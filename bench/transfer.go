package bench

import (
	"context"
	"github.com/actord/actord/actortest"
	"slices"
	"sync/atomic"
	"time"

	"github.com/actord/actord/actor"
)

// ---- transfer (delay behind a long behaviour) ------------------------------
//
// Adapted from the scheduler chapter's transfer experiment: one actor's
// behaviour spins for a long time, monopolising its worker. The other actors
// whose queues that worker owns must not wait for it: stealing should move
// their queues to the other workers. A probe generator sends timestamped
// probes, round-robin, to actors on the spinner's worker (on other queues
// than the spinner's) and to actors on the other workers, during the spin;
// each probe actor records how long its probes waited.
//
// Placement relies on round-robin tickets on a fresh system: the spinner is
// ticket 0 (queue 0, worker 0); probe i is ticket i+1. Probes on queues of
// worker 0 are "behind the spinner"; the others are the control group.

// TransferResult holds the delays seen by the probes.
type TransferResult struct {
	Spin          time.Duration   // how long the spinner's behaviour ran
	Behind, Other []time.Duration // delays of probes on the spinner's worker / elsewhere, sorted
}

type spinner struct {
	actor.Actor
	spin time.Duration
	ran  time.Duration
}

type spinMsg struct{ actor.Message }

func (s *spinner) receive(*spinMsg) actor.Allocation {
	start := time.Now()
	for time.Since(start) < s.spin {
		// busy: a long behaviour, not a blocking one
	}
	s.ran = time.Since(start)
	return actor.Finished
}

type probeActor struct {
	actor.Actor
	delays []time.Duration
}

type probeMsg struct {
	actor.Message
	sent time.Time
}

func (p *probeActor) receive(m *probeMsg) actor.Allocation {
	p.delays = append(p.delays, time.Since(m.sent))
	return actor.Nodelete
}

// TransferDelay spins one behaviour for spin and probes the other actors
// every interval meanwhile. sys must be fresh.
func TransferDelay(sys *actor.System, spin, interval time.Duration) (TransferResult, error) {
	cfg := actortest.MustConfig(sys)
	s := &spinner{spin: spin}
	if _, err := actor.Spawn(sys, s); err != nil {
		return TransferResult{}, err
	}
	// One probe per remaining queue, so no probe shares the spinner's queue.
	probes := make([]probeActor, cfg.Queues-1)
	behind := make([]bool, len(probes))
	for i := range probes {
		if _, err := actor.Spawn(sys, &probes[i]); err != nil {
			return TransferResult{}, err
		}
		q := i + 1 // ticket == queue for the first Queues actors
		behind[i] = q < cfg.Queues/cfg.Workers
	}
	var spinning atomic.Bool
	spinning.Store(true)
	if err := actor.Send(s, &spinMsg{}, (*spinner).receive); err != nil {
		return TransferResult{}, err
	}
	time.Sleep(time.Millisecond) // let the spin begin
	deadline := time.Now().Add(spin - 2*time.Millisecond)
	for i := 0; time.Now().Before(deadline); i++ {
		p := &probes[i%len(probes)]
		if err := actor.Send(p, &probeMsg{sent: time.Now()}, (*probeActor).receive); err != nil {
			return TransferResult{}, err
		}
		time.Sleep(interval)
	}
	for i := range probes {
		if err := actor.SendPill(&probes[i], actor.FinishedMsg); err != nil {
			return TransferResult{}, err
		}
	}
	if err := sys.Stop(context.Background()); err != nil {
		return TransferResult{}, err
	}
	r := TransferResult{Spin: s.ran}
	for i := range probes {
		if behind[i] {
			r.Behind = append(r.Behind, probes[i].delays...)
		} else {
			r.Other = append(r.Other, probes[i].delays...)
		}
	}
	slices.Sort(r.Behind)
	slices.Sort(r.Other)
	return r, nil
}

// Quantile returns the q-quantile (0 <= q <= 1) of sorted durations.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)-1))
	return sorted[i]
}
