package protoactor

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/actord/actord/bench"
)

// The programs at small sizes, checked against what they must compute (run
// under -race in CI).

func TestPrograms(t *testing.T) {
	require.Equal(t, 1000, StaticSend(NewSystem(), 1000))
	require.Equal(t, 500, DynamicSend(NewSystem(), 500))

	ex := bench.ExecutorSize{Actors: 300, Set: 10, Rounds: 3}
	require.Equal(t, ex.Messages(), Executor(NewSystem(), ex))

	rp := bench.RepeatSize{Servers: 200, Rounds: 3}
	require.Equal(t, rp.Messages(), Repeat(NewSystem(), rp))

	a, b := bench.NewMatrices(48), bench.NewMatrices(48)
	Matrix(NewSystem(), a)
	bench.MatrixChan(b)
	require.Equal(t, b.Z, a.Z)

	cy := bench.CycleSize{Rings: 7, RingSize: 5, Hops: 103}
	require.Equal(t, cy.Messages(), Cycle(NewSystem(), cy))

	r := Pipeline(NewSystem(), 4, 20000, 500)
	require.Len(t, r.Latencies, 500)
	require.Positive(t, r.Latencies[0])
}

func TestChurn(t *testing.T) {
	for _, sz := range []bench.ChurnSize{
		{Clients: 20, Spots: 5, Iterations: 50},
		{Clients: 24, Spots: 16, Iterations: 40, Words: 64, Cells: 8},
		{Clients: 24, Spots: 2, Iterations: 40, Words: 64, Cells: 8, Share: true},
	} {
		r := Churn(NewSystem(), sz)
		require.GreaterOrEqual(t, r.Ops, (sz.Clients-sz.Spots)*sz.Iterations, "%+v", sz)
		require.Equal(t, r.Ops, r.Arrivals, "%+v", sz)
		require.Equal(t, uint64(sz.Cells)*uint64(r.Arrivals), r.Sum, "%+v", sz)
		arrays := 0
		if sz.Words > 0 {
			arrays = sz.Clients
			if sz.Share {
				arrays -= sz.Spots
			}
		}
		require.Equal(t, arrays, r.Arrays, "%+v", sz)
	}
}

func TestCountingAndForkJoin(t *testing.T) {
	require.Equal(t, 10_000, Counting(NewSystem(), 10_000))
	require.Equal(t, 10_000, CountingActor(NewSystem(), 10_000))
	fj := bench.ForkJoinSize{Actors: 7, Messages: 300}
	require.Equal(t, fj.Total(), ForkJoin(NewSystem(), fj))
	require.Equal(t, 1001, Cycle(NewSystem(), bench.PingPongSize(1001)))
	require.Equal(t, 1000, Cycle(NewSystem(), bench.TokenRingSize(1000)))
}

func TestEchoServer(t *testing.T) {
	newClient, stop := EchoServer(NewSystem())
	a, b := newClient(), newClient()
	for i := range 100 {
		v, err := a(i)
		require.NoError(t, err)
		require.Equal(t, i+1, v)
		v, err = b(-i)
		require.NoError(t, err)
		require.Equal(t, 1-i, v)
	}
	stop()
}
