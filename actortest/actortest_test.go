package actortest_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/actortest"
)

// fakeTB records what the kit reports instead of failing the real test.
// Its Fatalf returns (the kit then returns zero values); it runs the
// cleanups when the fake test ends (finish).
type fakeTB struct {
	mu       sync.Mutex
	fatals   []string
	errors   []string
	logs     []string
	cleanups []func()
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Cleanup(c func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cleanups = append(f.cleanups, c)
}

func (f *fakeTB) Logf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fatals = append(f.fatals, fmt.Sprintf(format, args...))
}

// finish runs the fake test's cleanups, last registered first.
func (f *fakeTB) finish() {
	f.mu.Lock()
	cs := f.cleanups
	f.cleanups = nil
	f.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}

func (f *fakeTB) get() (fatals, errors, logs []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fatals, f.errors, f.logs
}

var _ actortest.TB = (*fakeTB)(nil)
var _ actortest.TB = testing.TB(nil)

// boom panics on every message.
type boom struct{ actor.Actor }

type kick struct{ actor.Message }

func (*boom) onKick(*kick) actor.Allocation { panic("boom") }

func TestStartDeterministic(t *testing.T) {
	sys := actortest.Start(t)
	cfg, err := sys.Config()
	require.NoError(t, err)
	assert.Equal(t, 1, cfg.Workers)
	assert.Equal(t, 1, cfg.Queues)

	// Messages sent by one goroutine to several actors are received in the
	// order they were sent, whatever actors they go to.
	var (
		mu    sync.Mutex
		order []string
	)
	type rec struct {
		actor.Actor
		name string
	}
	type note struct {
		actor.Message
		n int
	}
	onNote := func(r *rec, m *note) actor.Allocation {
		mu.Lock()
		order = append(order, fmt.Sprint(r.name, m.n))
		mu.Unlock()
		return actor.Nodelete
	}
	a, _ := actor.Spawn(sys, &rec{name: "a"})
	b, _ := actor.Spawn(sys, &rec{name: "b"})
	var want []string
	for i := range 50 {
		to := a
		if i%3 == 0 {
			to = b
		}
		require.NoError(t, actor.Send(to, &note{n: i}, onNote))
		want = append(want, fmt.Sprint(to.name, i))
	}
	require.NoError(t, actor.SendPill(a, actor.FinishedMsg))
	require.NoError(t, actor.SendPill(b, actor.FinishedMsg))
	require.Eventually(t, func() bool { return !a.Alive() && !b.Alive() }, 10*time.Second, time.Millisecond)
	assert.Equal(t, want, order)
}

func TestStartOptionsOverride(t *testing.T) {
	for _, tc := range []struct {
		name            string
		opts            []actor.Option
		workers, queues int
	}{
		{"defaults", nil, 1, 1},
		{"queues", []actor.Option{actor.WithQueues(4)}, 1, 4},
		{"workers", []actor.Option{actor.WithWorkers(2)}, 2, 2},
		{"queues per worker", []actor.Option{actor.WithWorkers(2), actor.WithQueuesPerWorker(4)}, 2, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sys := actortest.Start(t, tc.opts...)
			cfg, err := sys.Config()
			require.NoError(t, err)
			assert.Equal(t, tc.workers, cfg.Workers)
			assert.Equal(t, tc.queues, cfg.Queues)
		})
	}
}

func TestStartCleanStop(t *testing.T) {
	f := &fakeTB{}
	sys := actortest.Start(f)
	c, err := actor.Spawn(sys, &Counter{})
	require.NoError(t, err)
	p := actortest.NewProbe[Total](f, sys)
	require.NoError(t, actor.Send(c, &Flush{To: p.Port()}, (*Counter).OnFlush))
	p.Expect(10 * time.Second)
	require.NoError(t, actor.SendPill(c, actor.FinishedMsg))
	f.finish()
	fatals, errs, logs := f.get()
	assert.Empty(t, fatals)
	assert.Empty(t, errs)
	assert.Empty(t, logs)
	_, err = actor.Spawn(sys, &Counter{})
	assert.ErrorIs(t, err, actor.ErrStopped, "the cleanup stopped the system")
}

func add(c *Counter, n int) error { return actor.Send(c, &Add{N: n}, (*Counter).OnAdd) }

func TestStartPolicyAlive(t *testing.T) {
	f := &fakeTB{}
	sys := actortest.StartWith(f, actortest.Policy{Grace: 20 * time.Millisecond})
	_, err := actor.Spawn(sys, &Counter{})
	require.NoError(t, err)
	start := time.Now()
	f.finish()
	assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond, "the grace is waited for")
	_, errs, _ := f.get()
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0], "actors still alive")
	assert.Contains(t, errs[0], "Policy.AllowAlive")

	f = &fakeTB{}
	sys = actortest.StartWith(f, actortest.Policy{Grace: 20 * time.Millisecond, AllowAlive: true})
	_, err = actor.Spawn(sys, &Counter{})
	require.NoError(t, err)
	f.finish()
	fatals, errs, _ := f.get()
	assert.Empty(t, fatals)
	assert.Empty(t, errs, "allowed")
}

// kickBoom starts a system for the fake test f with policy p, spawns a boom
// actor with opts, sends it a kick and waits until the kit has logged the
// panic.
func kickBoom(t *testing.T, f *fakeTB, p actortest.Policy, opts ...actor.SpawnOption) *boom {
	t.Helper()
	sys := actortest.StartWith(f, p)
	b, err := actor.Spawn(sys, &boom{}, opts...)
	require.NoError(t, err)
	require.NoError(t, actor.Send(b, &kick{}, (*boom).onKick))
	require.Eventually(t, func() bool {
		_, _, logs := f.get()
		return len(logs) > 0
	}, 10*time.Second, time.Millisecond, "the panic is logged as it happens")
	return b
}

func TestStartPolicyPanics(t *testing.T) {
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprint("allow=", allow), func(t *testing.T) {
			f := &fakeTB{}
			kickBoom(t, f, actortest.Policy{AllowPanics: allow})
			_, _, logs := f.get()
			require.Len(t, logs, 1)
			assert.Contains(t, logs[0], "panicked")
			assert.Contains(t, logs[0], "goroutine", "with its stack")
			f.finish()
			_, errs, _ := f.get()
			if allow {
				assert.Empty(t, errs)
			} else {
				require.Len(t, errs, 1)
				assert.Contains(t, errs[0], "boom")
				assert.Contains(t, errs[0], "onKick", "with its stack")
			}
		})
	}
}

// A panic that supervision handled (here a restart) fails the test too,
// unless the policy allows panics: Stop does not report it, and the kit
// used to let such a test pass.
func TestStartPolicyHandledPanics(t *testing.T) {
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprint("allow=", allow), func(t *testing.T) {
			f := &fakeTB{}
			b := kickBoom(t, f, actortest.Policy{AllowPanics: allow}, actor.WithRestart(nil, actor.Budget{MaxRestarts: -1}))
			require.NoError(t, actor.SendPill(b, actor.FinishedMsg)) // the restarted actor ends cleanly
			f.finish()
			_, errs, _ := f.get()
			if allow {
				assert.Empty(t, errs)
			} else {
				require.Len(t, errs, 1)
				assert.Contains(t, errs[0], "1 behaviours or hooks panicked, handled by supervision")
			}
		})
	}
}

// holder blocks in onWait until release is closed.
type holder struct {
	actor.Actor
	release chan struct{}
}

type wait struct{ actor.Message }

func (h *holder) onWait(*wait) actor.Allocation {
	<-h.release
	return actor.Nodelete
}

func TestStartPolicyUndelivered(t *testing.T) {
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprint("allow=", allow), func(t *testing.T) {
			f := &fakeTB{}
			sys := actortest.StartWith(f, actortest.Policy{AllowUndelivered: allow})
			h, err := actor.Spawn(sys, &holder{release: make(chan struct{})})
			require.NoError(t, err)
			require.NoError(t, actor.Send(h, &wait{}, (*holder).onWait))
			require.NoError(t, actor.SendPill(h, actor.FinishedMsg))
			// Queued after the pill, before the holder terminates: never delivered.
			require.NoError(t, actor.Send(h, &wait{}, (*holder).onWait))
			close(h.release)
			f.finish()
			_, errs, _ := f.get()
			if allow {
				assert.Empty(t, errs)
			} else {
				require.Len(t, errs, 1)
				assert.Contains(t, errs[0], "undelivered")
				assert.Contains(t, errs[0], "1 messages")
			}
		})
	}
}

func TestStartStoppedByTheTest(t *testing.T) {
	f := &fakeTB{}
	sys := actortest.Start(f)
	require.NoError(t, sys.Stop(context.Background()))
	f.finish()
	fatals, errs, _ := f.get()
	assert.Empty(t, fatals)
	assert.Empty(t, errs, "the test checked Stop itself")
}

func TestStartBadOptions(t *testing.T) {
	f := &fakeTB{}
	sys := actortest.Start(f, actor.WithQueues(-1))
	assert.Nil(t, sys)
	fatals, _, _ := f.get()
	require.Len(t, fatals, 1)
	assert.Contains(t, fatals[0], "invalid configuration")
	f.finish()
}

func TestProbeExpect(t *testing.T) {
	sys := actortest.Start(t)
	p := actortest.NewProbe[Total](t, sys)
	for i := range 3 {
		require.NoError(t, p.Port().Send(&Total{N: i}))
	}
	for i := range 3 {
		assert.Equal(t, i, p.Expect(10*time.Second).N, "in order")
	}
	p.ExpectNone(time.Millisecond)

	// A message that arrives while Expect waits.
	go func() {
		time.Sleep(10 * time.Millisecond)
		_ = p.Port().Send(&Total{N: 42})
	}()
	assert.Equal(t, 42, p.Expect(10*time.Second).N)

	got := p.Received()
	require.Len(t, got, 4, "Received keeps the messages Expect returned")
	assert.Equal(t, 42, got[3].N)
}

func TestProbeExpectTimeout(t *testing.T) {
	f := &fakeTB{}
	sys := actortest.Start(f)
	p := actortest.NewProbe[Total](f, sys)
	start := time.Now()
	m := p.Expect(20 * time.Millisecond)
	assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
	assert.Nil(t, m, "the zero value when Fatalf returns")
	fatals, _, _ := f.get()
	require.Len(t, fatals, 1)
	assert.Equal(t, "actortest: Probe[*actortest_test.Total]: no message within 20ms (0 received before, all expected already)", fatals[0])

	require.NoError(t, p.Port().Send(&Total{N: 1}))
	p.Expect(10 * time.Second)
	p.Expect(time.Millisecond)
	fatals, _, _ = f.get()
	require.Len(t, fatals, 2)
	assert.Contains(t, fatals[1], "(1 received before")
	f.finish()
	fatals, errs, _ := f.get()
	assert.Len(t, fatals, 2)
	assert.Empty(t, errs, "the probe terminated itself")
}

func TestProbeExpectNone(t *testing.T) {
	f := &fakeTB{}
	sys := actortest.Start(f)
	p := actortest.NewProbe[Total](f, sys)

	// Already there.
	require.NoError(t, p.Port().Send(&Total{N: 7}))
	require.Eventually(t, func() bool { return len(p.Received()) == 1 }, 10*time.Second, time.Millisecond)
	p.ExpectNone(time.Hour) // fails at once, without waiting the hour
	fatals, _, _ := f.get()
	require.Len(t, fatals, 1)
	assert.Contains(t, fatals[0], "unexpected message &{")
	assert.Contains(t, fatals[0], "N:7")
	assert.Equal(t, 7, p.Expect(time.Second).N, "left unconsumed")

	// Arriving while ExpectNone waits.
	go func() {
		time.Sleep(10 * time.Millisecond)
		_ = p.Port().Send(&Total{N: 8})
	}()
	start := time.Now()
	p.ExpectNone(10 * time.Second)
	assert.Less(t, time.Since(start), 5*time.Second, "fails when the message arrives")
	fatals, _, _ = f.get()
	require.Len(t, fatals, 2)
	assert.Contains(t, fatals[1], "N:8")
	f.finish()
}

func TestNewProbeStoppedSystem(t *testing.T) {
	f := &fakeTB{}
	sys, err := actor.Start(actor.WithWorkers(1))
	require.NoError(t, err)
	require.NoError(t, sys.Stop(context.Background()))
	assert.Nil(t, actortest.NewProbe[Total](f, sys))
	fatals, _, _ := f.get()
	require.Len(t, fatals, 1)
	assert.Contains(t, fatals[0], "NewProbe[*actortest_test.Total]")
	assert.Contains(t, fatals[0], "stopped")
}

func TestAsk(t *testing.T) {
	sys := actortest.Start(t)
	c, err := actor.Spawn(sys, &Counter{})
	require.NoError(t, err)
	get, err := actor.Bind(c, (*Counter).OnGet)
	require.NoError(t, err)
	require.NoError(t, add(c, 4))
	assert.Equal(t, 4, actortest.Ask(t, get, &GetTotal{}))
	require.NoError(t, actor.SendPill(c, actor.FinishedMsg))
	require.Eventually(t, func() bool { return !c.Alive() }, 10*time.Second, time.Millisecond)

	f := &fakeTB{}
	assert.Zero(t, actortest.Ask(f, get, &GetTotal{}))
	fatals, _, _ := f.get()
	require.Len(t, fatals, 1)
	assert.Contains(t, fatals[0], "actortest: Ask *actortest_test.GetTotal: ")
	assert.Contains(t, fatals[0], "terminated")
}

func TestRun(t *testing.T) {
	out := captureStdout(t, func() {
		var order []string
		passed := actortest.Run(func(tb actortest.TB) {
			tb.Cleanup(func() { order = append(order, "cleanup 1") })
			tb.Cleanup(func() {
				order = append(order, "cleanup 2")
				tb.Fatalf("in cleanup %d", 2)
				order = append(order, "not reached")
			})
			tb.Logf("log %d", 1)
			order = append(order, "body")
		})
		assert.False(t, passed)
		assert.Equal(t, []string{"body", "cleanup 2", "cleanup 1"}, order)

		assert.True(t, actortest.Run(func(actortest.TB) {}))
		assert.True(t, actortest.Run(func(actortest.TB) { runtime.Goexit() }), "an exit without a failure passes")
		assert.False(t, actortest.Run(func(tb actortest.TB) { tb.Errorf("error") }))
	})
	assert.Equal(t, "log 1\nFAIL: in cleanup 2\nFAIL: error\n", out)
}

// captureStdout returns what f prints to standard output.
func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	saved := os.Stdout
	os.Stdout = w
	defer func() { os.Stdout = saved }()
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		done <- b
	}()
	f()
	require.NoError(t, w.Close())
	return string(<-done)
}
