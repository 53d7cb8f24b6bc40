package actor_test

import (
	"context"
	"fmt"
	"github.com/actord/actord/actortest"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/executor"
	"github.com/actord/actord/stealing"
)

// A stress program: external goroutines and actors send numbered messages;
// every message may be forwarded a few more hops. Each receiver checks, per
// sender, that sequence numbers arrive exactly in order with no gap and no
// duplicate (exactly-once delivery plus per-sender FIFO), and each behaviour
// asserts that no other worker is running the same actor at the same time.

type stressMsg struct {
	actor.Message
	from int // sender id: external goroutines first, then actors
	seq  int // per (from, to) sequence number, from 1
	hops int // further forwards to make
}

type stressActor struct {
	actor.Actor
	id      int
	h       *stressHarness
	running atomic.Int32 // 1 while a behaviour runs: detects concurrent execution
	lastSeq map[int]int  // per sender: last sequence number received
	sentTo  []int        // per actor: last sequence number sent
	rng     *rand.Rand
}

type stressHarness struct {
	actors              []*stressActor
	externals           int
	sent, received      atomic.Int64
	concurrentRunsFound atomic.Int64
	orderViolations     atomic.Int64
	firstViolation      atomic.Pointer[string]
}

func (h *stressHarness) violation(format string, args ...any) {
	h.orderViolations.Add(1)
	s := fmt.Sprintf(format, args...)
	h.firstViolation.CompareAndSwap(nil, &s)
}

func (a *stressActor) receive(m *stressMsg) actor.Allocation {
	if !a.running.CompareAndSwap(0, 1) {
		a.h.concurrentRunsFound.Add(1)
	}
	if want := a.lastSeq[m.from] + 1; m.seq != want {
		a.h.violation("actor %d: from %d got seq %d, want %d", a.id, m.from, m.seq, want)
	}
	a.lastSeq[m.from] = m.seq
	if m.hops > 0 {
		to := a.rng.IntN(len(a.h.actors))
		a.sentTo[to]++
		next := &stressMsg{from: a.h.externals + a.id, seq: a.sentTo[to], hops: m.hops - 1}
		a.h.sent.Add(1)
		if err := actor.Send(a.h.actors[to], next, (*stressActor).receive); err != nil {
			a.h.violation("forward failed: %v", err)
		}
	}
	a.h.received.Add(1)
	a.running.Store(0)
	return actor.Nodelete
}

type stressConfig struct {
	name              string
	cfg               executor.Config
	actors, senders   int
	messagesPerSender int
	maxHops           int
	// pauseEvery > 0: each sender sleeps pause after every pauseEvery
	// messages instead of the short random pauses.
	pauseEvery int
	pause      time.Duration
	// wantSteals, wantReleases: the configuration is there to exercise
	// stealing, or workers giving their threads back; a run that did
	// neither is made again (see TestStress).
	wantSteals, wantReleases bool
}

// runStress runs one configuration, checks it, and returns its totals.
func runStress(t *testing.T, sc stressConfig) executor.WorkerStats {
	sys, err := actor.Start(actor.WithConfig(sc.cfg))
	require.NoError(t, err)
	h := &stressHarness{externals: sc.senders}
	for i := 0; i < sc.actors; i++ {
		a := &stressActor{id: i, h: h, lastSeq: map[int]int{}, sentTo: make([]int, sc.actors),
			rng: rand.New(rand.NewPCG(uint64(i), 7))}
		_, err := actor.Spawn(sys, a)
		require.NoError(t, err)
		h.actors = append(h.actors, a)
	}
	var wg sync.WaitGroup
	for s := 0; s < sc.senders; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(s), 11))
			seqs := make([]int, sc.actors)
			for i := 0; i < sc.messagesPerSender; i++ {
				to := rng.IntN(sc.actors)
				seqs[to]++
				h.sent.Add(1)
				m := &stressMsg{from: s, seq: seqs[to], hops: rng.IntN(sc.maxHops + 1)}
				if err := actor.Send(h.actors[to], m, (*stressActor).receive); err != nil {
					h.violation("external send failed: %v", err)
				}
				if sc.pauseEvery > 0 {
					if i%sc.pauseEvery == 0 {
						time.Sleep(sc.pause)
					}
				} else if i%512 == 0 {
					time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond) // let workers park
				}
			}
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(60 * time.Second)
	for h.received.Load() != h.sent.Load() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	require.Equal(t, h.sent.Load(), h.received.Load(), "every message delivered (timed out waiting)")
	for _, a := range h.actors {
		require.NoError(t, actor.SendPill(a, actor.FinishedMsg))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, sys.Stop(ctx))

	if v := h.firstViolation.Load(); v != nil {
		t.Fatalf("%d order violations; first: %s", h.orderViolations.Load(), *v)
	}
	require.Zero(t, h.concurrentRunsFound.Load(), "an actor ran on two workers at once")
	// No gap at the end either: the last sequence number received from each
	// sender is the number of messages it sent.
	for _, a := range h.actors {
		for _, b := range h.actors {
			require.Equal(t, a.sentTo[b.id], b.lastSeq[h.externals+a.id], "actor %d -> %d", a.id, b.id)
		}
	}
	st := actortest.MustStats(sys)
	tot := st.Total()
	require.Equal(t, uint64(h.sent.Load()+int64(sc.actors)), st.MessagesSent, "sends counted (pills included)")
	require.Equal(t, st.MessagesSent, tot.MessagesProcessed(), "every sent message processed exactly once")
	t.Logf("%s: %d messages; gulps %d (mean %.1f), local sends %d, missed gulps %d, steals %d/%d attempts (%d stolen msgs), parks %d, wakeups by sender %d / timeout %d",
		sc.name, h.sent.Load(), tot.GulpSize.Count, tot.GulpSize.Mean(), tot.LocalSends, tot.MissedGulps,
		tot.Steals(), tot.StealAttempts, tot.StealSize.Sum, tot.Parks, tot.WakeupsBySender, tot.WakeupsByTimeout)
	return tot
}

func TestStress(t *testing.T) {
	scale := 1
	if testing.Short() {
		scale = 4
	}
	configs := []stressConfig{
		{name: "8 workers on few cores, stealing forced, parking often",
			cfg: executor.Config{Workers: 8, QueuesPerWorker: 2, SpinPasses: 2, ParkTimeout: 200 * time.Microsecond,
				Steal: stealing.LongestVictim, LocalBatch: 4, Regulps: 1},
			actors: 48, senders: 4, messagesPerSender: 20000 / scale, maxHops: 3, wantSteals: true},
		{name: "random victims, one queue per worker",
			cfg:    executor.Config{Workers: 6, Queues: 6, SpinPasses: 4, ParkTimeout: time.Millisecond, Steal: stealing.Random},
			actors: 20, senders: 3, messagesPerSender: 20000 / scale, maxHops: 4}, // steals in some runs only
		{name: "no stealing, default batches",
			cfg:    executor.Config{Workers: 4, Steal: stealing.None},
			actors: 100, senders: 4, messagesPerSender: 20000 / scale, maxHops: 2},
		{name: "long sleeps between bursts: workers let their threads go",
			cfg:    executor.Config{Workers: 4, QueuesPerWorker: 2, SpinPasses: 2},
			actors: 24, senders: 3, messagesPerSender: 4000 / scale, maxHops: 3, pauseEvery: 100, pause: 5 * time.Millisecond,
			wantReleases: true},
		{name: "single worker",
			cfg:    executor.Config{Workers: 1},
			actors: 10, senders: 2, messagesPerSender: 20000 / scale, maxHops: 5},
	}
	for _, sc := range configs {
		t.Run(sc.name, func(t *testing.T) {
			// The checks above hold in every run; what a run exercises
			// depends on timing, so a run that missed what its
			// configuration is for is made again, up to three times.
			for attempt := 1; ; attempt++ {
				tot := runStress(t, sc)
				var missed []string
				if sc.wantSteals && tot.Steals() == 0 {
					missed = append(missed, "no steal")
				}
				if sc.wantReleases && tot.ThreadReleases == 0 {
					missed = append(missed, "no thread given back")
				}
				if len(missed) == 0 {
					return
				}
				require.Less(t, attempt, 3, "%v in %d runs", missed, attempt)
				t.Logf("run %d: %v; again", attempt, missed)
			}
		})
	}
}
