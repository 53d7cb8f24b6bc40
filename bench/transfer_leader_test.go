package bench

import (
	"github.com/actord/actord/actortest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/stealing"
)

func TestTransferLeader(t *testing.T) {
	sys := start(t, actor.WithWorkers(2))
	r, err := TransferLeader(sys, 30, 5*time.Second)
	require.NoError(t, err)
	require.False(t, r.DNC, "stealing must move the epoch messages off the spinning leader's worker")
	require.Equal(t, 30, r.Transfers)
	require.Equal(t, actortest.MustConfig(sys).Queues, r.Actors)
	require.Positive(t, r.PerTransfer())
	// Every epoch message and pill was delivered (Stop reports undelivered
	// ones): one epoch message per other actor and one lead per transfer,
	// one pill per other actor.
	require.Equal(t, uint64(30*(r.Actors-1)+30+r.Actors-1), actortest.MustStats(sys).MessagesSent)
}

func TestTransferLeaderWithoutStealing(t *testing.T) {
	// The actors on the leader's worker can only run once the leader's
	// behaviour returns: the first transfer does not complete.
	sys := start(t, actor.WithWorkers(2), actor.WithStealing(stealing.None))
	r, err := TransferLeader(sys, 30, 50*time.Millisecond)
	require.NoError(t, err, "the queued epoch messages are delivered after the leader gives up")
	require.True(t, r.DNC)
	require.Zero(t, r.Transfers)
	require.Equal(t, actortest.MustConfig(sys).Queues/2-1, r.Stuck, "the other actors of the leader's worker")
}

// BenchmarkTransferLeader runs 20 leader transfers (one actor per queue)
// with each stealing heuristic and reports the mean time per transfer and
// the rate of epoch messages; a run that did not complete (a leader waited
// 1 s) reports dnc=1. Without stealing it never completes.
func BenchmarkTransferLeader(b *testing.B) {
	forEachHeuristic(b, func(b *testing.B, opts []actor.Option) {
		b.ReportAllocs()
		var per time.Duration
		dnc, msgs := 0.0, 0
		for i := 0; i < b.N; i++ {
			sys := startSystem(b, opts...)
			r, err := TransferLeader(sys, 20, time.Second)
			if err != nil {
				b.Fatal(err)
			}
			if r.DNC {
				dnc = 1
			}
			per += r.PerTransfer()
			msgs += r.Transfers * r.Actors // the epoch messages and the leads
		}
		b.ReportMetric(float64(per.Microseconds())/float64(b.N), "us/transfer")
		b.ReportMetric(dnc, "dnc")
		reportRate(b, msgs)
	})
}
