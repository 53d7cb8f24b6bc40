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
// one receiver within a batch, which is where FIFO bugs would show. Where messages go depends only on their contents,
// never on timing, so the multiset each actor receives is deterministic and
// the reference model computes it by running the chains one after another.
// Every actor knows from the model how many messages it will receive and
// terminates after the last one with the status the program gives it
// (Delete, Destroy or Finished), exercising hooks and the live-actor count.
//
// Checked against the model: each actor received exactly the predicted
// multiset (conservation: nothing lost, nothing duplicated); for each
// (sender, receiver) pair the receive order equals the send order
// (per-sender FIFO); hooks ran as the statuses say; Stop returned cleanly
// (no undelivered message, no panic, every actor terminated); no actor ran on
// two workers at once; the statistics agree with the model.
func FuzzActorPrograms(f *testing.F) {
	f.Add([]byte{0x00, 0x13, 0x25, 0x37, 0x49, 0x5b, 0x6d, 0x7f, 0x81, 0x93})
	f.Add([]byte{0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11})
	f.Add([]byte("a longer program with many sends and hops to exercise stealing and spawning"))
	f.Add([]byte{3, 3, 3, 3, 0, 0, 0, 0, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5})
	f.Add([]byte{1, 200, 7, 9, 255, 0, 128, 64, 32, 16, 8, 4, 2, 1, 0, 255, 254, 253})
	f.Fuzz(func(t *testing.T, data []byte) {
		p := decodeProgram(data)
		runProgram(t, p)
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

type fuzzActor struct {
	actor.Actor
	name      string
	run       *fuzzRun
	expect    int
	status    actor.Allocation
	got       []string            // received "chain/hop"
	recvFrom  map[string][]string // per sender, in receive order
	sentTo    map[string][]string // per receiver, in send order
	running   atomic.Int32
	destroyed atomic.Int32 // hooks: written by the worker, read after Stop
	released  atomic.Int32
}

func (a *fuzzActor) Destroy() { a.destroyed.Add(1) }
func (a *fuzzActor) Release() { a.released.Add(1) }

type fuzzRun struct {
	p         *program
	sys       *actor.System
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
	a := &fuzzActor{name: name, run: r, expect: len(r.expect[name]), status: r.p.statusOf(name),
		recvFrom: map[string][]string{}, sentTo: map[string][]string{}}
	r.mu.Lock()
	r.actors[name] = a
	r.mu.Unlock()
	if _, err := actor.Spawn(r.sys, a); err != nil {
		r.fail("spawn %s: %v", name, err)
	}
	return a
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
			if err := actor.Send(to, next, (*fuzzActor).receive); err != nil {
				a.run.fail("%s -> %s: %v", a.name, to.name, err)
			}
		}
	}
	if len(a.got) == a.expect {
		return a.status
	}
	return actor.Nodelete
}

func runProgram(t *testing.T, p program) {
	sys, err := actor.Start(actor.WithConfig(p.cfg))
	if err != nil {
		t.Fatal(err)
	}
	r := &fuzzRun{p: &p, sys: sys, expect: p.model(), actors: map[string]*fuzzActor{}}
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
				if err := actor.Send(to, m, (*fuzzActor).receive); err != nil {
					r.fail("external send to %s: %v", to.name, err)
				}
			}
		}()
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := sys.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if f := r.firstFail.Load(); f != nil {
		t.Fatalf("%d failures; first: %s", r.failures.Load(), *f)
	}
	// Conservation against the model.
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
	if st.MessagesSent != uint64(total+pills) || tot.MessagesProcessed() != uint64(total+pills) {
		t.Fatalf("stats: sent %d, processed %d, model %d (+%d pills)", st.MessagesSent, tot.MessagesProcessed(), total, pills)
	}
	if tot.ActorsCreated != uint64(len(r.expect)) || tot.ActorsTerminated != uint64(len(r.expect)) {
		t.Fatalf("stats: created %d, terminated %d, model %d", tot.ActorsCreated, tot.ActorsTerminated, len(r.expect))
	}
}
