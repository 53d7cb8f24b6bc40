package actor_test

import (
	"context"
	"errors"
	"github.com/actord/actord/actortest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actord/actord/actor"
)

// account answers balance requests and applies deposits.
type account struct {
	actor.Actor
	balance int
	hold    chan struct{} // if set, onGet waits on it before replying
}

type deposit struct {
	actor.Message
	n int
}

type getBalance struct {
	actor.Request[int]
}

type closeAccount struct {
	actor.Request[int]
}

func (a *account) onDeposit(m *deposit) actor.Allocation {
	a.balance += m.n
	return actor.Nodelete
}

func (a *account) onGet(m *getBalance) actor.Allocation {
	if a.hold != nil {
		<-a.hold
	}
	if err := m.Reply(a.balance); err != nil && !errors.Is(err, actor.ErrReplied) {
		panic(err)
	}
	return actor.Nodelete
}

// onClose terminates without replying.
func (a *account) onClose(*closeAccount) actor.Allocation { return actor.Finished }

func TestPortSendAndIncarnations(t *testing.T) {
	sys := start(t, actor.WithWorkers(2))
	a, _ := actor.Spawn(sys, &account{})
	dep, err := actor.Bind(a, (*account).onDeposit)
	require.NoError(t, err)
	dep2, _ := actor.Bind(a, (*account).onDeposit)
	assert.Equal(t, dep, dep2, "ports to the same behaviour of the same incarnation are equal")
	get, _ := actor.Bind(a, (*account).onGet)
	for i := 1; i <= 100; i++ {
		require.NoError(t, dep.Send(&deposit{n: i}))
	}
	bal, err := actor.Ask(context.Background(), get, &getBalance{})
	require.NoError(t, err)
	assert.Equal(t, 5050, bal, "port sends are FIFO with each other and with the ask")

	require.NoError(t, actor.SendPill(a, actor.DestroyMsg))
	for a.Alive() {
		time.Sleep(time.Millisecond)
	}
	assert.ErrorIs(t, dep.Send(&deposit{n: 1}), actor.ErrTerminated)
	assert.False(t, dep.Alive())
	// Spawned again: the old port stays dead; a new one works.
	_, err = actor.Spawn(sys, a)
	require.NoError(t, err)
	assert.ErrorIs(t, dep.Send(&deposit{n: 1}), actor.ErrTerminated, "a port belongs to one incarnation")
	dep3, err := actor.Bind(a, (*account).onDeposit)
	require.NoError(t, err)
	assert.NotEqual(t, dep, dep3)
	require.NoError(t, dep3.Send(&deposit{n: 1}))
	require.NoError(t, actor.SendPill(a, actor.FinishedMsg))
	stop(t, sys)

	var zero actor.Port[*deposit]
	assert.ErrorIs(t, zero.Send(&deposit{}), actor.ErrNotSpawned)
	_, err = actor.Bind(&account{}, (*account).onDeposit)
	assert.ErrorIs(t, err, actor.ErrNotSpawned)
}

func TestAskErrors(t *testing.T) {
	// Without callers that help: the asker of a behaviour that blocks
	// until after its context ends would run that behaviour itself, and
	// notice its context only when it returns (see Ask).
	sys := start(t, actor.WithWorkers(2), actor.WithoutCallerHelp())
	a, _ := actor.Spawn(sys, &account{hold: make(chan struct{})})
	get, _ := actor.Bind(a, (*account).onGet)
	cl, _ := actor.Bind(a, (*account).onClose)

	// The context ends first; the late reply is counted, never blocks.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := actor.Ask(ctx, get, &getBalance{})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	close(a.hold)
	deadline := time.Now().Add(10 * time.Second)
	for actortest.MustStats(sys).LateReplies == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	st := actortest.MustStats(sys)
	assert.Equal(t, uint64(1), st.LateReplies)
	assert.Equal(t, uint64(1), st.AsksTimedOut)

	// A plain Send of a request: Reply reports that nobody waits.
	var noReq error
	got := make(chan error, 1)
	r, _ := actor.Spawn(sys, &replier{got: got})
	require.NoError(t, actor.Send(r, &getBalance{}, (*replier).onGet))
	noReq = <-got
	assert.ErrorIs(t, noReq, actor.ErrNoRequester)

	// The actor terminates without replying: the asker learns it.
	_, err = actor.Ask(context.Background(), cl, &closeAccount{})
	assert.ErrorIs(t, err, actor.ErrTerminated)
	// Asking a terminated actor fails at once.
	_, err = actor.Ask(context.Background(), get, &getBalance{})
	assert.ErrorIs(t, err, actor.ErrTerminated)
	require.NoError(t, actor.SendPill(r, actor.FinishedMsg))
	stop(t, sys)
	assert.Zero(t, actortest.MustStats(sys).AsksPending)
}

// replier reports what Reply returned.
type replier struct {
	actor.Actor
	got chan error
}

func (r *replier) onGet(m *getBalance) actor.Allocation {
	r.got <- m.Reply(1)
	return actor.Nodelete
}

// asker asks from inside a behaviour: Ask refuses, AskAsync delivers the
// reply as a message.
type asker struct {
	actor.Actor
	target  actor.Port[*getBalance]
	self    actor.Port[*actor.Reply[int]]
	replies chan actor.Reply[int]
	askErr  chan error
}

type start1 struct {
	actor.Message
	timeout time.Duration
}

func (a *asker) onStart(m *start1) actor.Allocation {
	_, err := actor.Ask(context.Background(), a.target, &getBalance{})
	a.askErr <- err
	_, err = actor.Ask(context.Background(), actor.Port[*getBalance]{}, &getBalance{})
	a.askErr <- err // a zero port too: the caller is checked first
	if err := actor.AskAsync(a.target, &getBalance{}, a.self, m.timeout); err != nil {
		panic(err)
	}
	return actor.Nodelete
}

func (a *asker) onReply(m *actor.Reply[int]) actor.Allocation {
	a.replies <- *m
	return actor.Nodelete
}

func TestAskAsyncFromBehaviour(t *testing.T) {
	sys := start(t, actor.WithWorkers(2))
	acct, _ := actor.Spawn(sys, &account{balance: 42})
	get, _ := actor.Bind(acct, (*account).onGet)
	a, _ := actor.Spawn(sys, &asker{target: get, replies: make(chan actor.Reply[int], 1), askErr: make(chan error, 2)})
	a.self, _ = actor.Bind(a, (*asker).onReply)
	require.NoError(t, actor.Send(a, &start1{}, (*asker).onStart))
	assert.ErrorIs(t, <-a.askErr, actor.ErrAskInBehaviour)
	assert.ErrorIs(t, <-a.askErr, actor.ErrAskInBehaviour, "through a zero port")
	r := <-a.replies
	require.NoError(t, r.Err)
	assert.Equal(t, 42, r.Value)

	// A timeout: the account holds the request; the reply carries
	// DeadlineExceeded, and the real answer, later, is counted as late.
	acct.hold = make(chan struct{}) // safe: the account is idle and the send below orders this write
	require.NoError(t, actor.Send(a, &start1{timeout: 10 * time.Millisecond}, (*asker).onStart))
	<-a.askErr
	<-a.askErr
	r = <-a.replies
	assert.ErrorIs(t, r.Err, context.DeadlineExceeded)
	close(acct.hold)
	require.NoError(t, actor.SendPill(acct, actor.FinishedMsg))
	require.NoError(t, actor.SendPill(a, actor.FinishedMsg))
	stop(t, sys)
	st := actortest.MustStats(sys)
	assert.Equal(t, uint64(1), st.LateReplies)
	assert.Zero(t, st.AsksPending)
}

// Many goroutines ask while the actors they ask terminate and the system
// stops: every ask returns (a reply or an error), none hangs, and no
// goroutine is left behind (TestMain checks with goleak).
func TestAskStress(t *testing.T) {
	for round := 0; round < 5; round++ {
		sys := start(t, actor.WithWorkers(4))
		const accounts, askers = 16, 32
		ports := make([]actor.Port[*getBalance], accounts)
		closers := make([]actor.Port[*closeAccount], accounts)
		for i := range ports {
			a, _ := actor.Spawn(sys, &account{balance: i})
			ports[i], _ = actor.Bind(a, (*account).onGet)
			closers[i], _ = actor.Bind(a, (*account).onClose)
		}
		var replies, failures atomic.Int64
		var wg sync.WaitGroup
		for g := 0; g < askers; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 200; i++ {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					p := ports[(g+i)%accounts]
					v, err := actor.Ask(ctx, p, &getBalance{})
					cancel()
					switch {
					case err == nil:
						assert.Equal(t, (g+i)%accounts, v)
						replies.Add(1)
					case errors.Is(err, actor.ErrTerminated), errors.Is(err, actor.ErrStopped):
						failures.Add(1)
					default:
						t.Errorf("ask: %v", err)
						return
					}
				}
			}()
		}
		// Terminate the accounts while the askers run (some via an ask
		// that the account never answers), then stop the system.
		for i := range closers {
			time.Sleep(100 * time.Microsecond)
			_, err := actor.Ask(context.Background(), closers[i], &closeAccount{})
			assert.ErrorIs(t, err, actor.ErrTerminated)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := sys.Stop(ctx); err != nil {
			// Asks that reached terminated accounts are dead letters.
			require.ErrorIs(t, err, actor.ErrUndelivered)
			require.NotErrorIs(t, err, actor.ErrActorsAlive)
		}
		cancel()
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("an ask hung")
		}
		assert.Equal(t, int64(askers*200), replies.Load()+failures.Load())
		assert.Zero(t, actortest.MustStats(sys).AsksPending)
	}
}

// loader does blocking work through actor.Go and receives the result as a
// message.
type loader struct {
	actor.Actor
	done   actor.Port[*actor.Reply[string]]
	out    chan actor.Reply[string]
	inBody atomic.Int32 // behaviours running now: must never exceed 1
}

type load struct {
	actor.Message
	name  string
	panic bool
}

func (l *loader) onLoad(m *load) actor.Allocation {
	if l.inBody.Add(1) != 1 {
		panic("two behaviours at once")
	}
	defer l.inBody.Add(-1)
	name, boom := m.name, m.panic
	err := actor.Go(l.done, func() (string, error) {
		time.Sleep(time.Millisecond) // blocking work, off the workers
		if boom {
			panic("blocking work failed")
		}
		return "loaded " + name, nil
	})
	if err != nil {
		panic(err)
	}
	return actor.Nodelete
}

func (l *loader) onDone(r *actor.Reply[string]) actor.Allocation {
	if l.inBody.Add(1) != 1 {
		panic("two behaviours at once")
	}
	defer l.inBody.Add(-1)
	l.out <- *r
	return actor.Nodelete
}

func TestGoDeliversBlockingResults(t *testing.T) {
	sys := start(t, actor.WithWorkers(2))
	l, _ := actor.Spawn(sys, &loader{out: make(chan actor.Reply[string], 20)})
	l.done, _ = actor.Bind(l, (*loader).onDone)
	ld, _ := actor.Bind(l, (*loader).onLoad)
	for i := 0; i < 10; i++ {
		require.NoError(t, ld.Send(&load{name: "x"}))
	}
	for i := 0; i < 10; i++ {
		r := <-l.out
		require.NoError(t, r.Err)
		assert.Equal(t, "loaded x", r.Value)
	}
	require.NoError(t, ld.Send(&load{name: "y", panic: true}))
	r := <-l.out
	var pe *actor.PanicError
	require.ErrorAs(t, r.Err, &pe)
	assert.Equal(t, "blocking work failed", pe.Value)
	require.NoError(t, actor.SendPill(l, actor.FinishedMsg))
	stop(t, sys)
	var zero actor.Port[*actor.Reply[int]]
	assert.ErrorIs(t, actor.Go(zero, func() (int, error) { return 0, nil }), actor.ErrNotSpawned)
}

func TestAskFuncCompletesOnce(t *testing.T) {
	sys := start(t, actor.WithWorkers(2))
	a, _ := actor.Spawn(sys, &account{balance: 7})
	get, _ := actor.Bind(a, (*account).onGet)
	cls, _ := actor.Bind(a, (*account).onClose)
	var calls atomic.Int32
	res := make(chan error, 3)
	require.NoError(t, actor.AskFunc(get, &getBalance{}, time.Second, func(v int, err error) {
		calls.Add(1)
		assert.Equal(t, 7, v)
		res <- err
	}))
	assert.NoError(t, <-res)
	// Terminated without replying: the function gets ErrTerminated.
	require.NoError(t, actor.AskFunc(cls, &closeAccount{}, time.Second, func(_ int, err error) { calls.Add(1); res <- err }))
	assert.ErrorIs(t, <-res, actor.ErrTerminated)
	// The actor is gone: the send fails and the function is not called.
	assert.ErrorIs(t, actor.AskFunc(get, &getBalance{}, 0, func(int, error) { calls.Add(1) }), actor.ErrTerminated)
	// A timeout.
	h := &account{hold: make(chan struct{})}
	actor.Spawn(sys, h)
	hget, _ := actor.Bind(h, (*account).onGet)
	require.NoError(t, actor.AskFunc(hget, &getBalance{}, 10*time.Millisecond, func(_ int, err error) { calls.Add(1); res <- err }))
	assert.ErrorIs(t, <-res, context.DeadlineExceeded)
	close(h.hold) // the late reply is dropped, counted
	require.NoError(t, actor.SendPill(h, actor.FinishedMsg))
	stop(t, sys)
	assert.EqualValues(t, 3, calls.Load())
	st := actortest.MustStats(sys)
	assert.EqualValues(t, 1, st.LateReplies)
}

func TestInBehaviour(t *testing.T) {
	assert.False(t, actor.InBehaviour())
	sys := start(t, actor.WithWorkers(1))
	r := &recorder{}
	actor.Spawn(sys, r)
	got := make(chan bool, 1)
	p, _ := actor.Bind(r, func(_ *recorder, m *probeIn) actor.Allocation { got <- actor.InBehaviour(); return actor.Finished })
	require.NoError(t, p.Send(&probeIn{}))
	assert.True(t, <-got)
	stop(t, sys)
}

type probeIn struct{ actor.Message }
