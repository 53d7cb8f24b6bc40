package stealing

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestByName(t *testing.T) {
	for _, h := range []Heuristic{None, Random, LongestVictim} {
		got, ok := ByName(h.String())
		require.True(t, ok, h.String())
		require.Equal(t, h, got)
	}
	require.Equal(t, "none", None.String())
	require.Equal(t, "random", Random.String())
	require.Equal(t, "longest", LongestVictim.String())
	for _, bad := range []string{"", "None", "longest-victim", "rand"} {
		h, ok := ByName(bad)
		require.False(t, ok, bad)
		require.Nil(t, h, bad)
	}
}

func TestNoneNeverSteals(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 8; n++ {
		s := None.NewSelector(n)
		for thief := range n {
			s.Attempt(thief)
			for range 10 {
				require.Equal(t, -1, s.Victim(thief, r))
			}
		}
	}
}

// victims draws k victims for thief and checks each is another worker.
func victims(t *testing.T, s Selector, n, thief, k int, r *rand.Rand) map[int]int {
	t.Helper()
	seen := map[int]int{}
	for range k {
		v := s.Victim(thief, r)
		require.NotEqual(t, thief, v, "the thief was chosen as its own victim")
		require.GreaterOrEqual(t, v, 0)
		require.Less(t, v, n)
		seen[v]++
	}
	return seen
}

func TestRandomVictim(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	require.Equal(t, -1, Random.NewSelector(1).Victim(0, r), "a lone worker has no victim")
	for n := 2; n <= 9; n++ {
		s := Random.NewSelector(n)
		for thief := range n {
			s.Attempt(thief)
			seen := victims(t, s, n, thief, 200*n, r)
			require.Len(t, seen, n-1, "n=%d thief=%d: not every other worker was chosen: %v", n, thief, seen)
			for v, c := range seen { // roughly uniform: expected 200n/(n-1) > 200
				require.Greater(t, c, 100, "n=%d thief=%d: victim %d chosen only %d times", n, thief, v, c)
			}
		}
	}
}

// attemptInOrder records steal attempts by the given workers in that order.
// It sleeps between them so that the test does not depend on how the
// selector timestamps attempts (a logical clock or a real one).
func attemptInOrder(s Selector, workers ...int) {
	for _, w := range workers {
		time.Sleep(time.Microsecond)
		s.Attempt(w)
	}
}

func TestLongestVictim(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	require.Equal(t, -1, LongestVictim.NewSelector(1).Victim(0, r), "a lone worker has no victim")

	const n = 5
	s := LongestVictim.NewSelector(n)

	// At the start every stamp is zero: any other worker, and the random
	// tie-break spreads the choice over all of them.
	for thief := range n {
		require.Len(t, victims(t, s, n, thief, 100*n, r), n-1, "thief %d: ties not spread", thief)
	}

	// Worker 3 has never attempted a steal: it is everyone's victim but its own.
	attemptInOrder(s, 0, 1, 2, 4)
	for thief := range n {
		want := 3
		if thief == 3 {
			want = 0 // the oldest of the others
		}
		for range 20 {
			require.Equal(t, want, s.Victim(thief, r), "thief %d", thief)
		}
	}

	// Now the order of attempts is 0 1 2 4 3, then 0 again: 1 is the oldest.
	attemptInOrder(s, 3, 0)
	for thief, want := range []int{1, 2, 1, 1, 1} {
		for range 20 {
			require.Equal(t, want, s.Victim(thief, r), "thief %d", thief)
		}
	}

	// Once a victim itself attempts a steal, the next oldest takes its place.
	attemptInOrder(s, 1)
	require.Equal(t, 2, s.Victim(0, r))
	require.Equal(t, 4, s.Victim(2, r))
}

// Attempt and Victim are called concurrently by all the thieves.
func TestSelectorsConcurrent(t *testing.T) {
	const n = 8
	for _, h := range []Heuristic{None, Random, LongestVictim} {
		s := h.NewSelector(n)
		var wg sync.WaitGroup
		for thief := range n {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(thief), 7))
				for range 2000 {
					s.Attempt(thief)
					v := s.Victim(thief, r)
					if v == thief || v < -1 || v >= n || (v == -1 && h != None) {
						t.Errorf("%s: thief %d got victim %d", h, thief, v)
						return
					}
				}
			})
		}
		wg.Wait()
	}
}
