package actor_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actord/actord/actor"
)

// Alarm rings once.
type Alarm struct {
	actor.Actor
}

type Ring struct {
	actor.Message
	Text string
}

func (a *Alarm) OnRing(m *Ring) actor.Allocation {
	fmt.Println("ring:", m.Text)
	return actor.Finished
}

func ExampleSendAfter() {
	sys, err := actor.Start()
	if err != nil {
		panic(err)
	}
	a, _ := actor.Spawn(sys, &Alarm{})
	ring, _ := actor.Bind(a, (*Alarm).OnRing)

	if _, err := actor.SendAfter(ring, 10*time.Millisecond, &Ring{Text: "wake up"}); err != nil {
		panic(err)
	}
	never, _ := actor.SendAfter(ring, time.Hour, &Ring{Text: "too late"})
	fmt.Println("cancelled:", never.Stop())

	// Stop waits for the alarm, which terminates when it rings.
	if err := sys.Stop(context.Background()); err != nil {
		panic(err)
	}
	// Output:
	// cancelled: true
	// ring: wake up
}

// Heartbeat beats three times, then stops its own periodic timer.
type Heartbeat struct {
	actor.Actor
	beats int
	timer actor.Timer // the zero Timer until OnStart
	done  chan struct{}
}

type StartBeating struct {
	actor.Message
	Every time.Duration
}

type Beat struct{ actor.Message }

// OnStart sets the periodic timer from inside the actor, so only its
// behaviours touch h.timer.
func (h *Heartbeat) OnStart(m *StartBeating) actor.Allocation {
	beat, err := actor.Bind(h, (*Heartbeat).OnBeat)
	if err != nil {
		panic(err)
	}
	if h.timer, err = actor.SendEvery(beat, m.Every, &Beat{}); err != nil {
		panic(err)
	}
	return actor.Nodelete
}

// OnBeat receives the same *Beat every period: it only reads it.
func (h *Heartbeat) OnBeat(*Beat) actor.Allocation {
	if h.beats == 3 {
		return actor.Nodelete // a beat sent before Stop, still queued
	}
	h.beats++
	fmt.Println("beat", h.beats)
	if h.beats == 3 {
		fmt.Println("stopped:", h.timer.Stop())
		close(h.done)
	}
	return actor.Nodelete
}

func ExampleSendEvery() {
	sys, err := actor.Start()
	if err != nil {
		panic(err)
	}
	h, _ := actor.Spawn(sys, &Heartbeat{done: make(chan struct{})})
	actor.Send(h, &StartBeating{Every: 5 * time.Millisecond}, (*Heartbeat).OnStart)
	<-h.done
	actor.SendPill(h, actor.FinishedMsg)
	if err := sys.Stop(context.Background()); err != nil {
		panic(err)
	}
	// Output:
	// beat 1
	// beat 2
	// beat 3
	// stopped: true
}

type timed struct {
	actor.Actor
	got chan string
}

type note struct {
	actor.Message
	s string
}

func (a *timed) onNote(m *note) actor.Allocation {
	a.got <- m.s
	if m.s == "last" {
		return actor.Finished
	}
	return actor.Nodelete
}

func TestSendAfterThroughActor(t *testing.T) {
	sys := start(t, actor.WithWorkers(2))
	a, _ := actor.Spawn(sys, &timed{got: make(chan string, 16)})
	p, err := actor.Bind(a, (*timed).onNote)
	require.NoError(t, err)

	// The delays are far apart: the second timer's deadline stays the
	// earlier one unless the test stalls for most of a second in between.
	t0 := time.Now()
	_, err = actor.SendAfter(p, time.Second, &note{s: "later"})
	require.NoError(t, err)
	_, err = actor.SendAfter(p, 50*time.Millisecond, &note{s: "sooner"})
	require.NoError(t, err)
	assert.Equal(t, "sooner", <-a.got)
	assert.Equal(t, "later", <-a.got)
	assert.GreaterOrEqual(t, time.Since(t0), time.Second)

	_, err = actor.SendEvery(p, 0, &note{})
	assert.ErrorIs(t, err, actor.ErrBadPeriod)
	_, err = actor.SendAfter(actor.Port[*note]{}, time.Millisecond, &note{})
	assert.ErrorIs(t, err, actor.ErrNotSpawned)

	// A timer whose actor terminates first delivers nothing and counts as
	// dead. Its delay leaves the termination time to happen first; whether
	// it did is checked, not assumed: if the actor is seen terminated
	// before the delay has passed since the timer was set, it terminated
	// before the deadline (a timer never fires early).
	const deadDelay = 500 * time.Millisecond
	t1 := time.Now()
	_, err = actor.SendAfter(p, deadDelay, &note{s: "dead"})
	require.NoError(t, err)
	require.NoError(t, p.Send(&note{s: "last"}))
	first := <-a.got
	deadline := time.Now().Add(10 * time.Second)
	for a.Alive() && time.Now().Before(deadline) {
		time.Sleep(100 * time.Microsecond)
	}
	require.False(t, a.Alive(), "the actor did not terminate")
	if time.Since(t1) >= deadDelay {
		// Too slow to tell: the timer may have fired before the
		// termination (its message then delivered, or left queued).
		_ = sys.Stop(context.Background())
		t.Skip("the actor terminated too late for the dead-timer check on this machine")
	}
	assert.Equal(t, "last", first)
	deadline = time.Now().Add(10 * time.Second)
	for {
		s, err := sys.Stats()
		require.NoError(t, err)
		if s.TimersDead == 1 || time.Now().After(deadline) {
			assert.Equal(t, uint64(1), s.TimersDead)
			assert.Equal(t, uint64(2), s.TimersFired)
			assert.Zero(t, s.TimersPending)
			break
		}
		time.Sleep(time.Millisecond)
	}
	_, err = actor.SendAfter(p, time.Second, &note{})
	assert.ErrorIs(t, err, actor.ErrTerminated)
	stop(t, sys)
	select {
	case s := <-a.got:
		t.Fatalf("delivered %q after termination", s)
	default:
	}
}

// Stopping a system with pending timers ends its timer goroutine (TestMain
// checks with goleak) and drops the timers, counted dead.
func TestStopWithPendingTimers(t *testing.T) {
	sys := start(t)
	a, _ := actor.Spawn(sys, &timed{got: make(chan string, 1)})
	p, _ := actor.Bind(a, (*timed).onNote)
	for range 1000 {
		_, err := actor.SendAfter(p, time.Hour, &note{})
		require.NoError(t, err)
	}
	tick, err := actor.SendEvery(p, time.Hour, &note{})
	require.NoError(t, err)
	require.NoError(t, actor.SendPill(a, actor.FinishedMsg))
	stop(t, sys)
	s, err := sys.Stats()
	require.NoError(t, err)
	assert.Zero(t, s.TimersPending)
	assert.Equal(t, uint64(1001), s.TimersDead)
	assert.False(t, tick.Stop())
}
