package actor_test

import (
	"context"
	"fmt"

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
	msg, _ := actor.Ask(ctx, closePort, &Close{})
	fmt.Println(msg)

	// Get waits for the end of the closed account, then spawns the next.
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
