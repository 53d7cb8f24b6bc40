package actortest

import (
	"context"
	"reflect"
	"sync"
	"time"

	"github.com/actord/actord/actor"
)

// Probe is an actor that records every message it receives, for a test to
// assert on: give the actor under test the probe's Port where it expects a
// port to send to, then Expect what it sends. M is the message pointer type
// (*Total for a probe of Total messages).
//
// Expect and ExpectNone consume the messages in the order they arrived;
// Received returns them all, consumed or not. A probe keeps the messages it
// receives: senders must not reuse a message after sending it, as always
// (see "Message lifetime" in package actor).
type Probe[M any] struct {
	t    TB
	port actor.Port[M]

	mu      sync.Mutex
	all     []M
	next    int           // index in all of the next message Expect returns
	arrived chan struct{} // capacity 1: a message arrived since the last look
}

// probeActor is a Probe's actor.
type probeActor[M any] struct {
	actor.Actor
	p *Probe[M]
}

func (a *probeActor[M]) receive(m M) actor.Allocation {
	a.p.mu.Lock()
	a.p.all = append(a.p.all, m)
	a.p.mu.Unlock()
	select {
	case a.p.arrived <- struct{}{}:
	default:
	}
	return actor.Nodelete
}

// NewProbe spawns a probe of the message type *TM in sys; the probe
// terminates itself at the end of the test, so it never keeps the system
// from stopping. In a system that Start or StartWith started, it
// terminates in that system's cleanup, once every other actor has
// terminated (or the cleanup's grace has ended): what the actors under
// test send it as they end (a watch's *actor.Terminated, a last reply)
// reaches it, and is not left undelivered. In another system it
// terminates at the end of t (t.Cleanup). Create it with the test's t,
// which must not end after sys is stopped (use the t that started sys, or
// a subtest's):
//
//	totals := actortest.NewProbe[Total](t, sys) // a *Probe[*Total]
//	actor.Send(counter, &Flush{To: totals.Port()}, (*Counter).OnFlush)
//	got := totals.Expect(time.Second)
//
// It fails the test (t.Fatalf) if the probe cannot be spawned (sys not
// started or stopped).
func NewProbe[TM any, M actor.Msg[TM]](t TB, sys *actor.System) *Probe[M] {
	t.Helper()
	p := &Probe[M]{t: t, arrived: make(chan struct{}, 1)}
	a, err := actor.Spawn(sys, &probeActor[M]{p: p})
	if err != nil {
		t.Fatalf("actortest: NewProbe[%s]: %v", typeName[M](), err)
		return nil
	}
	p.port, err = actor.Bind(a, (*probeActor[M]).receive)
	if err != nil {
		t.Fatalf("actortest: NewProbe[%s]: %v", typeName[M](), err)
		return nil
	}
	end := func() error { return actor.SendPill(a, actor.FinishedMsg) }
	if k, ok := kits.Load(sys); ok && k.(*kit).adopt(end) {
		return p // the system's cleanup ends it
	}
	t.Cleanup(func() { _ = end() })
	return p
}

// kits holds the state of each system that Start or StartWith started,
// from its start to the end of its cleanup.
var kits sync.Map // *actor.System -> *kit

// kit is the probes of a system started by the kit, which its cleanup
// terminates after the other actors (endProbes).
type kit struct {
	// mu guards probes and ending. NewProbe appends to probes (adopt)
	// while ending is false; the cleanup sets ending and takes probes, so
	// that each probe is ended exactly once: by the cleanup, or, adopted
	// too late, at the end of its own t.
	mu     sync.Mutex
	probes []probeEnd
	ending bool
}

// probeEnd sends a probe its poison pill.
type probeEnd func() error

// probeGrace bounds the wait for the probes to take their pills when the
// cleanup's grace has ended with actors still alive (Policy.AllowAlive).
const probeGrace = time.Second

// adopt makes the system's cleanup responsible for ending the probe e; it
// reports false if the cleanup has begun.
func (k *kit) adopt(e probeEnd) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ending {
		return false
	}
	k.probes = append(k.probes, e)
	return true
}

// endProbes terminates the probes of sys once no other actor is alive, or
// once ctx ends; in the second case it waits for the probes to terminate
// (probeGrace at most), so that the forced stop that follows does not
// count their pills undelivered. The actors under test may send to the
// probes until they terminate.
func (k *kit) endProbes(ctx context.Context, sys *actor.System) {
	k.mu.Lock()
	k.ending = true
	probes := k.probes
	k.probes = nil
	k.mu.Unlock()
	if len(probes) == 0 {
		return
	}
	// Stats.LiveActors counts an actor until after its watchers were
	// notified, so once it is down to the probes, nothing but the test's
	// own goroutines (which have returned) is left to send to them.
	live, quiet := waitLive(ctx, sys, int64(len(probes)))
	sent := int64(0)
	for _, e := range probes {
		if e() == nil { // else the system is stopped (by the test)
			sent++
		}
	}
	if !quiet && sent > 0 {
		// Stop is about to force the end: give the probes time to take
		// their pills first.
		wait, cancel := context.WithTimeout(context.Background(), probeGrace)
		defer cancel()
		waitLive(wait, sys, max(0, live-sent))
	}
}

// waitLive waits until at most n actors of sys are alive, or ctx ends; it
// returns the last count it read, and whether it fell to n. Stop gives no
// notice of an actor's end but to Stop itself, so it polls, backing off to
// 10ms between looks.
func waitLive(ctx context.Context, sys *actor.System, n int64) (int64, bool) {
	for d := 50 * time.Microsecond; ; d = min(2*d, 10*time.Millisecond) {
		st, err := sys.Stats()
		if err != nil || st.LiveActors <= n {
			return st.LiveActors, true
		}
		tm := time.NewTimer(d)
		select {
		case <-ctx.Done():
			tm.Stop()
			return st.LiveActors, false
		case <-tm.C:
		}
	}
}

// Port returns the probe's port: whatever is sent to it is recorded.
func (p *Probe[M]) Port() actor.Port[M] { return p.port }

// Expect returns the next message the probe received and that no Expect
// returned yet, waiting up to timeout for one to arrive. If none arrives in
// time it fails the test (t.Fatalf) and says how many messages came before.
func (p *Probe[M]) Expect(timeout time.Duration) M {
	p.t.Helper()
	var deadline <-chan time.Time
	for {
		p.mu.Lock()
		if p.next < len(p.all) {
			m := p.all[p.next]
			p.next++
			p.mu.Unlock()
			return m
		}
		n := len(p.all)
		p.mu.Unlock()
		if deadline == nil {
			tm := time.NewTimer(timeout)
			defer tm.Stop()
			deadline = tm.C
		}
		select {
		case <-p.arrived:
		case <-deadline:
			p.t.Fatalf("actortest: Probe[%s]: no message within %v (%d received before, all expected already)",
				typeName[M](), timeout, n)
			var zero M
			return zero
		}
	}
}

// ExpectNone waits for d and fails the test (t.Fatalf) if a message that no
// Expect has returned arrives meanwhile, or was there already; the message
// stays unconsumed. It is how a test checks that an actor did not send
// something: d is how long the test is willing to wait for the mistake.
func (p *Probe[M]) ExpectNone(d time.Duration) {
	p.t.Helper()
	tm := time.NewTimer(d)
	defer tm.Stop()
	for {
		p.mu.Lock()
		if p.next < len(p.all) {
			m := p.all[p.next]
			p.mu.Unlock()
			p.t.Fatalf("actortest: Probe[%s]: unexpected message %+v", typeName[M](), m)
			return
		}
		p.mu.Unlock()
		select {
		case <-p.arrived:
		case <-tm.C:
			p.mu.Lock()
			late := p.next < len(p.all) // arrived with the deadline
			p.mu.Unlock()
			if !late {
				return
			}
		}
	}
}

// Received returns every message the probe has received so far, in the
// order it received them, including those Expect returned.
func (p *Probe[M]) Received() []M {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]M(nil), p.all...)
}

// typeName is the name of the type M ("*pkg.Total").
func typeName[M any]() string { return reflect.TypeFor[M]().String() }
