package bench

import (
	"context"
	"github.com/actord/actord/actortest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/stealing"
)

// These tests run every program at a small size, under -race in CI, and
// check what each computed: the benchmarks below measure the same code.

func start(t testing.TB, opts ...actor.Option) *actor.System {
	t.Helper()
	sys, err := actor.Start(opts...)
	require.NoError(t, err)
	return sys
}

func TestPrograms(t *testing.T) {
	require.NoError(t, StaticSend(start(t), 1000))
	StaticSendChan(1000)
	require.NoError(t, DynamicSend(start(t), 1000))
	DynamicSendChan(1000)

	ex := ExecutorSize{Actors: 300, Set: 10, Rounds: 3}
	sys := start(t)
	require.NoError(t, Executor(sys, ex))
	st := actortest.MustStats(sys)
	require.Equal(t, uint64(ex.Messages()), st.MessagesSent)
	ExecutorChan(ex)

	rp := RepeatSize{Servers: 200, Rounds: 3}
	sys = start(t)
	require.NoError(t, Repeat(sys, rp))
	st = actortest.MustStats(sys)
	require.Equal(t, uint64(rp.Messages()+1+rp.Servers), st.MessagesSent, "requests, replies, the start message and the pills")
	RepeatChan(rp)

	a, b := NewMatrices(64), NewMatrices(64)
	require.NoError(t, Matrix(start(t), a))
	MatrixChan(b)
	require.Equal(t, b.Check(), a.Check())
	require.Equal(t, b.Z, a.Z)
}

func TestBalancePlacement(t *testing.T) {
	sz := BalanceSize{Working: 64, Set: 16, Rounds: 2}
	for _, h := range []stealing.Heuristic{stealing.None, stealing.LongestVictim} {
		sys := start(t, actor.WithWorkers(4), actor.WithStealing(h))
		require.NoError(t, BalanceOne(sys, sz))
		st := actortest.MustStats(sys)
		if h == stealing.None {
			// Without stealing, only worker 0 ran working actors: the others
			// processed one dummy message per dummy actor at most.
			for w := 1; w < 4; w++ {
				require.Less(t, st.Workers[w].MessagesProcessed(), uint64(sz.Messages()/10), "worker %d", w)
			}
		}
		sys = start(t, actor.WithWorkers(4), actor.WithStealing(h))
		require.NoError(t, BalanceMulti(sys, sz))
	}
}

func TestTransferDelay(t *testing.T) {
	sys := start(t, actor.WithWorkers(2))
	r, err := TransferDelay(sys, 50*time.Millisecond, 200*time.Microsecond)
	require.NoError(t, err)
	require.GreaterOrEqual(t, r.Spin, 50*time.Millisecond)
	require.NotEmpty(t, r.Behind)
	require.NotEmpty(t, r.Other)
}

func TestPipeline(t *testing.T) {
	r, err := Pipeline(start(t), 12, 20000, 2000)
	require.NoError(t, err)
	require.Len(t, r.Latencies, 2000)
	require.Positive(t, r.Latencies[0])
	c := PipelineChan(12, 20000, 2000)
	require.Len(t, c.Latencies, 2000)
	require.Positive(t, c.Latencies[0])
}

// PipelineUntil stops sending when its context ends, also in the middle of
// a paced sleep, and reports only what it sent: at 20 msg/s the 1000
// messages would take 50 s.
func TestPipelineUntilStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	r, err := PipelineUntil(ctx, start(t), 12, 20, 1000)
	require.NoError(t, err)
	require.Positive(t, r.Sent)
	require.Less(t, r.Sent, 1000)
	require.Len(t, r.Latencies, r.Sent)
	require.Positive(t, r.Latencies[0], "every message reported was received")

	r, err = PipelineUntil(ctx, start(t), 12, 20, 1000) // ended before the first send
	require.NoError(t, err)
	require.Zero(t, r.Sent)
	require.Empty(t, r.Latencies)
}

func TestMemorySampler(t *testing.T) {
	s := StartMemorySampler()
	buf := make([]byte, 64<<20)
	buf[len(buf)-1] = 1
	time.Sleep(5 * time.Millisecond)
	require.Greater(t, s.Stop(), uint64(64<<20))
	require.Greater(t, PeakRSS(), int64(0))
	require.Greater(t, CPUTime(), time.Duration(0))
	_ = buf
}
