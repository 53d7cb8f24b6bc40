package actortest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/actortest"
)

// The actor under test: a counter that adds numbers, answers requests for
// its total, and on a Flush sends its total to a port and starts again.

type Counter struct {
	actor.Actor
	total int
}

type Add struct {
	actor.Message
	N int
}

type Flush struct {
	actor.Message
	To actor.Port[*Total] // where the total goes: a collaborator, or a probe in a test
}

type Total struct {
	actor.Message
	N int
}

type GetTotal struct {
	actor.Request[int]
}

func (c *Counter) OnAdd(m *Add) actor.Allocation {
	c.total += m.N
	return actor.Nodelete
}

func (c *Counter) OnFlush(m *Flush) actor.Allocation {
	if m.To.Send(&Total{N: c.total}) == nil {
		c.total = 0
	}
	return actor.Nodelete
}

func (c *Counter) OnGet(m *GetTotal) actor.Allocation {
	_ = m.Reply(c.total)
	return actor.Nodelete
}

// TestCounter is a unit test of Counter: the way to test an actor.
func TestCounter(t *testing.T) {
	sys := actortest.Start(t) // stopped, and checked, when the test ends
	c, err := actor.Spawn(sys, &Counter{})
	if err != nil {
		t.Fatal(err)
	}
	defer actor.SendPill(c, actor.FinishedMsg) // every actor must terminate by the end
	add, _ := actor.Bind(c, (*Counter).OnAdd)
	get, _ := actor.Bind(c, (*Counter).OnGet)

	for _, n := range []int{1, 2, 3} {
		if err := add.Send(&Add{N: n}); err != nil {
			t.Fatal(err)
		}
	}
	if got := actortest.Ask(t, get, &GetTotal{}); got != 6 {
		t.Errorf("total = %d, want 6", got)
	}

	totals := actortest.NewProbe[Total](t, sys)
	if err := actor.Send(c, &Flush{To: totals.Port()}, (*Counter).OnFlush); err != nil {
		t.Fatal(err)
	}
	if got := totals.Expect(time.Second); got.N != 6 {
		t.Errorf("flushed total = %d, want 6", got.N)
	}
	totals.ExpectNone(10 * time.Millisecond) // one Flush, one Total
	if got := actortest.Ask(t, get, &GetTotal{}); got != 0 {
		t.Errorf("total after a flush = %d, want 0", got)
	}
}

// Testing the Counter: Start a system, give the counter a Probe's port to
// flush to, and check its answers with Ask. In a test, pass the test's t
// (see TestCounter in this file); Run stands in for the test harness here.
func Example() {
	actortest.Run(func(t actortest.TB) {
		sys := actortest.Start(t)
		c, _ := actor.Spawn(sys, &Counter{})
		defer actor.SendPill(c, actor.FinishedMsg)
		add, _ := actor.Bind(c, (*Counter).OnAdd)
		get, _ := actor.Bind(c, (*Counter).OnGet)

		add.Send(&Add{N: 2})
		add.Send(&Add{N: 5})
		fmt.Println("total:", actortest.Ask(t, get, &GetTotal{}))

		totals := actortest.NewProbe[Total](t, sys)
		actor.Send(c, &Flush{To: totals.Port()}, (*Counter).OnFlush)
		fmt.Println("flushed:", totals.Expect(time.Second).N)
		totals.ExpectNone(10 * time.Millisecond)
		fmt.Println("total after flush:", actortest.Ask(t, get, &GetTotal{}))
	})
	// Output:
	// total: 7
	// flushed: 7
	// total after flush: 0
}

// A probe that waits in vain fails the test, and says so; so does an actor
// left alive at the end of the test.
func ExampleRun() {
	passed := actortest.Run(func(t actortest.TB) {
		sys := actortest.StartWith(t, actortest.Policy{Grace: 10 * time.Millisecond})
		actor.Spawn(sys, &Counter{}) // never terminated
		totals := actortest.NewProbe[Total](t, sys)
		totals.Expect(10 * time.Millisecond) // nothing sends a Total
		fmt.Println("not reached: Expect failed the test with Fatalf")
	})
	fmt.Println("passed:", passed)
	// Output:
	// FAIL: actortest: Probe[*actortest_test.Total]: no message within 10ms (0 received before, all expected already)
	// FAIL: actortest: stop: executor: actors still alive: 1 actors still alive when the context ended (1 *actortest_test.Counter still alive): context deadline exceeded (after a grace of 10ms; terminate every actor the test spawned, or see Policy.AllowAlive)
	// passed: false
}

// A probe of actor.Reply[R] receives the answers to actor.AskAsync, as an
// asking actor's reply behaviour would.
func ExampleNewProbe_replies() {
	actortest.Run(func(t actortest.TB) {
		sys := actortest.Start(t)
		c, _ := actor.Spawn(sys, &Counter{})
		defer actor.SendPill(c, actor.FinishedMsg)
		add, _ := actor.Bind(c, (*Counter).OnAdd)
		get, _ := actor.Bind(c, (*Counter).OnGet)

		replies := actortest.NewProbe[actor.Reply[int]](t, sys)
		add.Send(&Add{N: 3})
		actor.AskAsync(get, &GetTotal{}, replies.Port(), time.Second)
		r := replies.Expect(time.Second)
		fmt.Println(r.Value, r.Err)
	})
	// Output:
	// 3 <nil>
}
