package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/actord/actord/actor"
)

// The bounded-mailbox soak: a producer goroutine sends to one consumer
// actor about ten times faster than the consumer drains, for a fixed time,
// once per scenario, each in a fresh process (this test binary run again),
// so that each scenario's peak RSS (VmHWM) is its own:
//
//	unbounded     the default mailbox: the backlog grows for the whole run
//	reject        WithMailbox(1024, Reject): sends past the bound fail
//	drop_oldest   WithMailbox(1024, DropOldest): the oldest message goes
//	sendcontext   WithMailbox(1024, Reject) fed with SendContext: the
//	              producer waits for room (backpressure)
//
// By default the run is short and independent of the machine's speed: the
// consumer holds its first message until the producer has offered 300k
// (for sendcontext: until the producer waits for room), so that every
// count is exact. ACTORD_SOAK=1 runs the timed version (10 s at 500k
// messages/s against 50k/s) whose figures BENCHMARKS.md reports:
//
//	ACTORD_SOAK=1 go test -run TestBoundedMailboxSoak -count=1 -v ./bench
const (
	soakScenarioEnv = "ACTORD_BOUNDED_SCENARIO"
	soakResultTag   = "BOUNDED_RESULT "
	soakBound       = 1024
)

type soakParams struct {
	Duration time.Duration // how long the producer produces (timed version)
	Rate     float64       // messages per second the producer sends (timed version)
	Cost     time.Duration // consumer's work per message (its rate is 1/Cost; timed version)
	Count    int           // messages offered to a held consumer (the default version; 0: timed)
}

func soakParamsFromEnv() soakParams {
	if os.Getenv("ACTORD_SOAK") == "1" {
		return soakParams{Duration: 10 * time.Second, Rate: 500_000, Cost: 20 * time.Microsecond}
	}
	return soakParams{Count: 300_000}
}

// soakResult is what a scenario's process reports.
type soakResult struct {
	Scenario      string
	Sent          uint64 // messages the producer offered
	Refused       uint64 // sends that failed (Reject) or timed out (SendContext)
	Dropped       uint64 // messages dropped by the mailbox (DropOldest)
	Consumed      uint64 // messages the consumer received (timed version: during production)
	PeakHeapBytes uint64 // peak of heap objects in use (runtime/metrics, sampled every ms)
	PeakRSSBytes  int64  // VmHWM of the scenario's process
	Elapsed       time.Duration
}

type soakMsg struct {
	actor.Message
	payload [64]byte
}

type soakConsumer struct {
	actor.Actor
	cost     time.Duration
	fast     *atomic.Bool // set once production ends: drain without the work
	consumed *atomic.Uint64
	began    chan struct{} // held version: closed when the first message begins
	hold     chan struct{} // held version: the first message waits until it is closed
}

func (c *soakConsumer) take(m *soakMsg) actor.Allocation {
	if c.hold != nil && c.consumed.Load() == 0 {
		close(c.began)
		<-c.hold
	}
	if !c.fast.Load() {
		for t0 := time.Now(); time.Since(t0) < c.cost; {
		}
	}
	c.consumed.Add(1)
	return actor.Nodelete
}

// runSoakScenario runs one scenario in this process.
func runSoakScenario(name string, p soakParams) (soakResult, error) {
	res := soakResult{Scenario: name}
	var opts []actor.SpawnOption
	switch name {
	case "unbounded":
	case "reject", "sendcontext":
		opts = append(opts, actor.WithMailbox(soakBound, actor.Reject))
	case "drop_oldest":
		opts = append(opts, actor.WithMailbox(soakBound, actor.DropOldest))
	default:
		return res, fmt.Errorf("unknown scenario %q", name)
	}
	sys, err := actor.Start(actor.WithWorkers(1))
	if err != nil {
		return res, err
	}
	var fast atomic.Bool
	var consumed atomic.Uint64
	c := &soakConsumer{cost: p.Cost, fast: &fast, consumed: &consumed}
	if p.Count > 0 {
		c.began, c.hold = make(chan struct{}), make(chan struct{})
	}
	if _, err := actor.Spawn(sys, c, opts...); err != nil {
		return res, err
	}

	// Sample the heap in use every millisecond.
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()

	ctx := context.Background()
	start := time.Now()
	if p.Count > 0 {
		if err := produceHeld(name, p.Count, c, &res); err != nil {
			return res, err
		}
	}
	// Produce at p.Rate, paced every millisecond (the timed version).
	for sent := 0.0; p.Count == 0; {
		now := time.Since(start)
		if now >= p.Duration {
			break
		}
		for due := p.Rate * now.Seconds(); sent < due; sent++ {
			m := &soakMsg{}
			m.payload[0] = byte(sent)
			var err error
			if name == "sendcontext" {
				sctx, cancel := context.WithDeadline(ctx, start.Add(p.Duration))
				err = actor.SendContext(sctx, c, m, (*soakConsumer).take)
				cancel()
			} else {
				err = actor.Send(c, m, (*soakConsumer).take)
			}
			res.Sent++
			switch {
			case err == nil:
			case errors.Is(err, actor.ErrMailboxFull):
				res.Refused++
			default:
				return res, err
			}
			if time.Since(start) >= p.Duration {
				break
			}
		}
		time.Sleep(time.Millisecond)
	}
	res.Elapsed = time.Since(start)
	res.Consumed = consumed.Load()
	if p.Count > 0 {
		// Held: wait for the consumer to take everything accepted.
		for consumed.Load()+res.Refused+droppedSoFar(sys) < res.Sent {
			time.Sleep(time.Millisecond)
		}
		res.Consumed = consumed.Load()
	}
	close(stop)
	wg.Wait()
	res.PeakHeapBytes = peak.Load()
	res.PeakRSSBytes = PeakRSS()

	// Drain quickly and stop cleanly.
	fast.Store(true)
	if err := sendPillWhenRoom(c); err != nil {
		return res, err
	}
	if err := sys.Stop(context.Background()); err != nil {
		return res, err
	}
	st, err := sys.Stats()
	if err != nil {
		return res, err
	}
	res.Dropped = st.MailboxDroppedOldest + st.MailboxDroppedNewest
	return res, nil
}

// droppedSoFar returns the messages sys's bounded mailboxes have dropped.
func droppedSoFar(sys *actor.System) uint64 {
	st, err := sys.Stats()
	if err != nil {
		return 0
	}
	return st.MailboxDroppedOldest + st.MailboxDroppedNewest
}

// produceHeld is the default version's producer: it sends one message and
// waits until the consumer holds it, then offers count-1 more while the
// consumer holds the first, and lets it go on. The sendcontext scenario
// sends from a goroutine, which must wait for room once bound messages are
// queued; the consumer is let go only once that goroutine has begun the
// send after those, so that it had to wait.
func produceHeld(name string, count int, c *soakConsumer, res *soakResult) error {
	send := func(m *soakMsg) error { return actor.Send(c, m, (*soakConsumer).take) }
	if name == "sendcontext" {
		send = func(m *soakMsg) error { return actor.SendContext(context.Background(), c, m, (*soakConsumer).take) }
	}
	var offered atomic.Int64
	offer := func() error {
		offered.Add(1)
		err := send(&soakMsg{})
		res.Sent++
		if errors.Is(err, actor.ErrMailboxFull) {
			res.Refused++
			return nil
		}
		return err
	}
	if err := offer(); err != nil {
		return err
	}
	<-c.began
	if name != "sendcontext" {
		for res.Sent < uint64(count) {
			if err := offer(); err != nil {
				return err
			}
		}
		close(c.hold)
		return nil
	}
	done := make(chan error, 1)
	go func() {
		for res.Sent < uint64(count) {
			if err := offer(); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for offered.Load() < soakBound+2 { // the held one, a full mailbox, and one more
		time.Sleep(time.Millisecond)
	}
	close(c.hold)
	return <-done
}

// sendPillWhenRoom sends the consumer its pill, retrying while its bounded
// mailbox is full (pills count as messages; none waits for room).
func sendPillWhenRoom(c *soakConsumer) error {
	for {
		err := actor.SendPill(c, actor.FinishedMsg)
		if !errors.Is(err, actor.ErrMailboxFull) {
			return err
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBoundedMailboxSoak runs each scenario in its own process and checks
// that the bounded ones keep the heap flat where the unbounded one grows.
func TestBoundedMailboxSoak(t *testing.T) {
	if name := os.Getenv(soakScenarioEnv); name != "" {
		// The child: run one scenario and report it.
		res, err := runSoakScenario(name, soakParamsFromEnv())
		require.NoError(t, err)
		b, err := json.Marshal(res)
		require.NoError(t, err)
		fmt.Println(soakResultTag + string(b))
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("peak RSS comes from /proc/self/status")
	}
	p := soakParamsFromEnv()
	results := map[string]soakResult{}
	for _, name := range []string{"unbounded", "reject", "drop_oldest", "sendcontext"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBoundedMailboxSoak$", "-test.count=1")
		cmd.Env = append(os.Environ(), soakScenarioEnv+"="+name)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s:\n%s", name, out)
		var res soakResult
		found := false
		for _, line := range strings.Split(string(out), "\n") {
			if js, ok := strings.CutPrefix(line, soakResultTag); ok {
				require.NoError(t, json.Unmarshal([]byte(js), &res))
				found = true
			}
		}
		require.True(t, found, "%s: no result in:\n%s", name, out)
		results[name] = res
		t.Logf("%-12s sent %9d  consumed %7d  refused %9d  dropped %9d  peak heap %7.1f MiB  peak RSS %7.1f MiB  (%v)",
			name, res.Sent, res.Consumed, res.Refused, res.Dropped,
			float64(res.PeakHeapBytes)/(1<<20), float64(res.PeakRSSBytes)/(1<<20), res.Elapsed.Round(time.Millisecond))
	}
	un := results["unbounded"]
	if p.Count > 0 {
		t.Logf("%d messages offered to a consumer holding its first, bound %d", p.Count, soakBound)
		n, bound := uint64(p.Count), uint64(soakBound)
		require.Equal(t, n-1-bound, results["reject"].Refused, "reject: every send past the bound refused")
		require.Equal(t, n-1-bound, results["drop_oldest"].Dropped, "drop_oldest: every send past the bound dropped one")
		for _, name := range []string{"unbounded", "reject", "drop_oldest", "sendcontext"} {
			r := results[name]
			require.Equal(t, n, r.Sent, name)
			require.Equal(t, r.Sent, r.Consumed+r.Refused+r.Dropped, "%s: every message consumed, refused or dropped", name)
		}
		require.Equal(t, n, un.Consumed, "unbounded: nothing refused, everything delivered")
		require.Equal(t, n, results["sendcontext"].Consumed, "sendcontext: nothing refused, everything delivered")
	} else {
		t.Logf("producer %.0f msg/s for %v, consumer %v per message, bound %d", p.Rate, p.Duration, p.Cost, soakBound)
		backlog := un.Sent - un.Consumed
		require.Greater(t, backlog, 4*un.Consumed, "the producer outpaced the consumer")
	}
	for _, name := range []string{"reject", "drop_oldest", "sendcontext"} {
		r := results[name]
		require.Less(t, r.PeakHeapBytes*3, un.PeakHeapBytes,
			"%s: peak heap %d bytes, unbounded %d bytes", name, r.PeakHeapBytes, un.PeakHeapBytes)
	}
	require.Positive(t, results["reject"].Refused)
	require.Positive(t, results["drop_oldest"].Dropped)
	require.Zero(t, results["drop_oldest"].Refused)
}
