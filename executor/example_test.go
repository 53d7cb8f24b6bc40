package executor_test

import (
	"context"
	"fmt"

	"github.com/actord/actord/executor"
)

// counter is an actor for the engine's own API: a struct holding a Cell.
// (Programs normally embed actor.Actor instead, from package actor.)
type counter struct {
	cell executor.Cell
	n    int
	done chan int
}

type add struct {
	executor.Message
	n int
}

func (c *counter) onAdd(m *add) executor.Allocation {
	c.n += m.n
	if c.n >= 6 {
		c.done <- c.n
		return executor.Finished
	}
	return executor.Nodelete
}

// The engine's typed entry points: Spawn enrols an actor through its Cell,
// Send queues a message for a behaviour of exactly that actor and message
// type. The compiler checks the types; nothing takes an unsafe.Pointer.
func ExampleSend() {
	e, err := executor.Start(executor.Config{Workers: 1})
	if err != nil {
		panic(err)
	}
	c := &counter{done: make(chan int, 1)}
	if err := executor.Spawn(e, &c.cell, c); err != nil {
		panic(err)
	}
	for i := 1; i <= 3; i++ {
		if err := executor.Send(&c.cell, c, &add{n: i}, (*counter).onAdd); err != nil {
			panic(err)
		}
	}
	fmt.Println(<-c.done)
	if err := e.Stop(context.Background()); err != nil {
		panic(err)
	}
	fmt.Println(executor.Send(&c.cell, c, &add{n: 1}, (*counter).onAdd))
	// Output:
	// 6
	// executor: actor terminated
}
