package metrics

import (
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/actord/actord/executor"
)

// Source is what a Collector reads statistics from. *actor.System satisfies
// it. A source whose Stats fails (a zero System) contributes nothing.
type Source interface {
	Stats() (executor.Stats, error)
}

// ExternalWorker is the worker label value of actors spawned from goroutines
// that are not workers (executor.Stats.ExternalActorsCreated).
const ExternalWorker = "external"

// Collector is a prometheus.Collector exporting the statistics of the current
// Source plus the final statistics of every Source it replaced (see the
// package documentation). Create it with NewCollector; it is safe for
// concurrent use.
type Collector struct {
	// mu serialises Attach, Totals and Collect: cur and retired change
	// together under it, and a scrape holds it while it reads cur, so a
	// scrape sees either the old source (not yet retired) or the new one with
	// the old one's counts in retired, never both or neither.
	mu      sync.Mutex
	cur     Source         // the current source, or nil; written by Attach
	retired executor.Stats // sum of the final statistics of replaced sources (counters only)
	lastDur time.Duration  // duration of the latest snapshot of cur

	d descs
}

type descs struct {
	sent, processed, localSends, missed                    *prometheus.Desc
	gulpSize, stealSize, batchWaits, deferred, callers     *prometheus.Desc
	stealAttempts, stealFailures, steals, emptySteals      *prometheus.Desc
	stealWakeups, parks, wakeups, parkedSeconds, releases  *prometheus.Desc
	stalledSteals                                          *prometheus.Desc
	created, terminated, deadLetters, dropped, panics      *prometheus.Desc
	live, parked, queued, workers, queues, stale, snapshot *prometheus.Desc
	asksPending, asksTimedOut, lateReplies                 *prometheus.Desc
	timersPending, timersFired, timersDead                 *prometheus.Desc
	restarts, resumes, escalations, budgetExhausted        *prometheus.Desc
	passivations                                           *prometheus.Desc
	watchNotices, mailboxOverflows                         *prometheus.Desc
}

// Label names and values.
const (
	labelWorker = "worker"
	labelReason = "reason"
	labelCause  = "cause"

	reasonNoCandidate = "no_candidate"
	reasonFailedSwap  = "failed_swap"
	causeSender       = "sender"
	causeTimeout      = "timeout"

	// Reasons of actord_mailbox_overflows_total: the bounded mailbox's
	// Overflow policy that handled the send.
	reasonReject     = "reject"
	reasonDropNewest = "drop_newest"
	reasonDropOldest = "drop_oldest"
)

// NewCollector returns a Collector with no source: until Attach it exports
// counters from its (empty) retired totals only and no gauges.
func NewCollector() *Collector {
	w := []string{labelWorker}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("actord_"+name, help, labels, nil)
	}
	return &Collector{d: descs{
		sent:          desc("messages_sent_total", "Messages sent to actors, poison pills included, counted system-wide (senders are not attributed to workers)."),
		processed:     desc("messages_processed_total", "Messages whose behaviour the worker ran (pills included), taken by gulp or by local send.", w...),
		localSends:    desc("local_sends_total", "Sends appended directly to the batch the worker was draining, bypassing the mailbox.", w...),
		missed:        desc("missed_gulps_total", "Non-empty mailboxes the worker found being processed by another worker.", w...),
		gulpSize:      desc("gulp_size", "Messages taken per gulp (a worker swapping a mailbox's whole queue for its empty one); _count is the number of gulps.", w...),
		batchWaits:    desc("batch_waits_total", "Pauses of the worker at the end of a pass to let a batch gather, after a goroutine outside the system refilled a mailbox a little during its drain (a flood from outside).", w...),
		deferred:      desc("deferred_serves_total", "Mailboxes of parked workers the worker served for wake-ups that senders outside the system left to the awake workers (no processor was free for the owner).", w...),
		callers:       desc("caller_visits_total", "Mailbox visits made as the worker, while it was parked, by goroutines outside the system waiting for a reply (callers that help).", w...),
		stealSize:     desc("steal_size", "Messages in each non-empty mailbox the worker stole; _count is non-empty steals, _sum messages stolen.", w...),
		stealAttempts: desc("steal_attempts_total", "Times the worker, finding no work, tried to steal a mailbox.", w...),
		stealFailures: desc("steal_failures_total", "Steal attempts that failed: reason=no_candidate (the victim had no waiting mailbox) or failed_swap (the wait-free swap lost a race).", labelWorker, labelReason),
		steals:        desc("steals_total", "Successful mailbox swaps by the worker acting as a thief, empty ones included.", w...),
		emptySteals:   desc("empty_steals_total", "Successful swaps of a mailbox that was empty by the time it was taken.", w...),
		stealWakeups:  desc("steal_wakeups_total", "Parked workers this worker woke to steal from it because it had a backlog.", w...),
		stalledSteals: desc("stalled_steals_total", "Non-empty mailboxes the worker took early (served in place or stole) from a stalled worker (awake but serving nothing: its thread off the CPU, or one long behaviour).", w...),
		parks:         desc("parks_total", "Times the worker went to sleep after finding no work.", w...),
		wakeups:       desc("wakeups_total", "Sleeps that ended: cause=sender (woken by a sender, thief or stop) or timeout (woken by the watcher, to steal from a worker stuck in a long behaviour).", labelWorker, labelCause),
		parkedSeconds: desc("parked_seconds_total", "Time the worker spent asleep.", w...),
		releases:      desc("thread_releases_total", "Sleeps during which the worker gave its OS thread back to the Go runtime (a low rate of messages, or a single processor), locking the thread it woke on.", w...),
		created:       desc("actors_created_total", "Actors spawned by behaviours running on the worker; worker=\"external\" counts actors spawned from other goroutines.", w...),
		terminated:    desc("actors_terminated_total", "Actors terminated on the worker (allocation status or panic).", w...),
		deadLetters:   desc("dead_letters_total", "Messages the worker dropped because their actor had terminated.", w...),
		dropped:       desc("dropped_messages_total", "Messages dropped from the worker's batch by a forced stop, and periodic timer firings discarded because their timer was stopped while they were queued.", w...),
		panics:        desc("panics_total", "Behaviours or hooks that panicked (recovered; the actor was terminated unless it was spawned with a supervision option: see restarts, resumes and escalations).", w...),
		live:          desc("live_actors", "Actors spawned and not yet terminated in the current system."),
		parked:        desc("parked_workers", "Workers of the current system asleep at the time of the scrape."),
		queued:        desc("queued_messages", "Messages waiting for the current system's actors (in mailboxes, and in bounded or supervised actors' queues), not yet taken."),
		workers:       desc("workers", "Worker threads of the current system."),
		queues:        desc("queues", "Mailboxes (sharded message queues) of the current system."),
		stale:         desc("stale_workers", "Workers that did not publish fresh counters in time for this scrape (busy in a long behaviour); their previous counters are exported."),
		snapshot:      desc("stats_snapshot_duration_seconds", "Time the latest statistics snapshot of the current system took (the scrape's cost to the workers: they publish at the end of their current pass)."),
		asksPending:   desc("asks_pending", "Requests (Ask, AskAsync) of the current system waiting for their answer."),
		asksTimedOut:  desc("asks_timed_out_total", "Requests ended by their requester's context or timeout before an answer came (system-wide)."),
		lateReplies:   desc("late_replies_total", "Replies that came after their request had ended (timed out, or the requesting actor gone), dropped (system-wide)."),
		timersPending: desc("timers_pending", "Timers of the current system set and not yet fired or stopped."),
		timersFired:   desc("timers_fired_total", "Timer deliveries made, each firing of a periodic timer counted (system-wide)."),
		timersDead:    desc("timer_dead_letters_total", "Timer firings that delivered nothing: their port's actor had terminated, or its bounded mailbox refused them (system-wide)."),

		restarts:        desc("restarts_total", "Actors restarted on the worker after a behaviour panicked (WithRestart, or a supervisor's Failure.Restart); the failing message was dropped.", w...),
		resumes:         desc("resumes_total", "Failing messages dropped on the worker by actors spawned WithResume, which kept their state and went on.", w...),
		escalations:     desc("escalations_total", "Panics on the worker handed to a supervisor as a Failure (WithEscalate); the actor waited for its decision.", w...),
		budgetExhausted: desc("restart_budget_exhausted_total", "Actors terminated on the worker because a panic exceeded their restart budget (Reason budget).", w...),
		passivations:    desc("passivations_total", "Actors the worker ended by idle passivation (WithPassivation: no message for their idle duration).", w...),
		watchNotices:    desc("watch_notifications_total", "Terminated notices sent to watchers (Watch, WatchChan), one per watch (system-wide)."),
		mailboxOverflows: desc("mailbox_overflows_total", "Sends to a full bounded mailbox (WithMailbox): reason=reject (the send failed with ErrMailboxFull), drop_newest (the new message was dropped) or drop_oldest (the oldest queued message was dropped) (system-wide).",
			labelReason),
	}}
}

// Attach makes src the current source. The source it replaces, if any, is
// read one last time and its counters are added to the retired totals, so
// attach a new system after the previous one has stopped: what the previous
// one counts after Attach is not exported. src == nil only retires the
// current source. Attaching the current source again does nothing (a
// source whose type cannot be compared with ==, a function adapter say, is
// never taken for the current one); attaching a source that was retired
// before counts its statistics twice.
func (c *Collector) Attach(src Source) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sameSource(src, c.cur) {
		return
	}
	if c.cur != nil {
		if st, err := c.cur.Stats(); err == nil {
			addStats(&c.retired, &st)
		}
	}
	c.cur = src
}

// sameSource reports a == b without panicking on a type that == cannot
// compare.
func sameSource(a, b Source) bool {
	if a == nil || b == nil {
		return a == b
	}
	ta := reflect.TypeOf(a)
	return ta == reflect.TypeOf(b) && ta.Comparable() && a == b
}

// Totals returns the statistics the counters report: the retired totals plus
// a fresh snapshot of the current source, with the current source's gauges
// (zero without one). It costs what a scrape costs.
func (c *Collector) Totals() executor.Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, _, _ := c.totalsLocked()
	return t
}

// totalsLocked returns retired + current, the current source's number of
// workers, and whether there is a current source (whose gauges are then in
// the result). c.mu must be held.
func (c *Collector) totalsLocked() (t executor.Stats, curWorkers int, ok bool) {
	t = executor.Stats{Workers: make([]executor.WorkerStats, len(c.retired.Workers))}
	addStats(&t, &c.retired)
	if c.cur == nil {
		return t, 0, false
	}
	start := time.Now()
	st, err := c.cur.Stats()
	c.lastDur = time.Since(start)
	if err != nil {
		return t, 0, false
	}
	addStats(&t, &st)
	t.LiveActors, t.ParkedWorkers, t.QueuedMessages, t.Queues = st.LiveActors, st.ParkedWorkers, st.QueuedMessages, st.Queues
	t.AsksPending, t.TimersPending = st.AsksPending, st.TimersPending
	t.Stale = st.Stale
	return t, len(st.Workers), true
}

// addStats adds o's counters to t, growing t.Workers as needed. Gauges are
// not touched.
func addStats(t, o *executor.Stats) {
	for len(t.Workers) < len(o.Workers) {
		t.Workers = append(t.Workers, executor.WorkerStats{})
	}
	for i := range o.Workers {
		// Stats.Total sums its workers; a two-worker Stats adds one pair.
		t.Workers[i] = executor.Stats{Workers: []executor.WorkerStats{t.Workers[i], o.Workers[i]}}.Total()
	}
	t.ExternalActorsCreated += o.ExternalActorsCreated
	t.MessagesSent += o.MessagesSent
	t.AsksTimedOut += o.AsksTimedOut
	t.LateReplies += o.LateReplies
	t.TimersFired += o.TimersFired
	t.TimersDead += o.TimersDead
	t.MailboxRejected += o.MailboxRejected
	t.MailboxDroppedNewest += o.MailboxDroppedNewest
	t.MailboxDroppedOldest += o.MailboxDroppedOldest
	t.WatchNotices += o.WatchNotices
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	d := &c.d
	for _, x := range []*prometheus.Desc{
		d.sent, d.processed, d.localSends, d.missed, d.gulpSize, d.stealSize, d.batchWaits, d.deferred, d.callers,
		d.stealAttempts, d.stealFailures, d.steals, d.emptySteals,
		d.stealWakeups, d.stalledSteals, d.parks, d.wakeups, d.parkedSeconds, d.releases,
		d.created, d.terminated, d.deadLetters, d.dropped, d.panics,
		d.live, d.parked, d.queued, d.workers, d.queues, d.stale, d.snapshot,
		d.asksPending, d.asksTimedOut, d.lateReplies,
		d.timersPending, d.timersFired, d.timersDead,
		d.restarts, d.resumes, d.escalations, d.budgetExhausted, d.passivations,
		d.watchNotices, d.mailboxOverflows,
	} {
		ch <- x
	}
}

// Collect implements prometheus.Collector: it takes one statistics snapshot
// of the current source (see executor.Executor.Stats for its cost) and
// exports it added to the retired totals.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	t, curWorkers, hasCur := c.totalsLocked()
	lastDur := c.lastDur
	c.mu.Unlock()

	d := &c.d
	counter := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, v, labels...)
	}
	gauge := func(desc *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v)
	}
	counter(d.sent, float64(t.MessagesSent))
	counter(d.created, float64(t.ExternalActorsCreated), ExternalWorker)
	counter(d.asksTimedOut, float64(t.AsksTimedOut))
	counter(d.lateReplies, float64(t.LateReplies))
	counter(d.timersFired, float64(t.TimersFired))
	counter(d.timersDead, float64(t.TimersDead))
	counter(d.watchNotices, float64(t.WatchNotices))
	counter(d.mailboxOverflows, float64(t.MailboxRejected), reasonReject)
	counter(d.mailboxOverflows, float64(t.MailboxDroppedNewest), reasonDropNewest)
	counter(d.mailboxOverflows, float64(t.MailboxDroppedOldest), reasonDropOldest)
	for i := range t.Workers {
		w := &t.Workers[i]
		l := strconv.Itoa(i)
		counter(d.processed, float64(w.MessagesProcessed()), l)
		counter(d.localSends, float64(w.LocalSends), l)
		counter(d.missed, float64(w.MissedGulps), l)
		ch <- constHistogram(d.gulpSize, &w.GulpSize, l)
		ch <- constHistogram(d.stealSize, &w.StealSize, l)
		counter(d.stealAttempts, float64(w.StealAttempts), l)
		counter(d.stealFailures, float64(w.StealNoCandidate), l, reasonNoCandidate)
		counter(d.stealFailures, float64(w.StealFailedSwap), l, reasonFailedSwap)
		counter(d.steals, float64(w.Steals()), l)
		counter(d.emptySteals, float64(w.EmptySteals), l)
		counter(d.stealWakeups, float64(w.StealWakeups), l)
		counter(d.stalledSteals, float64(w.StalledSteals), l)
		counter(d.parks, float64(w.Parks), l)
		counter(d.wakeups, float64(w.WakeupsBySender), l, causeSender)
		counter(d.wakeups, float64(w.WakeupsByTimeout), l, causeTimeout)
		counter(d.parkedSeconds, w.ParkedTime.Seconds(), l)
		counter(d.releases, float64(w.ThreadReleases), l)
		counter(d.batchWaits, float64(w.BatchWaits), l)
		counter(d.deferred, float64(w.DeferredServes), l)
		counter(d.callers, float64(w.CallerVisits), l)
		counter(d.created, float64(w.ActorsCreated), l)
		counter(d.terminated, float64(w.ActorsTerminated), l)
		counter(d.deadLetters, float64(w.DeadLetters), l)
		counter(d.dropped, float64(w.Dropped+w.TimersDiscarded), l)
		counter(d.panics, float64(w.Panics), l)
		counter(d.restarts, float64(w.Restarts), l)
		counter(d.resumes, float64(w.Resumes), l)
		counter(d.escalations, float64(w.Escalations), l)
		counter(d.budgetExhausted, float64(w.BudgetExhausted), l)
		counter(d.passivations, float64(w.Passivations), l)
	}
	if !hasCur {
		return
	}
	gauge(d.live, float64(t.LiveActors))
	gauge(d.parked, float64(t.ParkedWorkers))
	gauge(d.queued, float64(t.QueuedMessages))
	gauge(d.workers, float64(curWorkers))
	gauge(d.queues, float64(t.Queues))
	gauge(d.stale, float64(len(t.Stale)))
	gauge(d.snapshot, lastDur.Seconds())
	gauge(d.asksPending, float64(t.AsksPending))
	gauge(d.timersPending, float64(t.TimersPending))
}

// constHistogram converts an executor histogram into a Prometheus one: the
// executor's per-bucket counts become cumulative counts at each bucket's
// upper bound (the last bucket is +Inf, which Prometheus takes from Count).
func constHistogram(desc *prometheus.Desc, h *executor.Histogram, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, executor.HistogramBuckets-1)
	var cum uint64
	for i := 0; i < executor.HistogramBuckets-1; i++ {
		cum += h.Buckets[i]
		buckets[executor.BucketUpperBound(i)] = cum
	}
	return prometheus.MustNewConstHistogram(desc, h.Count, float64(h.Sum), buckets, labels...)
}
