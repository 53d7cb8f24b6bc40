package bench

import (
	"fmt"
	"github.com/actord/actord/actortest"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/actord/actord/actor"
)

// checkChurn checks what a churn or locality run must have done.
func checkChurn(t *testing.T, sz ChurnSize, r ChurnResult) {
	t.Helper()
	// Clients-Spots clients finished after exactly Iterations wakes, the
	// others were woken fewer times.
	require.GreaterOrEqual(t, r.Ops, (sz.Clients-sz.Spots)*sz.Iterations)
	require.LessOrEqual(t, r.Ops, sz.Clients*sz.Iterations)
	require.Equal(t, uint64(sz.Cells)*uint64(r.Arrivals), r.Sum, "every arrival touched Cells cells of an array that is still there")
	require.Equal(t, sz.arrays(), r.Arrays, "arrays lost or duplicated")
}

func TestChurn(t *testing.T) {
	for _, sz := range []ChurnSize{
		{Clients: 2, Spots: 1, Iterations: 50},
		{Clients: 20, Spots: 5, Iterations: 50},
		{Clients: 40, Spots: 39, Iterations: 20},
		{Clients: 64, Spots: 2, Iterations: 30},
	} {
		t.Run(fmt.Sprintf("%+v", sz), func(t *testing.T) {
			sys := start(t, actor.WithWorkers(2))
			r, err := Churn(sys, sz)
			require.NoError(t, err)
			checkChurn(t, sz, r)
			// Each wake answers exactly one arrival: nothing is in flight at the end.
			require.Equal(t, r.Ops, r.Arrivals)
			require.Equal(t, actortest.MustStats(sys).MessagesSent, uint64(r.Messages))
			require.Equal(t, sz.Clients+sz.Spots+2*r.Ops, r.Messages)

			checkChurn(t, sz, ChurnChan(sz))
		})
	}
}

func TestChurnSizeCheck(t *testing.T) {
	require.Panics(t, func() { ChurnChan(ChurnSize{Clients: 3, Spots: 3, Iterations: 1}) })
	require.Panics(t, func() { ChurnChan(ChurnSize{Clients: 3, Spots: 1, Iterations: 1, Words: 4}) })
	require.Panics(t, func() { LocalityChan(ChurnSize{Clients: 3, Spots: 1, Iterations: 1}) })
}

// BenchmarkChurn runs churn with 100 clients per worker and 2, Workers and
// Clients/2 spots, on actord and on goroutines with channels used as
// counting semaphores. One op is one program run; ops/s counts the clients'
// operations (an arrival and a wake each), msg/s the messages (for the
// channels, each V and each P).
func BenchmarkChurn(b *testing.B) {
	w := runtime.GOMAXPROCS(0)
	base := ChurnDefault(w)
	sweep := []int{2, w, base.Clients / 2}
	slices.Sort(sweep)
	for _, spots := range slices.Compact(sweep) {
		sz := base
		sz.Spots = spots
		b.Run(fmt.Sprintf("spots=%d/system=actord", sz.Spots), func(b *testing.B) { benchChurnActord(b, sz, Churn) })
		b.Run(fmt.Sprintf("spots=%d/system=chan", sz.Spots), func(b *testing.B) { benchChurnChan(b, sz, ChurnChan) })
	}
}

// benchChurnActord times run (Churn or Locality) on a fresh system per
// iteration and reports operations and messages per second.
func benchChurnActord(b *testing.B, sz ChurnSize, run func(*actor.System, ChurnSize) (ChurnResult, error)) {
	b.ReportAllocs()
	ops, msgs := 0, 0
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		sys := startSystem(b)
		b.StartTimer()
		r, err := run(sys, sz)
		if err != nil {
			b.Fatal(err)
		}
		ops += r.Ops
		msgs += r.Messages
	}
	b.ReportMetric(float64(ops)/b.Elapsed().Seconds(), "ops/s")
	reportRate(b, msgs)
}

// benchChurnChan is benchChurnActord for the goroutine versions.
func benchChurnChan(b *testing.B, sz ChurnSize, run func(ChurnSize) ChurnResult) {
	b.ReportAllocs()
	ops, msgs := 0, 0
	for i := 0; i < b.N; i++ {
		r := run(sz)
		ops += r.Ops
		msgs += r.Ops + r.Arrivals
	}
	b.ReportMetric(float64(ops)/b.Elapsed().Seconds(), "ops/s")
	reportRate(b, msgs) // a V and a P count as a message each
}
