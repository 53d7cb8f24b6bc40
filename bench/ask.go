package bench

import (
	"context"
	"sync"

	"github.com/actord/actord/actor"
)

// ---- port send ---------------------------------------------------------------
//
// Static send through a port: one actor re-sends one preallocated message to
// itself through a port bound to its behaviour, n times. Beside StaticSend,
// it measures what a port adds to a send.

type portActor struct {
	actor.Actor
	self actor.Port[*staticMsg]
	left int
}

func (a *portActor) receive(m *staticMsg) actor.Allocation {
	a.left--
	if a.left <= 0 {
		return actor.Finished
	}
	if err := a.self.Send(m); err != nil {
		panic(err)
	}
	return actor.Nodelete
}

// PortSend runs the port-send program for n messages on sys and stops it.
func PortSend(sys *actor.System, n int) error {
	a, err := actor.Spawn(sys, &portActor{left: n})
	if err != nil {
		return err
	}
	if a.self, err = actor.Bind(a, (*portActor).receive); err != nil {
		return err
	}
	if err := a.self.Send(&staticMsg{}); err != nil {
		return err
	}
	return sys.Stop(context.Background())
}

// ---- ask round trip from a goroutine -------------------------------------------
//
// A goroutine outside the system asks an echo actor n times in a row and
// waits for each reply; the channel version asks a server goroutine over a
// request channel, each request carrying the channel to answer on.

type echoActor struct{ actor.Actor }

type echoReq struct {
	actor.Request[int]
	n int
}

func (*echoActor) onEcho(m *echoReq) actor.Allocation {
	if err := m.Reply(m.n + 1); err != nil {
		panic(err)
	}
	return actor.Nodelete
}

// AskRoundTrip asks an echo actor n times from the calling goroutine, then
// stops sys.
func AskRoundTrip(sys *actor.System, n int) error {
	a, err := actor.Spawn(sys, &echoActor{})
	if err != nil {
		return err
	}
	p, err := actor.Bind(a, (*echoActor).onEcho)
	if err != nil {
		return err
	}
	ctx := context.Background()
	req := &echoReq{}
	for i := 0; i < n; i++ {
		req.n = i
		v, err := actor.Ask(ctx, p, req)
		if err != nil {
			return err
		}
		if v != i+1 {
			panic("bench: wrong reply")
		}
	}
	if err := actor.SendPill(a, actor.FinishedMsg); err != nil {
		return err
	}
	return sys.Stop(ctx)
}

type chanReq struct {
	n     int
	reply chan int
}

// AskRoundTripChan is AskRoundTrip with goroutines: a server goroutine
// answers requests from a request channel on the channel each carries (one
// reply channel, reused by the caller: the cheapest form).
func AskRoundTripChan(n int) {
	reqs := make(chan chanReq)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for r := range reqs {
			r.reply <- r.n + 1
		}
	}()
	reply := make(chan int, 1)
	for i := 0; i < n; i++ {
		reqs <- chanReq{n: i, reply: reply}
		if <-reply != i+1 {
			panic("bench: wrong reply")
		}
	}
	close(reqs)
	wg.Wait()
}

// ---- request/reply ping-pong between two actors ---------------------------------
//
// Actor A asks actor B (AskAsync) and, when B's reply arrives as a message,
// asks again, n times: request/reply inside the system, with no worker ever
// blocking. The goroutine version: two goroutines doing request/response
// over channels.

type pingActor struct {
	actor.Actor
	pong    actor.Port[*echoReq]
	replies actor.Port[*actor.Reply[int]]
	req     echoReq
	left    int
	done    chan error
}

type pingStart struct{ actor.Message }

func (a *pingActor) onStart(*pingStart) actor.Allocation { return a.ask() }

func (a *pingActor) ask() actor.Allocation {
	a.req.n = a.left
	if err := actor.AskAsync(a.pong, &a.req, a.replies, 0); err != nil {
		a.done <- err
		return actor.Finished
	}
	return actor.Nodelete
}

func (a *pingActor) onReply(r *actor.Reply[int]) actor.Allocation {
	if r.Err != nil || r.Value != a.left+1 {
		a.done <- r.Err
		return actor.Finished
	}
	a.left--
	if a.left == 0 {
		a.done <- nil
		return actor.Finished
	}
	return a.ask()
}

// PingPongRequest runs n request/reply round trips between two actors of
// sys, then stops it.
func PingPongRequest(sys *actor.System, n int) error {
	b, err := actor.Spawn(sys, &echoActor{})
	if err != nil {
		return err
	}
	a, err := actor.Spawn(sys, &pingActor{left: n, done: make(chan error, 1)})
	if err != nil {
		return err
	}
	if a.pong, err = actor.Bind(b, (*echoActor).onEcho); err != nil {
		return err
	}
	if a.replies, err = actor.Bind(a, (*pingActor).onReply); err != nil {
		return err
	}
	if err := actor.Send(a, &pingStart{}, (*pingActor).onStart); err != nil {
		return err
	}
	if err := <-a.done; err != nil {
		return err
	}
	if err := actor.SendPill(b, actor.FinishedMsg); err != nil {
		return err
	}
	return sys.Stop(context.Background())
}

// PingPongRequestChan is PingPongRequest with two goroutines doing
// request/response over channels.
func PingPongRequestChan(n int) { AskRoundTripChan(n) }

// ---- blocking work with actor.Go ---------------------------------------------------
//
// An actor hands n jobs, one after the other, to actor.Go (each runs on its
// own goroutine and comes back as a message); the goroutine version starts
// a goroutine per job and receives its result on a channel. Measures what
// running blocking work off the workers costs per job.

type goActor struct {
	actor.Actor
	done actor.Port[*actor.Reply[int]]
	left int
	fin  chan error
}

type goStart struct{ actor.Message }

func (a *goActor) onStart(*goStart) actor.Allocation { return a.next() }

func (a *goActor) next() actor.Allocation {
	n := a.left
	if err := actor.Go(a.done, func() (int, error) { return n, nil }); err != nil {
		a.fin <- err
		return actor.Finished
	}
	return actor.Nodelete
}

func (a *goActor) onDone(r *actor.Reply[int]) actor.Allocation {
	if r.Err != nil || r.Value != a.left {
		a.fin <- r.Err
		return actor.Finished
	}
	a.left--
	if a.left == 0 {
		a.fin <- nil
		return actor.Finished
	}
	return a.next()
}

// GoJobs runs n jobs through actor.Go, one at a time, on sys, then stops it.
func GoJobs(sys *actor.System, n int) error {
	a, err := actor.Spawn(sys, &goActor{left: n, fin: make(chan error, 1)})
	if err != nil {
		return err
	}
	if a.done, err = actor.Bind(a, (*goActor).onDone); err != nil {
		return err
	}
	if err := actor.Send(a, &goStart{}, (*goActor).onStart); err != nil {
		return err
	}
	if err := <-a.fin; err != nil {
		return err
	}
	return sys.Stop(context.Background())
}

// GoJobsChan is GoJobs with a goroutine per job and a channel for results.
func GoJobsChan(n int) {
	res := make(chan int, 1)
	for i := n; i > 0; i-- {
		go func() { res <- i }()
		if <-res != i {
			panic("bench: wrong result")
		}
	}
}
