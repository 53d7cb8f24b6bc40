package actor_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/actord/actord/actor"
)

// Close ends the account; the next Get of its id spawns a new one.
type Close struct{ actor.Request[string] }

func (a *Account) OnClose(m *Close) actor.Allocation {
	m.Reply(fmt.Sprint("closed with ", a.balance))
	return actor.Finished
}

func ExampleEntities() {
	sys, _ := actor.Start()
	// Account (see ExampleBind) is the entity type: one actor per account
	// id, made by the factory on first use.
	accounts := actor.NewEntities(sys, func(id string) *Account { return &Account{} })
	ctx := context.Background()

	alice, _ := accounts.Get(ctx, "alice") // spawned here
	actor.Send(alice, &Deposit{N: 5}, (*Account).OnDeposit)
	again, _ := accounts.Get(ctx, "alice") // the same actor
	fmt.Println("same actor:", again == alice)

	// Every behaviour is reachable from the name.
	balance, _ := actor.EntityPort(ctx, accounts, "alice", (*Account).OnBalance)
	n, _ := actor.Ask(ctx, balance, &Balance{})
	fmt.Println("balance:", n)

	closePort, _ := actor.EntityPort(ctx, accounts, "alice", (*Account).OnClose)
	gone, _ := actor.WatchChan(closePort)
	msg, _ := actor.Ask(ctx, closePort, &Close{})
	fmt.Println(msg)
	// The reply comes before OnClose returns: until then, Get still finds
	// alice alive; while she ends, Get waits; once she has ended, Get
	// spawns the next incarnation.
	<-gone
	next, _ := accounts.Get(ctx, "alice")
	fmt.Println("new incarnation:", next != alice)
	balance, _ = actor.EntityPort(ctx, accounts, "alice", (*Account).OnBalance)
	n, _ = actor.Ask(ctx, balance, &Balance{})
	fmt.Println("balance:", n)

	actor.SendPill(next, actor.FinishedMsg)
	fmt.Println(sys.Stop(ctx))
	// Output:
	// same actor: true
	// balance: 5
	// closed with 5
	// new incarnation: true
	// balance: 0
	// <nil>
}

// A handler answers a request with its own error through Fail; the asker
// maps each error to an outcome (see Ask for the list).
func ExampleAsk_errors() {
	sys, _ := actor.Start(actor.WithErrorHandler(func(error) {}))
	l, _ := actor.Spawn(sys, &ledger{accounts: map[string]int{"a": 7}}, actor.WithRestart(nil, actor.Budget{}))
	p, _ := actor.Bind(l, (*ledger).onLookup)
	ctx := context.Background()
	for _, req := range []*lookupAcct{{name: "a"}, {name: "b"}, {panic: true}} {
		n, err := actor.Ask(ctx, p, req)
		var pe *actor.PanicError
		if errors.As(err, &pe) { // its message names the types, the worker and the value
			fmt.Println(status(err), n, "panic:", pe.Value)
			continue
		}
		fmt.Println(status(err), n, err)
	}
	actor.SendPill(l, actor.FinishedMsg)
	_, err := actor.Ask(ctx, p, &lookupAcct{name: "a"})
	fmt.Println(status(err), err)
	sys.Stop(ctx)
	// Output:
	// 200 7 <nil>
	// 404 0 no such account
	// 500 0 panic: ledger corrupted
	// 503 executor: actor terminated
}

// askWithin is a generic wrapper of Ask, constrained by actor.RequestPtr
// alone: it asks with a deadline of its own.
func askWithin[T, R any, Req actor.RequestPtr[T, R]](d time.Duration, p actor.Port[Req], req Req) (R, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return actor.Ask(ctx, p, req)
}

func ExampleRequestPtr() {
	sys, _ := actor.Start()
	a, _ := actor.Spawn(sys, &Account{})
	actor.Send(a, &Deposit{N: 3}, (*Account).OnDeposit)
	p, _ := actor.Bind(a, (*Account).OnBalance)
	n, err := askWithin(time.Second, p, &Balance{})
	fmt.Println(n, err)
	actor.SendPill(a, actor.FinishedMsg)
	sys.Stop(context.Background())
	// Output:
	// 3 <nil>
}

// EntitySend sends to an entity by name: Get, then Send, again if the
// incarnation Get found ended in between (it passivated, say), so that the
// message reaches the name's live actor, spawned if need be.
func ExampleEntitySend() {
	sys, _ := actor.Start()
	accounts := actor.NewEntities(sys, func(id string) *Account { return &Account{} })
	ctx := context.Background()

	for range 3 {
		if err := actor.EntitySend(ctx, accounts, "bob", &Deposit{N: 10}, (*Account).OnDeposit); err != nil {
			fmt.Println(err)
		}
	}
	balance, _ := actor.EntityPort(ctx, accounts, "bob", (*Account).OnBalance)
	n, _ := actor.Ask(ctx, balance, &Balance{})
	fmt.Println("balance:", n)
	fmt.Println(sys.Shutdown(ctx))
	// Output:
	// balance: 30
	// <nil>
}
