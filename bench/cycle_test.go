package bench

import (
	"fmt"
	"github.com/actord/actord/actortest"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/stealing"
)

func TestCycle(t *testing.T) {
	for _, sz := range []CycleSize{
		{Rings: 1, RingSize: 5, Hops: 5},     // every receive is one of the last lap
		{Rings: 7, RingSize: 5, Hops: 103},   // hops not a multiple of the ring size
		{Rings: 40, RingSize: 3, Hops: 1000}, // more rings than queues
	} {
		t.Run(fmt.Sprintf("%+v", sz), func(t *testing.T) {
			sys := start(t, actor.WithWorkers(2))
			actors, err := cycle(sys, sz)
			require.NoError(t, err)
			require.Equal(t, uint64(sz.Messages()), actortest.MustStats(sys).MessagesSent)
			for k := 0; k < sz.Rings; k++ {
				// A token visits the members in order from member 0.
				for j := 0; j < sz.RingSize; j++ {
					want := sz.Hops / sz.RingSize
					if j < sz.Hops%sz.RingSize {
						want++
					}
					require.Equal(t, want, actors[k*sz.RingSize+j].recs, "ring %d member %d", k, j)
				}
			}
			require.Equal(t, sz.Messages(), CycleChan(sz))
		})
	}
}

func TestCyclePlacement(t *testing.T) {
	// With 100 rings per worker, interleaved creation spreads the rings
	// over every worker's queues: each worker has work without stealing.
	sz := CycleSize{Rings: 200, RingSize: 5, Hops: 50}
	sys := start(t, actor.WithWorkers(2), actor.WithStealing(stealing.None))
	require.NoError(t, Cycle(sys, sz))
	st := actortest.MustStats(sys)
	require.Equal(t, uint64(sz.Messages()), st.MessagesSent)
	for w, ws := range st.Workers {
		require.Positive(t, ws.MessagesProcessed(), "worker %d processed nothing: the rings are not spread", w)
	}
}

func TestCycleSizeCheck(t *testing.T) {
	require.PanicsWithValue(t, "bench: invalid CycleSize {Rings:1 RingSize:5 Hops:4}: need Rings >= 1, RingSize >= 1, Hops >= RingSize",
		func() { CycleChan(CycleSize{Rings: 1, RingSize: 5, Hops: 4}) })
}

// BenchmarkCycle runs rings of 5 actors passing tokens, with 100 rings per
// worker (busy) and one ring per worker (idle), on actord and on goroutines
// with channels. One op is one program run; msg/s counts hops.
func BenchmarkCycle(b *testing.B) {
	w := runtime.GOMAXPROCS(0)
	for _, load := range []string{"busy", "idle"} {
		sz := CycleDefault(w, load == "busy")
		b.Run("load="+load+"/system=actord", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				sys := startSystem(b)
				b.StartTimer()
				if err := Cycle(sys, sz); err != nil {
					b.Fatal(err)
				}
			}
			reportRate(b, b.N*sz.Messages())
		})
		b.Run("load="+load+"/system=chan", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				CycleChan(sz)
			}
			reportRate(b, b.N*sz.Messages())
		})
	}
}
