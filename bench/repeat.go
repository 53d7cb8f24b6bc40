package bench

import (
	"context"
	"sync"

	"github.com/actord/actord/actor"
)

// ---- repeat ----------------------------------------------------------------
//
// One client scatters a request to each of Servers servers, which all reply
// to it; when every reply is in, the next round starts; Rounds rounds. The
// replies converge on the client's queue, so this stresses contention on a
// single queue and does not scale with workers. Each server owns its
// request and reply messages (allocated once). Messages: 2*Servers*Rounds.

// RepeatSize is the shape of the repeat benchmark.
type RepeatSize struct{ Servers, Rounds int }

// Messages is the number of messages the program sends.
func (s RepeatSize) Messages() int { return 2 * s.Servers * s.Rounds }

// RepeatDefault: the Actors chapter's 100,000 servers and 200 rounds with
// ACTORD_BENCH_FULL=1, else 10,000 servers and 20 rounds.
func RepeatDefault() RepeatSize {
	if Full() {
		return RepeatSize{Servers: 100000, Rounds: 200}
	}
	return RepeatSize{Servers: 10000, Rounds: 20}
}

type repeatClient struct {
	actor.Actor
	servers        []repeatServer
	replies, round int
	rounds         int
}

type repeatServer struct {
	actor.Actor
	client *repeatClient
	req    repeatReq
	rep    repeatRep
}

type repeatReq struct{ actor.Message }
type repeatRep struct{ actor.Message }
type repeatStart struct{ actor.Message }

func (c *repeatClient) scatter() {
	for i := range c.servers {
		s := &c.servers[i]
		if err := actor.Send(s, &s.req, (*repeatServer).request); err != nil {
			panic(err)
		}
	}
}

func (c *repeatClient) start(*repeatStart) actor.Allocation {
	c.scatter()
	return actor.Nodelete
}

func (c *repeatClient) reply(*repeatRep) actor.Allocation {
	c.replies++
	if c.replies < len(c.servers) {
		return actor.Nodelete
	}
	c.replies = 0
	c.round++
	if c.round < c.rounds {
		c.scatter()
		return actor.Nodelete
	}
	for i := range c.servers {
		if err := actor.SendPill(&c.servers[i], actor.FinishedMsg); err != nil {
			panic(err)
		}
	}
	return actor.Finished
}

func (s *repeatServer) request(*repeatReq) actor.Allocation {
	if err := actor.Send(s.client, &s.rep, (*repeatClient).reply); err != nil {
		panic(err)
	}
	return actor.Nodelete
}

// Repeat runs the repeat benchmark on sys and stops it.
func Repeat(sys *actor.System, sz RepeatSize) error {
	c := &repeatClient{servers: make([]repeatServer, sz.Servers), rounds: sz.Rounds}
	if _, err := actor.Spawn(sys, c); err != nil {
		return err
	}
	for i := range c.servers {
		c.servers[i].client = c
		if _, err := actor.Spawn(sys, &c.servers[i]); err != nil {
			return err
		}
	}
	if err := actor.Send(c, &repeatStart{}, (*repeatClient).start); err != nil {
		return err
	}
	return sys.Stop(context.Background())
}

// RepeatChan is Repeat with a goroutine and a buffered channel per server
// and for the client.
func RepeatChan(sz RepeatSize) {
	replies := make(chan struct{}, sz.Servers)
	reqs := make([]chan struct{}, sz.Servers)
	var wg sync.WaitGroup
	wg.Add(sz.Servers)
	for i := range reqs {
		reqs[i] = make(chan struct{}, 1)
		go func() {
			defer wg.Done()
			for range reqs[i] {
				replies <- struct{}{}
			}
		}()
	}
	for r := 0; r < sz.Rounds; r++ {
		for _, ch := range reqs {
			ch <- struct{}{}
		}
		for i := 0; i < sz.Servers; i++ {
			<-replies
		}
	}
	for _, ch := range reqs {
		close(ch)
	}
	wg.Wait()
}
