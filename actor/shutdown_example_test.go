package actor_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/actord/actord/actor"
)

// Session never ends by itself; its Stopped hook says why it ended.
type Session struct {
	actor.Actor
	id   int
	seen int
	held *Quote
	kept chan struct{} // told when a request is kept
}

type Touch struct{ actor.Message }

// Quote is a request a Session keeps, to answer later.
type Quote struct{ actor.Request[int] }

func (s *Session) Touch(*Touch) actor.Allocation { s.seen++; return actor.Nodelete }

func (s *Session) Quote(m *Quote) actor.Allocation {
	s.held = m // answered later, or failed when the session ends
	close(s.kept)
	return actor.Nodelete
}

func (s *Session) Stopped(r actor.Reason) {
	fmt.Printf("session %d stopped (%v) after %d touches\n", s.id, r, s.seen)
}

// Shutdown asks every live actor to stop, after the messages queued for
// it, then stops the system; Stop alone would wait for the sessions to end
// by themselves.
func ExampleSystem_Shutdown() {
	sys, _ := actor.Start(actor.WithWorkers(1))
	s, _ := actor.Spawn(sys, &Session{id: 1})
	for range 3 {
		actor.Send(s, &Touch{}, (*Session).Touch)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fmt.Println("shutdown:", sys.Shutdown(ctx))
	// Output:
	// session 1 stopped (system_stopped) after 3 touches
	// shutdown: <nil>
}

// A request that an actor keeps is failed when the actor ends, instead of
// waiting for the asker's deadline.
func ExampleAsk_keptRequest() {
	sys, _ := actor.Start(actor.WithWorkers(1))
	s, _ := actor.Spawn(sys, &Session{id: 2, kept: make(chan struct{})})
	p, _ := actor.Bind(s, (*Session).Quote)
	go func() {
		<-s.kept
		actor.SendPill(s, actor.FinishedMsg)
	}()
	_, err := actor.Ask(context.Background(), p, &Quote{})
	fmt.Println(errors.Is(err, actor.ErrTerminated))
	fmt.Println("shutdown:", sys.Shutdown(context.Background()))
	// Output:
	// session 2 stopped (normal) after 0 touches
	// true
	// shutdown: <nil>
}
