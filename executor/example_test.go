package executor_test

import (
	"context"
	"errors"
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

// Start takes a Config whose zero fields mean the defaults; Stats reads
// the counters the workers publish when asked.
func ExampleStart() {
	e, err := executor.Start(executor.Config{
		Workers:       2,                    // two worker goroutines, each locked to an OS thread
		Queues:        8,                    // mailboxes that actors are placed on, four per worker
		QueueCapacity: 64,                   // initial capacity of each mailbox's copy queue
		Park:          executor.ParkChannel, // idle workers sleep on a channel
	})
	if err != nil {
		panic(err)
	}
	c := &counter{done: make(chan int, 1)}
	executor.Spawn(e, &c.cell, c)
	executor.Send(&c.cell, c, &add{n: 6}, (*counter).onAdd)
	<-c.done
	e.Stop(context.Background())
	st := e.Stats()
	fmt.Println("workers:", len(st.Workers), "queues:", st.Queues)
	total := st.Total()
	fmt.Println("sent:", st.MessagesSent, "processed:", total.MessagesProcessed())
	_, err = executor.Start(executor.Config{Workers: 4, Queues: 2})
	fmt.Println(errors.Is(err, executor.ErrConfig))
	// Output:
	// workers: 2 queues: 8
	// sent: 1 processed: 1
	// true
}

// SpawnWith spawns an actor with a failure directive and a bounded
// mailbox: a panic drops the failing message and keeps the actor.
func ExampleSpawnWith() {
	e, _ := executor.Start(executor.Config{Workers: 1})
	c := &counter{done: make(chan int, 1)}
	executor.SpawnWith(e, &c.cell, c, executor.SpawnOptions{
		OnPanic:      executor.Resume,
		MailboxBound: 100,
		Overflow:     executor.Reject,
	})
	executor.Send(&c.cell, c, &add{n: 2}, (*counter).onAdd)
	executor.Send(&c.cell, c, &add{n: -1000}, (*counter).panicky)
	executor.Send(&c.cell, c, &add{n: 4}, (*counter).onAdd)
	fmt.Println(<-c.done)
	err := e.Stop(context.Background())
	fmt.Println("resumed:", e.Stats().Total().Resumes, "stop:", err)
	// Output:
	// 6
	// resumed: 1 stop: <nil>
}

func (c *counter) panicky(m *add) executor.Allocation {
	if m.n < 0 {
		panic("negative")
	}
	return c.onAdd(m)
}
