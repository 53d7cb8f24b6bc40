package bench

import (
	"context"
	"slices"
	"time"

	"github.com/actord/actord/actor"
)

// ---- constant-rate pipeline ------------------------------------------------
//
// From the CAF paper: a generator outside the executor sends messages at a
// constant rate through a chain of Stages actors to a collector, which
// records each message's end-to-end latency (from just before the
// generator's send to the collector's receive). At low rates it shows the
// cost of waking idle workers; at high rates, throughput. CPU use is the
// process's user+system time over the wall time (see CPUTime).

// PipelineResult is what one pipeline run measured.
type PipelineResult struct {
	Rate      float64         // requested messages per second
	Sent      int             // messages the generator sent
	Late      int             // sends more than one period behind schedule (Go's timers cannot sleep a few microseconds, so at high rates the generator sends each due batch at once; the achieved rate is what counts)
	Wall      time.Duration   // from the first send to the last receive
	CPU       time.Duration   // process user+system time over the run
	Latencies []time.Duration // per message, sorted
}

// Achieved returns the rate actually sent.
func (r PipelineResult) Achieved() float64 {
	return float64(r.Sent) / r.Wall.Seconds()
}

// CPUPercent returns CPU time as a percentage of one core over the run.
func (r PipelineResult) CPUPercent() float64 {
	return 100 * r.CPU.Seconds() / r.Wall.Seconds()
}

type pipeMsg struct {
	actor.Message
	sent time.Time
	seq  int
}

type pipeStage struct {
	actor.Actor
	next *pipeStage      // nil for the collector
	lat  []time.Duration // collector only
}

// forward passes a message on, or records it at the collector. A message
// with seq < 0 is the end marker: it travels down the chain behind the last
// message (per-sender FIFO) and terminates each stage after forwarding.
func (p *pipeStage) forward(m *pipeMsg) actor.Allocation {
	if p.next == nil {
		if m.seq < 0 {
			return actor.Finished
		}
		p.lat[m.seq] = time.Since(m.sent)
		return actor.Nodelete
	}
	if err := actor.Send(p.next, m, (*pipeStage).forward); err != nil {
		panic(err)
	}
	if m.seq < 0 {
		return actor.Finished
	}
	return actor.Nodelete
}

// PaceSends calls send(i) for i = 0..n-1 at rate per second, keeping to the
// schedule start + i/rate: it sleeps when ahead, and sends at once (counting
// a late send) when more than one period behind. Go's timers cannot sleep
// for a few microseconds, so at high rates it sends each due batch together.
func PaceSends(n int, rate float64, send func(i int)) (late int) {
	period := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	for i := 0; i < n; i++ {
		due := start.Add(time.Duration(i) * period)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		} else if -d > period {
			late++
		}
		send(i)
	}
	return late
}

// Pipeline runs n messages at rate through stages actors and a collector on
// sys, then stops it.
func Pipeline(sys *actor.System, stages int, rate float64, n int) (PipelineResult, error) {
	return pipelineWith(sys, stages, rate, n, func(send func(i int)) int { return PaceSends(n, rate, send) })
}

// PipelineUntil is Pipeline that stops sending when ctx ends: the messages
// sent so far travel to the end, the system stops, and the result covers
// them (Sent, Latencies). For a server that runs pipelines until told to
// stop; the benchmarks use Pipeline, whose pacing has no context to watch.
func PipelineUntil(ctx context.Context, sys *actor.System, stages int, rate float64, n int) (PipelineResult, error) {
	return pipelineWith(sys, stages, rate, n, func(send func(i int)) int { return paceUntil(ctx, n, rate, send) })
}

// paceUntil is PaceSends that returns early, without sending more, once ctx
// ends (also during a sleep).
func paceUntil(ctx context.Context, n int, rate float64, send func(i int)) (late int) {
	period := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	var t *time.Timer
	for i := 0; i < n && ctx.Err() == nil; i++ {
		due := start.Add(time.Duration(i) * period)
		if d := time.Until(due); d > 0 {
			if t == nil {
				t = time.NewTimer(d)
				defer t.Stop()
			} else {
				t.Reset(d)
			}
			select {
			case <-t.C:
			case <-ctx.Done():
				return late
			}
		} else if -d > period {
			late++
		}
		send(i)
	}
	return late
}

// pipelineWith is Pipeline with the generator's pacing given: pace calls
// send(i) for i = 0, 1, ... (n at most, in order) and returns the number
// of late sends.
func pipelineWith(sys *actor.System, stages int, rate float64, n int, pace func(send func(i int)) int) (PipelineResult, error) {
	chain := make([]pipeStage, stages+1)
	col := &chain[stages]
	col.lat = make([]time.Duration, n)
	for i := range chain {
		if i < stages {
			chain[i].next = &chain[i+1]
		}
		if _, err := actor.Spawn(sys, &chain[i]); err != nil {
			return PipelineResult{}, err
		}
	}
	msgs := make([]pipeMsg, n)
	cpu0 := CPUTime()
	t0 := time.Now()
	var sendErr error
	sent := 0
	late := pace(func(i int) {
		sent++
		m := &msgs[i]
		m.seq = i
		m.sent = time.Now()
		if err := actor.Send(&chain[0], m, (*pipeStage).forward); err != nil && sendErr == nil {
			sendErr = err
		}
	})
	if sendErr != nil {
		return PipelineResult{}, sendErr
	}
	if err := actor.Send(&chain[0], &pipeMsg{seq: -1}, (*pipeStage).forward); err != nil {
		return PipelineResult{}, err
	}
	if err := sys.Stop(context.Background()); err != nil {
		return PipelineResult{}, err
	}
	r := PipelineResult{Rate: rate, Sent: sent, Late: late, Wall: time.Since(t0), CPU: CPUTime() - cpu0, Latencies: col.lat[:sent]}
	slices.Sort(r.Latencies)
	return r, nil
}

// PipelineChan is Pipeline with one goroutine and one buffered channel per
// stage and for the collector.
func PipelineChan(stages int, rate float64, n int) PipelineResult {
	return pipelineChanWith(stages, rate, n, func(send func(i int)) int { return PaceSends(n, rate, send) })
}

// pipelineChanWith is PipelineChan with the generator's pacing given (see
// pipelineWith).
func pipelineChanWith(stages int, rate float64, n int, pace func(send func(i int)) int) PipelineResult {
	chans := make([]chan *pipeMsg, stages+1)
	for i := range chans {
		chans[i] = make(chan *pipeMsg, 1024)
	}
	lat := make([]time.Duration, n)
	done := make(chan struct{})
	for i := 0; i < stages; i++ {
		go func() {
			for m := range chans[i] {
				chans[i+1] <- m
			}
			close(chans[i+1])
		}()
	}
	go func() {
		for m := range chans[stages] {
			lat[m.seq] = time.Since(m.sent)
		}
		close(done)
	}()
	msgs := make([]pipeMsg, n)
	cpu0 := CPUTime()
	t0 := time.Now()
	late := pace(func(i int) {
		m := &msgs[i]
		m.seq = i
		m.sent = time.Now()
		chans[0] <- m
	})
	close(chans[0])
	<-done
	r := PipelineResult{Rate: rate, Sent: n, Late: late, Wall: time.Since(t0), CPU: CPUTime() - cpu0, Latencies: lat}
	slices.Sort(r.Latencies)
	return r
}
