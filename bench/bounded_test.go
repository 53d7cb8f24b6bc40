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
// By default the run is short (1 s at 200k messages/s against 20k/s), to
// keep the test suite fast; ACTORD_SOAK=1 runs the long version (10 s at
// 500k/s against 50k/s) whose figures BENCHMARKS.md reports:
//
//	ACTORD_SOAK=1 go test -run TestBoundedMailboxSoak -count=1 -v ./bench
const (
	soakScenarioEnv = "ACTORD_BOUNDED_SCENARIO"
	soakResultTag   = "BOUNDED_RESULT "
	soakBound       = 1024
)

type soakParams struct {
	Duration time.Duration // how long the producer produces
	Rate     float64       // messages per second the producer sends
	Cost     time.Duration // consumer's work per message (its rate is 1/Cost)
}

func soakParamsFromEnv() soakParams {
	if os.Getenv("ACTORD_SOAK") == "1" {
		return soakParams{Duration: 10 * time.Second, Rate: 500_000, Cost: 20 * time.Microsecond}
	}
	return soakParams{Duration: time.Second, Rate: 200_000, Cost: 50 * time.Microsecond}
}

// soakResult is what a scenario's process reports.
type soakResult struct {
	Scenario      string
	Sent          uint64 // messages the producer offered
	Refused       uint64 // sends that failed (Reject) or timed out (SendContext)
	Dropped       uint64 // messages dropped by the mailbox (DropOldest)
	Consumed      uint64 // messages the consumer received during production
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
}

func (c *soakConsumer) take(m *soakMsg) actor.Allocation {
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

	// Produce at p.Rate, paced every millisecond.
	ctx := context.Background()
	start := time.Now()
	for sent := 0.0; ; {
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
	t.Logf("producer %.0f msg/s for %v, consumer %v per message, bound %d", p.Rate, p.Duration, p.Cost, soakBound)

	un := results["unbounded"]
	backlog := un.Sent - un.Consumed
	require.Greater(t, backlog, 4*un.Consumed, "the producer outpaced the consumer")
	for _, name := range []string{"reject", "drop_oldest", "sendcontext"} {
		r := results[name]
		require.Less(t, r.PeakHeapBytes*3, un.PeakHeapBytes,
			"%s: peak heap %d bytes, unbounded %d bytes", name, r.PeakHeapBytes, un.PeakHeapBytes)
	}
	require.Positive(t, results["reject"].Refused)
	require.Positive(t, results["drop_oldest"].Dropped)
	require.Zero(t, results["drop_oldest"].Refused)
}
