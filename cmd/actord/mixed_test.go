package main

import (
	"context"
	"encoding/json"
	"github.com/actord/actord/actortest"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/metrics"
)

// TestMixedStopsCleanly runs the mixed workload with everything sped up
// (a 1-second wave, sessions living 100ms, frequent bursts and long
// behaviours, shard queries timing out after 2ms, frequent shard failures
// and audit stalls) and checks the
// termination protocol: Stop reports no undelivered message and no live
// actor, every request was answered, no request is pending, and sessions
// and gathers were really spawned and terminated along the way. The events
// the run must have seen at least once (timed-out queries, partial
// answers, restarts, dropped audit records, gathers) come at random times:
// a run that saw none of one is made again, twice as long.
func TestMixedStopsCleanly(t *testing.T) {
	for window := 1500 * time.Millisecond; ; window *= 2 {
		missing := runMixedOnce(t, window)
		if len(missing) == 0 {
			return
		}
		require.Less(t, window, 10*time.Second, "never seen: %v", missing)
		t.Logf("a %v run saw none of: %v; again, twice as long", window, missing)
	}
}

// runMixedOnce runs the sped-up mixed workload for window, checks what
// must hold of every run, and returns the events that did not occur.
func runMixedOnce(t *testing.T, window time.Duration) (missing []string) {
	seen := func(n float64, what string) {
		if n <= 0 {
			missing = append(missing, what)
		}
	}
	p := defaultMixed(40, 4000)
	p.shards = 8
	p.period = time.Second
	p.lifetime = 100 * time.Millisecond
	p.burstOdds, p.burst = 300*time.Millisecond, 100*time.Millisecond
	p.slowOdds, p.slowMin = 200*time.Millisecond, 5*time.Millisecond
	// Queries queued behind a long behaviour (5-15ms) time out; the
	// clients' requests never do.
	p.queryTimeout, p.askTimeout = 2*time.Millisecond, time.Minute
	// Frequent injected failures, and audit stalls long enough to overflow
	// the audit actor's small mailbox at this rate.
	p.crashEvery = 50 * time.Millisecond
	p.stallEvery, p.stall, p.auditBound = 200*time.Millisecond, 20*time.Millisecond, 16

	sys, err := actor.Start(actor.WithWorkers(2))
	require.NoError(t, err)
	coll := metrics.NewCollector()
	coll.Attach(sys)
	wm := metrics.NewWorkload("mixed")
	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	var logBuf syncBuffer
	log := slog.New(slog.NewJSONHandler(&logBuf, nil))
	require.NoError(t, runMixed(ctx, sys, p, wm, log, 20*time.Second))

	st := actortest.MustStats(sys)
	tot := st.Total()
	require.Zero(t, st.LiveActors)
	require.Zero(t, tot.DeadLetters)
	reqs := testutil.ToFloat64(wm.Requests)
	require.Positive(t, reqs)
	require.Equal(t, uint64(reqs), histogramCount(t, wm), "every request answered")
	// More sessions than the peak of 40 were spawned: they came and went.
	require.Greater(t, st.ExternalActorsCreated, uint64(p.shards+p.clients+p.sessions))
	seen(float64(tot.ActorsCreated-st.ExternalActorsCreated), "gathers spawned by sessions")
	require.Equal(t, tot.ActorsCreated, tot.ActorsTerminated)

	// Requests: none pending after Stop (every ask ended, every timeout
	// timer stopped or fired); some shard queries timed out behind the long
	// behaviours, and each of them got its reply late, dropped.
	require.Zero(t, st.AsksPending, "asks pending after Stop")
	require.Zero(t, st.TimersPending, "timers pending after Stop")
	seen(float64(st.AsksTimedOut), "queries timed out behind long behaviours")
	require.Equal(t, st.AsksTimedOut, st.LateReplies, "every timed-out query was answered late")

	// The workload's own account, in its final log record.
	rec := logRecord(t, logBuf.String(), "mixed workload stopped")
	require.EqualValues(t, reqs, rec["requests_answered"], "answers seen by the clients")
	require.EqualValues(t, 0, rec["requests_timed_out"])
	partial, _ := rec["partial_answers"].(float64)
	seen(partial, "answers missing a timed-out shard")
	require.LessOrEqual(t, rec["partial_answers"], float64(st.AsksTimedOut))

	// The exporter reports the same.
	f := gatherAll(t, coll)
	require.Zero(t, f["actord_asks_pending"].Metric[0].GetGauge().GetValue())
	require.Equal(t, float64(st.AsksTimedOut), f["actord_asks_timed_out_total"].Metric[0].GetCounter().GetValue())
	require.Equal(t, float64(st.LateReplies), f["actord_late_replies_total"].Metric[0].GetCounter().GetValue())

	// Failures and flow control: the shards restarted (none ran out of
	// budget, none terminated by its failure: Stop reported nothing), the
	// audit actor's bounded mailbox dropped its oldest records during its
	// stalls, and every session's termination was watched.
	seen(float64(tot.Restarts), "shards restarted")
	require.Equal(t, tot.Restarts, tot.Panics, "every panic was an injected failure, followed by a restart")
	require.Zero(t, tot.BudgetExhausted)
	seen(float64(st.MailboxDroppedOldest), "audit records dropped")
	require.Zero(t, st.MailboxRejected+st.MailboxDroppedNewest)
	sessions := st.ExternalActorsCreated - uint64(p.shards) - 2 // minus the audit and monitor actors
	require.Equal(t, sessions, st.WatchNotices, "one notice per session")
	require.EqualValues(t, sessions, rec["sessions_watched_to_the_end"])
	sum := func(name string) float64 {
		v := 0.0
		for _, m := range f[name].GetMetric() { // none: a family without series
			v += m.GetCounter().GetValue()
		}
		return v
	}
	require.Equal(t, float64(tot.Restarts), sum("actord_restarts_total"))
	require.Equal(t, float64(st.WatchNotices), sum("actord_watch_notifications_total"))
	require.Equal(t, float64(st.MailboxDroppedOldest), sum("actord_mailbox_overflows_total"))
	return missing
}

func histogramCount(t *testing.T, wm *metrics.Workload) uint64 {
	t.Helper()
	fams := gatherAll(t, wm)
	return fams["actord_workload_latency_seconds"].Metric[0].GetHistogram().GetSampleCount()
}

// logRecord returns the last JSON log record whose msg is msg.
func logRecord(t *testing.T, log, msg string) map[string]any {
	t.Helper()
	var found map[string]any
	for _, line := range strings.Split(log, "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == msg {
			found = rec
		}
	}
	require.NotNil(t, found, "no log record %q in:\n%s", msg, log)
	return found
}

// A wait on inFlight that gives up with its context leaves no goroutine
// behind (waitFor's did, blocked in WaitGroup.Wait for ever, once a
// shutdown had run out of time), and the count's zero is seen by waits
// started before and after it.
func TestInFlightWaitGivesUp(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var f inFlight
	require.True(t, f.wait(context.Background()), "zero at first")
	f.Add(2)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.False(t, f.wait(ctx), "two in flight")
	waited := make(chan bool)
	go func() { waited <- f.wait(context.Background()) }()
	f.Done()
	f.Done()
	require.True(t, <-waited)
	require.True(t, f.wait(ctx))
	f.Add(1) // counts again after zero
	require.False(t, f.wait(ctx))
	f.Done()
	require.True(t, f.wait(ctx))
	require.Panics(t, f.Done)
}
