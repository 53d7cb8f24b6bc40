package actor_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/executor"
)

// Printer is an actor type: a struct embedding actor.Actor.
type Printer struct {
	actor.Actor
	lines int
}

// Str and Int are message types: structs embedding actor.Message.
type Str struct {
	actor.Message
	S string
}

type Int struct {
	actor.Message
	I int
}

// Behaviours are functions (here, methods) of an actor and a message.
func (p *Printer) OnStr(m *Str) actor.Allocation {
	p.lines++
	fmt.Printf("string message %q\n", m.S)
	return actor.Nodelete // keep receiving
}

func (p *Printer) OnInt(m *Int) actor.Allocation {
	p.lines++
	fmt.Println("integer message", m.I)
	return actor.Nodelete
}

// The C∀ chapter's first example: one actor, two message types, a poison pill.
func Example() {
	sys, err := actor.Start()
	if err != nil {
		panic(err)
	}
	p, _ := actor.Spawn(sys, &Printer{})
	hello, answer := &Str{S: "Hello World"}, &Int{I: 42}
	actor.Send(p, hello, (*Printer).OnStr)
	actor.Send(p, answer, (*Printer).OnInt)
	actor.Send(p, answer, (*Printer).OnInt)
	actor.SendPill(p, actor.FinishedMsg) // terminate after the messages above
	if err := sys.Stop(context.Background()); err != nil {
		panic(err)
	}
	fmt.Println("lines:", p.lines)
	// Output:
	// string message "Hello World"
	// integer message 42
	// integer message 42
	// lines: 3
}

// Job is a pooled message that travels a pipeline of stages.
type Job struct {
	actor.Message
	N    int
	pool *sync.Pool
}

// Release is the message's Release hook: back to its pool.
func (j *Job) Release() { j.pool.Put(j) }

// Stage adds to a job and forwards it to the next stage; the last stage
// records the result and gives the job back to the pool.
type Stage struct {
	actor.Actor
	add     int
	next    *Stage
	results chan int
}

func (s *Stage) OnJob(j *Job) actor.Allocation {
	j.N += s.add
	if s.next != nil {
		// Forwarding moves the job: from here it is the next stage's.
		if err := actor.Send(s.next, j, (*Stage).OnJob); err != nil {
			panic(err)
		}
		return actor.Nodelete
	}
	s.results <- j.N
	j.SetAllocation(actor.Delete) // after this behaviour: Release, back to the pool
	return actor.Nodelete
}

// A pooled message forwarded through a pipeline: each stage owns the job
// while its behaviour runs, forwarding hands it on, and only the last
// receiver sets Delete (see "Message lifetime" in the package docs).
func Example_messageLifetime() {
	sys, err := actor.Start()
	if err != nil {
		panic(err)
	}
	results := make(chan int, 3)
	last, _ := actor.Spawn(sys, &Stage{add: 100, results: results})
	first, _ := actor.Spawn(sys, &Stage{add: 10, next: last})
	pool := &sync.Pool{}
	pool.New = func() any { return &Job{pool: pool} }
	for i := 1; i <= 3; i++ {
		j := pool.Get().(*Job)
		j.N = i
		actor.Send(first, j, (*Stage).OnJob)
	}
	for i := 0; i < 3; i++ {
		fmt.Println(<-results)
	}
	actor.SendPill(first, actor.FinishedMsg)
	actor.SendPill(last, actor.FinishedMsg)
	if err := sys.Stop(context.Background()); err != nil {
		panic(err)
	}
	// Output:
	// 111
	// 112
	// 113
}

// Options compose: each sets only what it names, WithConfig included.
func ExampleWithConfig() {
	sys, err := actor.Start(
		actor.WithWorkers(2),
		actor.WithConfig(executor.Config{QueuesPerWorker: 4, Park: executor.ParkChannel}),
		actor.WithIdle(32, 0),
	)
	if err != nil {
		panic(err)
	}
	cfg, _ := sys.Config()
	fmt.Println(cfg.Workers, cfg.Queues, cfg.SpinPasses, cfg.Park)
	if err := sys.Stop(context.Background()); err != nil {
		panic(err)
	}
	var zero actor.System
	_, err = zero.Stats()
	fmt.Println(errors.Is(err, actor.ErrNotStarted))
	// Output:
	// 2 8 32 chan
	// true
}

// Account is an actor that holds a balance.
type Account struct {
	actor.Actor
	balance int
}

// Deposit is a one-way message; Balance is a request whose reply is an int.
type Deposit struct {
	actor.Message
	N int
}

type Balance struct {
	actor.Request[int]
}

func (a *Account) OnDeposit(m *Deposit) actor.Allocation {
	a.balance += m.N
	return actor.Nodelete
}

func (a *Account) OnBalance(m *Balance) actor.Allocation {
	m.Reply(a.balance) // accepts only an int
	return actor.Nodelete
}

// A port is a reference typed by message: its holder can send deposits to
// the account without knowing the Account type.
func ExampleBind() {
	sys, _ := actor.Start()
	a, _ := actor.Spawn(sys, &Account{})
	deposits, _ := actor.Bind(a, (*Account).OnDeposit) // an actor.Port[*Deposit]
	pay := func(p actor.Port[*Deposit], n int) error { return p.Send(&Deposit{N: n}) }
	pay(deposits, 10)
	pay(deposits, 32)
	balance, _ := actor.Bind(a, (*Account).OnBalance)
	n, _ := actor.Ask(context.Background(), balance, &Balance{})
	fmt.Println(n)
	actor.SendPill(a, actor.FinishedMsg)
	fmt.Println(sys.Stop(context.Background()), deposits.Send(&Deposit{N: 1}))
	// Output:
	// 42
	// <nil> executor: actor terminated
}

// Ask waits for the reply, or for the context to end.
func ExampleAsk() {
	sys, _ := actor.Start()
	a, _ := actor.Spawn(sys, &Account{balance: 7})
	balance, _ := actor.Bind(a, (*Account).OnBalance)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	n, err := actor.Ask(ctx, balance, &Balance{})
	fmt.Println(n, err)
	actor.SendPill(a, actor.FinishedMsg)
	sys.Stop(context.Background())
	_, err = actor.Ask(ctx, balance, &Balance{})
	fmt.Println(err)
	// Output:
	// 7 <nil>
	// executor: actor terminated
}

// Auditor asks an account from inside a behaviour: the reply comes back as a
// message, and no worker waits for it.
type Auditor struct {
	actor.Actor
	account actor.Port[*Balance]
	replies actor.Port[*actor.Reply[int]]
	report  chan string
}

type Audit struct{ actor.Message }

func (a *Auditor) OnAudit(*Audit) actor.Allocation {
	actor.AskAsync(a.account, &Balance{}, a.replies, time.Second)
	return actor.Nodelete
}

func (a *Auditor) OnBalance(r *actor.Reply[int]) actor.Allocation {
	if r.Err != nil {
		a.report <- "audit failed: " + r.Err.Error()
	} else {
		a.report <- fmt.Sprint("audited balance: ", r.Value)
	}
	return actor.Finished
}

func ExampleAskAsync() {
	sys, _ := actor.Start()
	acct, _ := actor.Spawn(sys, &Account{balance: 99})
	aud, _ := actor.Spawn(sys, &Auditor{report: make(chan string, 1)})
	aud.account, _ = actor.Bind(acct, (*Account).OnBalance)
	aud.replies, _ = actor.Bind(aud, (*Auditor).OnBalance)
	actor.Send(aud, &Audit{}, (*Auditor).OnAudit)
	fmt.Println(<-aud.report)
	actor.SendPill(acct, actor.FinishedMsg)
	sys.Stop(context.Background())
	// Output:
	// audited balance: 99
}

// Fetcher does blocking work with actor.Go: the function runs off the
// workers and its result arrives as a message.
type Fetcher struct {
	actor.Actor
	done actor.Port[*actor.Reply[string]]
	out  chan string
}

type Fetch struct {
	actor.Message
	Key string
}

func (f *Fetcher) OnFetch(m *Fetch) actor.Allocation {
	key := m.Key
	actor.Go(f.done, func() (string, error) {
		time.Sleep(time.Millisecond) // stands for a database call
		return "value of " + key, nil
	})
	return actor.Nodelete // the worker is free at once
}

func (f *Fetcher) OnDone(r *actor.Reply[string]) actor.Allocation {
	f.out <- r.Value
	return actor.Finished
}

func ExampleGo() {
	sys, _ := actor.Start()
	f, _ := actor.Spawn(sys, &Fetcher{out: make(chan string, 1)})
	f.done, _ = actor.Bind(f, (*Fetcher).OnDone)
	actor.Send(f, &Fetch{Key: "k"}, (*Fetcher).OnFetch)
	fmt.Println(<-f.out)
	sys.Stop(context.Background())
	// Output:
	// value of k
}

// Task is a message for Worker; Fail makes its behaviour panic.
type Task struct {
	actor.Message
	N    int
	Fail bool
}

// Worker sums jobs and panics on a failing one.
type Worker struct {
	actor.Actor
	sum  int
	done chan int
}

func (w *Worker) OnJob(m *Task) actor.Allocation {
	if m.Fail {
		panic("bad job")
	}
	w.sum += m.N
	if m.N == 0 {
		w.done <- w.sum
	}
	return actor.Nodelete
}

// A restarting actor: the failing message is dropped, the state is reset,
// and the messages queued behind it are all delivered.
func ExampleWithRestart() {
	sys, _ := actor.Start(actor.WithWorkers(1))
	w := &Worker{done: make(chan int)}
	actor.Spawn(sys, w, actor.WithRestart(func() { w.sum = 0 }, actor.Budget{MaxRestarts: 3, Within: time.Minute}))
	actor.Send(w, &Task{N: 5}, (*Worker).OnJob)
	actor.Send(w, &Task{Fail: true}, (*Worker).OnJob) // restart: sum back to 0
	actor.Send(w, &Task{N: 2}, (*Worker).OnJob)
	actor.Send(w, &Task{N: 0}, (*Worker).OnJob) // report
	fmt.Println("sum after the restart:", <-w.done)
	actor.SendPill(w, actor.FinishedMsg)
	st, _ := sys.Stats()
	fmt.Println("restarts:", st.Total().Restarts)
	sys.Stop(context.Background())
	// Output:
	// sum after the restart: 2
	// restarts: 1
}

// A budget of no restarts: the Restart directive (here, say, from a
// configuration that sets the budget to zero) lets the first panic
// terminate the actor, and watchers learn that its budget is exhausted.
func ExampleBudget_noRestarts() {
	sys, _ := actor.Start(actor.WithWorkers(1), actor.WithErrorHandler(func(error) {}))
	w := &Worker{done: make(chan int)}
	actor.Spawn(sys, w, actor.WithRestart(func() { w.sum = 0 }, actor.Budget{MaxRestarts: actor.NoRestarts}))
	p, _ := actor.Bind(w, (*Worker).OnJob)
	ended, _ := actor.WatchChan(p)
	actor.Send(w, &Task{Fail: true}, (*Worker).OnJob)
	fmt.Println("terminated:", (<-ended).Reason)
	st, _ := sys.Stats()
	fmt.Println("restarts:", st.Total().Restarts)
	err := sys.Stop(context.Background())
	fmt.Println("Stop reports the panic:", errors.Is(err, actor.ErrPanic))
	// Output:
	// terminated: budget_exhausted
	// restarts: 0
	// Stop reports the panic: true
}

// A resuming actor keeps its state; only the failing message is lost.
func ExampleWithResume() {
	sys, _ := actor.Start(actor.WithWorkers(1))
	w := &Worker{done: make(chan int)}
	actor.Spawn(sys, w, actor.WithResume())
	actor.Send(w, &Task{N: 5}, (*Worker).OnJob)
	actor.Send(w, &Task{Fail: true}, (*Worker).OnJob)
	actor.Send(w, &Task{N: 2}, (*Worker).OnJob)
	actor.Send(w, &Task{N: 0}, (*Worker).OnJob)
	fmt.Println("sum:", <-w.done)
	actor.SendPill(w, actor.FinishedMsg)
	sys.Stop(context.Background())
	// Output:
	// sum: 7
}

// Boss supervises by escalation: it restarts a failed worker.
type Boss struct {
	actor.Actor
	seen chan string
}

func (b *Boss) OnFailure(f *actor.Failure) actor.Allocation {
	b.seen <- fmt.Sprint("failure: ", f.Err.Value)
	f.Restart()
	return actor.Nodelete
}

// An escalating actor is suspended until its supervisor decides.
func ExampleWithEscalate() {
	sys, _ := actor.Start(actor.WithWorkers(1))
	boss := &Boss{seen: make(chan string, 1)}
	actor.Spawn(sys, boss)
	sup, _ := actor.Bind(boss, (*Boss).OnFailure)
	w := &Worker{done: make(chan int)}
	actor.Spawn(sys, w, actor.WithEscalate(sup, func() { w.sum = 100 }))
	actor.Send(w, &Task{N: 5}, (*Worker).OnJob)
	actor.Send(w, &Task{Fail: true}, (*Worker).OnJob)
	actor.Send(w, &Task{N: 0}, (*Worker).OnJob) // waits for the decision
	fmt.Println(<-boss.seen)
	fmt.Println("sum after the supervisor's restart:", <-w.done)
	actor.SendPill(w, actor.FinishedMsg)
	actor.SendPill(boss, actor.FinishedMsg)
	sys.Stop(context.Background())
	// Output:
	// failure: bad job
	// sum after the supervisor's restart: 100
}

// A goroutine watches an actor and learns why it terminated.
func ExampleWatchChan() {
	sys, _ := actor.Start(actor.WithWorkers(1))
	w := &Worker{done: make(chan int)}
	actor.Spawn(sys, w)
	p, _ := actor.Bind(w, (*Worker).OnJob)
	gone, _ := actor.WatchChan(p)
	p.Send(&Task{Fail: true}) // no directive: the panic terminates it
	t := <-gone
	fmt.Println("terminated:", t.Reason)
	fmt.Println("send after:", p.Send(&Task{N: 1}))
	sys.Stop(context.Background()) // reports the panic
	// Output:
	// terminated: panic
	// send after: executor: actor terminated
}

// Slow consumes slowly: each delivery says it began, then waits for gate.
type Slow struct {
	actor.Actor
	began chan int
	gate  chan struct{}
}

func (s *Slow) OnTask(m *Task) actor.Allocation {
	s.began <- m.N
	<-s.gate
	return actor.Nodelete
}

// A bounded mailbox refuses sends past its bound; SendContext waits for
// room instead.
func ExampleWithMailbox() {
	sys, _ := actor.Start(actor.WithWorkers(1))
	s := &Slow{began: make(chan int, 10), gate: make(chan struct{})}
	actor.Spawn(sys, s, actor.WithMailbox(2, actor.Reject))
	p, _ := actor.Bind(s, (*Slow).OnTask)
	p.Send(&Task{N: 1})
	<-s.began // task 1 is being delivered: the mailbox is empty
	fmt.Println(p.Send(&Task{N: 2}), p.Send(&Task{N: 3}))
	fmt.Println(p.Send(&Task{N: 4}))
	waited := make(chan error)
	go func() { waited <- p.SendContext(context.Background(), &Task{N: 4}) }()
	close(s.gate) // let everything through
	fmt.Println("SendContext:", <-waited)
	fmt.Println(<-s.began, <-s.began, <-s.began)
	st, _ := sys.Stats()
	fmt.Println("rejected:", st.MailboxRejected)
	actor.SendPill(s, actor.FinishedMsg)
	sys.Stop(context.Background())
	// Output:
	// <nil> <nil>
	// executor: mailbox full
	// SendContext: <nil>
	// 2 3 4
	// rejected: 1
}

// Conn has lifecycle hooks.
type Conn struct{ actor.Actor }

func (c *Conn) Started()                 { fmt.Println("started") }
func (c *Conn) Stopped(why actor.Reason) { fmt.Println("stopped:", why) }
func (c *Conn) OnJob(*Task) actor.Allocation {
	fmt.Println("job")
	return actor.Finished
}

// Started runs before the first message, Stopped at the termination.
func ExampleStarter() {
	sys, _ := actor.Start(actor.WithWorkers(1))
	c := &Conn{}
	actor.Spawn(sys, c)
	actor.Send(c, &Task{}, (*Conn).OnJob)
	sys.Stop(context.Background())
	// Output:
	// started
	// job
	// stopped: normal
}

// AskFunc bridges to code outside the actors: the function receives the
// typed reply on the goroutine that completes the request.
func ExampleAskFunc() {
	sys, _ := actor.Start()
	acct, _ := actor.Spawn(sys, &Account{balance: 42})
	p, _ := actor.Bind(acct, (*Account).OnBalance)
	answers := make(chan string, 1) // room for the one answer: f never blocks
	actor.AskFunc(p, &Balance{}, time.Second, func(v int, err error) {
		answers <- fmt.Sprint("balance ", v, ", error ", err)
	})
	fmt.Println(<-answers)
	actor.SendPill(acct, actor.FinishedMsg)
	sys.Stop(context.Background())
	// Output:
	// balance 42, error <nil>
}

// Spawn enrols an actor value created beforehand; an actor is alive from
// Spawn until it terminates, and may be spawned again after that.
func ExampleSpawn() {
	sys, _ := actor.Start(actor.WithWorkers(1))
	p, err := actor.Spawn(sys, &Printer{})
	fmt.Println("spawned:", err, p.Alive())
	_, err = actor.Spawn(sys, p)
	fmt.Println("again while alive:", errors.Is(err, actor.ErrAlreadySpawned))
	actor.SendPill(p, actor.FinishedMsg)
	sys.Stop(context.Background())
	fmt.Println("alive after Stop:", p.Alive())
	// Output:
	// spawned: <nil> true
	// again while alive: true
	// alive after Stop: false
}

// Send is statically typed (the behaviour's actor and message types must
// match) and reports why a message cannot be delivered.
func ExampleSend() {
	sys, _ := actor.Start(actor.WithWorkers(1))
	p := &Printer{}
	err := actor.Send(p, &Str{S: "too early"}, (*Printer).OnStr)
	fmt.Println("before Spawn:", errors.Is(err, actor.ErrNotSpawned))
	actor.Spawn(sys, p)
	actor.Send(p, &Int{I: 7}, (*Printer).OnInt)
	actor.SendPill(p, actor.FinishedMsg)
	sys.Stop(context.Background())
	err = actor.Send(p, &Int{I: 8}, (*Printer).OnInt)
	fmt.Println("after its termination:", errors.Is(err, actor.ErrTerminated))
	// Output:
	// before Spawn: true
	// integer message 7
	// after its termination: true
}

// A panicking behaviour is recovered: the handler sees it as it happens,
// the actor terminates (no supervision option here), and Stop reports it.
func ExampleWithErrorHandler() {
	seen := make(chan error, 1)
	sys, _ := actor.Start(actor.WithWorkers(1), actor.WithErrorHandler(func(err error) { seen <- err }))
	w := &Worker{done: make(chan int)}
	actor.Spawn(sys, w)
	actor.Send(w, &Task{Fail: true}, (*Worker).OnJob)
	var pe *actor.PanicError
	if errors.As(<-seen, &pe) {
		fmt.Println("handler: panic value", pe.Value)
	}
	err := sys.Stop(context.Background())
	fmt.Println("Stop reports it:", errors.Is(err, actor.ErrPanic))
	// Output:
	// handler: panic value bad job
	// Stop reports it: true
}

// Mourner is told when the actors it watches terminate.
type Mourner struct {
	actor.Actor
	told chan actor.Reason
}

func (m *Mourner) OnTerminated(t *actor.Terminated) actor.Allocation {
	m.told <- t.Reason
	return actor.Nodelete
}

// An actor watches another through a port of its own: the notification
// is a message like any other.
func ExampleWatch() {
	sys, _ := actor.Start(actor.WithWorkers(1))
	m := &Mourner{told: make(chan actor.Reason, 1)}
	actor.Spawn(sys, m)
	notify, _ := actor.Bind(m, (*Mourner).OnTerminated)
	p, _ := actor.Spawn(sys, &Printer{})
	target, _ := actor.Bind(p, (*Printer).OnStr)
	actor.Watch(target, notify)
	actor.SendPill(p, actor.FinishedMsg)
	fmt.Println("terminated:", <-m.told)
	actor.SendPill(m, actor.FinishedMsg)
	sys.Stop(context.Background())
	// Output:
	// terminated: normal
}

// SendContext waits for room in a full bounded mailbox until its context
// ends; the error then wraps both ErrMailboxFull and the context's cause.
func ExampleSendContext() {
	sys, _ := actor.Start(actor.WithWorkers(1))
	s := &Slow{began: make(chan int, 10), gate: make(chan struct{})}
	actor.Spawn(sys, s, actor.WithMailbox(1, actor.Reject))
	actor.Send(s, &Task{N: 1}, (*Slow).OnTask)
	<-s.began                                  // task 1 is being delivered
	actor.Send(s, &Task{N: 2}, (*Slow).OnTask) // fills the mailbox

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err := actor.SendContext(ctx, s, &Task{N: 3}, (*Slow).OnTask)
	fmt.Println(errors.Is(err, actor.ErrMailboxFull), errors.Is(err, context.DeadlineExceeded))

	close(s.gate) // the actor drains its mailbox: room again
	err = actor.SendContext(context.Background(), s, &Task{N: 3}, (*Slow).OnTask)
	fmt.Println("after the gate opened:", err)
	fmt.Println(<-s.began, <-s.began)
	actor.SendPill(s, actor.FinishedMsg)
	sys.Stop(context.Background())
	// Output:
	// true true
	// after the gate opened: <nil>
	// 2 3
}

// Probe reports where its behaviour runs.
type Probe struct {
	actor.Actor
	balance actor.Port[*Balance]
}

func (p *Probe) OnTask(*Task) actor.Allocation {
	fmt.Println("in a behaviour:", actor.InBehaviour())
	// A blocking call here would hold up the worker; Ask refuses it.
	_, err := actor.Ask(context.Background(), p.balance, &Balance{})
	fmt.Println("Ask from a behaviour:", errors.Is(err, actor.ErrAskInBehaviour))
	return actor.Finished
}

// InBehaviour tells a library whether it runs inside a behaviour, where it
// must not block.
func ExampleInBehaviour() {
	sys, _ := actor.Start(actor.WithWorkers(1))
	fmt.Println("in a behaviour:", actor.InBehaviour())
	acct, _ := actor.Spawn(sys, &Account{})
	balance, _ := actor.Bind(acct, (*Account).OnBalance)
	p, _ := actor.Spawn(sys, &Probe{balance: balance})
	actor.Send(p, &Task{}, (*Probe).OnTask)
	actor.SendPill(acct, actor.FinishedMsg)
	sys.Stop(context.Background())
	// Output:
	// in a behaviour: false
	// in a behaviour: true
	// Ask from a behaviour: true
}

// Unregister takes a name away from an actor that is still alive, so that
// another can take it.
func ExampleUnregister() {
	sys, _ := actor.Start(actor.WithWorkers(1))
	a, _ := actor.Spawn(sys, &greeter{})
	b, _ := actor.Spawn(sys, &greeter{})
	pa, _ := actor.Bind(a, (*greeter).onGreet)
	pb, _ := actor.Bind(b, (*greeter).onGreet)
	actor.Register(sys, "greeter", pa)
	fmt.Println(actor.Unregister(sys, "greeter"))
	fmt.Println(actor.Register(sys, "greeter", pb))
	p, _ := actor.Lookup[*greet](sys, "greeter")
	fmt.Println("b holds the name:", p == pb)
	fmt.Println(errors.Is(actor.Unregister(sys, "nobody"), actor.ErrNoName))
	actor.SendPill(a, actor.FinishedMsg)
	actor.SendPill(b, actor.FinishedMsg)
	sys.Stop(context.Background())
	// Output:
	// <nil>
	// <nil>
	// b holds the name: true
	// true
}

// Ledger answers a balance request only once its books are open: its
// behaviour blocks (which a behaviour should not do: it holds a worker).
type Ledger struct {
	actor.Actor
	open chan struct{}
}

func (l *Ledger) OnBalance(m *Balance) actor.Allocation {
	<-l.open
	m.Reply(0)
	return actor.Nodelete
}

// WithoutCallerHelp: Ask never runs the behaviour on the asking goroutine,
// so its context's deadline ends the wait even while the behaviour runs.
// (With callers that help, the asker may run the blocked behaviour itself
// and notice its deadline only when the behaviour returns.)
func ExampleWithoutCallerHelp() {
	sys, _ := actor.Start(actor.WithWorkers(1), actor.WithoutCallerHelp())
	l, _ := actor.Spawn(sys, &Ledger{open: make(chan struct{})})
	balance, _ := actor.Bind(l, (*Ledger).OnBalance)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err := actor.Ask(ctx, balance, &Balance{})
	fmt.Println(err)
	close(l.open)
	actor.SendPill(l, actor.FinishedMsg)
	fmt.Println(sys.Stop(context.Background()))
	// Output:
	// context deadline exceeded
	// <nil>
}

// WorkerStats.CallerVisits: the visits that goroutines waiting in Ask made
// as a parked worker, delivering their requests themselves. How many there
// are depends on timing (a worker that is awake is not borrowed) and on
// the platform (without goroutine identity callers do not help), so this
// example has no fixed output.
func ExampleWorkerStats_callerVisits() {
	sys, _ := actor.Start(actor.WithWorkers(1))
	l, _ := actor.Spawn(sys, &Ledger{open: make(chan struct{})})
	close(l.open) // its books are open: it answers at once
	balance, _ := actor.Bind(l, (*Ledger).OnBalance)
	for range 10 {
		time.Sleep(time.Millisecond) // time for the worker to park
		actor.Ask(context.Background(), balance, &Balance{})
	}
	st, _ := sys.Stats()
	fmt.Printf("%d of 10 asks delivered by their callers\n", st.Total().CallerVisits)
	actor.SendPill(l, actor.FinishedMsg)
	sys.Stop(context.Background())
}
