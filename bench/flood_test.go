package bench

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/actord/actord/actor"
)

func TestCountingAndForkJoin(t *testing.T) {
	for _, workers := range []int{1, 2} {
		require.NoError(t, Counting(start(t, actor.WithWorkers(workers)), 100_000))
		sz := ForkJoinSize{Actors: 7, Messages: 3000}
		recs, err := ForkJoin(start(t, actor.WithWorkers(workers)), sz)
		require.NoError(t, err)
		require.Equal(t, sz.Total(), recs)
	}
	require.Equal(t, 100_000, CountingChan(100_000))
	sz := ForkJoinSize{Actors: 7, Messages: 3000}
	require.Equal(t, sz.Total(), ForkJoinChan(sz))
}

// BenchmarkCounting: one op is one message sent from a goroutine outside the
// system to one counter actor (Savina "counting").
func BenchmarkCounting(b *testing.B) {
	b.Run("system=actord", func(b *testing.B) {
		sys := startSystem(b)
		b.ReportAllocs()
		b.ResetTimer()
		if err := Counting(sys, b.N); err != nil {
			b.Fatal(err)
		}
		reportRate(b, b.N)
	})
	b.Run("system=chan", func(b *testing.B) {
		b.ReportAllocs()
		b.ResetTimer()
		if CountingChan(b.N) != b.N {
			b.Fatal("wrong total")
		}
		reportRate(b, b.N)
	})
}

// BenchmarkForkJoin: one op is one message of a driver goroutine sending
// round-robin to 60 actors (Savina "fork-join throughput").
func BenchmarkForkJoin(b *testing.B) {
	size := func(n int) ForkJoinSize { return ForkJoinSize{Actors: 60, Messages: max(n/60, 1)} }
	b.Run("system=actord", func(b *testing.B) {
		sys := startSystem(b)
		sz := size(b.N)
		b.ReportAllocs()
		b.ResetTimer()
		if _, err := ForkJoin(sys, sz); err != nil {
			b.Fatal(err)
		}
		reportRate(b, sz.Total())
	})
	b.Run("system=chan", func(b *testing.B) {
		sz := size(b.N)
		b.ReportAllocs()
		b.ResetTimer()
		ForkJoinChan(sz)
		reportRate(b, sz.Total())
	})
}
