// Package protoactor is the benchmark suite's programs written for
// protoactor-go (github.com/asynkron/protoactor-go), the way its
// documentation and examples write actors: a Receive method with a type
// switch on ctx.Message(), pointer messages, actors spawned at the root from
// Props, ctx.Send for one-way messages, ctx.Request and ctx.Respond for
// replies, and ctx.Stop(ctx.Self()) when an actor is done. Nothing is tuned:
// default mailboxes and dispatcher.
//
// Each program is the same algorithm as package bench's actord version
// (same actors, messages and termination; a message preallocated there is
// preallocated here) and runs on a fresh system from NewSystem. It returns
// when every actor it spawned has stopped (each one's *actor.Stopped), as
// actord's Stop waits for every actor to terminate, then shuts the system
// down.
package protoactor

import (
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actord/actord/bench"
)

// NewSystem returns a fresh actor system that logs nothing.
func NewSystem() *actor.ActorSystem {
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
}

// stopper counts down the actors of a program as they stop.
type stopper struct{ wg *sync.WaitGroup }

func (s stopper) stopped() { s.wg.Done() }

func spawn(sys *actor.ActorSystem, a actor.Actor) *actor.PID {
	return sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return a }))
}

// spawnAll makes n actors, actor i by mk(i, its stopper), and spawns them
// in order; wg counts them down as they stop.
func spawnAll[A any, P interface {
	*A
	actor.Actor
}](sys *actor.ActorSystem, wg *sync.WaitGroup, n int, mk func(i int, s stopper) A) ([]A, []*actor.PID) {
	wg.Add(n)
	actors := make([]A, n)
	pids := make([]*actor.PID, n)
	for i := range actors {
		actors[i] = mk(i, stopper{wg})
		pids[i] = spawn(sys, P(&actors[i]))
	}
	return actors, pids
}

// stopAll waits until every actor has stopped, shuts sys down and returns
// the sum of recs over actors.
func stopAll[A any](sys *actor.ActorSystem, wg *sync.WaitGroup, actors []A, recs func(*A) int) int {
	wg.Wait()
	sys.Shutdown()
	n := 0
	for i := range actors {
		n += recs(&actors[i])
	}
	return n
}

// ---- static send -----------------------------------------------------------

type staticActor struct {
	stopper
	left, recs int
}

type staticMsg struct{ _ int }

func (a *staticActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *staticMsg:
		a.recs++
		a.left--
		if a.left <= 0 {
			ctx.Stop(ctx.Self())
			return
		}
		ctx.Send(ctx.Self(), m)
	case *actor.Stopped:
		a.stopped()
	}
}

// StaticSend re-sends one message from one actor to itself n times; it
// returns the number of receives.
func StaticSend(sys *actor.ActorSystem, n int) int {
	var wg sync.WaitGroup
	wg.Add(1)
	a := &staticActor{stopper: stopper{&wg}, left: n}
	sys.Root.Send(spawn(sys, a), &staticMsg{})
	wg.Wait()
	sys.Shutdown()
	return a.recs
}

// ---- dynamic send ----------------------------------------------------------

type dynamicActor struct {
	stopper
	props *actor.Props
	hops  *int // shared: each hop increments it before sending to the next
}

type dynamicMsg struct{ left int }

func (a *dynamicActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *dynamicMsg:
		*a.hops++
		if m.left > 1 {
			// A top-level actor: a child (ctx.Spawn) would be stopped with
			// its parent.
			next := ctx.ActorSystem().Root.Spawn(a.props)
			ctx.Send(next, &dynamicMsg{left: m.left - 1})
		}
		ctx.Stop(ctx.Self())
	case *actor.Stopped:
		a.stopped()
	}
}

// DynamicSend runs n hops, each receive spawning a new actor, sending it a
// new message and stopping itself; it returns the number of hops.
func DynamicSend(sys *actor.ActorSystem, n int) int {
	var wg sync.WaitGroup
	wg.Add(n)
	hops := 0
	var props *actor.Props
	props = actor.PropsFromProducer(func() actor.Actor {
		return &dynamicActor{stopper: stopper{&wg}, props: props, hops: &hops}
	})
	sys.Root.Send(sys.Root.Spawn(props), &dynamicMsg{left: n})
	wg.Wait()
	sys.Shutdown()
	return hops
}

// ---- executor --------------------------------------------------------------

type execActor struct {
	stopper
	group             []*actor.PID
	recs, last, sends int
}

type execMsg struct{ _ int }

func (a *execActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *execMsg:
		if a.recs == a.last {
			a.recs++
			ctx.Stop(ctx.Self())
			return
		}
		to := a.group[a.sends%len(a.group)]
		a.sends++
		a.recs++
		ctx.Send(to, m)
	case *actor.Stopped:
		a.stopped()
	}
}

// Executor runs the executor benchmark; it returns the number of receives.
func Executor(sys *actor.ActorSystem, sz bench.ExecutorSize) int {
	var wg sync.WaitGroup
	actors, pids := spawnAll(sys, &wg, sz.Actors, func(i int, s stopper) execActor {
		g := i - i%sz.Set
		return execActor{stopper: s, last: sz.Set * sz.Rounds, sends: i - g + 1}
	})
	// The actors read their group only when the first message arrives,
	// after these writes.
	for i := range actors {
		g := i - i%sz.Set
		actors[i].group = pids[g:min(g+sz.Set, sz.Actors)]
	}
	shared := &execMsg{}
	for _, pid := range pids {
		sys.Root.Send(pid, shared)
	}
	return stopAll(sys, &wg, actors, func(a *execActor) int { return a.recs })
}

// ---- repeat ----------------------------------------------------------------

type repeatClient struct {
	stopper
	servers               []*actor.PID
	replies, round, recvd int
	rounds                int
	req                   *repeatReq
}

type repeatServer struct {
	stopper
	rep   *repeatRep
	recvd int
}

type repeatStart struct{ _ int }
type repeatReq struct{ _ int }
type repeatRep struct{ _ int }

func (c *repeatClient) scatter(ctx actor.Context) {
	for _, s := range c.servers {
		ctx.Request(s, c.req)
	}
}

func (c *repeatClient) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *repeatStart:
		c.scatter(ctx)
	case *repeatRep:
		c.recvd++
		c.replies++
		if c.replies < len(c.servers) {
			return
		}
		c.replies = 0
		c.round++
		if c.round < c.rounds {
			c.scatter(ctx)
			return
		}
		for _, s := range c.servers {
			ctx.Stop(s)
		}
		ctx.Stop(ctx.Self())
	case *actor.Stopped:
		c.stopped()
	}
}

func (s *repeatServer) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *repeatReq:
		s.recvd++
		ctx.Respond(s.rep)
	case *actor.Stopped:
		s.stopped()
	}
}

// Repeat runs the repeat benchmark; it returns the number of requests and
// replies received.
func Repeat(sys *actor.ActorSystem, sz bench.RepeatSize) int {
	var wg sync.WaitGroup
	wg.Add(sz.Servers + 1)
	c := &repeatClient{stopper: stopper{&wg}, rounds: sz.Rounds, req: &repeatReq{}}
	servers := make([]repeatServer, sz.Servers)
	for i := range servers {
		servers[i] = repeatServer{stopper: stopper{&wg}, rep: &repeatRep{}}
		c.servers = append(c.servers, spawn(sys, &servers[i]))
	}
	sys.Root.Send(spawn(sys, c), &repeatStart{})
	wg.Wait()
	sys.Shutdown()
	n := c.recvd
	for i := range servers {
		n += servers[i].recvd
	}
	return n
}

// ---- matrix ----------------------------------------------------------------

type rowActor struct{ stopper }

type rowMsg struct {
	m *bench.Matrices
	i int
}

func (a *rowActor) Receive(ctx actor.Context) {
	switch r := ctx.Message().(type) {
	case *rowMsg:
		r.m.Row(r.i)
		ctx.Stop(ctx.Self())
	case *actor.Stopped:
		a.stopped()
	}
}

// Matrix computes m.Z = m.X * m.Y with one actor per row.
func Matrix(sys *actor.ActorSystem, m *bench.Matrices) {
	var wg sync.WaitGroup
	wg.Add(m.N)
	actors := make([]rowActor, m.N)
	msgs := make([]rowMsg, m.N)
	pids := make([]*actor.PID, m.N)
	for i := range actors {
		actors[i].stopper = stopper{&wg}
		pids[i] = spawn(sys, &actors[i])
	}
	for i := range pids {
		msgs[i] = rowMsg{m: m, i: i}
		sys.Root.Send(pids[i], &msgs[i])
	}
	wg.Wait()
	sys.Shutdown()
}

// ---- constant-rate pipeline ------------------------------------------------

type pipeStage struct {
	stopper
	next *actor.PID      // nil for the collector
	lat  []time.Duration // collector only
}

type pipeMsg struct {
	sent time.Time
	seq  int // < 0: the end marker
}

func (p *pipeStage) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *pipeMsg:
		if p.next == nil {
			if m.seq < 0 {
				ctx.Stop(ctx.Self())
				return
			}
			p.lat[m.seq] = time.Since(m.sent)
			return
		}
		ctx.Send(p.next, m)
		if m.seq < 0 {
			ctx.Stop(ctx.Self())
		}
	case *actor.Stopped:
		p.stopped()
	}
}

// Pipeline sends n messages at rate from outside the system through stages
// actors to a collector (see bench.Pipeline).
func Pipeline(sys *actor.ActorSystem, stages int, rate float64, n int) bench.PipelineResult {
	var wg sync.WaitGroup
	wg.Add(stages + 1)
	chain := make([]pipeStage, stages+1)
	chain[stages].lat = make([]time.Duration, n)
	var next *actor.PID
	for i := stages; i >= 0; i-- {
		chain[i].stopper = stopper{&wg}
		chain[i].next = next
		next = spawn(sys, &chain[i])
	}
	first := next
	msgs := make([]pipeMsg, n)
	cpu0 := bench.CPUTime()
	t0 := time.Now()
	late := bench.PaceSends(n, rate, func(i int) {
		m := &msgs[i]
		m.seq = i
		m.sent = time.Now()
		sys.Root.Send(first, m)
	})
	sys.Root.Send(first, &pipeMsg{seq: -1})
	wg.Wait()
	r := bench.PipelineResult{Rate: rate, Sent: n, Late: late, Wall: time.Since(t0), CPU: bench.CPUTime() - cpu0, Latencies: chain[stages].lat}
	sys.Shutdown()
	slices.Sort(r.Latencies)
	return r
}

// ---- cycle -----------------------------------------------------------------

type cycleActor struct {
	stopper
	next       *actor.PID
	size, recs int
}

type cycleToken struct{ left int }

func (a *cycleActor) Receive(ctx actor.Context) {
	switch t := ctx.Message().(type) {
	case *cycleToken:
		a.recs++
		left := t.left - 1
		t.left = left
		if left > 0 {
			ctx.Send(a.next, t)
		}
		if left < a.size {
			ctx.Stop(ctx.Self())
		}
	case *actor.Stopped:
		a.stopped()
	}
}

// Cycle runs the cycle benchmark (see bench.Cycle); it returns the number
// of hops.
func Cycle(sys *actor.ActorSystem, sz bench.CycleSize) int {
	sz.Check()
	var wg sync.WaitGroup
	wg.Add(sz.Actors())
	actors := make([]cycleActor, sz.Actors())
	pids := make([]*actor.PID, sz.Actors())
	for j := 0; j < sz.RingSize; j++ {
		for k := 0; k < sz.Rings; k++ {
			i := k*sz.RingSize + j
			actors[i] = cycleActor{stopper: stopper{&wg}, size: sz.RingSize}
			pids[i] = spawn(sys, &actors[i])
		}
	}
	for i := range actors {
		k, j := i/sz.RingSize, i%sz.RingSize
		actors[i].next = pids[k*sz.RingSize+(j+1)%sz.RingSize]
	}
	tokens := make([]cycleToken, sz.Rings)
	for k := range tokens {
		tokens[k].left = sz.Hops
		sys.Root.Send(pids[k*sz.RingSize], &tokens[k])
	}
	return stopAll(sys, &wg, actors, func(a *cycleActor) int { return a.recs })
}

// ---- churn and locality ----------------------------------------------------

type churnRun struct {
	sz       bench.ChurnSize
	spots    []*actor.PID
	finished atomic.Int64 // clients that finished; Add by each finishing client, whose result decides which one flushes
	flush    *churnFlush
}

type churnClient struct {
	stopper
	run      *churnRun
	rng      bench.ChurnRNG
	ops      int
	arrivals int
	data     []uint64
	arrive   churnArrive
	wake     churnWake
}

type churnSpot struct {
	stopper
	waiter *actor.PID // the client held
	wake   *churnWake // its wake message
}

type churnArrive struct {
	from *actor.PID
	wake *churnWake // the arriving client's own wake message
	data []uint64
}

type churnWake struct {
	data []uint64
	stop bool
}

type churnStart struct{ _ int }
type churnFlush struct{ _ int }

func (c *churnClient) arriveAtRandom(ctx actor.Context) {
	sz := &c.run.sz
	if sz.Cells > 0 {
		c.rng.Touch(c.data, sz.Cells)
	}
	s := c.run.spots[c.rng.Next()%uint64(len(c.run.spots))]
	c.arrive.data = nil
	if sz.Share {
		c.arrive.data, c.data = c.data, nil
	}
	c.arrivals++
	ctx.Send(s, &c.arrive)
}

func (c *churnClient) Receive(ctx actor.Context) {
	switch w := ctx.Message().(type) {
	case *churnStart:
		c.arriveAtRandom(ctx)
	case *churnWake:
		if w.stop {
			ctx.Stop(ctx.Self())
			return
		}
		if c.run.sz.Share {
			c.data, w.data = w.data, nil
		}
		c.ops++
		if c.ops < c.run.sz.Iterations {
			c.arriveAtRandom(ctx)
			return
		}
		if c.run.finished.Add(1) == int64(c.run.sz.Clients-c.run.sz.Spots) {
			for _, s := range c.run.spots {
				ctx.Send(s, c.run.flush)
			}
		}
		ctx.Stop(ctx.Self())
	case *actor.Stopped:
		c.stopped()
	}
}

func (s *churnSpot) Receive(ctx actor.Context) {
	switch a := ctx.Message().(type) {
	case *churnArrive:
		w, wake := s.waiter, s.wake
		s.waiter, s.wake = a.from, a.wake
		wake.data = a.data
		a.data = nil
		ctx.Send(w, wake)
	case *churnFlush:
		s.wake.stop = true
		ctx.Send(s.waiter, s.wake)
		ctx.Stop(ctx.Self())
	case *actor.Stopped:
		s.stopped()
	}
}

// Churn runs the churn benchmark, or locality when sz.Words > 0 (see
// bench.Churn, which explains why the flush finds every spot holding a
// client and nothing in flight).
func Churn(sys *actor.ActorSystem, sz bench.ChurnSize) bench.ChurnResult {
	sz.Check()
	var wg sync.WaitGroup
	wg.Add(sz.Clients + sz.Spots)
	run := &churnRun{sz: sz, flush: &churnFlush{}}
	clients := make([]churnClient, sz.Clients)
	pids := make([]*actor.PID, sz.Clients)
	for i := range clients {
		c := &clients[i]
		c.stopper = stopper{&wg}
		c.run = run
		c.rng = bench.NewChurnRNG(i)
		c.arrive.wake = &c.wake
		if sz.Words > 0 && (!sz.Share || i >= sz.Spots) {
			c.data = make([]uint64, sz.Words)
		}
		pids[i] = spawn(sys, c)
		c.arrive.from = pids[i]
	}
	spots := make([]churnSpot, sz.Spots)
	for i := range spots {
		spots[i] = churnSpot{stopper: stopper{&wg}, waiter: pids[i], wake: &clients[i].wake}
		run.spots = append(run.spots, spawn(sys, &spots[i]))
	}
	start := &churnStart{}
	for i := sz.Spots; i < sz.Clients; i++ {
		sys.Root.Send(pids[i], start)
	}
	wg.Wait()
	sys.Shutdown()
	var r bench.ChurnResult
	datas := make([][]uint64, 0, len(clients))
	for i := range clients {
		r.Ops += clients[i].ops
		r.Arrivals += clients[i].arrivals
		datas = append(datas, clients[i].data)
	}
	r.Sum, r.Arrays = bench.SumArrays(datas)
	r.Messages = sz.Clients - sz.Spots + r.Arrivals + r.Ops + 2*sz.Spots
	return r
}

// ---- counting --------------------------------------------------------------

type countingActor struct {
	stopper
	n int
}

type countingInc struct{ _ int }
type countingGet struct{ _ int }

func (a *countingActor) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *countingInc:
		a.n++
	case *countingGet:
		ctx.Respond(a.n)
		ctx.Stop(ctx.Self())
	case *actor.Stopped:
		a.stopped()
	}
}

// Counting sends n increments (one preallocated message) from the root
// context to a counter actor, then asks it for the total (a future), which
// it returns.
func Counting(sys *actor.ActorSystem, n int) int {
	var wg sync.WaitGroup
	wg.Add(1)
	pid := spawn(sys, &countingActor{stopper: stopper{&wg}})
	inc := &countingInc{}
	for i := 0; i < n; i++ {
		sys.Root.Send(pid, inc)
	}
	res, err := sys.Root.RequestFuture(pid, &countingGet{}, time.Minute).Result()
	wg.Wait()
	sys.Shutdown()
	if err != nil {
		return -1
	}
	return res.(int)
}

// ---- fork-join throughput --------------------------------------------------

type forkJoinActor struct {
	stopper
	left, recs int
}

type forkJoinMsg struct{ _ int }

func (a *forkJoinActor) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *forkJoinMsg:
		bench.ForkJoinWork()
		a.recs++
		if a.left--; a.left == 0 {
			ctx.Stop(ctx.Self())
		}
	case *actor.Stopped:
		a.stopped()
	}
}

// ForkJoin sends round-robin from the root context to sz.Actors actors,
// sz.Messages each (see bench.ForkJoin); it returns the receives.
func ForkJoin(sys *actor.ActorSystem, sz bench.ForkJoinSize) int {
	var wg sync.WaitGroup
	actors, pids := spawnAll(sys, &wg, sz.Actors, func(_ int, s stopper) forkJoinActor {
		return forkJoinActor{stopper: s, left: sz.Messages}
	})
	m := &forkJoinMsg{}
	for k := 0; k < sz.Messages; k++ {
		for _, pid := range pids {
			sys.Root.Send(pid, m)
		}
	}
	return stopAll(sys, &wg, actors, func(a *forkJoinActor) int { return a.recs })
}

// ---- counting from an actor ------------------------------------------------

type countingProducer struct {
	stopper
	counter *actor.PID
	n       int
	total   int
}

type countingStart struct{ _ int }

func (a *countingProducer) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *countingStart:
		inc := &countingInc{}
		for i := 0; i < a.n; i++ {
			ctx.Send(a.counter, inc)
		}
		ctx.Request(a.counter, &countingGet{})
	case int:
		a.total = m
		ctx.Stop(ctx.Self())
	case *actor.Stopped:
		a.stopped()
	}
}

// CountingActor is Counting with an actor as the producer: one receive of
// the producer sends n increments (one preallocated message) to the counter
// and then requests its total, which the producer receives as a message
// (Savina's counting). It returns the total.
func CountingActor(sys *actor.ActorSystem, n int) int {
	var wg sync.WaitGroup
	wg.Add(2)
	counter := spawn(sys, &countingActor{stopper: stopper{&wg}})
	p := &countingProducer{stopper: stopper{&wg}, counter: counter, n: n}
	sys.Root.Send(spawn(sys, p), &countingStart{})
	wg.Wait()
	sys.Shutdown()
	return p.total
}

// ---- ask from a goroutine --------------------------------------------------

type echoActor struct{ stopper }

type echoReq struct{ n int }

func (a *echoActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *echoReq:
		ctx.Respond(m.n + 1)
	case *actor.Stopped:
		a.stopped()
	}
}

// EchoServer spawns an echo actor on sys, which answers a request for n
// with n+1. newClient returns a function for one asking goroutine that asks
// it once with RequestFuture(...).Result() (one preallocated request per
// client); stop stops the actor, waits for it to stop and shuts sys down.
func EchoServer(sys *actor.ActorSystem) (newClient func() func(n int) (int, error), stop func()) {
	var wg sync.WaitGroup
	wg.Add(1)
	pid := spawn(sys, &echoActor{stopper{&wg}})
	newClient = func() func(int) (int, error) {
		req := &echoReq{}
		return func(n int) (int, error) {
			req.n = n
			res, err := sys.Root.RequestFuture(pid, req, time.Minute).Result()
			if err != nil {
				return 0, err
			}
			return res.(int), nil
		}
	}
	stop = func() {
		sys.Root.Stop(pid)
		wg.Wait()
		sys.Shutdown()
	}
	return newClient, stop
}
