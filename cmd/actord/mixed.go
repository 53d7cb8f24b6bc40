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
// One long-lived system serves "requests" the way a small service would:
//
//   - client goroutines (outside the system) send requests to sessions at a
//     rate that follows a sine wave (mixedParams.period) with occasional
//     bursts;
//   - session actors are spawned and terminated over time (each lives for a
//     random time; their number follows the same wave);
//   - a session does a little work per request and either answers at once
//     (to its client's responder) or fans the request out to 1-8 shard
//     actors through a short-lived gather actor that it spawns, which
//     answers when every shard has replied;
//   - now and then a shard runs a long behaviour (tens to hundreds of
//     milliseconds), so the other workers steal the rest of its worker's
//     queues;
//   - responders record each request's latency.
//
// Termination never leaves a message undelivered, during the run or at the
// end, so Stop returns nil:
//   - clients send to a session only while holding the session registry's
//     read lock and only if it is registered; the manager unregisters a
//     session under the write lock before sending it its DeleteMsg pill, so
//     every request to it was queued before the pill;
//   - a session's requests in flight to shards belong to its gather actors,
//     which live until every shard has replied;
//   - at shutdown the clients and the manager stop first; every session gets
//     its pill; once every session and gather has terminated (mixed.live),
//     nothing can send to the shards or responders any more, and they get
//     their pills; then Stop.

// mixedParams shapes the mixed workload.
type mixedParams struct {
	sessions  int           // sessions at the peak of the wave
	rate      float64       // mean requests per second over a wave
	shards    int           // backend shard actors
	clients   int           // client goroutines, each with its own responder
	period    time.Duration // period of the load's sine wave
	lifetime  time.Duration // mean session lifetime (exponential)
	burstOdds time.Duration // mean time between bursts
	burst     time.Duration // how long a burst lasts
	burstX    float64       // rate multiplier during a burst
	slowOdds  time.Duration // mean time between long shard behaviours
	slowMin   time.Duration // shortest long behaviour (the longest is 3x)
	tick      time.Duration // clients' and manager's pacing tick
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
		tick: time.Millisecond,
	}
}

const (
	maxFanout   = 8
	sessionCost = 500  // mean work iterations per request in a session (about 0.5µs)
	shardCost   = 3000 // mean work iterations per query in a shard
)

// errMixedSend: a send that the workload's protocol guarantees cannot fail
// did fail; the workload stops (it would otherwise lose messages silently).
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

// request is one client request. It travels client -> session -> (gather)
// -> responder and is never written after the client sends it: a message
// forwarded by a behaviour is still read by its worker (for its allocation
// status) after that behaviour returns, possibly while the next receiver
// runs, so the receivers must not set its status or recycle it. The garbage
// collector frees it.
type request struct {
	actor.Message
	start  time.Time  // just before the client's send
	fanout int        // shards to query (0: answer at once)
	cost   int        // session work
	resp   *responder // where the answer goes
}

type query struct {
	actor.Message
	g    *gather
	cost int
}

type slowMsg struct {
	actor.Message
	d time.Duration
}

type session struct {
	actor.Actor
	m       *mixed
	expires time.Time // written by the manager before Spawn, read by the manager
	h       uint64
}

func (s *session) request(r *request) actor.Allocation {
	s.h = work(s.h, r.cost)
	fanout := r.fanout // r is read-only here, but the gather may finish with it before this behaviour does
	if fanout == 0 {
		if err := actor.Send(r.resp, r, (*responder).done); err != nil {
			s.m.fail(err)
		}
		return actor.Nodelete
	}
	g := &gather{m: s.m, req: r, need: fanout}
	s.m.live.Add(1) // this session is counted, so live cannot be at zero here
	if _, err := actor.Spawn(s.m.sys, g); err != nil {
		s.m.live.Done()
		s.m.fail(err)
		return actor.Nodelete
	}
	for i := 0; i < fanout; i++ {
		q := &g.q[i]
		q.g, q.cost = g, int(rand.ExpFloat64()*shardCost)
		sh := &s.m.shards[rand.IntN(len(s.m.shards))]
		if err := actor.Send(sh, q, (*shard).query); err != nil {
			s.m.fail(err)
		}
	}
	return actor.Nodelete
}

// Destroy implements actor.Destroyer: the session has terminated (DeleteMsg).
func (s *session) Destroy() { s.m.live.Done() }

// gather collects the shards' replies to one fanned-out request.
type gather struct {
	actor.Actor
	m         *mixed
	req       *request
	need, got int
	q         [maxFanout]query
}

func (g *gather) reply(*query) actor.Allocation {
	g.got++
	if g.got < g.need {
		return actor.Nodelete
	}
	if err := actor.Send(g.req.resp, g.req, (*responder).done); err != nil {
		g.m.fail(err)
	}
	return actor.Delete // Destroy runs next
}

// Destroy implements actor.Destroyer.
func (g *gather) Destroy() { g.m.live.Done() }

type shard struct {
	actor.Actor
	h uint64
}

func (s *shard) query(q *query) actor.Allocation {
	s.h = work(s.h, q.cost)
	if err := actor.Send(q.g, q, (*gather).reply); err != nil {
		q.g.m.fail(err)
	}
	return actor.Nodelete
}

// slow is the occasional long behaviour: it holds its worker for m.d.
func (s *shard) slow(m *slowMsg) actor.Allocation {
	for end := time.Now().Add(m.d); time.Now().Before(end); {
		s.h = work(s.h, 1000)
	}
	return actor.Nodelete
}

type responder struct {
	actor.Actor
	lat *metrics.Workload
	n   uint64
}

func (r *responder) done(q *request) actor.Allocation {
	r.lat.Latency.Observe(time.Since(q.start).Seconds())
	r.n++
	return actor.Nodelete
}

// mixed is one run of the workload.
type mixed struct {
	p      mixedParams
	sys    *actor.System
	m      *metrics.Workload
	log    *slog.Logger
	shards []shard
	resp   []responder
	t0     time.Time

	// live counts sessions and gathers not yet terminated: Add before Spawn
	// (by the manager, or by a live session for its gathers), Done in their
	// Destroy hooks. Shutdown waits for zero before pilling shards and
	// responders, which only sessions and gathers send to.
	live sync.WaitGroup

	// regMu guards sessions. Clients hold it for reading while they send
	// (so a registered session is alive for the whole send); the manager
	// holds it for writing to add and remove sessions.
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
	m.shards = make([]shard, p.shards)
	m.resp = make([]responder, p.clients)
	for i := range m.shards {
		if _, err := actor.Spawn(sys, &m.shards[i]); err != nil {
			return err
		}
	}
	for i := range m.resp {
		m.resp[i].lat = wm
		if _, err := actor.Spawn(sys, &m.resp[i]); err != nil {
			return err
		}
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
			m.client(ctx, &m.resp[i], uint64(i))
		}()
	}
	<-ctx.Done()
	gen.Wait()
	return m.shutdown(shutdownTimeout)
}

// shutdown terminates every actor without leaving a message undelivered,
// then stops the system. The generators have stopped.
func (m *mixed) shutdown(timeout time.Duration) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	m.regMu.Lock()
	all := m.sessions
	m.sessions = nil
	m.regMu.Unlock()
	for _, s := range all {
		if err := actor.SendPill(s, actor.DeleteMsg); err != nil {
			m.fail(err)
		}
	}
	done := make(chan struct{})
	go func() {
		m.live.Wait()
		close(done)
	}()
	select {
	case <-done:
		// Sessions and gathers are gone: nothing sends to shards or
		// responders any more, and their last messages are queued ahead of
		// the pills below.
		for i := range m.shards {
			if err := actor.SendPill(&m.shards[i], actor.FinishedMsg); err != nil {
				m.fail(err)
			}
		}
		for i := range m.resp {
			if err := actor.SendPill(&m.resp[i], actor.FinishedMsg); err != nil {
				m.fail(err)
			}
		}
	case <-ctx.Done():
		// Stop below reports the actors still alive (ErrActorsAlive).
	}
	err := m.sys.Stop(ctx)
	var served uint64
	for i := range m.resp {
		served += m.resp[i].n // the responders have terminated (or Stop failed; then the count is a lower bound)
	}
	m.log.Info("mixed workload stopped", "sessions_at_end", len(all), "requests_answered", served,
		"shutdown", time.Since(start).Round(time.Millisecond))
	if f := m.failed.Load(); f != nil {
		return errors.Join(*f, err)
	}
	return err
}

// manage spawns and retires sessions along the wave, starts bursts and sends
// the occasional long behaviour to a shard, until ctx ends.
func (m *mixed) manage(ctx context.Context) {
	rng := rand.New(rand.NewPCG(1, 2))
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	per := 0.1 // seconds per manager tick
	m.reshape(time.Now(), rng)
	for {
		select {
		case <-ctx.Done():
			return
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
	// Unregistered under the lock: every client send to these sessions is
	// already queued, ahead of the pill.
	for _, s := range retire {
		if err := actor.SendPill(s, actor.DeleteMsg); err != nil {
			m.fail(err)
		}
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
		fresh = append(fresh, s)
	}
	if len(fresh) > 0 {
		m.regMu.Lock()
		m.sessions = append(m.sessions, fresh...)
		m.regMu.Unlock()
	}
}

// client sends requests at its share of the wave's rate until ctx ends.
// Each tick it sends the requests due since the last one, all under one
// read lock of the session registry.
func (m *mixed) client(ctx context.Context, resp *responder, seed uint64) {
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
			m.sendRequests(rng, resp, n)
		}
	}
}

func (m *mixed) sendRequests(rng *rand.Rand, resp *responder, n int) {
	m.regMu.RLock()
	defer m.regMu.RUnlock()
	if len(m.sessions) == 0 {
		return
	}
	for range n {
		r := &request{resp: resp, cost: expCost(rng, sessionCost)}
		if rng.IntN(10) < 4 { // 40% of the requests fan out
			r.fanout = 1 + rng.IntN(maxFanout)
		}
		s := m.sessions[rng.IntN(len(m.sessions))]
		r.start = time.Now()
		if err := actor.Send(s, r, (*session).request); err != nil {
			m.fail(err)
			return
		}
		m.m.Requests.Inc()
	}
}
