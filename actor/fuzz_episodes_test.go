package actor_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/actortest"
	"github.com/actord/actord/executor"
	"github.com/actord/actord/stealing"
)

// Termination episodes of FuzzActorPrograms.
//
// After the random program, every fuzz input also runs short episodes
// around the end of actors, each on its own system and each checked
// against its own reference model. Their choices come from a generator
// seeded with a hash of the fuzz bytes, so an input replays the same
// episodes; only the interleavings differ between runs, and every check
// holds under every interleaving (where the model cannot say which of two
// racing events wins, it checks that the counts add up, not who won):
//
//   - forwardEnd: routers forward requests (Ask, AskFunc) through a port to
//     a server, then end their actor (Delete, Destroy, Finished) or panic
//     (unsupervised, WithRestart or WithResume; some bounded, some with a
//     slow Destroy hook). A one-shot router's first request is answered by
//     the server, exactly once; every other request to it fails with
//     ErrTerminated, at the send or as a dead letter.
//   - watchRace: watches (Watch to watcher actors, WatchChan) begun before,
//     during and after their target ends (by its status, a pill, a panic or
//     a panic its budget refuses), then through a stale port after the
//     target was spawned again. Every watch is told exactly once, with the
//     incarnation's reason (or unknown, for a watch begun after the end),
//     and only after the target is gone: its Stopped hook has run, its
//     port's Alive is false and its name is free.
//   - forcedStop: bounded and supervised actors (private queues), with
//     hooks and watches, slow behaviours and outside senders still
//     sending, stopped with a context that ends at once or soon. No
//     behaviour starts after its actor's Stopped hook, after its watchers
//     were told, or after Stop returned; every Stopped hook runs once,
//     every watch is told ReasonStopped once; the successful sends equal
//     received + dead letters + batch drops + still queued + overflow drops.
//   - timerStop: functions the timer goroutine runs (an AskFunc function at
//     its timeout, and the error handler when that function panics) and
//     functions a worker runs (an AskFunc function at the reply) call Stop:
//     it returns ErrStopInBehaviour at once, stops nothing, and the real
//     Stop afterwards is clean.
//   - respawnAcross: an actor ended and spawned again, alternately into a
//     system of several workers and one of a single worker, while a
//     goroutine keeps sending to it (see fuzzRespawnAcross).
//
// Every message is counted in exactly one place: what the behaviours
// received, Stats' dead letters, a forced stop's batch drops and overflow
// drops, and Stop's "still queued" count; and for the messages the test
// sent itself, the successful sends equal that sum.

// fuzzRespawnAcross enables the respawnAcross episode (and the chaos test's
// cross-system respawns): a send in flight to an actor that ends and is
// spawned into another system acts on the executor of the mailbox it
// pushed into, where its envelope is a dead letter, taken by a worker or
// found queued by Stop; each system's counts add up. On by default;
// ACTORD_FUZZ_RESPAWN_ACROSS=0 turns it off.
var fuzzRespawnAcross = os.Getenv("ACTORD_FUZZ_RESPAWN_ACROSS") != "0"

func runEpisodes(t *testing.T, data []byte) {
	h := fnv.New64a()
	h.Write(data)
	seed := h.Sum64()
	rng := rand.New(rand.NewPCG(seed, 0xe915))
	episodeForwardEnd(t, rand.New(rand.NewPCG(rng.Uint64(), 1)))
	episodeWatchRace(t, rand.New(rand.NewPCG(rng.Uint64(), 2)))
	episodeForcedStop(t, rand.New(rand.NewPCG(rng.Uint64(), 3)))
	episodeTimerStop(t, rand.New(rand.NewPCG(rng.Uint64(), 4)))
	if fuzzRespawnAcross {
		episodeRespawnAcross(t, rand.New(rand.NewPCG(rng.Uint64(), 5)))
	}
}

// episodeConfig is a small random configuration.
func episodeConfig(rng *rand.Rand) executor.Config {
	return executor.Config{
		Workers:         1 + rng.IntN(4),
		QueuesPerWorker: 1 + rng.IntN(3),
		LocalBatch:      []int{-1, 1, 3, 256}[rng.IntN(4)],
		SpinPasses:      1 + rng.IntN(8),
		ParkTimeout:     time.Duration(1+rng.IntN(4)) * 100 * time.Microsecond,
		QueueCapacity:   1 + rng.IntN(4),
		Steal:           []stealing.Heuristic{stealing.None, stealing.Random, stealing.LongestVictim}[rng.IntN(3)],
	}
}

// episodeFail collects failures from any goroutine; the first is reported.
type episodeFail struct {
	n     atomic.Int64
	first atomic.Pointer[string]
}

func (f *episodeFail) fail(format string, args ...any) {
	f.n.Add(1)
	s := fmt.Sprintf(format, args...)
	f.first.CompareAndSwap(nil, &s)
}

func (f *episodeFail) check(t *testing.T, episode string) {
	t.Helper()
	if s := f.first.Load(); s != nil {
		t.Fatalf("%s: %d failures; first: %s", episode, f.n.Load(), *s)
	}
}

// stopCounts is what Stop's error says of undelivered messages.
type stopCounts struct {
	dead, queued, dropped uint64
	stuck                 bool
}

var stopCountsRE = regexp.MustCompile(`(\d+) messages \((\d+) sent to terminated actors, (\d+) still queued at stop, (\d+) dropped`)

func parseStop(err error) stopCounts {
	var c stopCounts
	s := fmt.Sprint(err)
	if m := stopCountsRE.FindStringSubmatch(s); m != nil {
		c.dead, _ = strconv.ParseUint(m[2], 10, 64)
		c.queued, _ = strconv.ParseUint(m[3], 10, 64)
		c.dropped, _ = strconv.ParseUint(m[4], 10, 64)
	}
	c.stuck = regexp.MustCompile(`still running a behaviour`).MatchString(s)
	return c
}

// stopWithin runs Stop and fails the test, with every goroutine's stack,
// if it does not return within 30 s.
func stopWithin(t *testing.T, sys *actor.System, ctx context.Context) error {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- sys.Stop(ctx) }()
	select {
	case err := <-ch:
		return err
	case <-time.After(30 * time.Second):
		buf := make([]byte, 1<<22)
		n := runtime.Stack(buf, true)
		t.Fatalf("Stop did not return in 30 s; goroutines:\n%s", buf[:n])
		return nil
	}
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached in 10 s", what)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// onlyErrors fails unless every error joined in err is one of allowed.
func onlyErrors(t *testing.T, what string, err error, allowed ...error) {
	t.Helper()
	if err == nil {
		return
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
next:
	for _, e := range errs {
		for _, a := range allowed {
			if errors.Is(e, a) {
				continue next
			}
		}
		t.Fatalf("%s: unexpected error %v (in %v)", what, e, err)
	}
}

// ---- forwardEnd ----

type fwdReq struct {
	actor.Request[int64]
	id int64
}

type fwdServer struct {
	actor.Actor
	got atomic.Int64
}

func (s *fwdServer) onReq(m *fwdReq) actor.Allocation {
	s.got.Add(1)
	if err := m.Reply(m.id); err != nil {
		panic(fmt.Sprintf("server reply %d: %v", m.id, err))
	}
	return actor.Nodelete
}

const (
	fwdKeep     = iota // forwards and goes on
	fwdEnd             // forwards, then ends its actor with its status
	fwdPanic           // forwards, then panics
	fwdEndAfter        // forwards, then ends on its n-th request
)

type fwdRouter struct {
	actor.Actor
	f         *episodeFail
	mode      int
	status    actor.Allocation
	endAfter  int
	server    actor.Port[*fwdReq]
	forwarded atomic.Int64
	slow      bool // Destroy hook sleeps: a forwarder's late touch of the request would race its reuse
	running   atomic.Int32
}

func (r *fwdRouter) Destroy() {
	if r.slow {
		time.Sleep(200 * time.Microsecond)
	}
}

func (r *fwdRouter) onReq(m *fwdReq) actor.Allocation {
	if !r.running.CompareAndSwap(0, 1) {
		r.f.fail("router ran on two workers at once")
	}
	defer r.running.Store(0)
	n := r.forwarded.Add(1) // before the send: the reply may come before the next line
	if err := r.server.Send(m); err != nil {
		r.f.fail("forward %d: %v", m.id, err)
		return actor.Nodelete
	}
	switch r.mode {
	case fwdEnd:
		return r.status
	case fwdPanic:
		panic("fuzz: forward then panic")
	case fwdEndAfter:
		if int(n) == r.endAfter {
			return r.status
		}
	}
	return actor.Nodelete
}

// fwdHooked is a router with lifecycle hooks (an extended actor).
type fwdHooked struct {
	fwdRouter
	stopped atomic.Int32
}

func (h *fwdHooked) Started()             {}
func (h *fwdHooked) Stopped(actor.Reason) { h.stopped.Add(1) }

type fwdAsk struct {
	router   int
	id       int64
	viaFunc  bool
	sendErr  error
	calls    atomic.Int32
	value    int64
	err      error
	answered chan struct{}
}

func episodeForwardEnd(t *testing.T, rng *rand.Rand) {
	f := &episodeFail{}
	sys, err := actor.Start(actor.WithConfig(episodeConfig(rng)))
	if err != nil {
		t.Fatal(err)
	}
	srv := &fwdServer{}
	if _, err := actor.Spawn(sys, srv); err != nil {
		t.Fatal(err)
	}
	srvPort, err := actor.Bind(srv, (*fwdServer).onReq)
	if err != nil {
		t.Fatal(err)
	}
	type routerRec struct {
		r         *fwdRouter
		hooked    *fwdHooked
		port      actor.Port[*fwdReq]
		oneShot   bool // ends after its first request
		supervise int  // 0 none, 1 restart, 2 resume
	}
	nr := 1 + rng.IntN(4)
	routers := make([]*routerRec, nr)
	for i := range routers {
		rec := &routerRec{}
		var r *fwdRouter
		if rng.IntN(2) == 0 {
			rec.hooked = &fwdHooked{}
			r = &rec.hooked.fwdRouter
		} else {
			r = &fwdRouter{}
		}
		r.f, r.server, r.slow = f, srvPort, rng.IntN(3) == 0
		r.mode = rng.IntN(4)
		r.status = []actor.Allocation{actor.Delete, actor.Destroy, actor.Finished}[rng.IntN(3)]
		r.endAfter = 1 + rng.IntN(3)
		var opts []actor.SpawnOption
		if r.mode == fwdPanic {
			rec.supervise = rng.IntN(3)
			switch rec.supervise {
			case 1:
				opts = append(opts, actor.WithRestart(nil, actor.Budget{MaxRestarts: -1}))
			case 2:
				opts = append(opts, actor.WithResume())
			}
		}
		if rng.IntN(3) == 0 {
			opts = append(opts, actor.WithMailbox(64, actor.Reject)) // never full: at most 16 asks
		}
		rec.oneShot = r.mode == fwdEnd || (r.mode == fwdPanic && rec.supervise == 0)
		rec.r = r
		if rec.hooked != nil {
			_, err = actor.Spawn(sys, rec.hooked, opts...)
		} else {
			_, err = actor.Spawn(sys, r, opts...)
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.port, err = actor.Bind(r, (*fwdRouter).onReq); err != nil {
			t.Fatal(err)
		}
		routers[i] = rec
	}
	// Asks from 1-3 goroutines, each in its own order.
	nAsk := 1 + rng.IntN(16)
	asks := make([]*fwdAsk, nAsk)
	ng := 1 + rng.IntN(3)
	for i := range asks {
		asks[i] = &fwdAsk{router: rng.IntN(nr), id: int64(1000 + i), viaFunc: rng.IntN(2) == 0, answered: make(chan struct{})}
	}
	var wg sync.WaitGroup
	for g := range ng {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, a := range asks {
				if i%ng != g {
					continue
				}
				p := routers[a.router].port
				if a.viaFunc {
					a.sendErr = actor.AskFunc(p, &fwdReq{id: a.id}, 0, func(v int64, err error) {
						if a.calls.Add(1) == 1 {
							a.value, a.err = v, err
							close(a.answered)
						}
					})
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				a.value, a.err = actor.Ask(ctx, p, &fwdReq{id: a.id})
				cancel()
				a.calls.Add(1)
				close(a.answered)
			}
		}()
	}
	wg.Wait()
	for _, a := range asks {
		if a.sendErr != nil {
			continue
		}
		select {
		case <-a.answered:
		case <-time.After(20 * time.Second):
			t.Fatalf("forwardEnd: ask %d to router %d never answered", a.id, a.router)
		}
	}
	f.check(t, "forwardEnd")
	// The model, per router.
	var ok, deadAsks, pills int64
	for i, rec := range routers {
		var sent, okN, termN int64
		for _, a := range asks {
			if a.router != i {
				continue
			}
			switch {
			case a.sendErr != nil:
				if !errors.Is(a.sendErr, actor.ErrTerminated) || !rec.oneShot && rec.r.mode != fwdEndAfter {
					t.Fatalf("forwardEnd: AskFunc %d to router %d (mode %d): send %v", a.id, i, rec.r.mode, a.sendErr)
				}
				continue
			case a.err == nil:
				if a.value != a.id {
					t.Fatalf("forwardEnd: ask %d answered %d", a.id, a.value)
				}
				okN++
			case errors.Is(a.err, actor.ErrTerminated):
				termN++
				if a.viaFunc {
					deadAsks++ // the send succeeded: a dead letter
				}
			default:
				t.Fatalf("forwardEnd: ask %d to router %d (mode %d): %v", a.id, i, rec.r.mode, a.err)
			}
			if a.viaFunc {
				sent++
			}
			if n := a.calls.Load(); n != 1 {
				t.Fatalf("forwardEnd: ask %d answered %d times", a.id, n)
			}
		}
		total := int64(0)
		for _, a := range asks {
			if a.router == i {
				total++
			}
		}
		want := total // every request forwarded and answered
		switch {
		case rec.oneShot:
			want = min(total, 1)
		case rec.r.mode == fwdEndAfter:
			want = min(total, int64(rec.r.endAfter))
		}
		if okN != want || rec.r.forwarded.Load() != want {
			t.Fatalf("forwardEnd: router %d (mode %d, supervise %d, slow %v, hooked %v): %d asks, %d answered, %d forwarded, %d ErrTerminated; model: %d answered",
				i, rec.r.mode, rec.supervise, rec.r.slow, rec.hooked != nil, total, okN, rec.r.forwarded.Load(), termN, want)
		}
		ok += okN
		ended := rec.oneShot && total >= 1 || rec.r.mode == fwdEndAfter && total >= int64(rec.r.endAfter)
		if !ended {
			if err := actor.SendPill(rec.r, actor.FinishedMsg); err != nil {
				t.Fatalf("forwardEnd: pill to router %d: %v", i, err)
			}
			pills++
		}
	}
	if got := srv.got.Load(); got != ok {
		t.Fatalf("forwardEnd: server received %d requests, %d answered", got, ok)
	}
	if err := actor.SendPill(srv, actor.FinishedMsg); err != nil {
		t.Fatal(err)
	}
	pills++
	waitFor(t, "forwardEnd: every actor ended", func() bool {
		for _, rec := range routers {
			if rec.r.Alive() {
				return false
			}
		}
		return !srv.Alive()
	})
	stopErr := stopWithin(t, sys, context.Background())
	onlyErrors(t, "forwardEnd: Stop", stopErr, actor.ErrPanic, actor.ErrUndelivered)
	sc := parseStop(stopErr)
	st := actortest.MustStats(sys)
	tot := st.Total()
	// Dead letters: the Ask requests that failed with ErrTerminated after
	// a successful send cannot be told from a refused send, so Stats must
	// lie between the AskFunc dead letters and all ErrTerminated asks.
	var termAll int64
	for _, a := range asks {
		if a.sendErr == nil && a.err != nil {
			termAll++
		}
	}
	if sc.dead != tot.DeadLetters || sc.queued != 0 || sc.dropped != 0 || tot.Dropped != 0 ||
		int64(tot.DeadLetters) < deadAsks || int64(tot.DeadLetters) > termAll {
		t.Fatalf("forwardEnd: Stop says %d dead, %d queued, %d dropped; Stats: %d dead letters, %d dropped; model: %d..%d dead letters",
			sc.dead, sc.queued, sc.dropped, tot.DeadLetters, tot.Dropped, deadAsks, termAll)
	}
	var forwarded int64
	for _, rec := range routers {
		forwarded += rec.r.forwarded.Load()
	}
	// Each forwarded request was delivered twice (router, server).
	if want := uint64(forwarded + srv.got.Load() + pills); tot.MessagesProcessed() != want || st.MessagesSent != want+tot.DeadLetters {
		t.Fatalf("forwardEnd: sent %d, processed %d, dead letters %d; model: processed %d (%d forwarded, %d served, %d pills)",
			st.MessagesSent, tot.MessagesProcessed(), tot.DeadLetters, want, forwarded, srv.got.Load(), pills)
	}
	if st.AsksPending != 0 || st.LateReplies != 0 {
		t.Fatalf("forwardEnd: %d asks pending, %d late replies", st.AsksPending, st.LateReplies)
	}
	for i, rec := range routers {
		if rec.hooked != nil && rec.hooked.stopped.Load() != 1 {
			t.Fatalf("forwardEnd: router %d: Stopped ran %d times", i, rec.hooked.stopped.Load())
		}
	}
}

// ---- watchRace ----

type wPoke struct{ actor.Message }

type wTarget struct {
	actor.Actor
	f       *episodeFail
	endAt   int // ends on this poke (0: by pill)
	status  actor.Allocation
	panics  actor.Reason // non-zero: ends by panicking instead, with this reason
	pokes   int
	hooked  bool
	stopped atomic.Int32 // Stopped hook runs (hooked targets)
	spin    int          // Stopped spins this long, widening the window in which a watch may begin
}

func (a *wTarget) onPoke(*wPoke) actor.Allocation {
	a.pokes++
	if a.pokes == a.endAt {
		if a.panics != 0 {
			panic("fuzz: watched actor panics")
		}
		return a.status
	}
	return actor.Nodelete
}

type wHookedTarget struct{ wTarget }

func (h *wHookedTarget) Stopped(actor.Reason) {
	h.stopped.Add(1)
	for i := 0; i < h.spin; i++ {
		runtime.Gosched()
	}
}

// wWatcher receives the notices for one incarnation of one target.
type wWatcher struct {
	actor.Actor
	f      *episodeFail
	target *wTarget
	port   actor.Port[*wPoke] // the incarnation watched
	name   string
	sys    *actor.System
	seen   atomic.Int32 // how many Stopped runs the target had when spawned
	want   actor.Reason // why the incarnation ends
	got    atomic.Int64
}

// check checks a notice as it arrives: the incarnation is gone (its port
// is not alive, its Stopped hook has run, its name is free) and the reason
// is its own, or unknown for a watch begun after the end.
func (w *wWatcher) check(m *actor.Terminated, what string) {
	if w.port.Alive() {
		w.f.fail("%s of %s: notice while the watched port is alive", what, w.name)
	}
	if m.Reason != w.want && m.Reason != actor.ReasonUnknown {
		w.f.fail("%s of %s: reason %v, want %v", what, w.name, m.Reason, w.want)
	}
	if w.target.hooked && w.target.stopped.Load() <= w.seen.Load() {
		w.f.fail("%s of %s: notice before the Stopped hook ran", what, w.name)
	}
	if w.name != "" {
		if p, err := actor.Lookup[*wPoke](w.sys, w.name); err == nil && p == w.port {
			w.f.fail("%s of %s: notice while its name still finds it", what, w.name)
		}
	}
}

func (w *wWatcher) onTerm(m *actor.Terminated) actor.Allocation {
	w.got.Add(1)
	w.check(m, "Watch")
	return actor.Nodelete
}

func episodeWatchRace(t *testing.T, rng *rand.Rand) {
	f := &episodeFail{}
	sys, err := actor.Start(actor.WithConfig(episodeConfig(rng)))
	if err != nil {
		t.Fatal(err)
	}
	nt := 1 + rng.IntN(3)
	type incarnation struct {
		port      actor.Port[*wPoke]
		watcher   *wWatcher
		wport     actor.Port[*actor.Terminated]
		watches   atomic.Int64 // Watch calls that succeeded
		chans     []<-chan *actor.Terminated
		chMu      sync.Mutex
		chGot     atomic.Int64 // WatchChan notices read (each read at once)
		pokesSent atomic.Int64
	}
	type target struct {
		t     *wTarget
		outer any
		opts  []actor.SpawnOption
		inc   []*incarnation
	}
	targets := make([]*target, nt)
	var watchers []*wWatcher
	var pills, pokesOK int64
	var readers sync.WaitGroup
	spawnInc := func(tg *target, name string) *incarnation {
		tg.t.pokes = 0
		var err error
		if h, ok := tg.outer.(*wHookedTarget); ok {
			_, err = actor.Spawn(sys, h, tg.opts...)
		} else {
			_, err = actor.Spawn(sys, tg.t, tg.opts...)
		}
		if err != nil {
			t.Fatalf("watchRace: spawn: %v", err)
		}
		inc := &incarnation{}
		if inc.port, err = actor.Bind(tg.t, (*wTarget).onPoke); err != nil {
			t.Fatal(err)
		}
		if name != "" {
			if err := actor.Register(sys, name, inc.port); err != nil {
				t.Fatalf("watchRace: Register %s: %v", name, err)
			}
		}
		w := &wWatcher{f: f, target: tg.t, port: inc.port, name: name, sys: sys, want: actor.ReasonNormal}
		if tg.t.endAt != 0 && tg.t.panics != 0 {
			w.want = tg.t.panics
		}
		w.seen.Store(tg.t.stopped.Load())
		if _, err := actor.Spawn(sys, w); err != nil {
			t.Fatal(err)
		}
		watchers = append(watchers, w)
		inc.watcher = w
		if inc.wport, err = actor.Bind(w, (*wWatcher).onTerm); err != nil {
			t.Fatal(err)
		}
		tg.inc = append(tg.inc, inc)
		return inc
	}
	watchOnce := func(inc *incarnation, ch bool) {
		if ch {
			c, err := actor.WatchChan(inc.port)
			if err != nil {
				f.fail("WatchChan: %v", err)
				return
			}
			inc.chMu.Lock()
			inc.chans = append(inc.chans, c)
			inc.chMu.Unlock()
			readers.Add(1)
			go func() {
				defer readers.Done()
				select {
				case m := <-c:
					inc.watcher.check(m, "WatchChan")
					inc.chGot.Add(1)
				case <-time.After(10 * time.Second):
					f.fail("a WatchChan was never notified")
				}
			}()
			return
		}
		if err := actor.Watch(inc.port, inc.wport); err != nil {
			f.fail("Watch: %v", err)
			return
		}
		inc.watches.Add(1)
	}
	// Two incarnations per target: the first ends under racing watches;
	// once it is gone the target is spawned again and watched, also through
	// the first incarnation's stale port, and ended the same way.
	for round := 0; round < 2; round++ {
		for i := range targets {
			if round == 0 {
				tg := &target{}
				if rng.IntN(2) == 0 {
					h := &wHookedTarget{}
					h.hooked, h.spin = true, rng.IntN(200)
					tg.t, tg.outer = &h.wTarget, h
				} else {
					tg.t = &wTarget{}
				}
				tg.t.f = f
				tg.t.status = []actor.Allocation{actor.Destroy, actor.Finished}[rng.IntN(2)]
				restarts := false
				switch rng.IntN(5) {
				case 0:
					restarts = true
					tg.opts = append(tg.opts, actor.WithRestart(nil, actor.Budget{}))
				case 1:
					tg.opts = append(tg.opts, actor.WithMailbox(64, actor.Reject))
				case 2: // ends by a panic its budget does not allow
					tg.opts = append(tg.opts, actor.WithRestart(nil, actor.Budget{MaxRestarts: actor.NoRestarts}))
					tg.t.panics = actor.ReasonBudget
				}
				if !restarts && tg.t.panics == 0 && rng.IntN(3) == 0 {
					tg.t.panics = actor.ReasonPanic // unsupervised: a panic ends it
				}
				targets[i] = tg
			}
			tg := targets[i]
			tg.t.endAt = rng.IntN(4) // 0: ended by a pill
			name := ""
			if rng.IntN(2) == 0 {
				name = fmt.Sprintf("w%d", i)
			}
			spawnInc(tg, name)
		}
		var wg sync.WaitGroup
		// Enders: pokes, or a pill, from one goroutine per target.
		for _, tg := range targets {
			inc := tg.inc[round]
			wg.Add(1)
			extra := rng.IntN(3)
			endAt := tg.t.endAt
			go func() {
				defer wg.Done()
				if endAt == 0 {
					if err := actor.SendPill(tg.t, actor.FinishedMsg); err != nil {
						f.fail("pill: %v", err)
					}
					return
				}
				for k := 0; k < endAt+extra; k++ {
					err := inc.port.Send(&wPoke{})
					switch {
					case err == nil:
						inc.pokesSent.Add(1)
					case k < endAt || !errors.Is(err, actor.ErrTerminated):
						f.fail("poke %d of %d: %v", k+1, endAt, err)
					}
				}
			}()
		}
		// Watchers: begin before, during and after the end.
		for _, tg := range targets {
			for w := range 1 + rng.IntN(4) {
				inc := tg.inc[round]
				delay := rng.IntN(60)
				ch := rng.IntN(3) == 0
				var stale *incarnation
				if round == 1 && w == 0 {
					stale = tg.inc[0]
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range delay {
						runtime.Gosched()
					}
					watchOnce(inc, ch)
					if stale != nil {
						watchOnce(stale, !ch)
					}
				}()
			}
		}
		wg.Wait()
		waitFor(t, "watchRace: targets ended", func() bool {
			for _, tg := range targets {
				if tg.t.Alive() {
					return false
				}
			}
			return true
		})
		for _, tg := range targets {
			if tg.t.endAt == 0 {
				pills++
			}
		}
	}
	// Every watch told exactly once: watcher actors by their counts,
	// channels by one notice each.
	var notices int64
	for _, tg := range targets {
		for _, inc := range tg.inc {
			waitFor(t, "watchRace: every Watch notified", func() bool { return inc.watcher.got.Load() >= inc.watches.Load() })
			pokesOK += inc.pokesSent.Load()
			notices += inc.watches.Load()
			readers.Wait()
			notices += inc.chGot.Load()
			if int(inc.chGot.Load()) != len(inc.chans) {
				t.Fatalf("watchRace: %d WatchChans, %d notices", len(inc.chans), inc.chGot.Load())
			}
			for _, c := range inc.chans {
				select {
				case <-c:
					t.Fatalf("watchRace: a WatchChan notified twice")
				default:
				}
			}
		}
	}
	f.check(t, "watchRace")
	for _, w := range watchers {
		if err := actor.SendPill(w, actor.FinishedMsg); err != nil {
			t.Fatal(err)
		}
		pills++
	}
	stopErr := stopWithin(t, sys, context.Background())
	onlyErrors(t, "watchRace: Stop", stopErr, actor.ErrUndelivered, actor.ErrPanic)
	sc := parseStop(stopErr)
	st := actortest.MustStats(sys)
	tot := st.Total()
	for _, tg := range targets {
		for k, inc := range tg.inc {
			if got, want := inc.watcher.got.Load(), inc.watches.Load(); got != want {
				t.Fatalf("watchRace: incarnation %d: %d notices, %d watches", k, got, want)
			}
		}
		if tg.t.hooked && tg.t.stopped.Load() != 2 {
			t.Fatalf("watchRace: Stopped ran %d times over 2 incarnations", tg.t.stopped.Load())
		}
	}
	if st.WatchNotices != uint64(notices) {
		t.Fatalf("watchRace: Stats.WatchNotices %d, model %d", st.WatchNotices, notices)
	}
	// Pokes past a target's end that were queued are dead letters; every
	// watch notice to a watcher actor is a message.
	var watchMsgs int64
	for _, tg := range targets {
		for _, inc := range tg.inc {
			watchMsgs += inc.watches.Load()
		}
	}
	if sc.dead != tot.DeadLetters || sc.queued != 0 || sc.dropped != 0 ||
		uint64(pokesOK+pills+watchMsgs) != tot.MessagesProcessed()+tot.DeadLetters || st.MessagesSent != tot.MessagesProcessed()+tot.DeadLetters {
		t.Fatalf("watchRace: Stop says %d dead, %d queued, %d dropped; Stats: sent %d, processed %d, dead %d; model: %d pokes + %d pills + %d notices sent",
			sc.dead, sc.queued, sc.dropped, st.MessagesSent, tot.MessagesProcessed(), tot.DeadLetters, pokesOK, pills, watchMsgs)
	}
}

// ---- forcedStop ----

type fsJob struct {
	actor.Message
	sleep time.Duration
	boom  bool
}

type fsActor struct {
	actor.Actor
	f          *episodeFail
	stopDone   *atomic.Bool
	got        atomic.Int64
	booms      atomic.Int64
	running    atomic.Int32
	supervised bool
	ended      atomic.Bool // its Stopped hook ran
	told       atomic.Bool // a WatchChan has its notice
}

func (a *fsActor) onJob(m *fsJob) actor.Allocation {
	if !a.running.CompareAndSwap(0, 1) {
		a.f.fail("forcedStop: an actor ran on two workers at once")
	}
	defer a.running.Store(0)
	if a.stopDone.Load() {
		a.f.fail("forcedStop: a behaviour ran after Stop returned")
	}
	if a.ended.Load() {
		a.f.fail("forcedStop: a behaviour ran after its actor's Stopped hook")
	}
	if a.told.Load() {
		a.f.fail("forcedStop: a behaviour ran after its actor's watchers were told it terminated")
	}
	a.got.Add(1)
	if m.sleep > 0 {
		time.Sleep(m.sleep)
	}
	if m.boom && a.supervised {
		a.booms.Add(1)
		panic("fuzz: forcedStop boom")
	}
	return actor.Nodelete
}

type fsHooked struct {
	fsActor
	stopped atomic.Int32
	reason  atomic.Int32
}

func (h *fsHooked) Stopped(r actor.Reason) {
	h.stopped.Add(1)
	h.reason.Store(int32(r))
	h.ended.Store(true)
	if h.stopDone.Load() {
		h.f.fail("forcedStop: a Stopped hook ran after Stop returned")
	}
}

func episodeForcedStop(t *testing.T, rng *rand.Rand) {
	f := &episodeFail{}
	var stopping, stopDone atomic.Bool
	sys, err := actor.Start(actor.WithConfig(episodeConfig(rng)))
	if err != nil {
		t.Fatal(err)
	}
	na := 1 + rng.IntN(5)
	var watchReaders sync.WaitGroup
	type rec struct {
		a      *fsActor
		hooked *fsHooked
		port   actor.Port[*fsJob]
		watch  <-chan *actor.Terminated
	}
	actors := make([]*rec, na)
	for i := range actors {
		r := &rec{}
		if rng.IntN(2) == 0 {
			r.hooked = &fsHooked{}
			r.a = &r.hooked.fsActor
		} else {
			r.a = &fsActor{}
		}
		r.a.f, r.a.stopDone = f, &stopDone
		var opts []actor.SpawnOption
		switch rng.IntN(4) {
		case 0:
			r.a.supervised = true
			opts = append(opts, actor.WithRestart(nil, actor.Budget{MaxRestarts: -1, MinBackoff: time.Duration(rng.IntN(3)) * 100 * time.Microsecond}))
		case 1:
			r.a.supervised = true
			opts = append(opts, actor.WithResume())
		}
		if rng.IntN(2) == 0 {
			opts = append(opts, actor.WithMailbox(1+rng.IntN(32), actor.Overflow(rng.IntN(3))))
		}
		if r.hooked != nil {
			_, err = actor.Spawn(sys, r.hooked, opts...)
		} else {
			_, err = actor.Spawn(sys, r.a, opts...)
		}
		if err != nil {
			t.Fatal(err)
		}
		if r.port, err = actor.Bind(r.a, (*fsActor).onJob); err != nil {
			t.Fatal(err)
		}
		if r.watch, err = actor.WatchChan(r.port); err != nil {
			t.Fatal(err)
		}
		// A second watch, read at once: its notice marks the actor told,
		// after which none of its behaviours may start.
		told, err := actor.WatchChan(r.port)
		if err != nil {
			t.Fatal(err)
		}
		a := r.a
		watchReaders.Add(1)
		go func() {
			defer watchReaders.Done()
			if m, ok := <-told; ok && m != nil {
				a.told.Store(true)
			}
		}()
		actors[i] = r
	}
	// Senders: keep sending until Stop has returned (then ErrStopped).
	var sentOK atomic.Int64
	var wg sync.WaitGroup
	for range 1 + rng.IntN(3) {
		r := rand.New(rand.NewPCG(rng.Uint64(), 7))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stopDone.Load(); n++ {
				to := actors[r.IntN(na)]
				m := &fsJob{boom: r.IntN(8) == 0}
				if r.IntN(6) == 0 {
					m.sleep = time.Duration(r.IntN(300)) * time.Microsecond
				}
				var err error
				switch r.IntN(3) {
				case 0:
					err = actor.Send(to.a, m, (*fsActor).onJob)
				case 1:
					err = to.port.Send(m)
				default:
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.IntN(200))*time.Microsecond)
					err = to.port.SendContext(ctx, m)
					cancel()
				}
				switch {
				case err == nil:
					sentOK.Add(1)
				case errors.Is(err, actor.ErrStopped):
					return // Stop has closed the mailbox
				case errors.Is(err, actor.ErrMailboxFull), errors.Is(err, context.DeadlineExceeded):
				case errors.Is(err, actor.ErrTerminated) && stopping.Load():
					// An actor the forced stop ended, before Stop returned.
				default:
					f.fail("forcedStop: send: %v", err)
				}
				if n%32 == 31 {
					time.Sleep(50 * time.Microsecond)
				}
			}
		}()
	}
	time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(3))*time.Millisecond)
	stopping.Store(true)
	stopErr := stopWithin(t, sys, ctx)
	cancel()
	stopDone.Store(true)
	wg.Wait()
	onlyErrors(t, "forcedStop: Stop", stopErr, actor.ErrActorsAlive, actor.ErrUndelivered) // supervision handles every panic
	waitFor(t, "forcedStop: every watch notified", func() bool {
		for _, r := range actors {
			if !r.a.told.Load() {
				return false
			}
		}
		return true
	})
	watchReaders.Wait()
	sc := parseStop(stopErr)
	if sc.stuck {
		// A behaviour of at most 300 µs outlived Stop's one-second wait:
		// only on a machine starved of CPU. The counts then settle when
		// it returns, after Stop: nothing more to check.
		t.Logf("forcedStop: Stop gave up on a worker (CPU starved?): %v", stopErr)
		return
	}
	f.check(t, "forcedStop")
	processed := make([]int64, na)
	for i, r := range actors {
		processed[i] = r.a.got.Load()
	}
	time.Sleep(time.Millisecond)
	var got, booms int64
	for i, r := range actors {
		if n := r.a.got.Load(); n != processed[i] {
			t.Fatalf("forcedStop: actor %d received %d messages after Stop returned", i, n-processed[i])
		}
		got += processed[i]
		booms += r.a.booms.Load()
		if r.a.Alive() {
			t.Fatalf("forcedStop: actor %d alive after Stop", i)
		}
		if r.hooked != nil && r.hooked.stopped.Load() != 1 {
			t.Fatalf("forcedStop: actor %d: Stopped ran %d times", i, r.hooked.stopped.Load())
		}
		select {
		case m := <-r.watch:
			if m.Reason != actor.ReasonStopped || !errors.Is(m.Err, actor.ErrStopped) {
				t.Fatalf("forcedStop: actor %d: watch says %v (%v), want ReasonStopped", i, m.Reason, m.Err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("forcedStop: actor %d: no watch notice after Stop", i)
		}
	}
	f.check(t, "forcedStop")
	st := actortest.MustStats(sys)
	tot := st.Total()
	if sc.dead != tot.DeadLetters || sc.dropped != uint64(tot.Dropped) {
		t.Fatalf("forcedStop: Stop says %d dead, %d dropped; Stats: %d dead letters, %d dropped", sc.dead, sc.dropped, tot.DeadLetters, tot.Dropped)
	}
	// Every message sent in exactly one place. DropNewest drops are
	// successful sends that MessagesSent leaves out.
	if uint64(got) != tot.MessagesProcessed() ||
		st.MessagesSent != tot.MessagesProcessed()+tot.DeadLetters+tot.Dropped+sc.queued+st.MailboxDroppedOldest ||
		uint64(sentOK.Load()) != st.MessagesSent+st.MailboxDroppedNewest {
		t.Fatalf("forcedStop: %d sends succeeded, behaviours received %d; Stats: sent %d, processed %d, dead %d, batch drops %d, "+
			"dropped newest %d, oldest %d; Stop: %d still queued",
			sentOK.Load(), got, st.MessagesSent, tot.MessagesProcessed(), tot.DeadLetters, tot.Dropped,
			st.MailboxDroppedNewest, st.MailboxDroppedOldest, sc.queued)
	}
	if tot.Panics != uint64(booms) {
		t.Fatalf("forcedStop: %d panics raised, %d counted", booms, tot.Panics)
	}
	if st.LiveActors != 0 || st.TimersPending != 0 {
		t.Fatalf("forcedStop: %d live actors, %d timers pending after Stop", st.LiveActors, st.TimersPending)
	}
}

// ---- timerStop ----

type tsKeeper struct {
	actor.Actor
	kept []*fwdReq
}

func (k *tsKeeper) onReq(m *fwdReq) actor.Allocation {
	k.kept = append(k.kept, m) // never answered: the asker's timeout ends it
	return actor.Nodelete
}

func episodeTimerStop(t *testing.T, rng *rand.Rand) {
	f := &episodeFail{}
	var sys *actor.System
	var handlerCalls atomic.Int64
	stopInside := func(where string) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		t0 := time.Now()
		err := sys.Stop(ctx) // must refuse at once: this code runs on the timer goroutine or a worker
		if !errors.Is(err, actor.ErrStopInBehaviour) {
			f.fail("timerStop: Stop from %s: %v, want ErrStopInBehaviour", where, err)
		}
		if el := time.Since(t0); el > 5*time.Second {
			f.fail("timerStop: Stop from %s took %v", where, el)
		}
	}
	var err error
	sys, err = actor.Start(actor.WithConfig(episodeConfig(rng)), actor.WithErrorHandler(func(error) {
		handlerCalls.Add(1)
		stopInside("the error handler")
	}))
	if err != nil {
		t.Fatal(err)
	}
	keeper, srv := &tsKeeper{}, &fwdServer{}
	if _, err := actor.Spawn(sys, keeper); err != nil {
		t.Fatal(err)
	}
	if _, err := actor.Spawn(sys, srv); err != nil {
		t.Fatal(err)
	}
	kp, err := actor.Bind(keeper, (*tsKeeper).onReq)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := actor.Bind(srv, (*fwdServer).onReq)
	if err != nil {
		t.Fatal(err)
	}
	type call struct {
		kept  bool
		boom  bool
		calls atomic.Int32
		done  chan struct{}
	}
	n := 1 + rng.IntN(8)
	calls := make([]*call, n)
	var booms int64
	for i := range calls {
		c := &call{kept: rng.IntN(2) == 0, boom: rng.IntN(3) == 0, done: make(chan struct{})}
		calls[i] = c
		to, timeout := sp, time.Duration(0)
		if c.kept {
			to, timeout = kp, time.Duration(1+rng.IntN(20))*100*time.Microsecond
		}
		if c.boom {
			booms++
		}
		err := actor.AskFunc(to, &fwdReq{id: int64(i)}, timeout, func(v int64, err error) {
			if c.calls.Add(1) > 1 {
				f.fail("timerStop: AskFunc function called twice")
				return
			}
			defer close(c.done)
			switch {
			case c.kept && !errors.Is(err, context.DeadlineExceeded):
				f.fail("timerStop: kept request ended with %v, want its timeout", err)
			case !c.kept && (err != nil || v != int64(i)):
				f.fail("timerStop: reply %d, %v", v, err)
			}
			if c.kept {
				stopInside("an AskFunc function at its timeout")
			} else {
				stopInside("an AskFunc function at the reply")
			}
			if c.boom {
				panic("fuzz: AskFunc function panics")
			}
		})
		if err != nil {
			t.Fatalf("timerStop: AskFunc: %v", err)
		}
	}
	for _, c := range calls {
		select {
		case <-c.done:
		case <-time.After(20 * time.Second):
			buf := make([]byte, 1<<22)
			k := runtime.Stack(buf, true)
			t.Fatalf("timerStop: an AskFunc function never returned (Stop deadlocked?); goroutines:\n%s", buf[:k])
		}
	}
	waitFor(t, "timerStop: error handler called per panic", func() bool { return handlerCalls.Load() >= booms })
	f.check(t, "timerStop")
	if err := actor.SendPill(keeper, actor.FinishedMsg); err != nil {
		t.Fatal(err)
	}
	if err := actor.SendPill(srv, actor.FinishedMsg); err != nil {
		t.Fatal(err)
	}
	stopErr := stopWithin(t, sys, context.Background())
	onlyErrors(t, "timerStop: Stop", stopErr, actor.ErrPanic)
	if (booms > 0) != errors.Is(stopErr, actor.ErrPanic) || handlerCalls.Load() != booms {
		t.Fatalf("timerStop: %d functions panicked, handler called %d times, Stop: %v", booms, handlerCalls.Load(), stopErr)
	}
	for _, c := range calls {
		if c.calls.Load() != 1 {
			t.Fatalf("timerStop: an AskFunc function ran %d times", c.calls.Load())
		}
	}
	f.check(t, "timerStop")
}

// ---- respawnAcross ----

type raTick struct{ actor.Message }

type raActor struct {
	actor.Actor
	got atomic.Int64
}

func (a *raActor) onTick(*raTick) actor.Allocation {
	a.got.Add(1)
	return actor.Nodelete
}

func episodeRespawnAcross(t *testing.T, rng *rand.Rand) {
	cfg1 := episodeConfig(rng)
	cfg1.Workers = 2 + rng.IntN(3)
	cfg2 := episodeConfig(rng)
	cfg2.Workers, cfg2.QueuesPerWorker = 1, 1
	var systems [2]*actor.System
	for i, cfg := range []executor.Config{cfg1, cfg2} {
		s, err := actor.Start(actor.WithConfig(cfg))
		if err != nil {
			t.Fatal(err)
		}
		systems[i] = s
	}
	a := &raActor{}
	var quit atomic.Bool
	var ticksOK atomic.Int64
	var wg sync.WaitGroup
	for range 1 + rng.IntN(2) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !quit.Load() {
				err := actor.Send(a, &raTick{}, (*raActor).onTick)
				if err == nil {
					ticksOK.Add(1)
				} else if !errors.Is(err, actor.ErrTerminated) && !errors.Is(err, actor.ErrNotSpawned) {
					t.Errorf("respawnAcross: send: %v", err)
					return
				}
			}
		}()
	}
	var pills int64
	rounds := 4 + rng.IntN(12)
	for r := 0; r < rounds; r++ {
		if _, err := actor.Spawn(systems[r%2], a); err != nil {
			t.Fatalf("respawnAcross: spawn %d: %v", r, err)
		}
		for range rng.IntN(50) {
			runtime.Gosched()
		}
		if err := actor.SendPill(a, []*actor.Pill{actor.DestroyMsg, actor.FinishedMsg}[rng.IntN(2)]); err != nil {
			t.Fatalf("respawnAcross: pill: %v", err)
		}
		pills++
		waitFor(t, "respawnAcross: the actor ended", func() bool { return !a.Alive() })
	}
	quit.Store(true)
	wg.Wait()
	var processed, dead, sent uint64
	for i, s := range systems {
		err := stopWithin(t, s, context.Background())
		onlyErrors(t, fmt.Sprintf("respawnAcross: Stop of system %d", i), err, actor.ErrUndelivered)
		sc := parseStop(err)
		st := actortest.MustStats(s)
		tot := st.Total()
		if sc.dead != tot.DeadLetters || sc.queued != 0 || sc.dropped != 0 || st.MessagesSent != tot.MessagesProcessed()+tot.DeadLetters {
			t.Fatalf("respawnAcross: system %d: Stop says %d dead, %d queued, %d dropped; Stats: sent %d, processed %d, dead %d",
				i, sc.dead, sc.queued, sc.dropped, st.MessagesSent, tot.MessagesProcessed(), tot.DeadLetters)
		}
		processed += tot.MessagesProcessed()
		dead += tot.DeadLetters
		sent += st.MessagesSent
	}
	if got := uint64(a.got.Load()) + uint64(pills); got+dead != uint64(ticksOK.Load()+pills) || processed != got || sent != processed+dead {
		t.Fatalf("respawnAcross: %d ticks sent, %d received, %d pills; both systems: sent %d, processed %d, dead %d",
			ticksOK.Load(), a.got.Load(), pills, sent, processed, dead)
	}
}
