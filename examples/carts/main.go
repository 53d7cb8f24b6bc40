// Command carts keeps a shopping cart per user as an entity that
// passivates when idle. It shows:
//
//   - actor.NewEntities with actor.WithPassivation: a cart is spawned on
//     its user's first message and ends by itself once the user has been
//     idle for the duration, its Stopped hook saving it (here, to a map
//     standing for a database);
//   - actor.EntitySend: messages sent to a user's name reach the live
//     cart, or the next one after a passivation (which loads the saved
//     state in its Started hook), never a dead letter;
//   - actor.Ask through actor.EntityPort for a cart's contents.
//
// Run it:
//
//	go run ./examples/carts -idle 200ms
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/actord/actord/actor"
)

// store stands for a database of saved carts.
type store struct {
	mu    sync.Mutex
	carts map[string][]string
	saves int
}

func (s *store) load(user string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.carts[user])
}

func (s *store) save(user string, items []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.carts[user] = slices.Clone(items)
	s.saves++
}

// cart is the entity of one user.
type cart struct {
	actor.Actor
	user  string
	db    *store
	items []string
	ended func(user string, why actor.Reason) // told at every end, may be nil
}

// Started loads the saved cart: the first incarnation finds none, the next
// ones what the last passivation saved.
func (c *cart) Started() { c.items = c.db.load(c.user) }

// Stopped saves the cart: it runs at every end, passivation included.
func (c *cart) Stopped(why actor.Reason) {
	c.db.save(c.user, c.items)
	if c.ended != nil {
		c.ended(c.user, why)
	}
}

// addItem puts an item in the cart.
type addItem struct {
	actor.Message
	item string
}

func (c *cart) onAdd(m *addItem) actor.Allocation {
	c.items = append(c.items, m.item)
	return actor.Nodelete
}

// contents asks for the items.
type contents struct {
	actor.Request[[]string]
}

func (c *cart) onContents(m *contents) actor.Allocation {
	_ = m.Reply(slices.Clone(c.items))
	return actor.Nodelete
}

// shop is the carts of every user, on one system.
type shop struct {
	sys   *actor.System
	db    *store
	carts *actor.Entities[cart, *cart]
}

func newShop(idle time.Duration, ended func(string, actor.Reason)) (*shop, error) {
	sys, err := actor.Start()
	if err != nil {
		return nil, err
	}
	db := &store{carts: map[string][]string{}}
	carts := actor.NewEntities(sys, func(user string) *cart {
		return &cart{user: user, db: db, ended: ended}
	}, actor.WithPassivation(idle))
	return &shop{sys: sys, db: db, carts: carts}, nil
}

// add sends an item to the user's cart, whichever incarnation is live.
func (s *shop) add(ctx context.Context, user, item string) error {
	return actor.EntitySend(ctx, s.carts, user, &addItem{item: item}, (*cart).onAdd)
}

// list asks the user's cart for its items.
func (s *shop) list(ctx context.Context, user string) ([]string, error) {
	p, err := actor.EntityPort(ctx, s.carts, user, (*cart).onContents)
	if err != nil {
		return nil, err
	}
	return actor.Ask(ctx, p, &contents{})
}

func run(idle time.Duration) error {
	ended := make(chan string, 16)
	s, err := newShop(idle, func(user string, why actor.Reason) {
		ended <- fmt.Sprintf("%s's cart ended: %v", user, why)
	})
	if err != nil {
		return err
	}
	ctx := context.Background()
	for _, it := range []string{"tea", "milk"} {
		if err := s.add(ctx, "alice", it); err != nil {
			return err
		}
	}
	// alice idle for the duration: her cart is saved and ends.
	fmt.Println(<-ended)
	// Her next cart, loaded.
	if err := s.add(ctx, "alice", "bread"); err != nil {
		return err
	}
	items, err := s.list(ctx, "alice")
	if err != nil {
		return err
	}
	fmt.Println("alice's cart:", items)
	fmt.Println(<-ended)
	return s.sys.Stop(ctx) // every cart has ended: nothing to wait for
}

func main() {
	idle := flag.Duration("idle", 200*time.Millisecond, "how long a cart lives without a message")
	flag.Parse()
	if err := run(*idle); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
