package metrics

import (
	"context"
	"github.com/actord/actord/actortest"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/bench"
	"github.com/actord/actord/executor"
)

// fakeSource returns fixed statistics; calls counts Stats calls.
type fakeSource struct {
	st    executor.Stats
	calls atomic.Int64
}

func (f *fakeSource) Stats() (executor.Stats, error) {
	f.calls.Add(1)
	st := f.st
	st.Workers = append([]executor.WorkerStats(nil), f.st.Workers...)
	return st, nil
}

// gather collects c on a fresh registry and returns the families by name.
func gather(t *testing.T, cs ...prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	for _, c := range cs {
		require.NoError(t, reg.Register(c))
	}
	fams, err := reg.Gather()
	require.NoError(t, err)
	m := make(map[string]*dto.MetricFamily, len(fams))
	for _, f := range fams {
		m[f.GetName()] = f
	}
	return m
}

// value returns the value of the metric of family name whose labels are
// exactly the given name=value pairs; it fails the test if there is none.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	m := find(t, fams, name, labels...)
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	t.Fatalf("%s is neither a counter nor a gauge", name)
	return 0
}

func find(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	t.Helper()
	f, ok := fams[name]
	require.True(t, ok, "no family %s", name)
next:
	for _, m := range f.Metric {
		if len(m.Label)*2 != len(labels) {
			continue
		}
		for i := 0; i < len(labels); i += 2 {
			found := false
			for _, lp := range m.Label {
				if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		return m
	}
	t.Fatalf("no %s%v", name, labels)
	return nil
}

func twoWorkers() executor.Stats {
	w0 := executor.WorkerStats{ActorsCreated: 3, ActorsTerminated: 2, LocalSends: 5, DeadLetters: 1, Panics: 1,
		MissedGulps: 7, StealAttempts: 10, StealNoCandidate: 4, StealFailedSwap: 1, EmptySteals: 2,
		StealWakeups: 6, StalledSteals: 17, Parks: 9, WakeupsBySender: 5, WakeupsByTimeout: 3, ParkedTime: 1500 * time.Millisecond, ThreadReleases: 8, BatchWaits: 11, DeferredServes: 15, CallerVisits: 19,
		Restarts: 11, Resumes: 12, Escalations: 13, BudgetExhausted: 14, Passivations: 16}
	for _, v := range []uint64{0, 1, 1, 3, 4, 1 << 30} {
		w0.GulpSize.Observe(v)
	}
	w0.StealSize.Observe(2)
	w0.StealSize.Observe(3)
	w0.StealSize.Observe(3)
	w1 := executor.WorkerStats{ActorsCreated: 1, Restarts: 1}
	w1.GulpSize.Observe(8)
	return executor.Stats{Workers: []executor.WorkerStats{w0, w1}, ExternalActorsCreated: 4, MessagesSent: 100,
		LiveActors: 12, ParkedWorkers: 1, QueuedMessages: 33, Queues: 32, Stale: []int{1},
		AsksPending: 7, AsksTimedOut: 3, LateReplies: 2, TimersPending: 5, TimersFired: 40, TimersDead: 6,
		MailboxRejected: 21, MailboxDroppedNewest: 22, MailboxDroppedOldest: 23, WatchNotices: 24}
}

func TestLint(t *testing.T) {
	c := NewCollector()
	c.Attach(&fakeSource{st: twoWorkers()})
	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	require.Empty(t, problems)

	w := NewWorkload("mixed")
	w.Latency.Observe(0.001)
	problems, err = testutil.CollectAndLint(w)
	require.NoError(t, err)
	require.Empty(t, problems)
}

func TestValues(t *testing.T) {
	c := NewCollector()
	c.Attach(&fakeSource{st: twoWorkers()})
	f := gather(t, c)
	w := func(i string) []string { return []string{"worker", i} }

	require.Equal(t, 100.0, value(t, f, "actord_messages_sent_total"))
	// Processed = gulped + local sends - dead letters - dropped.
	require.Equal(t, float64(0+1+1+3+4+(1<<30)+5-1), value(t, f, "actord_messages_processed_total", w("0")...))
	require.Equal(t, 8.0, value(t, f, "actord_messages_processed_total", w("1")...))
	require.Equal(t, 5.0, value(t, f, "actord_local_sends_total", w("0")...))
	require.Equal(t, 7.0, value(t, f, "actord_missed_gulps_total", w("0")...))
	require.Equal(t, 10.0, value(t, f, "actord_steal_attempts_total", w("0")...))
	require.Equal(t, 4.0, value(t, f, "actord_steal_failures_total", "worker", "0", "reason", "no_candidate"))
	require.Equal(t, 1.0, value(t, f, "actord_steal_failures_total", "worker", "0", "reason", "failed_swap"))
	require.Equal(t, 5.0, value(t, f, "actord_steals_total", w("0")...), "3 non-empty + 2 empty")
	require.Equal(t, 2.0, value(t, f, "actord_empty_steals_total", w("0")...))
	require.Equal(t, 6.0, value(t, f, "actord_steal_wakeups_total", w("0")...))
	require.Equal(t, 9.0, value(t, f, "actord_parks_total", w("0")...))
	require.Equal(t, 5.0, value(t, f, "actord_wakeups_total", "worker", "0", "cause", "sender"))
	require.Equal(t, 3.0, value(t, f, "actord_wakeups_total", "worker", "0", "cause", "timeout"))
	require.Equal(t, 1.5, value(t, f, "actord_parked_seconds_total", w("0")...))
	require.Equal(t, 8.0, value(t, f, "actord_thread_releases_total", w("0")...))
	require.Equal(t, 11.0, value(t, f, "actord_batch_waits_total", w("0")...))
	require.Equal(t, 15.0, value(t, f, "actord_deferred_serves_total", w("0")...))
	require.Equal(t, 19.0, value(t, f, "actord_caller_visits_total", w("0")...))
	require.Equal(t, 17.0, value(t, f, "actord_stalled_steals_total", w("0")...))
	require.Equal(t, 3.0, value(t, f, "actord_actors_created_total", w("0")...))
	require.Equal(t, 1.0, value(t, f, "actord_actors_created_total", w("1")...))
	require.Equal(t, 4.0, value(t, f, "actord_actors_created_total", w(ExternalWorker)...))
	require.Equal(t, 2.0, value(t, f, "actord_actors_terminated_total", w("0")...))
	require.Equal(t, 1.0, value(t, f, "actord_dead_letters_total", w("0")...))
	require.Equal(t, 0.0, value(t, f, "actord_dropped_messages_total", w("0")...))
	require.Equal(t, 1.0, value(t, f, "actord_panics_total", w("0")...))
	require.Equal(t, 12.0, value(t, f, "actord_live_actors"))
	require.Equal(t, 1.0, value(t, f, "actord_parked_workers"))
	require.Equal(t, 33.0, value(t, f, "actord_queued_messages"))
	require.Equal(t, 2.0, value(t, f, "actord_workers"))
	require.Equal(t, 32.0, value(t, f, "actord_queues"))
	require.Equal(t, 1.0, value(t, f, "actord_stale_workers"))
	require.GreaterOrEqual(t, value(t, f, "actord_stats_snapshot_duration_seconds"), 0.0)
	require.Equal(t, 7.0, value(t, f, "actord_asks_pending"))
	require.Equal(t, 3.0, value(t, f, "actord_asks_timed_out_total"))
	require.Equal(t, 2.0, value(t, f, "actord_late_replies_total"))
	require.Equal(t, 5.0, value(t, f, "actord_timers_pending"))
	require.Equal(t, 40.0, value(t, f, "actord_timers_fired_total"))
	require.Equal(t, 6.0, value(t, f, "actord_timer_dead_letters_total"))
	require.Equal(t, 11.0, value(t, f, "actord_restarts_total", w("0")...))
	require.Equal(t, 1.0, value(t, f, "actord_restarts_total", w("1")...))
	require.Equal(t, 12.0, value(t, f, "actord_resumes_total", w("0")...))
	require.Equal(t, 13.0, value(t, f, "actord_escalations_total", w("0")...))
	require.Equal(t, 14.0, value(t, f, "actord_restart_budget_exhausted_total", w("0")...))
	require.Equal(t, 0.0, value(t, f, "actord_restart_budget_exhausted_total", w("1")...))
	require.Equal(t, 16.0, value(t, f, "actord_passivations_total", w("0")...))
	require.Equal(t, 0.0, value(t, f, "actord_passivations_total", w("1")...))
	require.Equal(t, 24.0, value(t, f, "actord_watch_notifications_total"))
	require.Equal(t, 21.0, value(t, f, "actord_mailbox_overflows_total", "reason", "reject"))
	require.Equal(t, 22.0, value(t, f, "actord_mailbox_overflows_total", "reason", "drop_newest"))
	require.Equal(t, 23.0, value(t, f, "actord_mailbox_overflows_total", "reason", "drop_oldest"))
	require.Len(t, f["actord_mailbox_overflows_total"].Metric, 3, "one series per overflow policy")
	for name, typ := range map[string]dto.MetricType{
		"actord_asks_pending": dto.MetricType_GAUGE, "actord_timers_pending": dto.MetricType_GAUGE,
		"actord_asks_timed_out_total": dto.MetricType_COUNTER, "actord_late_replies_total": dto.MetricType_COUNTER,
		"actord_timers_fired_total": dto.MetricType_COUNTER, "actord_timer_dead_letters_total": dto.MetricType_COUNTER,
		"actord_watch_notifications_total": dto.MetricType_COUNTER,
	} {
		require.Equal(t, typ, f[name].GetType(), name)
		require.Empty(t, f[name].Metric[0].Label, "%s has no worker label", name)
	}

	// Gulp sizes 0, 1, 1, 3, 4, 2^30: cumulative counts at each bound.
	h := find(t, f, "actord_gulp_size", w("0")...).GetHistogram()
	require.Equal(t, uint64(6), h.GetSampleCount())
	require.Equal(t, float64(0+1+1+3+4+(1<<30)), h.GetSampleSum())
	want := map[float64]uint64{0: 1, 1: 3, 2: 3, 4: 5, 8: 5, 1 << 20: 5}
	require.Len(t, h.Bucket, executor.HistogramBuckets-1, "every bucket but +Inf")
	prev := uint64(0)
	for _, b := range h.Bucket {
		if n, ok := want[b.GetUpperBound()]; ok {
			require.Equal(t, n, b.GetCumulativeCount(), "le=%v", b.GetUpperBound())
		}
		require.GreaterOrEqual(t, b.GetCumulativeCount(), prev, "cumulative")
		prev = b.GetCumulativeCount()
	}
	require.False(t, math.IsInf(h.Bucket[len(h.Bucket)-1].GetUpperBound(), 1))

	s := find(t, f, "actord_steal_size", w("0")...).GetHistogram()
	require.Equal(t, uint64(3), s.GetSampleCount())
	require.Equal(t, 8.0, s.GetSampleSum())
}

func TestNoSource(t *testing.T) {
	c := NewCollector()
	f := gather(t, c)
	require.Equal(t, 0.0, value(t, f, "actord_messages_sent_total"))
	require.Equal(t, 0.0, value(t, f, "actord_actors_created_total", "worker", ExternalWorker))
	for _, name := range []string{"actord_asks_timed_out_total", "actord_late_replies_total", "actord_timers_fired_total", "actord_timer_dead_letters_total",
		"actord_watch_notifications_total"} {
		require.Equal(t, 0.0, value(t, f, name), "counters exist before any system: %s", name)
	}
	for _, r := range []string{"reject", "drop_newest", "drop_oldest"} {
		require.Equal(t, 0.0, value(t, f, "actord_mailbox_overflows_total", "reason", r), "counters exist before any system")
	}
	require.NotContains(t, f, "actord_restarts_total", "no workers yet")
	require.NotContains(t, f, "actord_live_actors", "no gauges without a system")
	require.NotContains(t, f, "actord_asks_pending", "no gauges without a system")
	require.NotContains(t, f, "actord_timers_pending", "no gauges without a system")
	require.NotContains(t, f, "actord_messages_processed_total", "no workers yet")
}

// TestAttachFoldsRetired checks that counters add the replaced sources'
// final values, that gauges come from the current source alone, and that a
// worker of a retired system with more workers keeps its series.
func TestAttachFoldsRetired(t *testing.T) {
	c := NewCollector()
	a := &fakeSource{st: twoWorkers()}
	b := &fakeSource{st: executor.Stats{Workers: []executor.WorkerStats{{ActorsCreated: 10}}, MessagesSent: 5, LiveActors: 1, Queues: 16,
		AsksPending: 1, AsksTimedOut: 10, LateReplies: 20, TimersPending: 2, TimersFired: 30, TimersDead: 1,
		MailboxRejected: 1, MailboxDroppedNewest: 2, MailboxDroppedOldest: 3, WatchNotices: 4}}
	b.st.Workers[0].Restarts = 100
	c.Attach(a)
	c.Attach(a) // no-op: a is current
	c.Attach(b)
	f := gather(t, c)
	require.Equal(t, 105.0, value(t, f, "actord_messages_sent_total"))
	require.Equal(t, 13.0, value(t, f, "actord_actors_created_total", "worker", "0"))
	require.Equal(t, 1.0, value(t, f, "actord_actors_created_total", "worker", "1"), "retired worker 1 still exported")
	require.Equal(t, 1.0, value(t, f, "actord_live_actors"))
	require.Equal(t, 1.0, value(t, f, "actord_workers"))
	require.Equal(t, 16.0, value(t, f, "actord_queues"))
	require.Equal(t, 0.0, value(t, f, "actord_stale_workers"))
	// Request and timer counters add up across systems; their gauges are
	// the current system's.
	require.Equal(t, 13.0, value(t, f, "actord_asks_timed_out_total"))
	require.Equal(t, 22.0, value(t, f, "actord_late_replies_total"))
	require.Equal(t, 70.0, value(t, f, "actord_timers_fired_total"))
	require.Equal(t, 7.0, value(t, f, "actord_timer_dead_letters_total"))
	require.Equal(t, 1.0, value(t, f, "actord_asks_pending"))
	require.Equal(t, 2.0, value(t, f, "actord_timers_pending"))
	// So do the supervision and flow-control counters.
	require.Equal(t, 111.0, value(t, f, "actord_restarts_total", "worker", "0"))
	require.Equal(t, 1.0, value(t, f, "actord_restarts_total", "worker", "1"))
	require.Equal(t, 28.0, value(t, f, "actord_watch_notifications_total"))
	require.Equal(t, 22.0, value(t, f, "actord_mailbox_overflows_total", "reason", "reject"))
	require.Equal(t, 24.0, value(t, f, "actord_mailbox_overflows_total", "reason", "drop_newest"))
	require.Equal(t, 26.0, value(t, f, "actord_mailbox_overflows_total", "reason", "drop_oldest"))

	c.Attach(nil)
	f = gather(t, c)
	require.Equal(t, 105.0, value(t, f, "actord_messages_sent_total"))
	require.Equal(t, 13.0, value(t, f, "actord_asks_timed_out_total"))
	require.Equal(t, 70.0, value(t, f, "actord_timers_fired_total"))
	require.NotContains(t, f, "actord_live_actors")
	require.NotContains(t, f, "actord_asks_pending")
	require.NotContains(t, f, "actord_timers_pending")
	tot := c.Totals()
	require.Equal(t, uint64(105), tot.MessagesSent)
	require.Equal(t, executor.Stats{AsksTimedOut: 13, LateReplies: 22, TimersFired: 70, TimersDead: 7},
		executor.Stats{AsksTimedOut: tot.AsksTimedOut, LateReplies: tot.LateReplies, TimersFired: tot.TimersFired, TimersDead: tot.TimersDead,
			AsksPending: tot.AsksPending, TimersPending: tot.TimersPending})
}

// TestRealSystems runs the executor program on two systems one after the
// other while a goroutine scrapes continuously, and checks that every scrape
// saw messages sent grow monotonically and that the final value is the sum
// of both systems' own counts.
func TestRealSystems(t *testing.T) {
	c := NewCollector()
	reg, err := NewRegistry(c)
	require.NoError(t, err)

	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		scrapes  int
		scrapeOK = true
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		last := -1.0
		for !stop.Load() {
			fams, err := reg.Gather()
			if err != nil {
				scrapeOK = false
				return
			}
			for _, f := range fams {
				if f.GetName() == "actord_messages_sent_total" {
					v := f.Metric[0].Counter.GetValue()
					if v < last {
						scrapeOK = false
					}
					last = v
				}
			}
			scrapes++
		}
	}()

	sz := bench.ExecutorSize{Actors: 200, Set: 10, Rounds: 5}
	var want uint64
	var processed uint64
	for range 2 {
		sys, err := actor.Start(actor.WithWorkers(2))
		require.NoError(t, err)
		c.Attach(sys)
		require.NoError(t, bench.Executor(sys, sz))
		st := actortest.MustStats(sys)
		want += st.MessagesSent
		tot := st.Total()
		processed += tot.MessagesProcessed()
	}
	stop.Store(true)
	wg.Wait()
	require.True(t, scrapeOK, "scrapes failed or went backwards")
	require.Positive(t, scrapes)
	require.Equal(t, uint64(2*sz.Messages()), want)

	fams, err := reg.Gather()
	require.NoError(t, err)
	f := make(map[string]*dto.MetricFamily)
	for _, x := range fams {
		f[x.GetName()] = x
	}
	require.Equal(t, float64(want), value(t, f, "actord_messages_sent_total"))
	sum := 0.0
	for _, m := range f["actord_messages_processed_total"].Metric {
		sum += m.Counter.GetValue()
	}
	require.Equal(t, float64(processed), sum)
	require.Equal(t, 0.0, value(t, f, "actord_live_actors"))
	// The Go and process collectors are on the same (non-global) registry.
	require.Contains(t, f, "go_goroutines")
	require.Contains(t, f, "process_resident_memory_bytes")
	for name := range f {
		if !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") {
			require.True(t, strings.HasPrefix(name, "actord_"), name)
		}
	}
}

// holder keeps the requests it receives unanswered until told to answer.
type holder struct {
	actor.Actor
	held []*hold
}

type hold struct {
	actor.Request[int]
}

type release struct{ actor.Message }

func (h *holder) hold(m *hold) actor.Allocation {
	h.held = append(h.held, m)
	return actor.Nodelete
}

func (h *holder) release(*release) actor.Allocation {
	for _, m := range h.held {
		_ = m.Reply(1) // ErrReplied: its asker gave up (a late reply)
	}
	h.held = nil
	return actor.Nodelete
}

// TestRealAsks checks the request metrics against a real system: an Ask
// waiting shows as pending, one whose context ends as timed out, and its
// answer, coming afterwards, as a late reply; the counters survive the
// system, the gauges go with it.
func TestRealAsks(t *testing.T) {
	c := NewCollector()
	sys, err := actor.Start(actor.WithWorkers(2))
	require.NoError(t, err)
	c.Attach(sys)
	h, err := actor.Spawn(sys, &holder{})
	require.NoError(t, err)
	port, err := actor.Bind(h, (*holder).hold)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := actor.Ask(ctx, port, &hold{})
		done <- err
	}()
	require.Eventually(t, func() bool { return value(t, gather(t, c), "actord_asks_pending") == 1 },
		10*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	require.NoError(t, actor.Send(h, &release{}, (*holder).release))
	require.NoError(t, actor.SendPill(h, actor.FinishedMsg))
	require.NoError(t, sys.Stop(context.Background()))

	f := gather(t, c)
	require.Equal(t, 0.0, value(t, f, "actord_asks_pending"))
	require.Equal(t, 1.0, value(t, f, "actord_asks_timed_out_total"))
	require.Equal(t, 1.0, value(t, f, "actord_late_replies_total"))
	c.Attach(nil)
	f = gather(t, c)
	require.Equal(t, 1.0, value(t, f, "actord_asks_timed_out_total"))
	require.Equal(t, 1.0, value(t, f, "actord_late_replies_total"))
	require.NotContains(t, f, "actord_asks_pending")
}

// statsFunc adapts a function to Source, as http.HandlerFunc adapts one to
// http.Handler: its type cannot be compared with ==.
type statsFunc func() (executor.Stats, error)

func (f statsFunc) Stats() (executor.Stats, error) { return f() }

// Attaching a source whose type == cannot compare works (Attach compared
// sources with ==, which panicked), and counts as a new source.
func TestAttachUncomparableSource(t *testing.T) {
	c := NewCollector()
	st := func() (executor.Stats, error) { return executor.Stats{MessagesSent: 1}, nil }
	c.Attach(statsFunc(st))
	require.NotPanics(t, func() { c.Attach(statsFunc(st)) })
	require.Equal(t, uint64(2), c.Totals().MessagesSent, "the first source retired, the second current")
}
