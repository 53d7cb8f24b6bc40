package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/actord/actord/actor"
)

// ---- churn (and the engine of locality) ------------------------------------
//
// Adapted from the scheduler chapter's churn benchmark, where threads V and
// then P a random counting semaphore out of a small array, so that wake-ups
// bear no relation to where the woken thread blocked. With actors, a
// semaphore is a spot actor holding at most one waiting client:
//
//   - a client arrives at a random spot (it sends the spot an arrival naming
//     itself) and then receives nothing until it is woken;
//   - a spot receiving an arrival wakes the client it holds (sends it a wake)
//     and holds the newcomer instead;
//   - a woken client counts one operation and arrives again at a random spot.
//
// Clients 0..Spots-1 start held by spots 0..Spots-1 (the scheduler chapter's
// source starts its first threads blocked, skipping their first V); the other
// Clients-Spots clients start by arriving. From then on every spot always
// holds exactly one client, and Clients-Spots clients circulate: their
// arrivals and wakes are the traffic.
//
// Termination: a client finishes (terminates) when woken for the
// Iterations-th time. A finished client never arrives again, and the spots
// always hold Spots distinct unfinished clients, so when Clients-Spots clients
// have finished the remaining Spots clients are all held and no arrival or
// wake is in flight. The client that finishes last (an atomic counter
// reaching Clients-Spots) then sends every spot a flush; a flushed spot
// sends its client a stop wake and terminates, and the client terminates on
// it. No message is left undelivered.
//
// Locality (see locality.go) is the same program where each client owns an
// array of Words words and increments Cells random cells of it before each
// arrival; with Share the array travels with the arrival and the spot hands
// it to the client it wakes, so data and actor part ways on every
// operation.
//
// Messages: Clients+Spots+2*Ops (the start arrivals' kick-offs, the flushes
// and stop wakes, and one arrival and one wake per operation).

// ChurnSize is the shape of the churn and locality benchmarks.
type ChurnSize struct {
	Clients    int // clients (the scheduler chapter's threads), more than Spots
	Spots      int // spots (the scheduler chapter's semaphores), at least 1
	Iterations int // wakes after which a client finishes, at least 1
	Words      int // locality: words of each client's array (0 for churn)
	Cells      int // locality: random cells incremented before each arrival
	Share      bool
}

// Check panics if s is not a valid churn or locality size.
func (s ChurnSize) Check() {
	if s.Spots < 1 || s.Clients <= s.Spots || s.Iterations < 1 || s.Words < 0 || s.Cells < 0 || (s.Cells > 0) != (s.Words > 0) {
		panic(fmt.Sprintf("bench: invalid ChurnSize %+v: need 1 <= Spots < Clients, Iterations >= 1, and Words and Cells both zero or both positive", s))
	}
}

// arrays is the number of arrays in the program: with Share, the clients
// initially held by spots have none (they receive one with their first
// wake), so Clients-Spots arrays circulate; without Share every client
// owns one.
func (s ChurnSize) arrays() int {
	switch {
	case s.Words == 0:
		return 0
	case s.Share:
		return s.Clients - s.Spots
	default:
		return s.Clients
	}
}

// ChurnResult is what a churn or locality run did.
type ChurnResult struct {
	Ops      int    // wakes received by clients (the scheduler chapter's iterations), stop wakes excluded
	Arrivals int    // arrivals sent by clients
	Sum      uint64 // sum of every array's cells: Cells*Arrivals
	Arrays   int    // distinct arrays found in the clients (and, for the channel version, the channels) at the end
	Messages int    // messages sent (actord only; 0 for the channel version)
}

// ChurnDefault is the churn benchmark's size on workers workers: the
// scheduler chapter's 100 clients per worker, half as many spots (it does
// not give its spot count), and about 1 million operations in all (10 million
// with ACTORD_BENCH_FULL=1).
func ChurnDefault(workers int) ChurnSize {
	workers = max(workers, 1)
	clients, total := 100*workers, 1_000_000
	if Full() {
		total *= 10
	}
	return ChurnSize{Clients: clients, Spots: clients / 2, Iterations: max(total/clients, 1)}
}

// ChurnRNG is the churn benchmarks' xorshift64 generator (one per client;
// never zero); exported so that the peers in bench/compare draw the same
// numbers.
type ChurnRNG uint64

func NewChurnRNG(i int) ChurnRNG { return ChurnRNG(uint64(i+1)*0x9E3779B97F4A7C15 | 1) }

func (r *ChurnRNG) Next() uint64 {
	x := uint64(*r)
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	*r = ChurnRNG(x)
	return x
}

// Touch increments cells random cells of data (the scheduler chapter's
// work(a)).
func (r *ChurnRNG) Touch(data []uint64, cells int) {
	n := uint64(len(data))
	for range cells {
		data[r.Next()%n]++
	}
}

type churnClient struct {
	actor.Actor
	run      *churnRun
	rng      ChurnRNG
	ops      int      // wakes so far
	arrivals int      // arrivals so far
	data     []uint64 // the client's array; with Share, nil from an arrival to the next wake
	arrive   churnArrive
	wake     churnWake // sent to this client by the spot that releases it
}

type churnSpot struct {
	actor.Actor
	waiter *churnClient // the client held, never nil
}

// churnArrive is a client's own arrival message: it has at most one in
// flight, and sends it again only after being woken, that is after the spot
// received it.
type churnArrive struct {
	actor.Message
	from *churnClient
	data []uint64 // with Share, the arriving client's array, for the client the spot wakes
}

// churnWake is a client's own wake message, sent by the spot holding it.
type churnWake struct {
	actor.Message
	data []uint64 // with Share, the array of the client that arrived
	stop bool     // the flush: terminate
}

type churnStart struct{ actor.Message }
type churnFlush struct{ actor.Message }

// churnRun is shared by the clients of one run.
type churnRun struct {
	sz       ChurnSize
	spots    []churnSpot
	finished atomic.Int64 // clients that finished; Add by each finishing client, whose result decides which one flushes
	flush    churnFlush
}

func (c *churnClient) start(*churnStart) actor.Allocation {
	c.arriveAtRandom()
	return actor.Nodelete
}

func (c *churnClient) arriveAtRandom() {
	sz := &c.run.sz
	if sz.Cells > 0 {
		c.rng.Touch(c.data, sz.Cells)
	}
	s := &c.run.spots[c.rng.Next()%uint64(len(c.run.spots))]
	c.arrive.data = nil
	if sz.Share {
		c.arrive.data, c.data = c.data, nil
	}
	c.arrivals++
	if err := actor.Send(s, &c.arrive, (*churnSpot).arrived); err != nil {
		panic(err)
	}
}

func (c *churnClient) woken(w *churnWake) actor.Allocation {
	if w.stop {
		return actor.Finished
	}
	if c.run.sz.Share {
		c.data, w.data = w.data, nil
	}
	c.ops++
	if c.ops < c.run.sz.Iterations {
		c.arriveAtRandom()
		return actor.Nodelete
	}
	// Finished. The last of Clients-Spots finishers flushes: by then the
	// spots hold every unfinished client (see the comment at the top).
	if c.run.finished.Add(1) == int64(c.run.sz.Clients-c.run.sz.Spots) {
		for i := range c.run.spots {
			if err := actor.Send(&c.run.spots[i], &c.run.flush, (*churnSpot).flushed); err != nil {
				panic(err)
			}
		}
	}
	return actor.Finished
}

func (s *churnSpot) arrived(a *churnArrive) actor.Allocation {
	w := s.waiter
	s.waiter = a.from
	// w is held, so it is not running: its wake message is free.
	w.wake.data = a.data
	a.data = nil
	if err := actor.Send(w, &w.wake, (*churnClient).woken); err != nil {
		panic(err)
	}
	return actor.Nodelete
}

func (s *churnSpot) flushed(*churnFlush) actor.Allocation {
	w := s.waiter
	w.wake.stop = true
	if err := actor.Send(w, &w.wake, (*churnClient).woken); err != nil {
		panic(err)
	}
	return actor.Finished
}

// Churn runs the churn benchmark (or, with Words > 0, locality) on a fresh
// sys and stops it.
func Churn(sys *actor.System, sz ChurnSize) (ChurnResult, error) {
	sz.Check()
	run := &churnRun{sz: sz, spots: make([]churnSpot, sz.Spots)}
	clients := make([]churnClient, sz.Clients)
	for i := range clients {
		c := &clients[i]
		c.run = run
		c.rng = NewChurnRNG(i)
		c.arrive.from = c
		if sz.Words > 0 && (!sz.Share || i >= sz.Spots) {
			c.data = make([]uint64, sz.Words)
		}
	}
	for i := range run.spots {
		run.spots[i].waiter = &clients[i]
		if _, err := actor.Spawn(sys, &run.spots[i]); err != nil {
			return ChurnResult{}, err
		}
	}
	for i := range clients {
		if _, err := actor.Spawn(sys, &clients[i]); err != nil {
			return ChurnResult{}, err
		}
	}
	start := &churnStart{} // shared: its status stays Nodelete
	for i := sz.Spots; i < sz.Clients; i++ {
		if err := actor.Send(&clients[i], start, (*churnClient).start); err != nil {
			return ChurnResult{}, err
		}
	}
	if err := sys.Stop(context.Background()); err != nil {
		return ChurnResult{}, err
	}
	var r ChurnResult
	datas := make([][]uint64, 0, len(clients))
	for i := range clients {
		r.Ops += clients[i].ops
		r.Arrivals += clients[i].arrivals
		datas = append(datas, clients[i].data)
	}
	r.Sum, r.Arrays = SumArrays(datas)
	// The starts, one arrival per arrival and one wake per operation, a
	// flush and a stop wake per spot.
	r.Messages = sz.Clients - sz.Spots + r.Arrivals + r.Ops + 2*sz.Spots
	return r, nil
}

// SumArrays returns the sum of the cells of the distinct non-nil arrays and
// their number (an array seen twice, which would be a bug, counts once).
func SumArrays(datas [][]uint64) (sum uint64, n int) {
	seen := make(map[*uint64]bool, len(datas))
	for _, d := range datas {
		if len(d) == 0 || seen[&d[0]] {
			continue
		}
		seen[&d[0]] = true
		n++
		for _, v := range d {
			sum += v
		}
	}
	return sum, n
}

// ChurnChan is Churn on goroutines with buffered channels as the scheduler
// chapter's counting semaphores: V is a send and P a receive, on the same
// random spot. With Share the token carries the array, so the array moves to
// whichever goroutine receives it. Goroutines 0..Spots-1 start with a P on
// their own spot.
//
// Termination as for Churn: when Clients-Spots goroutines have finished,
// the last one sets a stop flag, and the main goroutine then sends Clients
// empty tokens to each spot, so that every goroutine blocked in P wakes,
// sees the flag and exits (running goroutines see it before their next V).
// A spot holds at most one token per goroutine (each V is followed by a P)
// plus the main goroutine's, hence a capacity of 2*Clients, so no send
// blocks.
func ChurnChan(sz ChurnSize) ChurnResult {
	sz.Check()
	spots := make([]chan []uint64, sz.Spots)
	for i := range spots {
		spots[i] = make(chan []uint64, 2*sz.Clients)
	}
	var (
		finished atomic.Int64 // goroutines that finished; the one reaching Clients-Spots sets stop and closes flush
		stop     atomic.Bool  // set once; read by every goroutine before each V and after each P
		flush    = make(chan struct{})
		wg       sync.WaitGroup
	)
	// Per goroutine, written by it only and read after wg.Wait.
	ops := make([]int, sz.Clients)
	arrivals := make([]int, sz.Clients)
	datas := make([][]uint64, sz.Clients)
	wg.Add(sz.Clients)
	for i := range sz.Clients {
		go func() {
			defer wg.Done()
			rng := NewChurnRNG(i)
			var data []uint64
			if sz.Words > 0 && (!sz.Share || i >= sz.Spots) {
				data = make([]uint64, sz.Words)
			}
			defer func() { datas[i] = data }()
			spot := i // P first on its own spot if i < Spots
			for held := i < sz.Spots; ; held = false {
				if !held {
					if stop.Load() {
						return
					}
					if sz.Cells > 0 {
						rng.Touch(data, sz.Cells)
					}
					spot = int(rng.Next() % uint64(sz.Spots))
					var give []uint64
					if sz.Share {
						give, data = data, nil
					}
					arrivals[i]++
					spots[spot] <- give // V
				}
				got := <-spots[spot] // P
				if sz.Share && got != nil {
					data = got
				}
				if stop.Load() {
					return
				}
				ops[i]++
				if ops[i] == sz.Iterations {
					if finished.Add(1) == int64(sz.Clients-sz.Spots) {
						stop.Store(true)
						close(flush)
					}
					return
				}
			}
		}()
	}
	<-flush
	for _, s := range spots {
		for range sz.Clients {
			s <- nil
		}
	}
	wg.Wait()
	var r ChurnResult
	for i := range sz.Clients {
		r.Ops += ops[i]
		r.Arrivals += arrivals[i]
	}
	// With Share, arrays sent after the stop may still sit in the channels.
	for _, s := range spots {
		for len(s) > 0 {
			datas = append(datas, <-s)
		}
	}
	r.Sum, r.Arrays = SumArrays(datas)
	return r
}
