package executor

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/actord/actord/internal/goid"
)

// helpServer answers each request with the number of plain messages it
// has received, checks that each sender's plain messages come in order,
// and records what a behaviour observes of its identity.
type helpServer struct {
	cell    Cell
	self    Port[*greq]
	last    map[int]int // sender -> last sequence number seen
	outOfOr int
	notIn   int // deliveries that did not see InBehaviour
	askErr  int // nested Asks that did not fail with ErrAskInBehaviour
	plain   int
}

type helpSeq struct {
	Message
	from, n int
}

func (s *helpServer) onSeq(m *helpSeq) Allocation {
	if s.last[m.from]+1 != m.n {
		s.outOfOr++
	}
	s.last[m.from] = m.n
	s.plain++
	if !InBehaviour() {
		s.notIn++
	}
	return Nodelete
}

func (s *helpServer) onReq(r *greq) Allocation {
	if !InBehaviour() {
		s.notIn++
	}
	if _, err := Ask(context.Background(), s.self, &greq{}); !errors.Is(err, ErrAskInBehaviour) {
		s.askErr++
	}
	_ = r.Reply(s.plain)
	return Nodelete
}

// Callers that help: asks from several goroutines, interleaved with plain
// sends, to an actor on one or two workers. Every reply comes, each
// sender's messages arrive in order, behaviours run by a helping caller
// are in a behaviour, and every message is counted once.
func TestCallersThatHelp(t *testing.T) {
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			e, err := Start(Config{Workers: workers})
			require.NoError(t, err)
			s := &helpServer{last: map[int]int{}}
			require.NoError(t, Spawn(e, &s.cell, s))
			rp, err := Bind(&s.cell, s, (*helpServer).onReq)
			require.NoError(t, err)
			s.self = rp
			sp, err := Bind(&s.cell, s, (*helpServer).onSeq)
			require.NoError(t, err)
			const senders, rounds = 4, 300
			var wg sync.WaitGroup
			for g := 0; g < senders; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					for i := 1; i <= rounds; i++ {
						if err := sp.Send(&helpSeq{from: g, n: i}); err != nil {
							t.Error(err)
							return
						}
						if i%3 == 0 {
							if _, err := Ask(context.Background(), rp, &greq{}); err != nil {
								t.Error(err)
								return
							}
						}
						if i%10 == 0 {
							time.Sleep(time.Millisecond) // let the worker park
						}
					}
				}(g)
			}
			wg.Wait()
			n, err := Ask(context.Background(), rp, &greq{})
			require.NoError(t, err)
			require.Equal(t, senders*rounds, n)
			require.Zero(t, s.outOfOr)
			require.Zero(t, s.notIn)
			require.Zero(t, s.askErr)
			st := e.Stats()
			var processed, visits uint64
			for i := range st.Workers {
				processed += st.Workers[i].MessagesProcessed()
				visits += st.Workers[i].CallerVisits
			}
			asks := uint64(senders*(rounds/3) + 1)
			require.Equal(t, uint64(senders*rounds)+asks, processed) // a nested Ask sends nothing
			t.Logf("caller visits: %d of %d asks", visits, asks)
			require.NoError(t, SendPill(&s.cell, s, NewPill(Finished)))
			require.NoError(t, e.Stop(context.Background()))
		})
	}
}

// BenchmarkAskHelp: one op is one Ask answered, from one goroutine outside
// the system, to an actor on a system with one worker, with callers that
// help off (the worker is woken for each ask) and on.
func BenchmarkAskHelp(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("help=%v", on), func(b *testing.B) {
			e, err := Start(Config{Workers: 1, NoCallerHelp: !on})
			require.NoError(b, err)
			s := &fwdServer{}
			require.NoError(b, Spawn(e, &s.cell, s))
			p, err := Bind(&s.cell, s, (*fwdServer).onReq)
			require.NoError(b, err)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := Ask(ctx, p, &greq{}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			st := e.Stats()
			var visits uint64
			for i := range st.Workers {
				visits += st.Workers[i].CallerVisits
			}
			b.ReportMetric(float64(visits)/float64(b.N), "helped/op")
			require.NoError(b, SendPill(&s.cell, s, NewPill(Finished)))
			require.NoError(b, e.Stop(context.Background()))
		})
	}
}

// helpCfg is a one-worker configuration whose parked worker is woken by
// work only (no watcher), so that an Ask made once it sleeps is helped.
func helpCfg() Config { return Config{Workers: 1, ParkTimeout: -1} }

// waitLendable waits until e's worker sleeps on the channel, lendable to
// a helping caller.
func waitLendable(t *testing.T, e *Executor) {
	t.Helper()
	w := e.workers[0]
	waitFor(t, "the worker's sleep", func() bool { return lendable(w) })
}

// lendable reports whether w is parked and may be lent to a caller.
func lendable(w *worker) bool {
	return w.lendGen.Load()&1 == 1 && w.state.Load() == workerParked
}

// waitAllLendable waits until every worker of e is parked and lendable.
func waitAllLendable(t *testing.T, e *Executor) {
	t.Helper()
	waitFor(t, "every worker's sleep", func() bool {
		for _, w := range e.workers {
			if !lendable(w) {
				return false
			}
		}
		return true
	})
}

// callerVisits returns the mailbox visits made by helping callers on e.
func callerVisits(e *Executor) uint64 {
	st := e.Stats()
	var n uint64
	for i := range st.Workers {
		n += st.Workers[i].CallerVisits
	}
	return n
}

// helpProbe records, in each delivery, what a behaviour observes: the
// goroutine it runs on, InBehaviour, a nested Ask's and Stop's errors;
// then it does what act says.
type helpProbe struct {
	cell    Cell
	e       *Executor
	self    Port[*greq]
	g       uintptr
	in      bool
	askErr  error
	stopErr error
	act     func(r *greq) Allocation
	runners atomic.Int32
	twice   atomic.Int32 // deliveries that found another runner of the actor
	n       int
}

func (p *helpProbe) onReq(r *greq) Allocation {
	if p.runners.Add(1) != 1 {
		p.twice.Add(1)
	}
	defer p.runners.Add(-1)
	p.n++
	p.g = goid.Get()
	p.in = InBehaviour()
	_, p.askErr = Ask(context.Background(), p.self, &greq{})
	p.stopErr = p.e.Stop(context.Background())
	if p.act != nil {
		return p.act(r)
	}
	_ = r.Reply(p.n)
	return Nodelete
}

func spawnHelpProbe(t *testing.T, e *Executor, act func(*greq) Allocation) (*helpProbe, Port[*greq]) {
	t.Helper()
	p := &helpProbe{e: e, act: act}
	require.NoError(t, Spawn(e, &p.cell, p))
	port, err := Bind(&p.cell, p, (*helpProbe).onReq)
	require.NoError(t, err)
	p.self = port
	return p, port
}

// A behaviour a helping caller runs is in a behaviour, on the caller's
// goroutine: InBehaviour, ErrAskInBehaviour, ErrStopInBehaviour; its
// delivery is counted once, in the owner's statistics, readable while the
// system runs.
func TestHelpedBehaviourIsInBehaviour(t *testing.T) {
	if !goid.Supported {
		t.Skip("callers help only where goroutine identity is supported")
	}
	e, err := Start(helpCfg())
	require.NoError(t, err)
	p, port := spawnHelpProbe(t, e, nil)
	const asks = 20
	for i := 1; i <= asks; i++ {
		waitLendable(t, e)
		v, err := Ask(context.Background(), port, &greq{})
		require.NoError(t, err)
		require.Equal(t, i, v)
		require.Equal(t, goid.Get(), p.g, "not run by the asking goroutine")
		require.True(t, p.in)
		require.ErrorIs(t, p.askErr, ErrAskInBehaviour)
		require.ErrorIs(t, p.stopErr, ErrStopInBehaviour)
		require.False(t, InBehaviour(), "the caller is in a behaviour after Ask")
	}
	waitFor(t, "caller visits published", func() bool { return callerVisits(e) == uint64(asks) })
	st := e.Stats()
	require.Equal(t, uint64(asks), st.Workers[0].MessagesProcessed())
	require.Zero(t, p.twice.Load())
	require.NoError(t, SendPill(&p.cell, p, NewPill(Finished)))
	require.NoError(t, e.Stop(context.Background()))
}

// A panic in a behaviour a helping caller runs is recovered and handled as
// on a worker: the plain actor terminates, the Ask gets the *PanicError,
// OnError is called (on the caller's goroutine), Stop reports it, and the
// worker goes on serving other actors.
func TestHelpedPanic(t *testing.T) {
	if !goid.Supported {
		t.Skip("callers help only where goroutine identity is supported")
	}
	var reported atomic.Int32
	var onErrorG atomic.Uint64
	cfg := helpCfg()
	cfg.OnError = func(error) {
		reported.Add(1)
		onErrorG.Store(uint64(goid.Get()))
	}
	e, err := Start(cfg)
	require.NoError(t, err)
	_, bad := spawnHelpProbe(t, e, func(*greq) Allocation { panic("helped panic") })
	good, gp := spawnHelpProbe(t, e, nil)
	waitLendable(t, e)
	_, err = Ask(context.Background(), bad, &greq{})
	var pe *PanicError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "helped panic", pe.Value)
	waitFor(t, "caller visits published", func() bool { return callerVisits(e) == uint64(1) })
	require.False(t, bad.Alive())
	require.Equal(t, int32(1), reported.Load())
	require.Equal(t, uint64(goid.Get()), onErrorG.Load(), "OnError not called on the helping caller's goroutine")
	_, err = Ask(context.Background(), bad, &greq{})
	require.ErrorIs(t, err, ErrTerminated)
	for i := 0; i < 3; i++ {
		waitLendable(t, e)
		_, err = Ask(context.Background(), gp, &greq{})
		require.NoError(t, err)
	}
	require.NoError(t, SendPill(&good.cell, good, NewPill(Finished)))
	err = e.Stop(context.Background())
	require.ErrorIs(t, err, ErrPanic)
}

// A runtime.Goexit in a behaviour a helping caller runs ends the asking
// goroutine only: the actor's end is made as for a panic (Stop reports it,
// Goexit set), the owner delivers what the batch holds after the request
// (here a message the behaviour sent before its Goexit), and the worker
// goes on.
func TestHelpedGoexit(t *testing.T) {
	if !goid.Supported {
		t.Skip("callers help only where goroutine identity is supported")
	}
	e, err := Start(Config{Workers: 1, Queues: 1, ParkTimeout: -1}) // one mailbox: a's send to b is local
	require.NoError(t, err)
	got := make(chan uintptr, 2)
	b, bp := spawnHelpProbe(t, e, func(r *greq) Allocation {
		got <- goid.Get()
		_ = r.Reply(1)
		return Nodelete
	})
	a, ap := spawnHelpProbe(t, e, func(*greq) Allocation {
		if err := bp.Send(&greq{}); err != nil {
			panic(err)
		}
		runtime.Goexit()
		return Nodelete
	})
	waitLendable(t, e)
	var g uintptr
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		g = goid.Get()
		_, _ = Ask(context.Background(), ap, &greq{})
		t.Error("Ask returned after the behaviour's Goexit")
	}()
	<-ended
	require.Equal(t, g, a.g, "not run by the asking goroutine")
	require.NotEqual(t, g, <-got, "the rest of the batch was not left to the owner")
	waitFor(t, "the actor's end", func() bool { return !ap.Alive() })
	waitLendable(t, e)
	_, err = Ask(context.Background(), bp, &greq{})
	require.NoError(t, err)
	require.Equal(t, goid.Get(), <-got, "the worker was not lent again")
	require.NoError(t, SendPill(&b.cell, b, NewPill(Finished)))
	err = e.Stop(context.Background())
	var pe *PanicError
	require.ErrorAs(t, err, &pe)
	require.True(t, pe.Goexit)
}

// holdDestroy replies to each request, then ends its actor (Destroy),
// whose Destroy hook waits until the asker has gone on (gone).
type holdDestroy struct {
	cell Cell
	gone chan struct{}
	done chan struct{}
}

func (h *holdDestroy) onReq(r *greq) Allocation {
	_ = r.Reply(1)
	return Destroy
}

func (h *holdDestroy) Destroy() {
	<-h.gone
	close(h.done)
}

// An Ask that helps returns once its request is answered: the rest of the
// visit, here the actor's termination, whose Destroy hook waits for the
// asker to have gone on, is left to the worker. The worker does not touch
// the request after the reply: the asker reuses it at once (-race).
func TestHelpedAskReturnsBeforeTerminationHooks(t *testing.T) {
	if !goid.Supported {
		t.Skip("callers help only where goroutine identity is supported")
	}
	e, err := Start(helpCfg())
	require.NoError(t, err)
	h := &holdDestroy{gone: make(chan struct{}), done: make(chan struct{})}
	require.NoError(t, Spawn(e, &h.cell, h))
	hp, err := Bind(&h.cell, h, (*holdDestroy).onReq)
	require.NoError(t, err)
	s, sp := spawnHelpProbe(t, e, nil)
	waitLendable(t, e)
	req := &greq{}
	done := make(chan error, 1)
	go func() {
		_, err := Ask(context.Background(), hp, req)
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Ask waits for the termination hooks of the actor it helped")
	}
	*req = greq{} // reused (written) while the worker runs the hook
	close(h.gone)
	<-h.done
	waitFor(t, "the owner's publication of the visit the helper left", func() bool { return callerVisits(e) == 1 })
	waitFor(t, "the actor's end", func() bool { return !hp.Alive() })
	waitLendable(t, e)
	_, err = Ask(context.Background(), sp, req)
	require.NoError(t, err)
	require.NoError(t, SendPill(&s.cell, s, NewPill(Finished)))
	require.NoError(t, e.Stop(context.Background()))
}

// An Ask with a context that can end helps too; the context is noticed
// when the behaviour the caller runs returns: here the behaviour cancels
// it and keeps the request, and Ask returns context.Canceled after it.
func TestHelpedAskWithContext(t *testing.T) {
	if !goid.Supported {
		t.Skip("callers help only where goroutine identity is supported")
	}
	e, err := Start(helpCfg())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var kept *greq
	returned := false
	p, port := spawnHelpProbe(t, e, nil)
	p.act = func(r *greq) Allocation {
		if r != nil && kept == nil {
			kept = r
			cancel()
			returned = true
			return Nodelete
		}
		_ = r.Reply(2)
		return Nodelete
	}
	waitLendable(t, e)
	_, err = Ask(ctx, port, &greq{})
	require.ErrorIs(t, err, context.Canceled)
	require.True(t, returned)
	waitFor(t, "caller visits published", func() bool { return callerVisits(e) == uint64(1) })
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel2()
	waitLendable(t, e)
	v, err := Ask(ctx2, port, &greq{})
	require.NoError(t, err)
	require.Equal(t, 2, v)
	waitFor(t, "caller visits published", func() bool { return callerVisits(e) == uint64(2) })
	require.ErrorIs(t, kept.Reply(3), ErrReplied) // the asker gave up: a late reply
	require.NoError(t, SendPill(&p.cell, p, NewPill(Finished)))
	require.NoError(t, e.Stop(context.Background()))
}

// A forced Stop while a helping caller runs a behaviour that does not
// return treats it as a worker stuck in a behaviour: Stop returns after
// its grace, saying so; when the behaviour returns, the caller gets its
// reply, the rest of the batch is dropped, and the worker exits. The
// actor ran once.
func TestHelpedForcedStop(t *testing.T) {
	if !goid.Supported {
		t.Skip("callers help only where goroutine identity is supported")
	}
	e, err := Start(helpCfg())
	require.NoError(t, err)
	began, gate := make(chan struct{}), make(chan struct{})
	p, port := spawnHelpProbe(t, e, nil)
	p.act = func(r *greq) Allocation {
		close(began)
		<-gate
		_ = r.Reply(5)
		return Nodelete
	}
	waitLendable(t, e)
	got := make(chan error, 1)
	go func() {
		v, err := Ask(context.Background(), port, &greq{})
		if err == nil && v != 5 {
			err = fmt.Errorf("reply %d", v)
		}
		got <- err
	}()
	<-began
	require.NoError(t, port.Send(&greq{})) // queued behind the stuck one
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err = e.Stop(ctx)
	require.ErrorIs(t, err, ErrActorsAlive)
	require.Contains(t, err.Error(), "still running a behaviour")
	close(gate)
	require.NoError(t, <-got)
	waitFor(t, "the worker's exit", func() bool { return e.workers[0].state.Load() == workerExited })
	require.Equal(t, 1, p.n)
	require.Zero(t, p.twice.Load())
}

// forceHelp sets helpForced for a test, and returns its undoing.
func forceHelp() func() {
	old := helpForced
	helpForced = true
	return func() { helpForced = old }
}

// stressReq carries its sender and sequence number.
type stressReq struct {
	Request[int]
	from, n int
}

// stressActor checks that each sender's requests come in order and that
// no two deliveries of the actor overlap, and answers each with its n.
type stressActor struct {
	cell    Cell
	runners atomic.Int32
	twice   atomic.Int32
	last    map[int]int
	outOfOr int
	served  int
}

func (s *stressActor) onReq(r *stressReq) Allocation {
	if s.runners.Add(1) != 1 {
		s.twice.Add(1)
	}
	if s.last[r.from] >= r.n {
		s.outOfOr++
	}
	s.last[r.from] = r.n
	s.served++
	_ = r.Reply(r.n)
	s.runners.Add(-1)
	return Nodelete
}

// Many goroutines asking the same and different actors, with helping
// forced: every ask is answered exactly once with its own answer, each
// sender's requests to an actor arrive in order, and no actor runs in two
// places at once.
func TestHelpStress(t *testing.T) {
	if !goid.Supported {
		t.Skip("callers help only where goroutine identity is supported")
	}
	defer forceHelp()()
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			e, err := Start(Config{Workers: workers})
			require.NoError(t, err)
			const actors, senders, rounds = 6, 12, 150
			as := make([]*stressActor, actors)
			ps := make([]Port[*stressReq], actors)
			for i := range as {
				as[i] = &stressActor{last: map[int]int{}}
				require.NoError(t, Spawn(e, &as[i].cell, as[i]))
				ps[i], err = Bind(&as[i].cell, as[i], (*stressActor).onReq)
				require.NoError(t, err)
			}
			var answered atomic.Int64
			var wg sync.WaitGroup
			for g := 0; g < senders; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					for i := 1; i <= rounds; i++ {
						a := (g + i) % actors
						if g%3 == 0 {
							a = 0 // some senders ask one actor only
						}
						c := ctx
						if i%2 == 0 {
							c = context.Background()
						}
						v, err := Ask(c, ps[a], &stressReq{from: g, n: i})
						if err != nil || v != i {
							t.Errorf("sender %d ask %d: %d, %v", g, i, v, err)
							return
						}
						answered.Add(1)
						if i%25 == 0 {
							time.Sleep(200 * time.Microsecond) // let the workers park
						}
					}
				}(g)
			}
			wg.Wait()
			require.Equal(t, int64(senders*rounds), answered.Load())
			served := 0
			for _, a := range as {
				require.Zero(t, a.twice.Load(), "an actor ran in two places")
				require.Zero(t, a.outOfOr, "a sender's requests out of order")
				served += a.served
			}
			require.Equal(t, senders*rounds, served)
			t.Logf("caller visits: %d of %d asks", callerVisits(e), senders*rounds)
			for _, a := range as {
				require.NoError(t, SendPill(&a.cell, a, NewPill(Finished)))
			}
			require.NoError(t, e.Stop(context.Background()))
		})
	}
}

// goHelpProbe starts a Go job in onStart and records, in onReply, the
// goroutine its Reply's behaviour ran on and whether it was in a
// behaviour there.
type goHelpProbe struct {
	cell    Cell
	replies Port[*Reply[uintptr]]
	release chan struct{}
	got     chan [2]uintptr // {the Go function's goroutine, the Reply behaviour's}
	in      atomic.Bool
}

type goStart struct{ Message }

func (p *goHelpProbe) onStart(*goStart) Allocation {
	_ = Go(p.replies, func() (uintptr, error) {
		<-p.release
		return goid.Get(), nil
	})
	return Nodelete
}

func (p *goHelpProbe) onReply(r *Reply[uintptr]) Allocation {
	p.in.Store(InBehaviour())
	p.got <- [2]uintptr{r.Value, goid.Get()}
	return Nodelete
}

// The goroutine of a Go function whose actor's worker is parked delivers
// the Reply itself, as that worker (a caller that helps): the Reply's
// behaviour runs on that goroutine, in a behaviour, counted once; with
// NoCallerHelp the worker is woken and runs it.
func TestGoHandsBackItsReply(t *testing.T) {
	if !goid.Supported {
		t.Skip("callers help only where goroutine identity is supported")
	}
	for _, noHelp := range []bool{false, true} {
		t.Run(fmt.Sprint("NoCallerHelp=", noHelp), func(t *testing.T) {
			cfg := helpCfg()
			cfg.NoCallerHelp = noHelp
			e, err := Start(cfg)
			require.NoError(t, err)
			p := &goHelpProbe{release: make(chan struct{}), got: make(chan [2]uintptr, 1)}
			require.NoError(t, Spawn(e, &p.cell, p))
			p.replies, err = Bind(&p.cell, p, (*goHelpProbe).onReply)
			require.NoError(t, err)
			require.NoError(t, Send(&p.cell, p, &goStart{}, (*goHelpProbe).onStart))
			waitLendable(t, e) // the job started, and the worker sleeps
			close(p.release)
			g := <-p.got
			require.True(t, p.in.Load(), "the Reply's behaviour was not in a behaviour")
			if noHelp {
				require.NotEqual(t, g[0], g[1], "the Go function's goroutine ran the Reply's behaviour")
				require.Zero(t, callerVisits(e))
			} else {
				require.Equal(t, g[0], g[1], "the Reply's behaviour did not run on the Go function's goroutine")
				waitFor(t, "caller visits published", func() bool { return callerVisits(e) == uint64(1) })
			}
			require.NoError(t, SendPill(&p.cell, p, NewPill(Finished)))
			require.NoError(t, e.Stop(context.Background()))
			require.Equal(t, uint64(3), e.Stats().Workers[0].MessagesProcessed(), "start, reply and pill, each counted once")
		})
	}
}

// leftProbe answers a request, then sends itself a message whose
// behaviour waits for release: a helping caller stops at its reply and
// leaves that message, the rest of its visit, to the owner.
type leftProbe struct {
	cell    Cell
	began   chan struct{}
	release chan struct{}
}

type leftHold struct{ Message }

func (p *leftProbe) onReq(r *greq) Allocation {
	_ = r.Reply(1)
	_ = Send(&p.cell, p, &leftHold{}, (*leftProbe).onHold)
	return Nodelete
}

func (p *leftProbe) onHold(*leftHold) Allocation {
	close(p.began)
	<-p.release
	return Nodelete
}

// A helping caller that leaves the rest of its visit to the owner does not
// publish the worker's statistics: published counters are consistent only
// between batches (a gulp counted, its deliveries not yet), and a count
// the owner makes later in that batch (a dead letter, a discarded timer
// firing) would make MessagesProcessed go down. The owner publishes when
// it has finished the visit.
func TestHelperLeavingAVisitDoesNotPublish(t *testing.T) {
	if !goid.Supported {
		t.Skip("callers help only where goroutine identity is supported")
	}
	e, err := Start(helpCfg())
	require.NoError(t, err)
	p := &leftProbe{began: make(chan struct{}), release: make(chan struct{})}
	require.NoError(t, Spawn(e, &p.cell, p))
	port, err := Bind(&p.cell, p, (*leftProbe).onReq)
	require.NoError(t, err)
	waitLendable(t, e)
	_, err = Ask(context.Background(), port, &greq{})
	require.NoError(t, err)
	<-p.began // the owner runs the rest of the visit, and waits in it
	w := e.workers[0]
	w.pubMu.Lock()
	pub := w.pub
	w.pubMu.Unlock()
	require.Zero(t, pub.CallerVisits, "the helper published in the middle of a visit")
	close(p.release)
	waitFor(t, "the owner's publication", func() bool { return callerVisits(e) == 1 })
	require.NoError(t, SendPill(&p.cell, p, NewPill(Finished)))
	require.NoError(t, e.Stop(context.Background()))
}
