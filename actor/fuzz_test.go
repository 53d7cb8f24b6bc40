package actor_test

import (
	"context"
	"fmt"
	"github.com/actord/actord/actortest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/executor"
	"github.com/actord/actord/stealing"
)

// FuzzActorPrograms runs random actor programs and compares what every actor
// received with a sequential reference model.
//
// A program has a few initial actors and external senders. Each external
// send starts a chain: the message carries a route and a hop count; the
// receiver records it and, while hops remain, forwards a burst of 1 to 3
// messages to the next actor of the route (the first continues the chain,
// the others are leaves), which is either an initial actor or a child it
// spawns for the purpose. Bursts make one sender send several messages to
// one receiver within a batch, which is where FIFO bugs would show. Sends
// go by actor.Send, a port or SendContext, chosen by the message, so one
// sender's messages to one actor mix the three paths. Where messages go
// depends only on their contents,
// never on timing, so the multiset each actor receives is deterministic and
// the reference model computes it by running the chains one after another.
// Every actor knows from the model how many messages it will receive and
// terminates after the last one with the status the program gives it
// (Delete, Destroy or Finished), exercising hooks and the live-actor count.
//
// Failure handling and flow control: each actor gets, from its name, a
// directive (none, Restart, Resume or Escalate to a supervisor actor that
// restarts it), possibly a bounded mailbox (bound = the number of messages
// the model says it receives, so a correct bound never refuses one), and
// possibly Started/Stopped hooks. A message whose identity hashes to "boom"
// and whose receiver is supervised makes the behaviour panic after
// recording it (unless it is the actor's last message, which terminates it
// as usual); a boom message never forwards, so the model ends its chain
// there.
//
// Checked against the model: each actor received exactly the predicted
// multiset (conservation: nothing lost, nothing duplicated); for each
// (sender, receiver) pair the receive order equals the send order
// (per-sender FIFO); hooks ran as the statuses say; Stop returned cleanly
// (no undelivered message, no panic, every actor terminated); no actor ran on
// two workers at once; the statistics agree with the model.
//
// Then the same input runs the termination episodes (fuzz_episodes_test.go):
// forwarding then ending or panicking, watches racing termination, forced
// stops with private queues and hooks, Stop from timer-goroutine callbacks,
// and (behind a switch) re-spawns into another system.
func FuzzActorPrograms(f *testing.F) {
	f.Add([]byte{0x00, 0x13, 0x25, 0x37, 0x49, 0x5b, 0x6d, 0x7f, 0x81, 0x93})
	f.Add([]byte{0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11})
	f.Add([]byte("a longer program with many sends and hops to exercise stealing and spawning"))
	f.Add([]byte{3, 3, 3, 3, 0, 0, 0, 0, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5})
	f.Add([]byte{1, 200, 7, 9, 255, 0, 128, 64, 32, 16, 8, 4, 2, 1, 0, 255, 254, 253})
	// Supervised, bounded and hooked actors (spawnBits, the 12th byte, has 0x80).
	f.Add([]byte{2, 1, 2, 3, 2, 1, 2, 3, 5, 1, 2, 0xff, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 11, 22, 33, 44, 55, 66, 77, 88, 99, 111, 122, 133, 144, 155, 166, 177, 188, 199, 211, 222, 233, 244, 255, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21})
	f.Add([]byte{0, 0, 1, 2, 0, 1, 0, 0, 4, 2, 0, 0xd5, 4, 4, 4, 4, 3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0, 9, 9, 9, 9, 8, 8, 8, 8, 7, 7, 7, 7})
	f.Fuzz(func(t *testing.T, data []byte) {
		p := decodeProgram(data)
		runProgram(t, p)
		runEpisodes(t, data)
	})
}

// byteReader hands out fuzz bytes, then zeros.
type byteReader struct {
	b []byte
	i int
}

func (r *byteReader) next() int {
	if r.i >= len(r.b) {
		return 0
	}
	r.i++
	return int(r.b[r.i-1])
}

type program struct {
	cfg       executor.Config
	initial   int        // initial actors
	senders   int        // external sender goroutines
	sends     []progSend // per external send
	statuses  []byte     // status choice source for actors
	spawnBits int
}

type progSend struct {
	sender, to, hops int
	route            int // seed for the route
}

func decodeProgram(data []byte) program {
	r := &byteReader{b: data}
	heur := []stealing.Heuristic{stealing.None, stealing.Random, stealing.LongestVictim}[r.next()%3]
	p := program{
		cfg: executor.Config{
			Workers:         1 + r.next()%4,
			QueuesPerWorker: 1 + r.next()%3,
			LocalBatch:      []int{-1, 1, 3, 256}[r.next()%4],
			Regulps:         []int{-1, 1, 4}[r.next()%3],
			SpinPasses:      1 + r.next()%8,
			ParkTimeout:     time.Duration(1+r.next()%4) * 100 * time.Microsecond,
			QueueCapacity:   1 + r.next()%4,
			Steal:           heur,
		},
		initial:   1 + r.next()%6,
		senders:   1 + r.next()%3,
		spawnBits: r.next(),
		statuses:  data,
	}
	n := len(data)
	if n > 64 {
		n = 64
	}
	for i := 0; i < n; i++ {
		p.sends = append(p.sends, progSend{
			sender: r.next() % p.senders,
			to:     r.next() % p.initial,
			hops:   r.next() % 6,
			route:  r.next(),
		})
	}
	return p
}

// Message and actor identities.
//
// Actor names: "i3" for initial actor 3, "c<chain>.<hop>" for the child
// spawned at hop <hop> of chain <chain>. Senders: "e<k>" for external
// goroutines, else the actor's name. Chain k is external send k.

type fuzzMsg struct {
	actor.Message
	chain, hop int    // which chain, how many hops done
	copy       int    // position in its burst; only copy 0 continues the chain
	hops       int    // hops remaining
	route      int    // route seed
	from       string // sender name
}

// nextHop decides where hop h of a chain goes: spawn a child, or an initial
// actor. Deterministic in (route, hop).
func (p *program) nextHop(route, hop int) (spawn bool, initial int) {
	x := route*31 + hop*17 + 7
	if (p.spawnBits>>(hop%8))&1 == 1 && x%3 == 0 {
		return true, 0
	}
	return false, x % p.initial
}

func childName(chain, hop int) string { return fmt.Sprintf("c%d.%d", chain, hop) }

// burst is how many messages hop h of a chain sends to its next actor.
func burst(route, hop int) int { return 1 + (route+hop)%3 }

func msgID(chain, hop, copy int) string { return fmt.Sprintf("%d/%d.%d", chain, hop, copy) }

// statusOf picks an actor's final status from the fuzz bytes.
func (p *program) statusOf(name string) actor.Allocation {
	h := 0
	for _, c := range name {
		h = h*131 + int(c)
	}
	b := 0
	if len(p.statuses) > 0 {
		b = int(p.statuses[(h&0x7fffffff)%len(p.statuses)])
	}
	return []actor.Allocation{actor.Delete, actor.Destroy, actor.Finished}[(b+h&0xff)%3]
}

// model runs the program sequentially: for every actor, the multiset of
// messages it receives (as "chain/hop" strings, sorted).
func (p *program) model() map[string][]string {
	got := map[string][]string{}
	for i := 0; i < p.initial; i++ {
		got[fmt.Sprintf("i%d", i)] = nil
	}
	for k, s := range p.sends {
		at := fmt.Sprintf("i%d", s.to)
		got[at] = append(got[at], msgID(k, 0, 0))
		for hop := 0; hop < s.hops; hop++ {
			if p.boom(at, msgID(k, hop, 0)) {
				break // it panics (or terminates its receiver) instead of forwarding
			}
			if spawn, i := p.nextHop(s.route, hop); spawn {
				at = childName(k, hop)
			} else {
				at = fmt.Sprintf("i%d", i)
			}
			for c := 0; c < burst(s.route, hop); c++ {
				got[at] = append(got[at], msgID(k, hop+1, c))
			}
		}
	}
	for _, v := range got {
		slices.Sort(v)
	}
	return got
}

// Directives, from an actor's name.
const (
	polNone = iota
	polRestart
	polResume
	polEscalate
)

func nameHash(name string) int {
	h := 0
	for _, c := range name {
		h = h*131 + int(c)
	}
	return h & 0x7fffffff
}

// policyOf returns an actor's directive, whether its mailbox is bounded and
// whether it has lifecycle hooks.
func (p *program) policyOf(name string) (pol int, bounded, hooked bool) {
	h := nameHash(name) >> 3
	if p.spawnBits&0x80 == 0 { // half the programs: plain actors only
		return polNone, false, false
	}
	return h % 4, (h>>2)%3 == 0, (h>>4)%2 == 0
}

// boom reports whether message id panics at its receiver at.
func (p *program) boom(at, id string) bool {
	pol, _, _ := p.policyOf(at)
	return pol != polNone && nameHash(id)%5 == 0
}

type fuzzActor struct {
	actor.Actor
	name      string
	pol       int
	resets    atomic.Int32
	booms     int // panics it raised
	run       *fuzzRun
	expect    int
	status    actor.Allocation
	got       []string            // received "chain/hop"
	recvFrom  map[string][]string // per sender, in receive order
	sentTo    map[string][]string // per receiver, in send order
	running   atomic.Int32
	hooks     *hookedActor // if spawned with hooks
	destroyed atomic.Int32 // hooks: written by the worker, read after Stop
	released  atomic.Int32
}

func (a *fuzzActor) Destroy() { a.destroyed.Add(1) }
func (a *fuzzActor) Release() { a.released.Add(1) }

type fuzzRun struct {
	p         *program
	sys       *actor.System
	sup       *fuzzSup
	supPort   actor.Port[*actor.Failure]
	expect    map[string][]string
	mu        sync.Mutex
	actors    map[string]*fuzzActor
	failures  atomic.Int64
	firstFail atomic.Pointer[string]
}

func (r *fuzzRun) fail(format string, args ...any) {
	r.failures.Add(1)
	s := fmt.Sprintf(format, args...)
	r.firstFail.CompareAndSwap(nil, &s)
}

func (r *fuzzRun) newActor(name string) *fuzzActor {
	pol, bounded, hooked := r.p.policyOf(name)
	var a *fuzzActor
	var h *hookedActor
	if hooked {
		h = &hookedActor{}
		a = &h.fuzzActor
		a.hooks = h
	} else {
		a = &fuzzActor{}
	}
	a.name, a.run, a.expect, a.status, a.pol = name, r, len(r.expect[name]), r.p.statusOf(name), pol
	a.recvFrom, a.sentTo = map[string][]string{}, map[string][]string{}
	var opts []actor.SpawnOption
	switch pol {
	case polRestart:
		opts = append(opts, actor.WithRestart(func() { a.resets.Add(1) }, actor.Budget{MaxRestarts: -1}))
	case polResume:
		opts = append(opts, actor.WithResume())
	case polEscalate:
		opts = append(opts, actor.WithEscalate(r.supPort, func() { a.resets.Add(1) }))
	}
	if bounded {
		opts = append(opts, actor.WithMailbox(max(a.expect, 1), actor.Reject))
	}
	r.mu.Lock()
	r.actors[name] = a
	r.mu.Unlock()
	var err error
	if hooked {
		_, err = actor.Spawn(r.sys, h, opts...)
	} else {
		_, err = actor.Spawn(r.sys, a, opts...)
	}
	if err != nil {
		r.fail("spawn %s: %v", name, err)
	}
	return a
}

// hookedActor is a fuzz actor with lifecycle hooks; messages are sent to
// the embedded fuzzActor.
type hookedActor struct {
	fuzzActor
	started, stopped atomic.Int32
}

func (h *hookedActor) Started()             { h.started.Add(1) }
func (h *hookedActor) Stopped(actor.Reason) { h.stopped.Add(1) }

// fuzzSup is the supervisor of the Escalate actors: it restarts them.
type fuzzSup struct {
	actor.Actor
	n atomic.Int32
}

func (s *fuzzSup) onFailure(f *actor.Failure) actor.Allocation {
	s.n.Add(1)
	if err := f.Restart(); err != nil {
		panic(err)
	}
	return actor.Nodelete
}

func (r *fuzzRun) lookup(name string) *fuzzActor {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.actors[name]
}

func (a *fuzzActor) receive(m *fuzzMsg) actor.Allocation {
	if !a.running.CompareAndSwap(0, 1) {
		a.run.fail("%s ran on two workers at once", a.name)
	}
	defer a.running.Store(0)
	id := msgID(m.chain, m.hop, m.copy)
	a.got = append(a.got, id)
	a.recvFrom[m.from] = append(a.recvFrom[m.from], id)
	if a.run.p.boom(a.name, id) {
		if len(a.got) == a.expect {
			return a.status
		}
		a.booms++
		panic("fuzz boom " + id)
	}
	if m.copy == 0 && m.hops > 0 {
		var to *fuzzActor
		if spawn, i := a.run.p.nextHop(m.route, m.hop); spawn {
			to = a.run.newActor(childName(m.chain, m.hop))
		} else {
			to = a.run.lookup(fmt.Sprintf("i%d", i))
		}
		for c := 0; c < burst(m.route, m.hop); c++ {
			next := &fuzzMsg{chain: m.chain, hop: m.hop + 1, copy: c, hops: m.hops - 1, route: m.route, from: a.name}
			a.sentTo[to.name] = append(a.sentTo[to.name], msgID(next.chain, next.hop, c))
			if err := sendVia(m.route+m.hop+c, to, next); err != nil {
				a.run.fail("%s -> %s: %v", a.name, to.name, err)
			}
		}
	}
	if len(a.got) == a.expect {
		return a.status
	}
	return actor.Nodelete
}

// sendVia sends m to to by one of three paths, chosen by k: actor.Send, a
// port bound for the send, or SendContext (which never waits inside a
// behaviour, and never needs to wait here: the bounds always fit). They
// all queue into the actor's one mailbox, so one sender's messages keep
// their order whichever paths they took.
func sendVia(k int, to *fuzzActor, m *fuzzMsg) error {
	switch k % 3 {
	case 1:
		p, err := actor.Bind(to, (*fuzzActor).receive)
		if err != nil {
			return err
		}
		return p.Send(m)
	case 2:
		return actor.SendContext(context.Background(), to, m, (*fuzzActor).receive)
	}
	return actor.Send(to, m, (*fuzzActor).receive)
}

func runProgram(t *testing.T, p program) {
	sys, err := actor.Start(actor.WithConfig(p.cfg))
	if err != nil {
		t.Fatal(err)
	}
	r := &fuzzRun{p: &p, sys: sys, expect: p.model(), actors: map[string]*fuzzActor{}, sup: &fuzzSup{}}
	if _, err := actor.Spawn(sys, r.sup); err != nil {
		t.Fatal(err)
	}
	if r.supPort, err = actor.Bind(r.sup, (*fuzzSup).onFailure); err != nil {
		t.Fatal(err)
	}
	initial := make([]*fuzzActor, p.initial)
	for i := range initial {
		initial[i] = r.newActor(fmt.Sprintf("i%d", i))
		if initial[i].expect == 0 { // receives nothing: terminate it now
			if err := actor.SendPill(initial[i], actor.FinishedMsg); err != nil {
				t.Fatal(err)
			}
			initial[i].status = actor.Finished
		}
	}
	// External senders: each sends its share of the chains, in order.
	extSent := make([]map[string][]string, p.senders)
	var wg sync.WaitGroup
	for s := 0; s < p.senders; s++ {
		extSent[s] = map[string][]string{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k, snd := range p.sends {
				if snd.sender != s {
					continue
				}
				to := initial[snd.to]
				extSent[s][to.name] = append(extSent[s][to.name], msgID(k, 0, 0))
				m := &fuzzMsg{chain: k, hops: snd.hops, route: snd.route, from: fmt.Sprintf("e%d", s)}
				if err := sendVia(k+snd.route, to, m); err != nil {
					r.fail("external send to %s: %v", to.name, err)
				}
			}
		}()
	}
	wg.Wait()
	// Every fuzz actor terminates by itself; then the supervisor is told to.
	deadline := time.Now().Add(20 * time.Second)
	for alive := true; alive && time.Now().Before(deadline); {
		alive = false
		r.mu.Lock()
		for _, a := range r.actors {
			if a.Alive() {
				alive = true
			}
		}
		r.mu.Unlock()
		time.Sleep(100 * time.Microsecond)
	}
	if err := actor.SendPill(r.sup, actor.FinishedMsg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := sys.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if f := r.firstFail.Load(); f != nil {
		t.Fatalf("%d failures; first: %s", r.failures.Load(), *f)
	}
	// Conservation against the model.
	restarts, resumes, escalations := 0, 0, 0
	if len(r.actors) != len(r.expect) {
		t.Fatalf("%d actors existed, model has %d", len(r.actors), len(r.expect))
	}
	for name, want := range r.expect {
		a := r.actors[name]
		got := slices.Clone(a.got)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("%s received %v, model says %v", name, got, want)
		}
		if a.Alive() {
			t.Fatalf("%s still alive after Stop", name)
		}
		wantD, wantR := 0, 0
		switch a.status {
		case actor.Delete:
			wantD, wantR = 1, 1
		case actor.Destroy:
			wantD = 1
		}
		if int(a.destroyed.Load()) != wantD || int(a.released.Load()) != wantR {
			t.Fatalf("%s (%v): Destroy ran %d times, Release %d times", name, a.status, a.destroyed.Load(), a.released.Load())
		}
		// Supervision: every panic was restarted, resumed or escalated.
		switch a.pol {
		case polRestart:
			restarts += a.booms
		case polResume:
			resumes += a.booms
		case polEscalate:
			escalations += a.booms
		}
		if a.pol == polRestart || a.pol == polEscalate {
			if int(a.resets.Load()) != a.booms {
				t.Fatalf("%s: %d panics, %d resets", name, a.booms, a.resets.Load())
			}
		}
		if h := a.hooks; h != nil {
			wantStarts := 1
			if a.pol == polRestart || a.pol == polEscalate {
				wantStarts += a.booms
			}
			if int(h.started.Load()) != wantStarts || h.stopped.Load() != 1 {
				t.Fatalf("%s: Started ran %d times (want %d), Stopped %d times", name, h.started.Load(), wantStarts, h.stopped.Load())
			}
		}
	}
	// Per-sender FIFO: what each receiver got from each sender, in order,
	// is exactly what that sender sent it, in order.
	sentBy := map[string]map[string][]string{}
	for s, m := range extSent {
		sentBy[fmt.Sprintf("e%d", s)] = m
	}
	for name, a := range r.actors {
		sentBy[name] = a.sentTo
	}
	for from, byTo := range sentBy {
		for to, seq := range byTo {
			if got := r.actors[to].recvFrom[from]; !slices.Equal(got, seq) {
				t.Fatalf("%s -> %s: sent %v, received %v", from, to, seq, got)
			}
		}
	}
	st := actortest.MustStats(sys)
	tot := st.Total()
	total := 0
	for _, v := range r.expect {
		total += len(v)
	}
	pills := 0
	for _, a := range initial {
		if a.expect == 0 {
			pills++
		}
	}
	pills++ // the supervisor's
	if int(tot.Restarts) != restarts+escalations || int(tot.Resumes) != resumes || int(tot.Escalations) != escalations ||
		int(r.sup.n.Load()) != escalations || tot.Panics != uint64(restarts+resumes+escalations) {
		t.Fatalf("stats: restarts %d, resumes %d, escalations %d, panics %d; model %d, %d, %d (supervisor saw %d)",
			tot.Restarts, tot.Resumes, tot.Escalations, tot.Panics, restarts+escalations, resumes, escalations, r.sup.n.Load())
	}
	total += escalations // the failures sent to the supervisor
	if st.MessagesSent != uint64(total+pills) || tot.MessagesProcessed() != uint64(total+pills) {
		t.Fatalf("stats: sent %d, processed %d, model %d (+%d pills)", st.MessagesSent, tot.MessagesProcessed(), total, pills)
	}
	if st.MailboxRejected != 0 {
		t.Fatalf("stats: %d sends refused by a bound that fits every message", st.MailboxRejected)
	}
	if tot.ActorsCreated != uint64(len(r.expect)+1) || tot.ActorsTerminated != uint64(len(r.expect)+1) {
		t.Fatalf("stats: created %d, terminated %d, model %d (+1 supervisor)", tot.ActorsCreated, tot.ActorsTerminated, len(r.expect))
	}
}
