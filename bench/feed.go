package bench

import (
	"context"
	"errors"
	"sync"

	"github.com/actord/actord/actor"
)

// ---- feeding a bounded mailbox from a goroutine ------------------------------
//
// A goroutine outside the system sends n messages to one consumer actor
// whose mailbox holds at most FeedBound messages (WithMailbox(FeedBound,
// Reject)) with SendContext, which waits for room whenever the mailbox is
// full: the producer runs at the consumer's pace. The channel version sends
// on a channel with FeedBound slots to a consumer goroutine.

// FeedBound is the bound of the fed mailbox and the channel's capacity.
const FeedBound = 1024

type feedMsg struct {
	actor.Message
	n int
}

type feedConsumer struct {
	actor.Actor
	next int
	n    int
	done chan error
}

func (c *feedConsumer) take(m *feedMsg) actor.Allocation {
	if m.n != c.next {
		c.done <- errors.New("bench: feed out of order")
		return actor.Finished
	}
	c.next++
	if c.next == c.n {
		c.done <- nil
		return actor.Finished
	}
	return actor.Nodelete
}

// BoundedFeed feeds n messages with SendContext to a consumer with a bounded
// mailbox, waits until it has taken them all, then stops sys.
func BoundedFeed(sys *actor.System, n int) error {
	c := &feedConsumer{n: n, done: make(chan error, 1)}
	if n == 0 {
		return sys.Stop(context.Background())
	}
	if _, err := actor.Spawn(sys, c, actor.WithMailbox(FeedBound, actor.Reject)); err != nil {
		return err
	}
	ctx := context.Background()
	for i := 0; i < n; i++ {
		if err := actor.SendContext(ctx, c, &feedMsg{n: i}, (*feedConsumer).take); err != nil {
			return err
		}
	}
	if err := <-c.done; err != nil {
		return err
	}
	return sys.Stop(ctx)
}

// BoundedFeedChan is BoundedFeed with a consumer goroutine reading a
// channel of FeedBound slots.
func BoundedFeedChan(n int) {
	ch := make(chan *feedMsg, FeedBound)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		next := 0
		for m := range ch {
			if m.n != next {
				panic("bench: feed out of order")
			}
			next++
		}
	}()
	for i := 0; i < n; i++ {
		ch <- &feedMsg{n: i}
	}
	close(ch)
	wg.Wait()
}
