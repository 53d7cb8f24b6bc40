package executor

import (
	"math"
	"math/bits"
	"time"
)

// HistogramBuckets is the number of buckets of a Histogram.
const HistogramBuckets = 23

// Histogram is a distribution of sizes (gulp sizes, steal sizes) in
// power-of-two buckets. Bucket 0 counts zeros, bucket i (1 <= i < last)
// counts values in (2^(i-2), 2^(i-1)], that is 1, 2, 3-4, 5-8, ..., and the
// last bucket counts everything above 2^20.
type Histogram struct {
	Buckets [HistogramBuckets]uint64
	Count   uint64 // number of observations
	Sum     uint64 // sum of the observed values
}

// BucketUpperBound returns the inclusive upper bound of bucket i
// (+Inf for the last bucket).
func BucketUpperBound(i int) float64 {
	switch {
	case i <= 0:
		return 0
	case i >= HistogramBuckets-1:
		return math.Inf(1)
	}
	return float64(uint64(1) << (i - 1))
}

// Observe records one value.
func (h *Histogram) Observe(v uint64) {
	i := 0
	if v > 0 {
		i = 1 + bits.Len64(v-1)
		if i > HistogramBuckets-1 {
			i = HistogramBuckets - 1
		}
	}
	h.Buckets[i]++
	h.Count++
	h.Sum += v
}

// Mean returns Sum/Count, or 0 without observations.
func (h *Histogram) Mean() float64 {
	if h.Count == 0 {
		return 0
	}
	return float64(h.Sum) / float64(h.Count)
}

func (h *Histogram) add(o *Histogram) {
	for i := range h.Buckets {
		h.Buckets[i] += o.Buckets[i]
	}
	h.Count += o.Count
	h.Sum += o.Sum
}

// WorkerStats are one worker's counters. A worker counts into a private copy
// with plain (non-atomic) increments and publishes it on request (see
// Executor.Stats), so counting costs the hot path no atomic instruction.
type WorkerStats struct {
	ActorsCreated    uint64 // actors spawned by behaviours running on this worker (Stats.Total adds the external ones)
	ActorsTerminated uint64 // actors terminated (allocation status or panic) on this worker
	LocalSends       uint64 // sends appended directly to the batch this worker was draining
	DeadLetters      uint64 // messages dropped because their actor had terminated (those Stop found queued in this worker's mailboxes included)
	Dropped          uint64 // messages dropped from this worker's batch by a forced stop
	TimersDiscarded  uint64 // firings of periodic timers stopped while they were queued, discarded at their turn (see SendEvery)
	Panics           uint64 // behaviours (or hooks) that panicked or called runtime.Goexit

	// Supervision (see SpawnOptions): restarts made, failing messages
	// dropped by Resume, failures escalated to a supervisor, and actors
	// terminated because they exceeded their restart budget.
	Restarts        uint64
	Resumes         uint64
	Escalations     uint64
	BudgetExhausted uint64
	// Passivations counts the actors this worker ended by idle passivation
	// (SpawnOptions.IdleTimeout; ReasonPassivated), also counted in
	// ActorsTerminated.
	Passivations uint64

	// GulpSize has one observation per gulp: the number of messages taken
	// (Count = gulps, Sum = messages gulped). Local sends are not included.
	GulpSize    Histogram
	MissedGulps uint64 // non-empty mailboxes found being processed by another worker
	// BatchWaits counts the worker's waits for a batch: pauses at the end
	// of a pass after a mailbox was refilled a little during its drain by
	// a goroutine outside the system (a flood from outside; see the
	// package documentation).
	BatchWaits uint64
	// DeferredServes counts the mailboxes of parked workers this worker
	// served (took and processed) for wake-ups that senders outside the
	// system left to the awake workers, no processor being free for the
	// owner (see the package documentation).
	DeferredServes uint64
	// CallerVisits counts the mailbox visits made as this worker by
	// goroutines outside the system that borrowed it while it was parked,
	// to deliver the request they wait for themselves (callers that help;
	// see the package documentation). A visit a caller began is counted
	// here once; its gulps, deliveries and local sends are counted in the
	// worker's other counters, as the worker's own are.
	CallerVisits uint64

	StealAttempts    uint64    // times this worker acted as a thief
	StealNoCandidate uint64    // attempts that found no candidate mailbox at the victim
	StealFailedSwap  uint64    // attempts whose wait-free swap failed
	EmptySteals      uint64    // successful swaps of a mailbox that was empty by then
	StealSize        Histogram // per successful non-empty steal: messages in the stolen mailbox
	StealWakeups     uint64    // parked workers this worker woke because it had a backlog
	// StalledSteals counts the non-empty mailboxes this worker took from a
	// stalled victim before they had waited Config.StealAge (the victim
	// awake but serving nothing: its thread off the CPU, or one long
	// behaviour running): served in place for one visit, or, past a few
	// within StealAge, stolen. Many of them say that the workers' threads
	// compete for CPUs with other threads or processes.
	StalledSteals uint64

	Parks            uint64        // times the worker went to sleep
	WakeupsBySender  uint64        // sleeps ended by a sender (or thief, releaser, Stop)
	WakeupsByTimeout uint64        // sleeps ended by the watcher (see Config.ParkTimeout)
	ParkedTime       time.Duration // total time asleep
	// ThreadReleases counts the sleeps during which the worker gave its OS
	// thread back to the runtime (a low rate of messages, or a single
	// processor; see Config.Park): it locked the thread it woke on.
	ThreadReleases uint64

	passes        uint64 // passes over the worker's slots (for tests of the idle cost)
	inFlightSpins uint64 // idle passes spun past the budget while a wake-up was in flight (see spinDone)
	backlogSpins  uint64 // idle passes spun past the budget while another worker had a backlog (see spinForBacklog)
	follows       uint64 // mailboxes visited by following a chain (see afterVisit)
	handoffs      uint64 // handed-off mailboxes this worker served itself (see handoff.go)
	asksStarted   uint64 // requests begun on this worker (see Executor.askStarted)
	asksDone      uint64 // requests ended on this worker
	private       uint64 // messages taken from private queues (privqueue.go)
	control       uint64 // control envelopes taken (supervise.go): not user messages
	// closed counts the dead letters Stop took from this worker's
	// mailboxes when it closed them (set by Stats from worker.closedDead,
	// which it also adds to DeadLetters): taken like a gulp's messages,
	// so that MessagesProcessed does not subtract them from the gulps.
	closed uint64
}

// MessagesProcessed returns the number of messages whose behaviour this
// worker ran (pills included): every message taken from its mailboxes (by
// its gulps and local sends, and by Stop, which takes the dead letters it
// finds queued there), minus dead letters, messages dropped at a forced stop
// (Dropped) and the discarded firings of stopped periodic timers
// (TimersDiscarded).
// Derived rather than counted, to keep an increment off the per-message
// path. It is 0 when statistics are off (Config.NoStatistics),
// since gulps are not counted then.
func (s *WorkerStats) MessagesProcessed() uint64 {
	in, out := s.GulpSize.Sum+s.LocalSends+s.private+s.closed, s.DeadLetters+s.Dropped+s.TimersDiscarded+s.control
	if in < out {
		return 0
	}
	return in - out
}

// Steals returns the number of successful swaps (empty or not).
func (s *WorkerStats) Steals() uint64 { return s.StealSize.Count + s.EmptySteals }

func (s *WorkerStats) add(o *WorkerStats) {
	s.ActorsCreated += o.ActorsCreated
	s.ActorsTerminated += o.ActorsTerminated
	s.LocalSends += o.LocalSends
	s.DeadLetters += o.DeadLetters
	s.Dropped += o.Dropped
	s.TimersDiscarded += o.TimersDiscarded
	s.Panics += o.Panics
	s.Restarts += o.Restarts
	s.Resumes += o.Resumes
	s.Escalations += o.Escalations
	s.BudgetExhausted += o.BudgetExhausted
	s.Passivations += o.Passivations
	s.private += o.private
	s.control += o.control
	s.closed += o.closed
	s.GulpSize.add(&o.GulpSize)
	s.MissedGulps += o.MissedGulps
	s.StealAttempts += o.StealAttempts
	s.StealNoCandidate += o.StealNoCandidate
	s.StealFailedSwap += o.StealFailedSwap
	s.EmptySteals += o.EmptySteals
	s.StealSize.add(&o.StealSize)
	s.StealWakeups += o.StealWakeups
	s.StalledSteals += o.StalledSteals
	s.Parks += o.Parks
	s.WakeupsBySender += o.WakeupsBySender
	s.WakeupsByTimeout += o.WakeupsByTimeout
	s.ParkedTime += o.ParkedTime
	s.ThreadReleases += o.ThreadReleases
	s.BatchWaits += o.BatchWaits
	s.DeferredServes += o.DeferredServes
	s.CallerVisits += o.CallerVisits
}

// Stats is a snapshot of an executor's statistics.
type Stats struct {
	// Workers holds each worker's counters, indexed by worker number.
	Workers []WorkerStats
	// ExternalActorsCreated counts actors spawned by goroutines that are
	// not workers (the program's main goroutine, servers, timers).
	ExternalActorsCreated uint64
	// MessagesSent counts every successful send (pills included; a message
	// that a full DropNewest mailbox dropped at once is not counted), from
	// workers and from other goroutines alike: pushes counted by each
	// mailbox under its lock, plus local sends. It is system-wide because
	// attributing each send to a worker would cost the send path a
	// goroutine-identity lookup. While messages are sent, a snapshot may
	// lag the true count; it never exceeds it, never decreases from one
	// snapshot to the next, and is exact once the system is quiet.
	MessagesSent  uint64
	LiveActors    int64 // spawned and not yet terminated (0 once a forced Stop has terminated the rest: see Cell.Alive)
	ParkedWorkers int   // workers asleep at the time of the snapshot
	// QueuedMessages counts the messages waiting for their actors: in the
	// mailboxes (not yet gulped; the executor's control envelopes are not
	// messages) and in the private queues of bounded and supervised
	// actors. A snapshot taken while messages flow is approximate.
	QueuedMessages int
	Queues         int // number of mailboxes actors are placed on
	SpareQueues    int // number of spare mailboxes (see Config.SpareQueues)
	// AsksPending counts requests (Ask, AskAsync) waiting for an answer;
	// AsksTimedOut those ended by their requester's context or timeout;
	// LateReplies the replies that came after the request had ended (or
	// found the requesting actor gone), dropped.
	AsksPending  int64
	AsksTimedOut uint64
	LateReplies  uint64
	// TimersPending counts timers set and not yet fired or stopped;
	// TimersFired the timer deliveries made (each firing of a periodic
	// timer counts; so does a firing sent and then dropped undelivered, a
	// dead letter or an overflow, but not a periodic firing discarded
	// because its timer was stopped while it was queued, whether at its
	// turn, counted WorkerStats.TimersDiscarded, or dropped before); TimersDead the
	// firings that delivered nothing (the port's incarnation had
	// terminated, or its bounded mailbox refused the message under Reject)
	// and the timers dropped by Stop.
	TimersPending int64
	TimersFired   uint64
	TimersDead    uint64
	// Bounded mailboxes (see SpawnOptions.MailboxBound): sends refused with
	// ErrMailboxFull (Reject), messages dropped by DropNewest and by
	// DropOldest. WatchNotices counts the Terminated notices delivered to
	// watchers (see Watch).
	MailboxRejected      uint64
	MailboxDroppedNewest uint64
	MailboxDroppedOldest uint64
	WatchNotices         uint64
	// Stale lists workers that did not publish fresh counters in time
	// (typically because they were inside a long behaviour); their entries
	// hold their latest published values.
	Stale []int
}

// Total returns the sum over workers. Its ActorsCreated also includes
// ExternalActorsCreated (so it counts every actor created; do not add
// ExternalActorsCreated again).
func (s Stats) Total() WorkerStats {
	var t WorkerStats
	for i := range s.Workers {
		t.add(&s.Workers[i])
	}
	t.ActorsCreated += s.ExternalActorsCreated
	return t
}

// publish copies the private counters to pub for Stats. Workers call it only
// between batches (at the start of a pass, before parking, at exit), so the
// published counters are always consistent: a derived counter such as
// MessagesProcessed never goes down between two snapshots.
func (w *worker) publish(epoch uint64) {
	w.pubMu.Lock()
	w.pub = w.st
	w.pubMu.Unlock()
	w.seenEpoch = epoch
	w.pubEpoch.Store(epoch)
}

// answered reports whether w's published counters are fresh for epoch: it
// published for that epoch, or it is asleep or gone (it published before).
func (w *worker) answered(epoch uint64) bool {
	return w.pubEpoch.Load() >= epoch || w.state.Load() != workerRunning
}

// Stats returns a snapshot of the statistics. Workers publish their private
// counters between batches when asked: Stats asks, then waits (up to about
// 10ms) for every worker that is not parked to answer at the end of its
// current pass. Workers that do not answer in time (a long behaviour) are
// listed in Stale with their previously published counters; so is the
// caller's own worker when Stats is called from a behaviour (it cannot
// publish in the middle of its batch). Safe to call while running and after
// Stop; a nil Executor returns zero statistics.
func (e *Executor) Stats() Stats {
	if e == nil {
		return Stats{}
	}
	s := Stats{Workers: make([]WorkerStats, len(e.workers)), Queues: len(e.mailboxes), SpareQueues: len(e.spares)}
	epoch := e.statsEpoch.Add(1)
	self := e.current()
	deadline := time.Now().Add(10 * time.Millisecond)
	for i, w := range e.workers {
		for w != self && !w.answered(epoch) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Microsecond)
		}
		if !w.answered(epoch) {
			s.Stale = append(s.Stale, i)
		}
		w.pubMu.Lock()
		s.Workers[i] = w.pub
		w.pubMu.Unlock()
		// One load for both counts, so that they agree. Paired with
		// Stop's Add after mailbox.close (see worker.closedDead).
		cd := w.closedDead.Load()
		s.Workers[i].DeadLetters += cd
		s.Workers[i].closed = cd
		if w.state.Load() == workerParked {
			s.ParkedWorkers++
		}
	}
	s.ExternalActorsCreated = e.extCreated.Load()
	started, done := e.extAsksStarted.Load(), e.extAsksDone.Load()
	for i := range s.Workers {
		started += s.Workers[i].asksStarted
		done += s.Workers[i].asksDone
	}
	if started > done { // workers publish between batches: a snapshot may lag
		s.AsksPending = int64(started - done)
	}
	s.AsksTimedOut, s.LateReplies = e.asksTimedOut.Load(), e.lateReplies.Load()
	s.TimersPending, s.TimersFired, s.TimersDead = e.timers.stats()
	if !e.closed.Load() {
		s.LiveActors = e.live()
	}
	var ctlTaken uint64
	for _, m := range e.mailboxes {
		s.QueuedMessages += m.queued()
		s.MessagesSent += m.sentCount()
	}
	for i := range s.Workers {
		ctlTaken += s.Workers[i].control
	}
	// Control envelopes are not messages: those still queued are the ones
	// sent and not taken (ctlSent less the workers' published control
	// counts). ctlSent is read after the mailboxes and the counts before,
	// so the difference is never below the control envelopes the mailboxes
	// held when read: QueuedMessages may come out low while control
	// envelopes flow, never high, and is exact once the workers have
	// published (a quiet system). Closed mailboxes hold nothing.
	if ctl := e.sup.ctlSent.Load(); ctl > ctlTaken && !e.closed.Load() {
		s.QueuedMessages = max(s.QueuedMessages-int(ctl-ctlTaken), 0)
	}
	s.QueuedMessages += e.privQueued()
	for i := range s.Workers {
		s.MessagesSent += s.Workers[i].LocalSends
	}
	s.MessagesSent += e.sup.privSent.Load()
	if ctl := e.sup.ctlSent.Load(); ctl <= s.MessagesSent {
		s.MessagesSent -= ctl
	}
	// The reads above are not one atomic snapshot: a control envelope
	// counted in ctlSent (read last) may be pushed after its mailbox was
	// read, so the sum can come out low, never high (every other count is
	// read after what it counts happened). sentMax, the largest sum any
	// snapshot saw, is therefore never above the true count, and taking
	// it makes MessagesSent never decrease between snapshots (a
	// Prometheus counter must not); once the system is quiet the sum is
	// exact.
	for hw := e.sentMax.Load(); ; hw = e.sentMax.Load() {
		if s.MessagesSent <= hw {
			s.MessagesSent = hw
			break
		}
		if e.sentMax.CompareAndSwap(hw, s.MessagesSent) {
			break
		}
	}
	s.MailboxRejected, s.MailboxDroppedNewest = e.sup.rejected.Load(), e.sup.droppedNewest.Load()
	s.MailboxDroppedOldest, s.WatchNotices = e.sup.droppedOldest.Load(), e.sup.notices.Load()
	return s
}

// privQueued returns the messages queued in the private queues of the
// extended actors (bounded and supervised ones), each queue read under its
// lock. Stats calls it; it costs one lock per such actor alive.
func (e *Executor) privQueued() int {
	e.sup.mu.Lock()
	qs := make([]*privQueue, 0, len(e.sup.exts))
	for _, x := range e.sup.exts {
		if x.pq != nil {
			qs = append(qs, x.pq)
		}
	}
	e.sup.mu.Unlock()
	n := 0
	for _, q := range qs {
		q.mu.Lock()
		n += q.ring.n
		q.mu.Unlock()
	}
	return n
}
