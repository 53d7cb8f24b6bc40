package bench

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/actord/actord/actor"
)

// ---- counting (sends from outside the system) -------------------------------
//
// Savina's "counting": one ordinary goroutine, outside the system, sends n
// small messages to one counter actor and then asks it for its total. The
// messages are one preallocated increment (the counter only counts them), so
// what is measured is the path of a send from a goroutine that is not a
// worker into one mailbox, one-sided: the producer never waits for the
// consumer, unless the system makes it.

type countingActor struct {
	actor.Actor
	n int
}

type countingInc struct{ actor.Message }

type countingGet struct{ actor.Request[int] }

func (c *countingActor) inc(*countingInc) actor.Allocation {
	c.n++
	return actor.Nodelete
}

func (c *countingActor) get(m *countingGet) actor.Allocation {
	if err := m.Reply(c.n); err != nil {
		panic(err)
	}
	return actor.Finished // the program's last message
}

// Counting sends n increments from the calling goroutine to a counter actor
// on sys, asks it for the total, which must be n, and stops sys.
func Counting(sys *actor.System, n int) error {
	c, err := actor.Spawn(sys, &countingActor{})
	if err != nil {
		return err
	}
	get, err := actor.Bind(c, (*countingActor).get)
	if err != nil {
		return err
	}
	m := &countingInc{}
	for i := 0; i < n; i++ {
		if err := actor.Send(c, m, (*countingActor).inc); err != nil {
			return err
		}
	}
	total, err := actor.Ask(context.Background(), get, &countingGet{})
	if err != nil {
		return err
	}
	if total != n {
		return fmt.Errorf("bench: counting: total %d, want %d", total, n)
	}
	return sys.Stop(context.Background())
}

// CountingChanBuffer is the buffer of the channel of CountingChan and of each
// channel of ForkJoinChan.
const CountingChanBuffer = 1024

// countingReq is the element of CountingChan's channel: an increment (nil
// reply) or the request for the total.
type countingReq struct{ reply chan int }

// CountingChan is Counting on a goroutine receiving from a buffered channel
// (CountingChanBuffer): the caller sends n increments (one preallocated
// request with no reply channel), then a request carrying a reply channel,
// and returns the total.
func CountingChan(n int) int {
	ch := make(chan *countingReq, CountingChanBuffer)
	go func() {
		total := 0
		for r := range ch {
			if r.reply != nil {
				r.reply <- total
				return
			}
			total++
		}
	}()
	inc := &countingReq{}
	for i := 0; i < n; i++ {
		ch <- inc
	}
	reply := make(chan int)
	ch <- &countingReq{reply: reply}
	return <-reply
}

// ---- fork-join throughput ---------------------------------------------------
//
// Savina's "fork-join throughput": one driver goroutine, outside the system,
// sends round-robin to Actors actors, Messages messages each; each receive
// does Savina's small computation (the sine of a fixed angle, squared).
// Every actor terminates on its last message. As in counting, one
// preallocated message is sent throughout.

// ForkJoinSize is the shape of the fork-join throughput benchmark.
type ForkJoinSize struct {
	Actors   int // receivers (Savina's 60)
	Messages int // messages per receiver
}

// Total is the number of messages of a run.
func (s ForkJoinSize) Total() int { return s.Actors * s.Messages }

// ForkJoinDefault is Savina's shape: 60 actors, 50,000 messages each (3 M
// messages; the same with ACTORD_BENCH_FULL=1).
func ForkJoinDefault() ForkJoinSize { return ForkJoinSize{Actors: 60, Messages: 50_000} }

// ForkJoinWork is Savina's per-message computation (exported for the peers
// in bench/compare); the result is checked so that the compiler keeps it.
func ForkJoinWork() {
	s := math.Sin(forkJoinTheta)
	if s*s > 1 {
		panic("bench: fork-join: impossible sine")
	}
}

// forkJoinTheta is Savina's angle (37.2); a variable, so that the sine is
// computed at run time.
var forkJoinTheta = 37.2

type forkJoinActor struct {
	actor.Actor
	left int
	recs int // receives (read after Stop)
}

type forkJoinMsg struct{ actor.Message }

func (a *forkJoinActor) receive(*forkJoinMsg) actor.Allocation {
	ForkJoinWork()
	a.recs++
	if a.left--; a.left == 0 {
		return actor.Finished
	}
	return actor.Nodelete
}

// ForkJoin runs fork-join throughput on sys from the calling goroutine and
// stops sys; it returns the receives counted by the actors.
func ForkJoin(sys *actor.System, sz ForkJoinSize) (int, error) {
	as := make([]*forkJoinActor, sz.Actors)
	for i := range as {
		a, err := actor.Spawn(sys, &forkJoinActor{left: sz.Messages})
		if err != nil {
			return 0, err
		}
		as[i] = a
	}
	m := &forkJoinMsg{}
	for k := 0; k < sz.Messages; k++ {
		for _, a := range as {
			if err := actor.Send(a, m, (*forkJoinActor).receive); err != nil {
				return 0, err
			}
		}
	}
	err := sys.Stop(context.Background())
	recs := 0
	for _, a := range as {
		recs += a.recs
	}
	return recs, err
}

// ForkJoinChan is ForkJoin on goroutines, each receiving from its own
// buffered channel (CountingChanBuffer); it returns the receives.
func ForkJoinChan(sz ForkJoinSize) int {
	chs := make([]chan *forkJoinMsg, sz.Actors)
	recs := make([]int, sz.Actors)
	var wg sync.WaitGroup
	wg.Add(sz.Actors)
	for i := range chs {
		chs[i] = make(chan *forkJoinMsg, CountingChanBuffer)
		go func(ch chan *forkJoinMsg, recs *int) {
			defer wg.Done()
			for range sz.Messages {
				<-ch
				ForkJoinWork()
				*recs++
			}
		}(chs[i], &recs[i])
	}
	m := &forkJoinMsg{}
	for k := 0; k < sz.Messages; k++ {
		for _, ch := range chs {
			ch <- m
		}
	}
	wg.Wait()
	total := 0
	for _, r := range recs {
		total += r
	}
	return total
}
