package executor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// plainSink is a plain actor (no option, no lifecycle hook).
type plainSink struct{ cell Cell }

func (p *plainSink) onItem(*item) Allocation { return Nodelete }

// registered reports whether c has an entry in e's registry of extended
// actors.
func registered(e *Executor, c *Cell) bool {
	e.sup.mu.Lock()
	defer e.sup.mu.Unlock()
	_, ok := e.sup.exts[c]
	return ok
}

// A Watch of a plain actor whose termination comes between the watch's
// registration and its CAS that extends the actor (made certain by a hook
// there) is notified once, and leaves nothing registered for the dead
// actor. It used to leave its extension in the registry until Stop.
func TestWatchLosingTerminationRaceIsUnregistered(t *testing.T) {
	e, err := Start(Config{Workers: 2})
	require.NoError(t, err)
	a := &plainSink{}
	require.NoError(t, Spawn(e, &a.cell, a))
	p, err := Bind(&a.cell, a, (*plainSink).onItem)
	require.NoError(t, err)
	hits := 0
	testHookWatchExtend = func() {
		hits++
		require.NoError(t, SendPill(&a.cell, a, NewPill(Finished)))
		waitFor(t, "the actor's end", func() bool { return !p.Alive() })
	}
	defer func() { testHookWatchExtend = nil }()
	ch, err := WatchChan(p)
	require.NoError(t, err)
	testHookWatchExtend = nil
	tm := notified(t, "the watch", ch)
	assert.Equal(t, 1, hits)
	assert.Equal(t, ReasonNormal, tm.Reason)
	assert.False(t, registered(e, &a.cell), "a dead actor's watch extension is still registered")
	select {
	case tm := <-ch:
		t.Fatalf("a second notice: %+v", tm)
	default:
	}
	require.NoError(t, e.Stop(context.Background()))
}

// destroyGated is a plain actor whose Destroy hook waits for gate.
type destroyGated struct {
	cell          Cell
	entered, gate chan struct{}
}

func (d *destroyGated) Destroy() {
	close(d.entered)
	<-d.gate
}

func (d *destroyGated) onItem(*item) Allocation { return Nodelete }

// A watch that begins while its actor's termination hooks run (a Stopped
// hook of an extended actor, a Destroy hook of a plain one) is notified
// after them, once Alive reports false, with the actor, as a watch that
// began earlier is. It used to be notified at once, with no actor, while
// the hook still ran.
func TestWatchDuringTerminationHooksWaitsForThem(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spawn func(t *testing.T, e *Executor) (p Port[*item], obj any, entered, gate chan struct{})
	}{
		{"Stopped hook", func(t *testing.T, e *Executor) (Port[*item], any, chan struct{}, chan struct{}) {
			a := &stopGated{entered: make(chan struct{}), gate: make(chan struct{})}
			require.NoError(t, Spawn(e, &a.cell, a))
			p, err := Bind(&a.cell, a, func(*stopGated, *item) Allocation { return Nodelete })
			require.NoError(t, err)
			require.NoError(t, SendPill(&a.cell, a, NewPill(Finished)))
			return p, a, a.entered, a.gate
		}},
		{"Destroy hook of a plain actor", func(t *testing.T, e *Executor) (Port[*item], any, chan struct{}, chan struct{}) {
			a := &destroyGated{entered: make(chan struct{}), gate: make(chan struct{})}
			require.NoError(t, Spawn(e, &a.cell, a))
			require.NotZero(t, a.cell.state.Load()&cellPlain, "the actor is not plain")
			p, err := Bind(&a.cell, a, (*destroyGated).onItem)
			require.NoError(t, err)
			require.NoError(t, SendPill(&a.cell, a, NewPill(Destroy)))
			return p, a, a.entered, a.gate
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Start(Config{Workers: 2})
			require.NoError(t, err)
			p, obj, entered, gate := tc.spawn(t, e)
			<-entered // the hook runs
			ch, err := WatchChan(p)
			require.NoError(t, err)
			ch2, err := WatchChan(p) // a second watch attaches to the same termination
			require.NoError(t, err)
			select {
			case tm := <-ch:
				close(gate)
				t.Fatalf("notified while the termination hook runs: %+v", tm)
			default:
			}
			assert.True(t, p.Alive(), "Alive is false while the hook runs")
			close(gate)
			for _, c := range []<-chan *Terminated{ch, ch2} {
				tm := notified(t, "the watch", c)
				assert.False(t, p.Alive(), "notified while Alive reports true")
				assert.Equal(t, ReasonNormal, tm.Reason)
				assert.Same(t, obj, tm.Actor)
			}
			require.NoError(t, e.Stop(context.Background()))
			assert.False(t, registered(e, p.cell))
		})
	}
}

// destroySink is a plain actor with a Destroy hook that does nothing.
type destroySink struct{ cell Cell }

func (d *destroySink) Destroy()                {}
func (d *destroySink) onItem(*item) Allocation { return Nodelete }

// Watches racing their actors' terminations (plain actors, with and
// without a Destroy hook, ending by a pill) are each notified exactly
// once, after the actor is dead, and leave nothing registered, whichever
// side wins each race.
func TestWatchRacingTerminationLeavesNothingRegistered(t *testing.T) {
	e, err := Start(Config{Workers: 2})
	require.NoError(t, err)
	const rounds = 300
	for i := range rounds {
		var p Port[*item]
		var kill func() error
		if i%2 == 0 {
			a := &plainSink{}
			require.NoError(t, Spawn(e, &a.cell, a))
			p, err = Bind(&a.cell, a, (*plainSink).onItem)
			kill = func() error { return SendPill(&a.cell, a, NewPill(Finished)) }
		} else {
			a := &destroySink{}
			require.NoError(t, Spawn(e, &a.cell, a))
			p, err = Bind(&a.cell, a, (*destroySink).onItem)
			kill = func() error { return SendPill(&a.cell, a, NewPill(Destroy)) }
		}
		require.NoError(t, err)
		chs := make(chan (<-chan *Terminated), 2)
		go func() {
			for range 2 {
				ch, err := WatchChan(p)
				assert.NoError(t, err)
				chs <- ch
			}
		}()
		require.NoError(t, kill())
		for range 2 {
			ch := <-chs
			tm := notified(t, "a watch", ch)
			assert.False(t, p.Alive(), "notified before the actor was dead")
			assert.Equal(t, ReasonNormal, tm.Reason)
			select {
			case tm := <-ch:
				t.Fatalf("a second notice: %+v", tm)
			default:
			}
		}
		assert.False(t, registered(e, p.cell), "round %d: a dead actor is still registered", i)
	}
	require.NoError(t, e.Stop(context.Background()))
}
