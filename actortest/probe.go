package actortest

import (
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
// terminates itself at the end of the test (t.Cleanup), so it never keeps
// the system from stopping. Create it with the test's t, which must not
// end after sys is stopped (use the t that started sys, or a subtest's):
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
	t.Cleanup(func() { _ = actor.SendPill(a, actor.FinishedMsg) })
	return p
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
