package actor_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/actord/actord/actor"
)

// sdLog records, in order, the Stopped hooks that ran.
type sdLog struct {
	mu    sync.Mutex
	names []string
	why   []actor.Reason
}

func (l *sdLog) add(name string, r actor.Reason) {
	l.mu.Lock()
	l.names = append(l.names, name)
	l.why = append(l.why, r)
	l.mu.Unlock()
}

func (l *sdLog) get() ([]string, []actor.Reason) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.names...), append([]actor.Reason(nil), l.why...)
}

// sdAccount never ends by itself; it has a Stopped hook.
type sdAccount struct {
	actor.Actor
	name string
	log  *sdLog
	n    int
}

type sdDeposit struct {
	actor.Message
	N int
}

func (a *sdAccount) Deposit(m *sdDeposit) actor.Allocation { a.n += m.N; return actor.Nodelete }
func (a *sdAccount) Stopped(r actor.Reason)                { a.log.add(a.name, r) }
func (a *sdAccount) OnFailure(f *actor.Failure) actor.Allocation {
	f.Resume()
	return actor.Nodelete
}

// sdPlain never ends by itself and has no hook.
type sdPlain struct {
	actor.Actor
	n int
}

func (a *sdPlain) Deposit(m *sdDeposit) actor.Allocation { a.n += m.N; return actor.Nodelete }

// sdBlocker's behaviour blocks until release is closed.
type sdBlocker struct {
	actor.Actor
	release chan struct{}
	started chan struct{} // if not nil, receives once the behaviour has begun
}

type sdBlock struct{ actor.Message }

func (b *sdBlocker) Block(*sdBlock) actor.Allocation { b.begin(); <-b.release; return actor.Nodelete }

func (b *sdBlocker) begin() {
	if b.started != nil {
		b.started <- struct{}{}
	}
}

// sdIngest is another type that blocks.
type sdIngest struct{ sdBlocker }

func (b *sdIngest) Block(*sdBlock) actor.Allocation { b.begin(); <-b.release; return actor.Nodelete }

// Shutdown stops actors that never end by themselves, runs their Stopped
// hooks with ReasonStopped, tells watchers ReasonStopped, delivers the
// messages queued before its stop, and returns nil.
func TestShutdownStopsActorsThatNeverEnd(t *testing.T) {
	sys, err := actor.Start(actor.WithWorkers(2))
	if err != nil {
		t.Fatal(err)
	}
	log := &sdLog{}
	var accts []*sdAccount
	for i := range 3 {
		a, err := actor.Spawn(sys, &sdAccount{name: string(rune('a' + i)), log: log})
		if err != nil {
			t.Fatal(err)
		}
		accts = append(accts, a)
	}
	var plains []*sdPlain
	for range 100 {
		p, err := actor.Spawn(sys, &sdPlain{})
		if err != nil {
			t.Fatal(err)
		}
		plains = append(plains, p)
		for range 10 {
			if err := actor.Send(p, &sdDeposit{N: 1}, (*sdPlain).Deposit); err != nil {
				t.Fatal(err)
			}
		}
	}
	port, _ := actor.Bind(accts[0], (*sdAccount).Deposit)
	ch, err := actor.WatchChan(port)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := sys.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Shutdown took %v", d)
	}
	names, why := log.get()
	if len(names) != 3 {
		t.Fatalf("Stopped hooks run: %v", names)
	}
	for _, r := range why {
		if r != actor.ReasonStopped {
			t.Fatalf("Stopped hook reason %v, want ReasonStopped", r)
		}
	}
	select {
	case n := <-ch:
		if n.Reason != actor.ReasonStopped || !errors.Is(n.Err, actor.ErrStopped) {
			t.Fatalf("watch notice %v %v", n.Reason, n.Err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no watch notice")
	}
	for _, p := range plains {
		if p.n != 10 || p.Alive() {
			t.Fatalf("plain actor: %d messages, alive %v", p.n, p.Alive())
		}
	}
	st, _ := sys.Stats()
	if st.LiveActors != 0 {
		t.Fatalf("live actors %d", st.LiveActors)
	}
}

// When actors remain at the context's end, Shutdown returns within about
// its context (plus Stop's grace for stuck workers), and its error wraps
// ErrActorsAlive and names them by type, with counts.
func TestShutdownContextEndsNamesTypes(t *testing.T) {
	sys, err := actor.Start(actor.WithWorkers(4))
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	defer close(release)
	// Each blocker is running before the next is sent to and before
	// Shutdown: a message gulped in the same batch as a behaviour that
	// never returns waits for it (the batch is the worker's), so the
	// sdPlain's termination must not be sent while a batch that could
	// hold it is still being formed.
	started := make(chan struct{})
	for range 2 {
		b, _ := actor.Spawn(sys, &sdBlocker{release: release, started: started})
		actor.Send(b, &sdBlock{}, (*sdBlocker).Block)
		<-started
	}
	in, _ := actor.Spawn(sys, &sdIngest{sdBlocker{release: release, started: started}})
	actor.Send(in, &sdBlock{}, (*sdIngest).Block)
	<-started
	actor.Spawn(sys, &sdPlain{}) // stops
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = sys.Shutdown(ctx)
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("Shutdown took %v", d)
	}
	if !errors.Is(err, actor.ErrActorsAlive) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "3 actors still alive") ||
		!strings.Contains(msg, "2 *actor_test.sdBlocker, 1 *actor_test.sdIngest still alive") {
		t.Fatalf("Shutdown's error does not name the actors: %v", err)
	}
	if strings.Contains(msg, "sdPlain") {
		t.Fatalf("Shutdown's error names a stopped actor: %v", err)
	}
}

// Stop keeps its behaviour: it waits for the actors to end by themselves
// (an idle actor is not stopped) until its context ends, and its error now
// names the actors still alive by type.
func TestStopWaitsAndNamesTypes(t *testing.T) {
	sys, err := actor.Start(actor.WithWorkers(2))
	if err != nil {
		t.Fatal(err)
	}
	log := &sdLog{}
	a, _ := actor.Spawn(sys, &sdAccount{name: "a", log: log})
	actor.Spawn(sys, &sdPlain{})
	actor.Spawn(sys, &sdPlain{})
	actor.Send(a, &sdDeposit{N: 1}, (*sdAccount).Deposit)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = sys.Stop(ctx)
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("Stop returned after %v, before its context ended", d)
	}
	if !errors.Is(err, actor.ErrActorsAlive) {
		t.Fatalf("Stop: %v", err)
	}
	if !strings.Contains(err.Error(), "3 actors still alive when the context ended (2 *actor_test.sdPlain, 1 *actor_test.sdAccount still alive)") {
		t.Fatalf("Stop's error: %v", err)
	}
	// As before: the forced Stop runs the Stopped hook (ReasonStopped).
	if names, why := log.get(); len(names) != 1 || why[0] != actor.ReasonStopped {
		t.Fatalf("Stopped hooks: %v %v", names, why)
	}
}

// Shutdown stops the actors a supervisor supervises (WithEscalate) before
// the supervisor, level by level.
func TestShutdownOrderChildrenBeforeSupervisors(t *testing.T) {
	for range 20 {
		sys, err := actor.Start(actor.WithWorkers(2))
		if err != nil {
			t.Fatal(err)
		}
		log := &sdLog{}
		root, _ := actor.Spawn(sys, &sdAccount{name: "root", log: log})
		rootPort, _ := actor.Bind(root, (*sdAccount).OnFailure)
		mid, err := actor.Spawn(sys, &sdAccount{name: "mid", log: log}, actor.WithEscalate(rootPort, nil))
		if err != nil {
			t.Fatal(err)
		}
		midPort, _ := actor.Bind(mid, (*sdAccount).OnFailure)
		for range 3 {
			if _, err := actor.Spawn(sys, &sdAccount{name: "leaf", log: log}, actor.WithEscalate(midPort, nil)); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := sys.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		cancel()
		names, _ := log.get()
		want := []string{"leaf", "leaf", "leaf", "mid", "root"}
		if strings.Join(names, ",") != strings.Join(want, ",") {
			t.Fatalf("Stopped order %v, want %v", names, want)
		}
	}
}
