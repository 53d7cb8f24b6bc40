package actor_test

import (
	"context"
	"fmt"
	"time"

	"github.com/actord/actord/actor"
)

// Visits is an entity per user that counts the user's visits; it saves
// nothing and ends when idle.
type Visits struct {
	actor.Actor
	user  string
	n     int
	ended chan<- string
}

// Visit is one visit of the user.
type Visit struct{ actor.Message }

func (v *Visits) OnVisit(*Visit) actor.Allocation { v.n++; return actor.Nodelete }

// Stopped runs when the entity ends, passivation included: the place to
// save its state.
func (v *Visits) Stopped(why actor.Reason) {
	v.ended <- fmt.Sprintf("%s: %d visits, %v", v.user, v.n, why)
}

// An entity spawned WithPassivation ends by itself once idle (no message
// for the duration), and the next message sent to its name through the
// Entities spawns the next incarnation.
func ExampleWithPassivation() {
	sys, _ := actor.Start()
	ended := make(chan string, 1)
	visits := actor.NewEntities(sys, func(user string) *Visits {
		return &Visits{user: user, ended: ended}
	}, actor.WithPassivation(20*time.Millisecond))
	ctx := context.Background()

	for range 3 {
		_ = actor.EntitySend(ctx, visits, "alice", &Visit{}, (*Visits).OnVisit)
	}
	fmt.Println(<-ended) // 20ms without a visit: passivated

	// The name is free: this spawns alice's next incarnation.
	_ = actor.EntitySend(ctx, visits, "alice", &Visit{}, (*Visits).OnVisit)
	fmt.Println(<-ended)

	_ = sys.Stop(ctx) // nothing is left alive
	// Output:
	// alice: 3 visits, passivated
	// alice: 1 visits, passivated
}
