package stealing

import (
	"math/rand/v2"
	"sync/atomic"

	"golang.org/x/sys/cpu"
)

// A Heuristic chooses victims. It is a factory: each executor asks it for a
// Selector sized for its workers, so one Heuristic value can serve many
// executors.
type Heuristic interface {
	// NewSelector returns a selector for workers numbered 0..n-1.
	NewSelector(n int) Selector
	// String names the heuristic ("none", "random", "longest").
	String() string
}

// A Selector picks the victim of each steal attempt. Attempt and Victim are
// called by the thief worker itself and must be safe to call concurrently
// from different thieves.
type Selector interface {
	// Attempt records that thief is starting a steal attempt.
	Attempt(thief int)
	// Victim returns the worker to steal from (never thief), or -1 for none.
	// r is the thief's private random source.
	Victim(thief int, r *rand.Rand) int
}

var (
	// None disables stealing.
	None Heuristic = noneH{}
	// Random steals from a uniformly random other worker.
	Random Heuristic = randomH{}
	// LongestVictim steals from the worker that attempted a steal least
	// recently (the "longest victim" heuristic of the C∀ actor executor; see
	// docs/design.md).
	LongestVictim Heuristic = longestH{}
)

// ByName returns the heuristic called name: "none", "random" or "longest".
func ByName(name string) (Heuristic, bool) {
	for _, h := range []Heuristic{None, Random, LongestVictim} {
		if h.String() == name {
			return h, true
		}
	}
	return nil, false
}

type noneH struct{}

func (noneH) String() string           { return "none" }
func (noneH) NewSelector(int) Selector { return noneS{} }

type noneS struct{}

func (noneS) Attempt(int)                {}
func (noneS) Victim(int, *rand.Rand) int { return -1 }

type randomH struct{}

func (randomH) String() string             { return "random" }
func (randomH) NewSelector(n int) Selector { return randomS{n: n} }

type randomS struct{ n int }

func (randomS) Attempt(int) {}

func (s randomS) Victim(thief int, r *rand.Rand) int {
	if s.n < 2 {
		return -1
	}
	v := r.IntN(s.n - 1) // any worker but the thief
	if v >= thief {
		v++
	}
	return v
}

type longestH struct{}

func (longestH) String() string { return "longest" }

func (longestH) NewSelector(n int) Selector {
	return &longestS{stamps: make([]stamp, n)}
}

// stamp is one worker's last steal-attempt time, padded to its own cache line
// so that a thief updating its stamp does not disturb other workers.
type stamp struct {
	// at is the logical time of the worker's latest steal attempt. Written
	// only by that worker (in Attempt); read by every thief (in Victim).
	// Atomic because readers and the writer are different goroutines;
	// staleness is harmless, it only makes the heuristic approximate.
	at atomic.Uint64
	_  cpu.CacheLinePad
}

type longestS struct {
	// clock orders steal attempts. Only the order of the stamps matters
	// ("whose attempt is oldest"), so a counter serves as the timestamp:
	// cheaper than reading the clock, and immune to clock granularity.
	// Incremented by thieves only, never by a worker that is not stealing.
	clock  atomic.Uint64
	_      cpu.CacheLinePad
	stamps []stamp
}

func (s *longestS) Attempt(thief int) {
	s.stamps[thief].at.Store(s.clock.Add(1))
}

// Victim scans every other worker's stamp and returns the oldest. Ties (for
// example at start, when all stamps are zero) are broken by starting the scan
// at a random worker, so thieves do not all pile onto worker 0.
func (s *longestS) Victim(thief int, r *rand.Rand) int {
	n := len(s.stamps)
	if n < 2 {
		return -1
	}
	best, bestAt := -1, uint64(0)
	start := r.IntN(n)
	for k := 0; k < n; k++ {
		i := start + k
		if i >= n {
			i -= n
		}
		if i == thief {
			continue
		}
		if at := s.stamps[i].at.Load(); best < 0 || at < bestAt {
			best, bestAt = i, at
		}
	}
	return best
}
