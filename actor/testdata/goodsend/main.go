// Command goodsend is the control for TestUnsupportedSendsDoNotCompile: the
// same program as badsend with only well-typed sends. It must build.
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

func (*Printer) OnStr(*Str) actor.Allocation { return actor.Nodelete }
func (*Printer) OnInt(*Int) actor.Allocation { return actor.Nodelete }

func main() {
	sys, _ := actor.Start()
	p, _ := actor.Spawn(sys, &Printer{})
	actor.Send(p, &Str{S: "hi"}, (*Printer).OnStr)
	actor.Send(p, &Int{I: 1}, (*Printer).OnInt)
	actor.SendPill(p, actor.FinishedMsg)
	sys.Stop(context.Background())
}
