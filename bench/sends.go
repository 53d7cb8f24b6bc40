package bench

import (
	"context"

	"github.com/actord/actord/actor"
)

// ---- static send -----------------------------------------------------------
//
// One actor and one preallocated message: the actor re-sends the message to
// itself n times. Measures the cost of a send (and its delivery) when nothing
// is allocated.

type staticActor struct {
	actor.Actor
	left int
}

type staticMsg struct{ actor.Message }

func (a *staticActor) receive(m *staticMsg) actor.Allocation {
	a.left--
	if a.left <= 0 {
		return actor.Finished
	}
	if err := actor.Send(a, m, (*staticActor).receive); err != nil {
		panic(err)
	}
	return actor.Nodelete
}

// StaticSend runs the static-send program for n messages on sys and stops it.
func StaticSend(sys *actor.System, n int) error {
	a, err := actor.Spawn(sys, &staticActor{left: n})
	if err != nil {
		return err
	}
	if err := actor.Send(a, &staticMsg{}, (*staticActor).receive); err != nil {
		return err
	}
	return sys.Stop(context.Background())
}

// StaticSendChan is StaticSend on a goroutine with a buffered channel: the
// goroutine receives the message and sends it back into its own channel.
func StaticSendChan(n int) {
	ch := make(chan *staticMsg, 1)
	done := make(chan struct{})
	go func() {
		for i := 1; ; i++ {
			m := <-ch
			if i >= n {
				close(done)
				return
			}
			ch <- m
		}
	}()
	ch <- &staticMsg{}
	<-done
}

// ---- dynamic send ----------------------------------------------------------
//
// Each receive creates a new actor and a new message, sends the message to
// the new actor and deletes itself: n hops. Measures a send together with
// actor creation and termination, the pattern of programs that create
// actors on the fly.

type dynamicActor struct {
	actor.Actor
	sys *actor.System // where to spawn the next hop
}

type dynamicMsg struct {
	actor.Message
	left int
}

func (a *dynamicActor) receive(m *dynamicMsg) actor.Allocation {
	if m.left > 1 {
		next, err := actor.Spawn(a.sys, &dynamicActor{sys: a.sys})
		if err != nil {
			panic(err)
		}
		if err := actor.Send(next, &dynamicMsg{left: m.left - 1}, (*dynamicActor).receive); err != nil {
			panic(err)
		}
	}
	m.SetAllocation(actor.Delete) // the message is done too: drop it
	return actor.Delete
}

// DynamicSend runs the dynamic-send program for n hops on sys and stops it.
func DynamicSend(sys *actor.System, n int) error {
	a, err := actor.Spawn(sys, &dynamicActor{sys: sys})
	if err != nil {
		return err
	}
	if err := actor.Send(a, &dynamicMsg{left: n}, (*dynamicActor).receive); err != nil {
		return err
	}
	return sys.Stop(context.Background())
}

// DynamicSendChan is DynamicSend on goroutines: each hop is a new goroutine
// with a new buffered channel and a new message; it receives, starts the
// next hop, sends to it and exits.
func DynamicSendChan(n int) {
	done := make(chan struct{})
	var hop func(ch chan *dynamicMsg)
	hop = func(ch chan *dynamicMsg) {
		m := <-ch
		if m.left <= 1 {
			close(done)
			return
		}
		next := make(chan *dynamicMsg, 1)
		go hop(next)
		next <- &dynamicMsg{left: m.left - 1}
	}
	first := make(chan *dynamicMsg, 1)
	go hop(first)
	first <- &dynamicMsg{left: n}
	<-done
}
