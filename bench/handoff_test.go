package bench

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/actortest"
)

func TestPingPongAndTokenRing(t *testing.T) {
	for _, workers := range []int{1, 2} {
		sys := start(t, actor.WithWorkers(workers))
		actors, err := pingPong(sys, 1001)
		require.NoError(t, err)
		require.Equal(t, 501, actors[0].recs)
		require.Equal(t, 500, actors[1].recs)
		// Every hop ran once. Which worker ran them is not asserted: the
		// actors are placed on different workers (pingPong), but the
		// handoff may keep the whole chain on the worker that got the
		// first message while the other sleeps (executor's handoff tests
		// check that mechanism).
		var processed uint64
		for _, w := range actortest.MustStats(sys).Workers {
			processed += w.MessagesProcessed()
		}
		require.GreaterOrEqual(t, processed, uint64(1001))
		require.NoError(t, TokenRing(start(t, actor.WithWorkers(workers)), 5000))
	}
	require.Equal(t, 1001, PingPongChan(1001))
	require.Equal(t, 5000, TokenRingChan(5000))
}

// BenchmarkPingPong: one op is one hop of a token between two actors on
// different workers (one worker with -cpu 1).
func BenchmarkPingPong(b *testing.B) {
	b.Run("system=actord", func(b *testing.B) {
		sys := startSystem(b)
		b.ReportAllocs()
		b.ResetTimer()
		if err := PingPong(sys, b.N); err != nil {
			b.Fatal(err)
		}
		reportRate(b, b.N)
	})
	b.Run("system=chan", func(b *testing.B) {
		b.ReportAllocs()
		b.ResetTimer()
		PingPongChan(b.N)
		reportRate(b, b.N)
	})
}

// BenchmarkTokenRing: one op is one hop of a token around a ring of 100
// actors.
func BenchmarkTokenRing(b *testing.B) {
	b.Run("system=actord", func(b *testing.B) {
		sys := startSystem(b)
		b.ReportAllocs()
		b.ResetTimer()
		if err := TokenRing(sys, b.N); err != nil {
			b.Fatal(err)
		}
		reportRate(b, b.N)
	})
	b.Run("system=chan", func(b *testing.B) {
		b.ReportAllocs()
		b.ResetTimer()
		TokenRingChan(b.N)
		reportRate(b, b.N)
	})
}
