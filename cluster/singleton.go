package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/actord/actord/actor"
	"github.com/nats-io/nats.go/jetstream"
)

// Singleton is this member's candidacy for a cluster-wide singleton: the
// member that holds the singleton's leader key runs its actor; the others
// wait to take the key over when it expires.
type Singleton struct {
	c     *Cluster
	name  string
	spawn func() (stop func(), err error)

	// mu guards the fields below: written by the singleton's goroutine and
	// by its fence timer, read by Holding.
	mu    sync.Mutex
	held  bool
	rev   uint64
	until time.Time
	timer *time.Timer
	stop  func() // stops the running actor; nil when none runs
	epoch uint64 // incremented at each loss of the key
}

// RunSingleton makes this member a candidate for the singleton name: the
// member holding the key <name> in the singletons' bucket (whose entries
// live one TTL unless refreshed) runs the actor factory makes; when the
// holder stops refreshing (it died, or lost NATS), the key expires and
// another candidate takes it and starts its own actor. The holder stops
// its actor (actor.FinishedMsg) 4/5 of a TTL after its last successful
// refresh was sent, before the key can expire on the server, so that two
// actors never run at once (see the package documentation for the
// conditions). The actor is not restarted by the cluster if it ends by
// itself: give it supervision options. Call after Join; Leave stops it and
// releases the key. Errors: ErrBadName, ErrNotJoined.
func RunSingleton[T any, A actor.Ref[T]](c *Cluster, name string, factory func() A, opts ...actor.SpawnOption) (*Singleton, error) {
	if !validName.MatchString(name) {
		return nil, fmt.Errorf("%w: singleton %q", ErrBadName, name)
	}
	if factory == nil {
		panic("cluster: RunSingleton with a nil factory")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.joined || c.left || c.ctx == nil {
		return nil, ErrNotJoined
	}
	s := &Singleton{c: c, name: name, spawn: func() (func(), error) {
		a, err := actor.Spawn(c.sys, factory(), opts...)
		if err != nil {
			return nil, err
		}
		return func() { _ = actor.SendPill(a, actor.FinishedMsg) }, nil
	}}
	c.wg.Add(1)
	go s.run()
	return s, nil
}

// Holding reports whether this member holds the singleton's key and runs
// its actor.
func (s *Singleton) Holding() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

func (s *Singleton) run() {
	c := s.c
	defer c.wg.Done()
	tick := time.NewTicker(c.cfg.ttl / 4)
	defer tick.Stop()
	for {
		s.attempt()
		select {
		case <-c.ctx.Done():
			s.mu.Lock()
			rev, held := s.rev, s.held
			s.loseLocked()
			if s.timer != nil {
				s.timer.Stop()
			}
			s.mu.Unlock()
			if held {
				ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ttl)
				_ = c.singletons.Delete(ctx, s.name, jetstream.LastRevision(rev))
				cancel()
			}
			return
		case <-tick.C:
		}
	}
}

// attempt takes the key (not held) or refreshes it (held).
func (s *Singleton) attempt() {
	c := s.c
	s.mu.Lock()
	held, rev, epoch := s.held, s.rev, s.epoch
	s.mu.Unlock()
	inc := c.Incarnation()
	val, _ := json.Marshal(ownerRecord{Node: c.Name(), Incarnation: inc})
	ctx, cancel := context.WithTimeout(c.ctx, c.fenceAfter()) // see Cluster.refresh
	defer cancel()
	sent := time.Now()
	var err error
	var newRev uint64
	if held {
		newRev, err = c.singletons.Update(ctx, s.name, val, rev)
	} else {
		newRev, err = c.singletons.Create(ctx, s.name, val)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.epoch != epoch || c.ctx.Err() != nil {
		return
	}
	if err != nil {
		if held && isWrongRevision(err) {
			s.loseLocked()
		} else if !errors.Is(err, jetstream.ErrKeyExists) {
			c.m.kvErrors.Inc()
		}
		return
	}
	s.rev = newRev
	s.until = sent.Add(c.fenceAfter())
	if s.timer == nil {
		s.timer = time.AfterFunc(time.Until(s.until), s.fenceTimer)
	} else {
		s.timer.Reset(time.Until(s.until))
	}
	if !held {
		stop, err := s.spawn()
		if err != nil {
			c.log.Warn("cluster: spawning a singleton", "name", s.name, "err", err)
			// Hold the key anyway; the spawn is tried again at the next refresh.
		}
		s.stop, s.held = stop, true
		c.m.singletons.Inc()
	} else if s.stop == nil {
		if stop, err := s.spawn(); err == nil {
			s.stop = stop
		}
	}
}

func (s *Singleton) fenceTimer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held && !time.Now().Before(s.until) {
		s.c.log.Warn("cluster: singleton lease lapsed; stopping it", "name", s.name)
		s.loseLocked()
	}
}

// loseLocked stops the actor and forgets the key. Called with mu held.
func (s *Singleton) loseLocked() {
	if !s.held {
		return
	}
	s.epoch++
	s.held = false
	s.c.m.singletons.Dec()
	if s.stop != nil {
		s.stop()
		s.stop = nil
	}
}
