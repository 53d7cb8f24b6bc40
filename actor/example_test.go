package actor_test

import (
	"context"
	"fmt"

	"github.com/actord/actord/actor"
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
