package actor_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/actord/actord/actor"
)

// hdGet is a request that hdKeeper keeps, to answer later.
type hdGet struct {
	actor.Request[int]
}

// hdAnswer makes hdKeeper answer the request it keeps, if any.
type hdAnswer struct {
	actor.Message
	got chan error
}

type hdBoom struct{ actor.Message }

// hdPing is answered at once.
type hdPing struct {
	actor.Request[string]
}

// hdKeeper keeps the last request it received. Its Stopped hook, which
// does nothing, is what has its kept requests failed at its end (see
// hdPlainKeeper for an actor without one).
type hdKeeper struct {
	actor.Actor
	held      *hdGet
	have      chan struct{} // a request is kept
	next      actor.Port[*hdGet]
	answerEnd bool // its Stopped hook answers the kept request
}

func (k *hdKeeper) Get(m *hdGet) actor.Allocation {
	if k.next.Alive() {
		k.next.Send(m) // forwarded through a port: the next actor's to answer
	} else {
		k.held = m
	}
	k.have <- struct{}{}
	return actor.Nodelete
}

func (k *hdKeeper) Answer(m *hdAnswer) actor.Allocation {
	if k.held != nil {
		m.got <- k.held.Reply(7)
	} else {
		m.got <- nil
	}
	return actor.Nodelete
}

func (k *hdKeeper) Boom(*hdBoom) actor.Allocation { panic("boom") }

func (k *hdKeeper) Stopped(actor.Reason) {}

// hdPlainKeeper keeps the last request it received, and has no hook and
// is spawned with no option.
type hdPlainKeeper struct {
	actor.Actor
	held *hdGet
	have chan struct{}
}

func (k *hdPlainKeeper) Get(m *hdGet) actor.Allocation {
	k.held = m
	k.have <- struct{}{}
	return actor.Nodelete
}

func (k *hdKeeper) Ping(m *hdPing) actor.Allocation { m.Reply("pong"); return actor.Nodelete }

// hdEnding is an hdKeeper with a Stopped hook that answers what it keeps.
type hdEnding struct{ hdKeeper }

func (k *hdEnding) Get(m *hdGet) actor.Allocation {
	k.held = m
	k.have <- struct{}{}
	return actor.Nodelete
}
func (k *hdEnding) Stopped(actor.Reason) {
	if k.held != nil {
		k.held.Reply(42)
	}
}

// askHeld asks k's port p in a goroutine, waits until k keeps the request,
// and returns the channel the Ask's outcome arrives on.
func askHeld(t *testing.T, p actor.Port[*hdGet], have chan struct{}) (<-chan error, *hdGet) {
	t.Helper()
	req := &hdGet{}
	out := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := actor.Ask(ctx, p, req)
		out <- err
	}()
	select {
	case <-have:
	case <-time.After(10 * time.Second):
		t.Fatal("the request was not delivered")
	}
	return out, req
}

// waitErr waits (well below the Ask's 30 s deadline) for an Ask's outcome.
func waitErr(t *testing.T, out <-chan error) error {
	t.Helper()
	select {
	case err := <-out:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("the kept request was not failed at its actor's end")
		return nil
	}
}

func TestHeldRequestFailsAtPillEnd(t *testing.T) {
	sys, _ := actor.Start(actor.WithWorkers(2))
	defer shutdown(t, sys)
	k, _ := actor.Spawn(sys, &hdKeeper{have: make(chan struct{}, 1)})
	p, _ := actor.Bind(k, (*hdKeeper).Get)
	out, req := askHeld(t, p, k.have)
	actor.SendPill(k, actor.FinishedMsg)
	err := waitErr(t, out)
	if !errors.Is(err, actor.ErrTerminated) {
		t.Fatalf("Ask: %v, want ErrTerminated", err)
	}
	// The holder's late answer is ignored: no second reply.
	if err := req.Reply(1); !errors.Is(err, actor.ErrReplied) {
		t.Fatalf("late Reply: %v, want ErrReplied", err)
	}
	if st, _ := sys.Stats(); st.AsksPending != 0 || st.LateReplies != 1 {
		t.Fatalf("AsksPending %d, LateReplies %d", st.AsksPending, st.LateReplies)
	}
}

// A holder answering from another goroutine while its actor ends: one
// outcome, whichever comes first, under -race.
func TestHeldRequestLateReplyRace(t *testing.T) {
	sys, _ := actor.Start(actor.WithWorkers(2))
	defer shutdown(t, sys)
	for i := range 200 {
		k, _ := actor.Spawn(sys, &hdKeeper{have: make(chan struct{}, 1)})
		p, _ := actor.Bind(k, (*hdKeeper).Get)
		out, req := askHeld(t, p, k.have)
		replied := make(chan error, 1)
		go func() {
			if i%2 == 0 {
				time.Sleep(time.Duration(i%5) * 10 * time.Microsecond)
			}
			replied <- req.Reply(i)
		}()
		actor.SendPill(k, actor.FinishedMsg)
		err := waitErr(t, out)
		rerr := <-replied
		switch {
		case rerr == nil && err == nil:
		case errors.Is(rerr, actor.ErrReplied) && errors.Is(err, actor.ErrTerminated):
		default:
			t.Fatalf("Reply: %v, Ask: %v", rerr, err)
		}
	}
}

func TestHeldRequestFailsAtRestart(t *testing.T) {
	sys, _ := actor.Start(actor.WithWorkers(2))
	defer shutdown(t, sys)
	k := &hdKeeper{have: make(chan struct{}, 1)}
	k, _ = actor.Spawn(sys, k, actor.WithRestart(nil, actor.Budget{}))
	p, _ := actor.Bind(k, (*hdKeeper).Get)
	out, _ := askHeld(t, p, k.have)
	actor.Send(k, &hdBoom{}, (*hdKeeper).Boom)
	// Queued behind the failure: the restarted actor answers it.
	pp, _ := actor.Bind(k, (*hdKeeper).Ping)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if v, err := actor.Ask(ctx, pp, &hdPing{}); err != nil || v != "pong" {
		t.Fatalf("request queued behind the restart: %q %v", v, err)
	}
	err := waitErr(t, out)
	if !errors.Is(err, actor.ErrTerminated) {
		t.Fatalf("Ask: %v, want ErrTerminated", err)
	}
	// The restarted actor (its reset kept the field) cannot answer the
	// request the failed one kept.
	got := make(chan error, 1)
	actor.Send(k, &hdAnswer{got: got}, (*hdKeeper).Answer)
	if err := <-got; !errors.Is(err, actor.ErrReplied) {
		t.Fatalf("answer after the restart: %v, want ErrReplied", err)
	}
}

func TestHeldRequestFailsAtShutdown(t *testing.T) {
	sys, _ := actor.Start(actor.WithWorkers(2))
	k, _ := actor.Spawn(sys, &hdKeeper{have: make(chan struct{}, 1)})
	p, _ := actor.Bind(k, (*hdKeeper).Get)
	out, _ := askHeld(t, p, k.have)
	// A Stopped hook may still answer what its actor keeps.
	e, _ := actor.Spawn(sys, &hdEnding{hdKeeper{have: make(chan struct{}, 1)}})
	pe, _ := actor.Bind(e, (*hdEnding).Get)
	ans := make(chan int, 1)
	go func() {
		v, _ := actor.Ask(context.Background(), pe, &hdGet{})
		ans <- v
	}()
	<-e.have
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sys.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := waitErr(t, out); !errors.Is(err, actor.ErrTerminated) {
		t.Fatalf("Ask: %v, want ErrTerminated", err)
	}
	if v := <-ans; v != 42 {
		t.Fatalf("answer of the Stopped hook: %d", v)
	}
}

// A request forwarded through a port is the next actor's: the end of the
// actor that forwarded it does not fail it.
func TestHeldRequestForwardedIsNotFailed(t *testing.T) {
	sys, _ := actor.Start(actor.WithWorkers(2))
	defer shutdown(t, sys)
	b, _ := actor.Spawn(sys, &hdKeeper{have: make(chan struct{}, 1)})
	pb, _ := actor.Bind(b, (*hdKeeper).Get)
	a, _ := actor.Spawn(sys, &hdKeeper{have: make(chan struct{}, 1), next: pb})
	pa, _ := actor.Bind(a, (*hdKeeper).Get)
	out, _ := askHeld(t, pa, a.have)
	<-b.have
	actor.SendPill(a, actor.FinishedMsg)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); time.Sleep(50 * time.Millisecond) }()
	wg.Wait()
	select {
	case err := <-out:
		t.Fatalf("the forwarded request ended with its forwarder: %v", err)
	default:
	}
	got := make(chan error, 1)
	actor.Send(b, &hdAnswer{got: got}, (*hdKeeper).Answer)
	if err := <-got; err != nil {
		t.Fatalf("Reply by the next actor: %v", err)
	}
	if err := waitErr(t, out); err != nil {
		t.Fatalf("Ask: %v", err)
	}
}

// shutdown shuts sys down, bounded.
func shutdown(t *testing.T, sys *actor.System) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sys.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// A request kept by an actor with no hook, no option and no watch is not
// failed at that actor's end (its deliveries are not marked: see Ask); it
// is failed by the system's Stop (ErrStopped), or ends with the asker's
// context.
func TestHeldRequestOfPlainActorFailsAtStop(t *testing.T) {
	sys, _ := actor.Start(actor.WithWorkers(2))
	k, _ := actor.Spawn(sys, &hdPlainKeeper{have: make(chan struct{}, 1)})
	p, _ := actor.Bind(k, (*hdPlainKeeper).Get)
	out, _ := askHeld(t, p, k.have)
	actor.SendPill(k, actor.FinishedMsg)
	select {
	case err := <-out:
		t.Fatalf("a plain actor's kept request ended with it: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	shutdown(t, sys)
	if err := waitErr(t, out); !errors.Is(err, actor.ErrStopped) {
		t.Fatalf("Ask: %v, want ErrStopped", err)
	}
}

// A request still queued when its actor ends is failed when it is dropped
// (a dead letter), not before: its asker, told ErrTerminated, may reuse it
// at once (here in the next Ask, to a live actor), and no worker touches
// it any more. Under -race; the next Ask must be answered.
func TestQueuedRequestFailedOnlyWhenDropped(t *testing.T) {
	sys, _ := actor.Start(actor.WithWorkers(2))
	defer func() { // the requests queued behind the pills are dead letters
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := sys.Shutdown(ctx); err != nil && !errors.Is(err, actor.ErrUndelivered) {
			t.Errorf("Shutdown: %v", err)
		}
	}()
	live, _ := actor.Spawn(sys, &hdKeeper{have: make(chan struct{}, 1)})
	lp, _ := actor.Bind(live, (*hdKeeper).Ping)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 200 {
		k, _ := actor.Spawn(sys, &hdKeeper{have: make(chan struct{}, 8)})
		p, _ := actor.Bind(k, (*hdKeeper).Ping)
		reqs := make([]*hdPing, 4)
		outs := make(chan error, len(reqs))
		for j := range reqs {
			reqs[j] = &hdPing{}
			go func(r *hdPing) {
				_, err := actor.Ask(ctx, p, r)
				outs <- err
			}(reqs[j])
		}
		if i%2 == 0 {
			time.Sleep(time.Duration(i%7) * 5 * time.Microsecond)
		}
		actor.SendPill(k, actor.FinishedMsg)
		for range reqs {
			if err := <-outs; err != nil && !errors.Is(err, actor.ErrTerminated) {
				t.Fatalf("Ask: %v", err)
			}
		}
		// Every Ask has returned: the requests are their askers' again.
		for _, r := range reqs {
			if v, err := actor.Ask(ctx, lp, r); err != nil || v != "pong" {
				t.Fatalf("a request reused after its Ask returned: %q, %v", v, err)
			}
		}
	}
}
