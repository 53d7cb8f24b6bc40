package actor_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/executor"
)

// greeter is a named actor: it answers greetings and counts pings.
type greeter struct {
	actor.Actor
	pings int
}

type greet struct {
	actor.Request[string]
	Who string
}

type ping struct{ actor.Message }

func (g *greeter) onGreet(m *greet) actor.Allocation {
	_ = m.Reply("hello, " + m.Who)
	return actor.Nodelete
}

func (g *greeter) onPing(*ping) actor.Allocation {
	g.pings++
	return actor.Nodelete
}

// namesSystem starts a system that is stopped, cleanly, at the end of the test.
func namesSystem(t *testing.T) *actor.System {
	t.Helper()
	sys, err := actor.Start(actor.WithWorkers(2))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		assert.NoError(t, sys.Stop(ctx))
	})
	return sys
}

// spawnGreeter spawns a greeter and returns it with its two ports. The
// greeter is terminated at the end of the test if it is still alive.
func spawnGreeter(t *testing.T, sys *actor.System) (*greeter, actor.Port[*greet], actor.Port[*ping]) {
	t.Helper()
	g, err := actor.Spawn(sys, &greeter{})
	require.NoError(t, err)
	gp, err := actor.Bind(g, (*greeter).onGreet)
	require.NoError(t, err)
	pp, err := actor.Bind(g, (*greeter).onPing)
	require.NoError(t, err)
	t.Cleanup(func() { _ = actor.SendPill(g, actor.FinishedMsg) })
	return g, gp, pp
}

// terminate sends g a pill and waits until it has terminated.
func terminate(t *testing.T, g *greeter) {
	t.Helper()
	require.NoError(t, actor.SendPill(g, actor.FinishedMsg))
	require.Eventually(t, func() bool { return !g.Alive() }, 10*time.Second, time.Millisecond)
}

func TestNamesRegisterLookup(t *testing.T) {
	sys := namesSystem(t)
	_, gp, _ := spawnGreeter(t, sys)
	require.NoError(t, actor.Register(sys, "greeter", gp))

	p, err := actor.Lookup[*greet](sys, "greeter")
	require.NoError(t, err)
	assert.Equal(t, gp, p, "Lookup returns the registered port")
	got, err := actor.Ask(context.Background(), p, &greet{Who: "names"})
	require.NoError(t, err)
	assert.Equal(t, "hello, names", got)

	allocs := testing.AllocsPerRun(100, func() {
		if _, err := actor.Lookup[*greet](sys, "greeter"); err != nil {
			panic(err)
		}
	})
	assert.Zero(t, allocs, "a successful Lookup does not allocate")
}

func TestNamesDuplicate(t *testing.T) {
	sys := namesSystem(t)
	_, gp, pp := spawnGreeter(t, sys)
	_, other, _ := spawnGreeter(t, sys)
	require.NoError(t, actor.Register(sys, "g", gp))

	err := actor.Register(sys, "g", other)
	assert.ErrorIs(t, err, actor.ErrNameTaken)
	assert.Contains(t, err.Error(), `"g"`)
	assert.ErrorIs(t, actor.Register(sys, "g", gp), actor.ErrNameTaken, "even by the same port")
	assert.ErrorIs(t, actor.Register(sys, "g", pp), actor.ErrNameTaken, "whatever the type")

	p, err := actor.Lookup[*greet](sys, "g")
	require.NoError(t, err)
	assert.Equal(t, gp, p, "the first registration holds")

	// Several names for one port, and one name per behaviour, are fine.
	require.NoError(t, actor.Register(sys, "g2", gp))
	require.NoError(t, actor.Register(sys, "g.ping", pp))
}

func TestNamesAbsent(t *testing.T) {
	sys := namesSystem(t)
	_, err := actor.Lookup[*greet](sys, "nobody")
	assert.ErrorIs(t, err, actor.ErrNoName, "no registry yet")
	assert.Contains(t, err.Error(), `"nobody"`)
	assert.ErrorIs(t, actor.Unregister(sys, "nobody"), actor.ErrNoName)

	_, gp, _ := spawnGreeter(t, sys)
	require.NoError(t, actor.Register(sys, "somebody", gp))
	_, err = actor.Lookup[*greet](sys, "nobody")
	assert.ErrorIs(t, err, actor.ErrNoName, "absent from an existing registry")

	require.NoError(t, actor.Unregister(sys, "somebody"))
	_, err = actor.Lookup[*greet](sys, "somebody")
	assert.ErrorIs(t, err, actor.ErrNoName, "unregistered")
	assert.ErrorIs(t, actor.Unregister(sys, "somebody"), actor.ErrNoName, "twice")
	assert.NoError(t, gp.Send(&greet{}), "Unregister leaves the port alone")
	require.NoError(t, actor.Register(sys, "somebody", gp), "and the name is free again")
}

func TestNamesWrongType(t *testing.T) {
	sys := namesSystem(t)
	_, gp, _ := spawnGreeter(t, sys)
	require.NoError(t, actor.Register(sys, "greeter", gp))

	p, err := actor.Lookup[*ping](sys, "greeter")
	assert.ErrorIs(t, err, actor.ErrWrongType)
	assert.Equal(t, actor.Port[*ping]{}, p)
	assert.EqualError(t, err, `actor: name holds a port of another message type: "greeter" holds Port[*actor_test.greet], not Port[*actor_test.ping]`)

	_, err = actor.Lookup[*greet](sys, "greeter")
	assert.NoError(t, err, "a wrong-type Lookup leaves the name in place")
}

func TestNamesReleasedWhenActorTerminates(t *testing.T) {
	sys := namesSystem(t)
	g, gp, pp := spawnGreeter(t, sys)
	require.NoError(t, actor.Register(sys, "greeter", gp))
	require.NoError(t, actor.Register(sys, "pinger", pp))
	terminate(t, g)

	// Lookup finds the name dead, and removes it.
	_, err := actor.Lookup[*greet](sys, "greeter")
	assert.ErrorIs(t, err, actor.ErrNoName)
	assert.Contains(t, err.Error(), "terminated")
	_, err = actor.Lookup[*ping](sys, "greeter")
	assert.ErrorIs(t, err, actor.ErrNoName, "removed: absent for any type")

	// Register takes a dead name without a Lookup first.
	_, gp2, pp2 := spawnGreeter(t, sys)
	require.NoError(t, actor.Register(sys, "greeter", gp2))
	require.NoError(t, actor.Register(sys, "pinger", pp2))
	p, err := actor.Lookup[*greet](sys, "greeter")
	require.NoError(t, err)
	assert.Equal(t, gp2, p)

	// The same actor spawned again is a new incarnation: its old ports stay
	// dead and cannot be registered, its new ones can.
	_, err = actor.Spawn(sys, g)
	require.NoError(t, err)
	assert.ErrorIs(t, actor.Register(sys, "old", gp), actor.ErrTerminated)
	gp3, err := actor.Bind(g, (*greeter).onGreet)
	require.NoError(t, err)
	require.NoError(t, actor.Register(sys, "old", gp3))
	assert.NoError(t, actor.Unregister(sys, "pinger"))
	terminate(t, g)
	assert.ErrorIs(t, actor.Unregister(sys, "old"), actor.ErrNoName, "a dead name is absent for Unregister too")
	_, err = actor.Lookup[*greet](sys, "old")
	assert.ErrorIs(t, err, actor.ErrNoName)
}

func TestNamesBadArguments(t *testing.T) {
	sys := namesSystem(t)
	_, gp, _ := spawnGreeter(t, sys)
	for _, s := range []*actor.System{nil, {}} {
		assert.ErrorIs(t, actor.Register(s, "x", gp), actor.ErrNotStarted)
		_, err := actor.Lookup[*greet](s, "x")
		assert.ErrorIs(t, err, actor.ErrNotStarted)
		assert.ErrorIs(t, actor.Unregister(s, "x"), actor.ErrNotStarted)
	}
	assert.ErrorIs(t, actor.Register(sys, "x", actor.Port[*greet]{}), actor.ErrNotSpawned)
	_, err := actor.Lookup[*greet](sys, "x")
	assert.ErrorIs(t, err, actor.ErrNoName, "failed Registers leave nothing behind")
}

func TestNamesSeparatePerSystem(t *testing.T) {
	sys1, sys2 := namesSystem(t), namesSystem(t)
	_, gp1, _ := spawnGreeter(t, sys1)
	_, gp2, pp2 := spawnGreeter(t, sys2)
	require.NoError(t, actor.Register(sys1, "greeter", gp1))
	require.NoError(t, actor.Register(sys2, "greeter", gp2), "the same name in another system")
	require.NoError(t, actor.Register(sys2, "pinger", pp2))

	p1, err := actor.Lookup[*greet](sys1, "greeter")
	require.NoError(t, err)
	p2, err := actor.Lookup[*greet](sys2, "greeter")
	require.NoError(t, err)
	assert.Equal(t, gp1, p1)
	assert.Equal(t, gp2, p2)
	_, err = actor.Lookup[*ping](sys1, "pinger")
	assert.ErrorIs(t, err, actor.ErrNoName, "sys2's names are not sys1's")
}

func TestNamesAfterStop(t *testing.T) {
	sys, err := actor.Start(actor.WithWorkers(1))
	require.NoError(t, err)
	_, gp, _ := spawnGreeter(t, sys)
	require.NoError(t, actor.Register(sys, "greeter", gp))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, sys.Stop(ctx), actor.ErrActorsAlive, "the greeter is left alive: a forced stop")

	_, err = actor.Lookup[*greet](sys, "greeter")
	assert.ErrorIs(t, err, actor.ErrNoName, "a stopped system's ports are dead, so are its names")
	assert.ErrorIs(t, actor.Register(sys, "greeter", gp), actor.ErrTerminated)
}

// TestNamesStoppedSystemReleased checks that the registry of a stopped
// system does not keep it reachable: once another system registers its first
// name, the stopped system's executor can be garbage collected.
func TestNamesStoppedSystemReleased(t *testing.T) {
	gone := func() weak.Pointer[executor.Executor] {
		sys, err := actor.Start(actor.WithWorkers(1))
		require.NoError(t, err)
		g, err := actor.Spawn(sys, &greeter{})
		require.NoError(t, err)
		gp, err := actor.Bind(g, (*greeter).onGreet)
		require.NoError(t, err)
		require.NoError(t, actor.Register(sys, "greeter", gp))
		require.NoError(t, actor.Register(sys, "greeter2", gp))
		require.NoError(t, actor.SendPill(g, actor.FinishedMsg))
		require.NoError(t, sys.Stop(context.Background()))
		return weak.Make(sys.Executor())
	}()

	sys := namesSystem(t)
	_, gp, _ := spawnGreeter(t, sys)
	require.NoError(t, actor.Register(sys, "greeter", gp)) // sys's first name: sweeps the others
	require.Eventually(t, func() bool {
		runtime.GC()
		return gone.Value() == nil
	}, 10*time.Second, 10*time.Millisecond, "the stopped system's executor is still reachable")
}

// TestNamesSweepOnRegister checks that names of terminated actors that
// nobody looks up again do not accumulate in a running system.
func TestNamesSweepOnRegister(t *testing.T) {
	sys := namesSystem(t)
	ptrs := make([]weak.Pointer[greeter], 0, 100)
	for i := range 100 {
		func() {
			g, err := actor.Spawn(sys, &greeter{})
			require.NoError(t, err)
			gp, err := actor.Bind(g, (*greeter).onGreet)
			require.NoError(t, err)
			require.NoError(t, actor.Register(sys, fmt.Sprint("short-", i), gp))
			require.NoError(t, actor.SendPill(g, actor.FinishedMsg))
			require.Eventually(t, func() bool { return !g.Alive() }, 10*time.Second, time.Millisecond)
			ptrs = append(ptrs, weak.Make(g))
		}()
	}
	// Enough further registrations to pass a sweep point for sure.
	for i := range 200 {
		_, gp, _ := spawnGreeter(t, sys)
		require.NoError(t, actor.Register(sys, fmt.Sprint("live-", i), gp))
	}
	runtime.GC()
	runtime.GC()
	collected := 0
	for _, p := range ptrs {
		if p.Value() == nil {
			collected++
		}
	}
	assert.Equal(t, len(ptrs), collected, "terminated named actors are swept and collected")
}

func TestNamesConcurrent(t *testing.T) {
	sys := namesSystem(t)
	const (
		goroutines = 8
		names      = 50
	)
	ports := make([]actor.Port[*greet], goroutines)
	for i := range ports {
		_, ports[i], _ = spawnGreeter(t, sys)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		wins = map[string]actor.Port[*greet]{}
	)
	for i := range goroutines {
		wg.Go(func() {
			for n := range names {
				name := fmt.Sprint("n", n)
				if err := actor.Register(sys, name, ports[i]); err == nil {
					mu.Lock()
					if _, dup := wins[name]; dup {
						t.Errorf("%s registered twice", name)
					}
					wins[name] = ports[i]
					mu.Unlock()
				} else {
					assert.ErrorIs(t, err, actor.ErrNameTaken)
				}
				p, err := actor.Lookup[*greet](sys, name)
				if assert.NoError(t, err) {
					assert.True(t, p.Alive())
				}
				_, err = actor.Lookup[*ping](sys, name)
				assert.ErrorIs(t, err, actor.ErrWrongType)
			}
		})
	}
	wg.Wait()
	assert.Len(t, wins, names, "every name has exactly one winner")
	for name, want := range wins {
		p, err := actor.Lookup[*greet](sys, name)
		require.NoError(t, err)
		assert.Equal(t, want, p, name)
	}
}

func ExampleRegister() {
	sys, _ := actor.Start(actor.WithWorkers(1))

	g, _ := actor.Spawn(sys, &greeter{})
	greetPort, _ := actor.Bind(g, (*greeter).onGreet)
	_ = actor.Register(sys, "greeter", greetPort)

	// Elsewhere, code that knows only the name and the message type:
	p, err := actor.Lookup[*greet](sys, "greeter")
	if err != nil {
		fmt.Println(err)
		return
	}
	answer, _ := actor.Ask(context.Background(), p, &greet{Who: "world"})
	fmt.Println(answer)

	// Mistakes are errors, not panics or silent misses.
	fmt.Println(actor.Register(sys, "greeter", greetPort))
	_, err = actor.Lookup[*ping](sys, "greeter")
	fmt.Println(err)

	// A name is released when its actor terminates.
	_ = actor.SendPill(g, actor.FinishedMsg)
	for g.Alive() {
		time.Sleep(time.Millisecond)
	}
	_, err = actor.Lookup[*greet](sys, "greeter")
	fmt.Println(err)

	fmt.Println(sys.Stop(context.Background()))
	// Output:
	// hello, world
	// actor: name already registered: "greeter" holds a live Port[*actor_test.greet]
	// actor: name holds a port of another message type: "greeter" holds Port[*actor_test.greet], not Port[*actor_test.ping]
	// actor: name not registered: "greeter" (its actor has terminated)
	// <nil>
}
