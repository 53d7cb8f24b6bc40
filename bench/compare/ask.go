package compare

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	hollywoodgo "github.com/anthdm/hollywood/actor"
	protoactorgo "github.com/asynkron/protoactor-go/actor"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/bench"
	"github.com/actord/actord/bench/compare/hollywood"
	"github.com/actord/actord/bench/compare/protoactor"
)

// ---- ask from goroutines -----------------------------------------------------
//
// The service path: ordinary goroutines (an HTTP handler's) ask one server
// actor and wait for each reply, with each system's idiomatic request/reply:
// a request carrying a reply channel for goroutines, actor.Ask (with a
// context) for actord, RequestFuture(...).Result() for protoactor-go,
// Request(...).Result() for hollywood. The server answers a request for n
// with n+1. Each ask's latency is timed by the goroutine that made it.
//
// ask: one goroutine, Asks asks in a row. ask64: 64 goroutines, started
// together, Asks asks in all: whether every asker is served alike (p99
// against p50).

// Askers is how many goroutines ask at once in the ask64 program.
const Askers = 64

// echoServer is one echo server: newClient returns a function asking it
// once, for one asking goroutine (which may keep a preallocated request);
// stop stops the server and waits for it to terminate.
type echoServer struct {
	newClient func() func(n int) (int, error)
	stop      func() error
}

// chanEchoServer is a server goroutine answering requests from a request
// channel on the reply channel each carries (one per client, reused).
func chanEchoServer() echoServer {
	type req struct {
		n     int
		reply chan int
	}
	reqs := make(chan req)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for r := range reqs {
			r.reply <- r.n + 1
		}
	}()
	return echoServer{
		newClient: func() func(int) (int, error) {
			reply := make(chan int, 1)
			return func(n int) (int, error) {
				reqs <- req{n: n, reply: reply}
				return <-reply, nil
			}
		},
		stop: func() error { close(reqs); wg.Wait(); return nil },
	}
}

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

// actordEchoServer spawns an echo actor on sys; its clients ask it with
// actor.Ask; stop finishes it and stops sys.
func actordEchoServer(sys *actor.System) (echoServer, error) {
	a, err := actor.Spawn(sys, &echoActor{})
	if err != nil {
		return echoServer{}, err
	}
	p, err := actor.Bind(a, (*echoActor).onEcho)
	if err != nil {
		return echoServer{}, err
	}
	ctx := context.Background()
	return echoServer{
		newClient: func() func(int) (int, error) {
			req := &echoReq{}
			return func(n int) (int, error) {
				req.n = n
				return actor.Ask(ctx, p, req)
			}
		},
		stop: func() error {
			if err := actor.SendPill(a, actor.FinishedMsg); err != nil {
				return err
			}
			return sys.Stop(ctx)
		},
	}, nil
}

func peerEchoServer(newClient func() func(int) (int, error), stop func()) echoServer {
	return echoServer{newClient: newClient, stop: func() error { stop(); return nil }}
}

// askEcho asks srv len(lat) times from askers goroutines (the calling one
// if askers is 1), ask i by goroutine i*askers/len(lat), recording ask i's
// latency in lat[i], then stops srv.
func askEcho(srv echoServer, askers int, lat []time.Duration) error {
	n := len(lat)
	asks := func(ask func(int) (int, error), lo, hi int) error {
		for i := lo; i < hi; i++ {
			t0 := time.Now()
			v, err := ask(i)
			lat[i] = time.Since(t0)
			if err != nil {
				return err
			}
			if v != i+1 {
				return fmt.Errorf("compare: ask %d: reply %d, want %d", i, v, i+1)
			}
		}
		return nil
	}
	var err error
	if askers == 1 {
		err = asks(srv.newClient(), 0, n)
	} else {
		errs := make([]error, askers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for g := range askers {
			ask := srv.newClient()
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[g] = asks(ask, g*n/askers, (g+1)*n/askers)
			}()
		}
		close(start)
		wg.Wait()
		err = errors.Join(errs...)
	}
	return errors.Join(err, srv.stop())
}

// runAsk runs sz.Asks asks of one echo server from askers goroutines.
func runAsk(askers int) func(string, int, Sizes) (Result, error) {
	return func(system string, workers int, sz Sizes) (Result, error) {
		n := sz.Asks
		lat := make([]time.Duration, n)
		r, progErr, err := onSystems[error]{
			chan_: func() error { return askEcho(chanEchoServer(), askers, lat) },
			protoactor: func(sys *protoactorgo.ActorSystem) error {
				return askEcho(peerEchoServer(protoactor.EchoServer(sys)), askers, lat)
			},
			hollywood: func(e *hollywoodgo.Engine) error {
				return askEcho(peerEchoServer(hollywood.EchoServer(e)), askers, lat)
			},
			actord: func(sys *actor.System) (error, error) {
				srv, err := actordEchoServer(sys)
				if err != nil {
					return nil, err
				}
				return askEcho(srv, askers, lat), nil
			},
		}.run(system, workers, Result{Actors: 1, Messages: n})
		if err = errors.Join(err, progErr); err != nil {
			return r, err
		}
		slices.Sort(lat)
		us := func(q float64) float64 { return float64(bench.Quantile(lat, q)) / 1e3 }
		r.Metrics = map[string]float64{
			"askers":  float64(askers),
			"ns/ask":  float64(r.Wall.Nanoseconds()) / float64(n),
			"p50-us":  us(0.5),
			"p99-us":  us(0.99),
			"p999-us": us(0.999),
			"max-us":  us(1),
		}
		if p := bench.Quantile(lat, 0.5); p > 0 {
			r.Metrics["p99/p50"] = float64(bench.Quantile(lat, 0.99)) / float64(p)
		}
		return r, nil
	}
}
