// Command badsend must NOT compile: each marked line sends something the
// receiving actor has no behaviour for. TestUnsupportedSendsDoNotCompile
// builds it and expects an error on every marked line.
package main

import (
	"context"

	"github.com/actord/actord/actor"
)

type Printer struct{ actor.Actor }

type Str struct {
	actor.Message
	S string
}

type Int struct {
	actor.Message
	I int
}

// Float has no behaviour on Printer.
type Float struct {
	actor.Message
	F float64
}

// NotAMessage does not embed actor.Message.
type NotAMessage struct{ S string }

// NotAnActor does not embed actor.Actor.
type NotAnActor struct{ n int }

func (*Printer) OnStr(*Str) actor.Allocation { return actor.Nodelete }
func (*Printer) OnInt(*Int) actor.Allocation { return actor.Nodelete }

func (*NotAnActor) OnStr(*Str) actor.Allocation { return actor.Nodelete }

func main() {
	sys, _ := actor.Start()
	p, _ := actor.Spawn(sys, &Printer{})
	actor.Send(p, &Int{I: 1}, (*Printer).OnStr)                                                            // ERROR: Int sent to the Str behaviour
	actor.Send(p, &Float{F: 1}, (*Printer).OnInt)                                                          // ERROR: Printer has no behaviour for Float
	actor.Send(p, &NotAMessage{}, func(*Printer, *NotAMessage) actor.Allocation { return actor.Nodelete }) // ERROR: not a message
	actor.Send(&NotAnActor{}, &Str{}, (*NotAnActor).OnStr)                                                 // ERROR: not an actor
	sys.Stop(context.Background())
}
