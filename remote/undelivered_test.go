package remote_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/remote"
)

// marked is an actor whose behaviours mark each request they receive, as
// a serving side does that uses remote.OnServe to tell its askers which
// requests never reached a behaviour.
type marked struct {
	actor.Actor
	seen    *sync.Map // *Echo -> *atomic.Bool, set as the behaviour receives it
	release chan struct{}
	busy    chan struct{}
}

// block keeps the actor busy until release, then ends it: requests queued
// meanwhile are dropped undelivered.
type block struct{ actor.Message }

func (m *marked) onBlock(*block) actor.Allocation {
	close(m.busy)
	<-m.release
	return actor.Finished
}

// onEcho ends the actor without replying to the request it received, or
// refuses it undelivered when its text says so.
func (m *marked) onEcho(e *Echo) actor.Allocation {
	if e.S == "refuse" {
		_ = e.Fail(fmt.Errorf("%w: refused by the test", remote.ErrNotDelivered))
		return actor.Nodelete
	}
	if f, ok := m.seen.Load(e); ok {
		f.(*atomic.Bool).Store(true)
	}
	return actor.Finished
}

// serveMarked exports m's echo behaviour as "echo" on n, with an OnServe
// function that fails a request undelivered (remote.ErrNotDelivered) when
// it ended with actor.ErrTerminated and the behaviour never marked it;
// queued (if not nil) gets each request as it is sent to the port.
func serveMarked(t *testing.T, sys *actor.System, n *remote.Node, queued chan<- struct{}) *marked {
	t.Helper()
	m := &marked{seen: new(sync.Map), release: make(chan struct{}), busy: make(chan struct{})}
	_, err := actor.Spawn(sys, m)
	must(t, err)
	echo, _ := actor.Bind(m, (*marked).onEcho)
	serve := func(e *Echo) func(error) error {
		f := new(atomic.Bool)
		m.seen.Store(e, f)
		if queued != nil {
			queued <- struct{}{}
		}
		return func(err error) error {
			m.seen.Delete(e)
			if errors.Is(err, actor.ErrTerminated) && !f.Load() {
				return fmt.Errorf("%w (%w)", err, remote.ErrNotDelivered)
			}
			return err
		}
	}
	must(t, remote.ExportRequest(n, "echo", echo, remote.CBOR[*Echo](), remote.CBOR[string](), remote.OnServe(serve)))
	return m
}

// A request queued on the serving node and dropped there undelivered, as
// its actor ends, reaches the asker as not delivered (it may be asked
// again); so does one sent to an actor already gone.
func TestAskQueuedAndDroppedIsUndelivered(t *testing.T) {
	url := startNATS(t, 0)
	sysA, sysB, a, b := twoNodes(t, url)
	queued := make(chan struct{}, 1)
	m := serveMarked(t, sysB, b, queued)
	blk, _ := actor.Bind(m, (*marked).onBlock)
	must(t, blk.Send(&block{}))
	<-m.busy
	p, err := remote.ImportRequest(a, "b", "echo", remote.CBOR[*Echo](), remote.CBOR[string]())
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := p.Ask(ctx, &Echo{S: "x"})
		errc <- err
	}()
	<-queued
	// The node sends the request to the port right after OnServe's
	// function; give it the time to be queued behind the block.
	time.Sleep(50 * time.Millisecond)
	close(m.release)
	err = <-errc
	if !errors.Is(err, remote.ErrNotDelivered) || !errors.Is(err, actor.ErrTerminated) || !errors.Is(err, remote.ErrRemote) {
		t.Fatalf("ask queued and dropped: %v, want remote.ErrNotDelivered, actor.ErrTerminated and remote.ErrRemote", err)
	}
	// It was queued, not refused by the send (which counts a dead letter).
	if st := b.Stats(); st.DeadLetters != 0 {
		t.Fatalf("dead letters %d, want 0: the request was not queued", st.DeadLetters)
	}
	// The actor is gone now: the send refuses the next request at once.
	go func() {
		_, err := p.Ask(ctx, &Echo{S: "x"})
		errc <- err
	}()
	<-queued
	if err := <-errc; !errors.Is(err, remote.ErrNotDelivered) || !errors.Is(err, actor.ErrTerminated) {
		t.Fatalf("ask to a gone actor: %v, want remote.ErrNotDelivered and actor.ErrTerminated", err)
	}
	closeAndStop(t, sysA, sysB, a, b)
}

// A request that its behaviour received, whose actor then ends without
// replying, reaches the asker as actor.ErrTerminated, not as undelivered:
// it may have had its effect.
func TestAskDeliveredThenEndedIsNotUndelivered(t *testing.T) {
	url := startNATS(t, 0)
	sysA, sysB, a, b := twoNodes(t, url)
	serveMarked(t, sysB, b, nil)
	p, err := remote.ImportRequest(a, "b", "echo", remote.CBOR[*Echo](), remote.CBOR[string]())
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = p.Ask(ctx, &Echo{S: "x"})
	if !errors.Is(err, actor.ErrTerminated) || !errors.Is(err, remote.ErrRemote) {
		t.Fatalf("ask delivered, then its actor ended: %v, want actor.ErrTerminated and remote.ErrRemote", err)
	}
	if errors.Is(err, remote.ErrNotDelivered) {
		t.Fatalf("ask delivered, then its actor ended: %v, want no remote.ErrNotDelivered", err)
	}
	closeAndStop(t, sysA, sysB, a, b)
}

// A request failed with an error wrapping remote.ErrNotDelivered (a
// refusal) reaches the asker wrapping it, with its text, and not as
// actor.ErrTerminated.
func TestAskRefusedIsUndelivered(t *testing.T) {
	url := startNATS(t, 0)
	sysA, sysB, a, b := twoNodes(t, url)
	m := serveMarked(t, sysB, b, nil)
	p, err := remote.ImportRequest(a, "b", "echo", remote.CBOR[*Echo](), remote.CBOR[string]())
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = p.Ask(ctx, &Echo{S: "refuse"})
	must(t, actor.SendPill(m, actor.FinishedMsg))
	if !errors.Is(err, remote.ErrNotDelivered) || !errors.Is(err, remote.ErrRemote) || errors.Is(err, actor.ErrTerminated) {
		t.Fatalf("refused ask: %v, want remote.ErrNotDelivered and remote.ErrRemote only", err)
	}
	if !strings.Contains(err.Error(), "refused by the test") {
		t.Fatalf("refused ask: %v, want the refusal's text", err)
	}
	closeAndStop(t, sysA, sysB, a, b)
}
