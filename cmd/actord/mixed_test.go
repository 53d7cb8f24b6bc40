package main

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/metrics"
)

// TestMixedStopsCleanly runs the mixed workload with everything sped up
// (a 1-second wave, sessions living 100ms, frequent bursts and long
// behaviours) and checks the termination protocol: Stop reports no
// undelivered message and no live actor, every request was answered, and
// sessions and gathers were really spawned and terminated along the way.
func TestMixedStopsCleanly(t *testing.T) {
	p := defaultMixed(40, 4000)
	p.shards = 8
	p.period = time.Second
	p.lifetime = 100 * time.Millisecond
	p.burstOdds, p.burst = 300*time.Millisecond, 100*time.Millisecond
	p.slowOdds, p.slowMin = 200*time.Millisecond, 5*time.Millisecond

	sys, err := actor.Start(actor.WithWorkers(2))
	require.NoError(t, err)
	wm := metrics.NewWorkload("mixed")
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	require.NoError(t, runMixed(ctx, sys, p, wm, log, 20*time.Second))

	st := mustStats(sys)
	tot := st.Total()
	require.Zero(t, st.LiveActors)
	require.Zero(t, tot.DeadLetters)
	reqs := testutil.ToFloat64(wm.Requests)
	require.Positive(t, reqs)
	require.Equal(t, uint64(reqs), histogramCount(t, wm), "every request answered")
	// More sessions than the peak of 40 were spawned: they came and went.
	require.Greater(t, st.ExternalActorsCreated, uint64(p.shards+p.clients+p.sessions))
	require.Positive(t, tot.ActorsCreated-st.ExternalActorsCreated, "gathers spawned by sessions")
	require.Equal(t, tot.ActorsCreated, tot.ActorsTerminated)
}

func histogramCount(t *testing.T, wm *metrics.Workload) uint64 {
	t.Helper()
	fams := gatherAll(t, wm)
	return fams["actord_workload_latency_seconds"].Metric[0].GetHistogram().GetSampleCount()
}
