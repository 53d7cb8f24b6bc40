package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/metrics"
)

// ---- the mixed, service-like workload ---------------------------------------
//
// One long-lived system serves requests the way a small service would, with
// the executor's request/reply (actor.Request, Reply, Ask, AskAsync):
//
//   - client goroutines (outside the system) issue requests at a rate that
//     follows a sine wave (mixedParams.period) with occasional bursts; each
//     request is asked (actor.Ask, with a timeout) by a goroutine of its
//     own, as a server would handle each incoming request, and the time
//     from the ask to its answer is observed in the latency histogram;
//   - session actors are spawned and terminated over time (each lives for a
//     random time; their number follows the same wave);
//   - a session does a little work per request and either answers at once
//     (Reply) or fans the request out to 1-8 shard actors with AskAsync,
//     the replies going to a short-lived gather actor that it spawns, which
//     answers the request when every shard has replied or its query has
//     timed out (mixedParams.queryTimeout: the answer then says how many
//     shards are missing);
//   - now and then a shard runs a long behaviour (tens to hundreds of
//     milliseconds), so the other workers steal the rest of its worker's
//     queues, and the queries queued behind it time out (their replies come
//     late and are dropped);
//   - every crashEvery a shard panics (an injected failure): shards are
//     spawned with actor.WithRestart, so it restarts with its state reset
//     and goes on with the queries queued for it, none lost;
//   - each session sends an audit record per request to one audit actor,
//     whose mailbox is bounded (actor.WithMailbox, auditBound, DropOldest):
//     every stallEvery the audit actor stalls for a while (a slow disk, say)
//     and the oldest records are dropped, counted, instead of the queue
//     growing without limit;
//   - a monitor actor watches every session (actor.Watch) and counts the
//     Terminated notices.
//
// Termination never leaves a message undelivered, during the run or at the
// end, so Stop returns nil:
//   - a session is retired by its last lease: the registry holds one while
//     the session is registered, and a client takes one, under the
//     registry's read lock, for each request it picks the session for, and
//     gives it back once its Ask has returned (the request is queued by
//     then). The manager unregisters a session under the write lock, so no
//     lease is taken after that, then gives the registry's lease back;
//     whoever gives back the last one sends the session its DeleteMsg pill,
//     behind every request sent to it;
//   - a session's queries to shards belong to its gather actors, which live
//     until every query has been answered or has timed out; a query that
//     timed out is still queued at its shard, ahead of any pill;
//   - at shutdown the clients and the manager stop first and every request
//     in flight ends (answered, or timed out); every session loses its
//     registry lease and gets its pill; once every session and gather has
//     terminated (mixed.live), nothing can send to the shards or the audit
//     actor any more, and they get their pills; once the monitor has
//     received every session's Terminated notice (mixed.watched: a
//     session's watchers are notified after its Destroy hook), it gets its
//     pill; then Stop. No request is then pending.

// mixedParams shapes the mixed workload.
type mixedParams struct {
	sessions     int           // sessions at the peak of the wave
	rate         float64       // mean requests per second over a wave
	shards       int           // backend shard actors
	clients      int           // client goroutines issuing requests
	period       time.Duration // period of the load's sine wave
	lifetime     time.Duration // mean session lifetime (exponential)
	burstOdds    time.Duration // mean time between bursts
	burst        time.Duration // how long a burst lasts
	burstX       float64       // rate multiplier during a burst
	slowOdds     time.Duration // mean time between long shard behaviours
	slowMin      time.Duration // shortest long behaviour (the longest is 3x)
	tick         time.Duration // clients' pacing tick
	askTimeout   time.Duration // how long a client waits for its answer
	queryTimeout time.Duration // how long a gather waits for each shard's reply
	crashEvery   time.Duration // period of the injected shard failures (0: none)
	stallEvery   time.Duration // period of the audit actor's stalls (0: none)
	stall        time.Duration // how long a stall lasts
	auditBound   int           // the audit actor's mailbox bound
	budget       actor.Budget  // the shards' restart budget
}

func defaultMixed(sessions int, rate float64) mixedParams {
	if sessions == 0 {
		sessions = 1000
	}
	if rate == 0 {
		rate = 5000
	}
	return mixedParams{
		sessions: sessions, rate: rate, shards: 64, clients: 2,
		period: 2 * time.Minute, lifetime: 20 * time.Second,
		burstOdds: 45 * time.Second, burst: 5 * time.Second, burstX: 3,
		slowOdds: 15 * time.Second, slowMin: 50 * time.Millisecond,
		tick:       time.Millisecond,
		askTimeout: 5 * time.Second, queryTimeout: 100 * time.Millisecond,
		crashEvery: 2 * time.Second, stallEvery: 3 * time.Second, stall: 200 * time.Millisecond,
		auditBound: 256,
		// Generous: the injected failures are spread over the shards, so a
		// shard restarts rarely; the budget bounds a real crash loop.
		budget: actor.Budget{MaxRestarts: 100, Within: time.Minute, MinBackoff: time.Millisecond, MaxBackoff: 50 * time.Millisecond},
	}
}

const (
	maxFanout   = 8
	sessionCost = 500  // mean work iterations per request in a session (about 0.5µs)
	shardCost   = 3000 // mean work iterations per query in a shard
)

// errMixedSend: a send or an ask that the workload's protocol guarantees
// cannot fail did fail; the workload stops (it would otherwise lose messages
// silently).
var errMixedSend = errors.New("actord: mixed workload: send failed")

// work burns about n nanoseconds of CPU in a way the compiler cannot drop
// (the result is stored by the caller).
func work(h uint64, n int) uint64 {
	for i := 0; i < n; i++ {
		h ^= uint64(i)
		h *= 0x100000001b3
	}
	return h
}

// expCost draws a work amount with the given mean, exponentially distributed.
func expCost(rng *rand.Rand, mean float64) int {
	return int(rng.ExpFloat64() * mean)
}

// answer is the reply to a client's request.
type answer struct {
	h       uint64 // the work's result
	missing int    // shards whose reply did not come in time
}

// request is one client request, asked of a session. It is written by its
// client before the ask and only read afterwards (the session reads it, and
// its gather answers it); the garbage collector frees it.
type request struct {
	actor.Request[answer]
	fanout int // shards to query (0: answer at once)
	cost   int // session work
}

// query is one shard query of a fanned-out request, asked by the session
// with its gather's reply port; the reply is the shard's hash.
type query struct {
	actor.Request[uint64]
	cost int
}

type slowMsg struct {
	actor.Message
	d time.Duration
}

// crashMsg makes a shard panic (an injected failure).
type crashMsg struct{ actor.Message }

// errInjectedCrash is the panic value of an injected shard failure.
var errInjectedCrash = errors.New("actord: mixed workload: injected shard failure")

// auditRecord is one session's record of a request it served.
type auditRecord struct {
	actor.Message
	fanout int
}

// stallMsg holds the audit actor for d.
type stallMsg struct {
	actor.Message
	d time.Duration
}

type session struct {
	actor.Actor
	m       *mixed
	port    actor.Port[*request] // bound by the manager before registering the session
	expires time.Time            // written by the manager before Spawn, read by the manager
	// refs counts the session's leases (see the termination protocol
	// above): one for the registry while the session is registered, one
	// per request asked of it until its Ask has returned. Leases are taken
	// only under the registry's read lock while the session is registered,
	// so refs never rises from zero; whoever takes it to zero sends the
	// DeleteMsg pill.
	refs atomic.Int64
	h    uint64
}

func (s *session) request(r *request) actor.Allocation {
	s.h = work(s.h, r.cost)
	// The audit actor's bounded mailbox drops its oldest record when full:
	// this send never fails while the audit actor is alive.
	if err := actor.Send(s.m.audit, &auditRecord{fanout: r.fanout}, (*auditor).record); err != nil {
		s.m.fail(err)
	}
	if r.fanout == 0 {
		_ = r.Reply(answer{h: s.h}) // ErrReplied: its client gave up (a late reply, counted)
		return actor.Nodelete
	}
	m := s.m
	g := &gather{m: m, req: r, need: r.fanout}
	m.live.Add(1) // this session is counted, so live cannot be at zero here
	if _, err := actor.Spawn(m.sys, g); err != nil {
		m.live.Done()
		m.fail(err)
		return actor.Nodelete
	}
	replies, err := actor.Bind(g, (*gather).reply)
	if err != nil {
		m.fail(err)
		return actor.Nodelete
	}
	for i := 0; i < g.need; i++ {
		q := &g.q[i]
		q.cost = int(rand.ExpFloat64() * shardCost)
		if err := actor.AskAsync(m.shardPorts[rand.IntN(len(m.shardPorts))], q, replies, m.p.queryTimeout); err != nil {
			m.fail(err)
			// Nothing will come for this query: count it, so that the
			// gather still terminates.
			if err := replies.Send(&actor.Reply[uint64]{Err: err}); err != nil {
				m.fail(err)
			}
		}
	}
	return actor.Nodelete
}

// Destroy implements actor.Destroyer: the session has terminated (DeleteMsg).
func (s *session) Destroy() { s.m.live.Done() }

// gather collects the shards' replies to one fanned-out request and answers
// it.
type gather struct {
	actor.Actor
	m               *mixed
	req             *request
	need, got, miss int
	h               uint64
	q               [maxFanout]query
}

// reply receives one query's outcome: the shard's reply, or the query's
// timeout.
func (g *gather) reply(r *actor.Reply[uint64]) actor.Allocation {
	g.got++
	switch {
	case r.Err == nil:
		g.h ^= r.Value
	case errors.Is(r.Err, context.DeadlineExceeded):
		g.miss++ // its shard was busy (a long behaviour); its reply will come late
	default:
		g.miss++
		g.m.fail(r.Err)
	}
	if g.got < g.need {
		return actor.Nodelete
	}
	_ = g.req.Reply(answer{h: g.h, missing: g.miss}) // ErrReplied: its client gave up
	return actor.Delete                              // Destroy runs next
}

// Destroy implements actor.Destroyer.
func (g *gather) Destroy() { g.m.live.Done() }

type shard struct {
	actor.Actor
	h uint64
}

func (s *shard) query(q *query) actor.Allocation {
	s.h = work(s.h, q.cost)
	_ = q.Reply(s.h) // ErrReplied: the query timed out (a late reply, counted)
	return actor.Nodelete
}

// slow is the occasional long behaviour: it holds its worker for m.d.
func (s *shard) slow(m *slowMsg) actor.Allocation {
	for end := time.Now().Add(m.d); time.Now().Before(end); {
		s.h = work(s.h, 1000)
	}
	return actor.Nodelete
}

// crash is the injected failure: the shard panics, and restarts (see
// runMixed).
func (s *shard) crash(*crashMsg) actor.Allocation { panic(errInjectedCrash) }

// auditor receives the sessions' audit records through a bounded mailbox.
type auditor struct {
	actor.Actor
	records, fanouts uint64
}

func (a *auditor) record(r *auditRecord) actor.Allocation {
	a.records++
	a.fanouts += uint64(r.fanout)
	return actor.Nodelete
}

// stall is the audit actor's occasional slow spell (a slow disk, say):
// records pile up behind it, and past the bound the oldest are dropped. It
// blocks its worker, as a behaviour should not; the other workers steal the
// rest of that worker's queues meanwhile.
func (a *auditor) stall(m *stallMsg) actor.Allocation {
	time.Sleep(m.d)
	return actor.Nodelete
}

// monitor watches the sessions and counts their Terminated notices.
type monitor struct {
	actor.Actor
	m      *mixed
	byWhy  map[actor.Reason]uint64
	normal atomic.Uint64 // sessions that terminated normally (read by the final log)
}

func (mo *monitor) terminated(t *actor.Terminated) actor.Allocation {
	mo.byWhy[t.Reason]++
	if t.Reason == actor.ReasonNormal {
		mo.normal.Add(1)
	}
	mo.m.watched.Done()
	return actor.Nodelete
}

// mixed is one run of the workload.
type mixed struct {
	p          mixedParams
	sys        *actor.System
	m          *metrics.Workload
	log        *slog.Logger
	shards     []shard
	shardPorts []actor.Port[*query]
	audit      *auditor
	mon        *monitor
	monPort    actor.Port[*actor.Terminated]
	t0         time.Time

	// watched counts the sessions' watches whose Terminated notice the
	// monitor has not received yet: Add before Watch (by the manager), Done
	// by the monitor. Shutdown waits for zero before pilling the monitor.
	watched inFlight

	// live counts sessions and gathers not yet terminated: Add before Spawn
	// (by the manager, or by a live session for its gathers), Done in their
	// Destroy hooks. Shutdown waits for zero before pilling the shards,
	// which only sessions send to.
	live inFlight

	// asks counts the requests in flight: Add by a client before it starts
	// a request's goroutine, Done when its Ask has returned. askCtx is the
	// parent of their contexts, cancelled only by a shutdown that runs out
	// of time.
	asks      inFlight
	askCtx    context.Context
	askCancel context.CancelFunc

	// What the clients saw: answers (partial: some shards missing) and
	// requests that timed out.
	answered, partial, timedOut atomic.Uint64

	// regMu guards sessions. Clients hold it for reading while they pick
	// sessions and take leases on them; the manager holds it for writing
	// to add and remove sessions.
	regMu    sync.RWMutex
	sessions []*session

	// burstUntil is the end of the current burst in Unix nanoseconds;
	// written by the manager, read by the clients (atomic: no ordering with
	// anything else is needed).
	burstUntil atomic.Int64

	// failed is the first error of a send that cannot fail by design; set
	// by whoever sees it (a behaviour or a client), read by run.
	failOnce sync.Once
	failed   atomic.Pointer[error]
	cancel   context.CancelFunc
}

func (m *mixed) fail(err error) {
	m.failOnce.Do(func() {
		err = fmt.Errorf("%w: %w", errMixedSend, err)
		m.failed.Store(&err)
		m.log.Error("mixed workload failed", "err", err)
		m.cancel()
	})
}

// wave returns the load factor at t: between 0.5 and 1.5 along the sine
// wave, times the burst multiplier during a burst.
func (m *mixed) wave(t time.Time) float64 {
	f := 1 + 0.5*math.Sin(2*math.Pi*t.Sub(m.t0).Seconds()/m.p.period.Seconds())
	if t.UnixNano() < m.burstUntil.Load() {
		f *= m.p.burstX
	}
	return f
}

// runMixed runs the mixed workload on sys until ctx ends, then terminates
// its actors in order and stops sys, returning Stop's error (nil when every
// message was delivered and every actor terminated).
func runMixed(ctx context.Context, sys *actor.System, p mixedParams, wm *metrics.Workload, log *slog.Logger, shutdownTimeout time.Duration) error {
	m := &mixed{p: p, sys: sys, m: wm, log: log, t0: time.Now()}
	ctx, m.cancel = context.WithCancel(ctx)
	defer m.cancel()
	m.askCtx, m.askCancel = context.WithCancel(context.Background())
	defer m.askCancel()
	m.shards = make([]shard, p.shards)
	m.shardPorts = make([]actor.Port[*query], p.shards)
	for i := range m.shards {
		sh := &m.shards[i]
		// An injected failure restarts the shard with its state reset;
		// the queries queued for it wait (the budget's backoff), then go on.
		if _, err := actor.Spawn(sys, sh, actor.WithRestart(func() { sh.h = 0 }, p.budget)); err != nil {
			return err
		}
		port, err := actor.Bind(&m.shards[i], (*shard).query)
		if err != nil {
			return err
		}
		m.shardPorts[i] = port
	}
	m.audit = &auditor{}
	if _, err := actor.Spawn(sys, m.audit, actor.WithMailbox(p.auditBound, actor.DropOldest)); err != nil {
		return err
	}
	m.mon = &monitor{m: m, byWhy: make(map[actor.Reason]uint64)}
	if _, err := actor.Spawn(sys, m.mon); err != nil {
		return err
	}
	var err error
	if m.monPort, err = actor.Bind(m.mon, (*monitor).terminated); err != nil {
		return err
	}

	var gen sync.WaitGroup
	gen.Add(1 + p.clients)
	go func() {
		defer gen.Done()
		m.manage(ctx)
	}()
	for i := range p.clients {
		go func() {
			defer gen.Done()
			m.client(ctx, uint64(i))
		}()
	}
	<-ctx.Done()
	gen.Wait()
	return m.shutdown(shutdownTimeout)
}

// inFlight counts things in flight, as a sync.WaitGroup does, but a wait
// for zero can give up when its context ends without leaving a goroutine
// behind blocked in WaitGroup.Wait (after a shutdown that ran out of time,
// the count may never reach zero). mu guards n and zero; it is held only
// for the update, never across a wait, so behaviours may call Add and Done.
type inFlight struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n returns to zero; nil while n is zero
}

// Add adds d (which may be negative) to the count; it panics if the count
// goes below zero.
func (f *inFlight) Add(d int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 && d > 0 {
		f.zero = make(chan struct{})
	}
	f.n += d
	switch {
	case f.n < 0:
		panic("actord: inFlight count below zero")
	case f.n == 0 && f.zero != nil:
		close(f.zero)
		f.zero = nil
	}
}

// Done subtracts one from the count.
func (f *inFlight) Done() { f.Add(-1) }

// wait waits for the count to be zero or for ctx to end, and reports
// whether the count reached zero.
func (f *inFlight) wait(ctx context.Context) bool {
	f.mu.Lock()
	zero := f.zero
	f.mu.Unlock()
	if zero == nil {
		return true
	}
	select {
	case <-zero:
		return true
	case <-ctx.Done():
		return false
	}
}

// shutdown terminates every actor without leaving a message undelivered,
// then stops the system. The generators have stopped.
func (m *mixed) shutdown(timeout time.Duration) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// Every request in flight ends: answered, or timed out (at once if the
	// shutdown runs out of time). Each gives its session lease back.
	if !m.asks.wait(ctx) {
		m.askCancel()
		m.asks.wait(context.Background()) // Ask returns as soon as its context ends
	}
	m.regMu.Lock()
	all := m.sessions
	m.sessions = nil
	m.regMu.Unlock()
	for _, s := range all {
		m.release(s) // the registry's lease, the last one: the pill goes
	}
	if m.live.wait(ctx) {
		// Sessions and gathers are gone: nothing sends to the shards any
		// more, and their last messages (late queries included) are queued
		// ahead of the pills below.
		for i := range m.shards {
			if err := actor.SendPill(&m.shards[i], actor.FinishedMsg); err != nil {
				m.fail(err)
			}
		}
		// The last records are queued ahead of the pill, which nothing
		// follows: the mailbox never drops it.
		if err := actor.SendPill(m.audit, actor.FinishedMsg); err != nil {
			m.fail(err)
		}
		if m.watched.wait(ctx) {
			if err := actor.SendPill(m.mon, actor.FinishedMsg); err != nil {
				m.fail(err)
			}
		}
	}
	// Otherwise Stop below reports the actors still alive (ErrActorsAlive).
	err := m.sys.Stop(ctx)
	m.log.Info("mixed workload stopped", "sessions_at_end", len(all),
		"requests_answered", m.answered.Load(), "partial_answers", m.partial.Load(),
		"requests_timed_out", m.timedOut.Load(), "sessions_watched_to_the_end", m.mon.normal.Load(),
		"shutdown", time.Since(start).Round(time.Millisecond))
	if f := m.failed.Load(); f != nil {
		return errors.Join(*f, err)
	}
	return err
}

// release gives back one lease on s; the last one sends s its pill.
func (m *mixed) release(s *session) {
	if s.refs.Add(-1) == 0 {
		if err := actor.SendPill(s, actor.DeleteMsg); err != nil {
			m.fail(err)
		}
	}
}

// manage spawns and retires sessions along the wave, starts bursts and sends
// the occasional long behaviour to a shard, until ctx ends.
func (m *mixed) manage(ctx context.Context) {
	rng := rand.New(rand.NewPCG(1, 2))
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	per := 0.1 // seconds per manager tick
	m.reshape(time.Now(), rng)
	// The injected failures and the audit stalls are periodic, so that they
	// show within seconds of the start.
	crash, stall := every(m.p.crashEvery), every(m.p.stallEvery)
	defer crash.Stop()
	defer stall.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-crash.C:
			if err := actor.Send(&m.shards[rng.IntN(len(m.shards))], &crashMsg{}, (*shard).crash); err != nil {
				m.fail(err)
			}
		case <-stall.C:
			if err := actor.Send(m.audit, &stallMsg{d: m.p.stall}, (*auditor).stall); err != nil {
				m.fail(err)
			}
		case now := <-tick.C:
			m.reshape(now, rng)
			if rng.Float64() < per/m.p.burstOdds.Seconds() && now.UnixNano() >= m.burstUntil.Load() {
				m.burstUntil.Store(now.Add(m.p.burst).UnixNano())
				m.log.Debug("burst", "for", m.p.burst)
			}
			if rng.Float64() < per/m.p.slowOdds.Seconds() {
				d := m.p.slowMin + time.Duration(rng.Int64N(int64(2*m.p.slowMin)))
				if err := actor.Send(&m.shards[rng.IntN(len(m.shards))], &slowMsg{d: d}, (*shard).slow); err != nil {
					m.fail(err)
				}
			}
		}
	}
}

// every returns a ticker of period d, or one that never ticks if d is 0.
func every(d time.Duration) *time.Ticker {
	if d <= 0 {
		t := time.NewTicker(time.Hour)
		t.Stop()
		return t
	}
	return time.NewTicker(d)
}

// reshape retires expired sessions (and surplus ones when the wave falls)
// and spawns new ones up to the wave's target.
func (m *mixed) reshape(now time.Time, rng *rand.Rand) {
	target := int(float64(m.p.sessions) * (0.5 + 0.5*math.Max(0, m.wave(now)-0.5)))
	target = min(max(target, 1), m.p.sessions)
	var retire []*session
	m.regMu.Lock()
	for i := 0; i < len(m.sessions); {
		if s := m.sessions[i]; now.After(s.expires) || len(m.sessions) > target {
			retire = append(retire, s)
			last := len(m.sessions) - 1
			m.sessions[i] = m.sessions[last]
			m.sessions[last] = nil
			m.sessions = m.sessions[:last]
			continue
		}
		i++
	}
	have := len(m.sessions)
	m.regMu.Unlock()
	// Unregistered under the lock: no client takes a lease on these
	// sessions any more; the last lease given back sends the pill.
	for _, s := range retire {
		m.release(s)
	}
	var fresh []*session
	for range target - have {
		s := &session{m: m, expires: now.Add(time.Duration(rng.ExpFloat64() * float64(m.p.lifetime)))}
		m.live.Add(1) // before Spawn: its Destroy hook calls Done
		if _, err := actor.Spawn(m.sys, s); err != nil {
			m.live.Done()
			m.fail(err)
			break
		}
		port, err := actor.Bind(s, (*session).request)
		if err != nil {
			m.fail(err)
			if err := actor.SendPill(s, actor.DeleteMsg); err != nil {
				m.fail(err)
			}
			break
		}
		s.port = port
		m.watched.Add(1) // before Watch: the monitor calls Done
		if err := actor.Watch(port, m.monPort); err != nil {
			m.watched.Done()
			m.fail(err)
		}
		s.refs.Store(1) // the registry's lease
		fresh = append(fresh, s)
	}
	if len(fresh) > 0 {
		m.regMu.Lock()
		m.sessions = append(m.sessions, fresh...)
		m.regMu.Unlock()
	}
}

// client issues requests at its share of the wave's rate until ctx ends.
// Each tick it issues the requests due since the last one, picking their
// sessions under one read lock of the session registry.
func (m *mixed) client(ctx context.Context, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 42))
	tick := time.NewTicker(m.p.tick)
	defer tick.Stop()
	last := time.Now()
	due := 0.0
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			due += m.p.rate / float64(m.p.clients) * m.wave(now) * now.Sub(last).Seconds()
			last = now
			// After a stall (a paused process), do not send a huge backlog at once.
			due = min(due, m.p.rate/float64(m.p.clients)*m.p.burstX)
			n := int(due)
			due -= float64(n)
			m.issue(rng, n)
		}
	}
}

// issue starts n requests, each asked by a goroutine of its own (ask), to
// sessions picked at random, taking a lease on each.
func (m *mixed) issue(rng *rand.Rand, n int) {
	m.regMu.RLock()
	defer m.regMu.RUnlock()
	if len(m.sessions) == 0 {
		return
	}
	for range n {
		r := &request{cost: expCost(rng, sessionCost)}
		if rng.IntN(10) < 4 { // 40% of the requests fan out
			r.fanout = 1 + rng.IntN(maxFanout)
		}
		s := m.sessions[rng.IntN(len(m.sessions))]
		s.refs.Add(1) // registered: the registry's lease holds refs above zero
		m.asks.Add(1)
		m.m.Requests.Inc()
		go m.ask(s, r)
	}
}

// ask asks s the request r and waits for the answer (at most
// askTimeout), observing the time from the ask to the answer; then it gives
// back its lease on s: the request has been queued by then.
func (m *mixed) ask(s *session, r *request) {
	defer m.asks.Done()
	ctx, cancel := context.WithTimeout(m.askCtx, m.p.askTimeout)
	start := time.Now()
	a, err := actor.Ask(ctx, s.port, r)
	lat := time.Since(start)
	cancel()
	m.release(s)
	switch {
	case err == nil:
		m.m.Latency.Observe(lat.Seconds())
		m.answered.Add(1)
		if a.missing > 0 {
			m.partial.Add(1)
		}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		m.timedOut.Add(1) // its answer, if it comes, is dropped as late
	default:
		m.fail(err)
	}
}
