package bench

import (
	"fmt"
	"github.com/actord/actord/actortest"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/actord/actord/actor"
)

func TestLocality(t *testing.T) {
	for _, share := range []bool{false, true} {
		for _, sz := range []ChurnSize{
			{Clients: 2, Spots: 1, Iterations: 40, Words: 16, Cells: 3},
			{Clients: 24, Spots: 16, Iterations: 40, Words: 64, Cells: 8},
			{Clients: 24, Spots: 2, Iterations: 40, Words: 64, Cells: 8},
		} {
			sz.Share = share
			t.Run(fmt.Sprintf("%+v", sz), func(t *testing.T) {
				sys := start(t, actor.WithWorkers(2))
				r, err := Locality(sys, sz)
				require.NoError(t, err)
				checkChurn(t, sz, r)
				require.Equal(t, r.Ops, r.Arrivals)
				require.Equal(t, actortest.MustStats(sys).MessagesSent, uint64(r.Messages))

				checkChurn(t, sz, LocalityChan(sz))
			})
		}
	}
}

// BenchmarkLocality runs locality (see LocalityDefault for the sizes) with
// and without sharing the arrays, on actord and on goroutines with channels.
// One op is one program run; ops/s counts the clients' operations, msg/s the
// messages (for the channels, each V and each P).
func BenchmarkLocality(b *testing.B) {
	w := runtime.GOMAXPROCS(0)
	for _, mode := range []string{"noshare", "share"} {
		sz := LocalityDefault(w, mode == "share")
		b.Run("mode="+mode+"/system=actord", func(b *testing.B) { benchChurnActord(b, sz, Locality) })
		b.Run("mode="+mode+"/system=chan", func(b *testing.B) { benchChurnChan(b, sz, LocalityChan) })
	}
}
