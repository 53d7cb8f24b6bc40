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
	spawn func() (stop func(), ended <-chan struct{}, err error)

	// mu guards the fields below: written by the singleton's goroutine and
	// by its fence timer, read by Holding.
	mu   sync.Mutex
	held bool
	// rev is the revision of the key as this member last wrote it, kept
	// after the key is lost (a fence): a later attempt takes it back by
	// that revision, and Leave deletes it, unless another member wrote it
	// since.
	rev   uint64
	until time.Time
	timer *time.Timer
	stop  func() // stops the running actor; nil when none runs
	epoch uint64 // incremented at each loss of the key
	// ended is closed when the last actor spawned has ended (nil before
	// the first): the key is not taken again, nor deleted at Leave, before.
	// Written by attempt, read by attempt and run (the singleton's
	// goroutine); the channel is closed by the watch goroutine of spawn.
	ended <-chan struct{}
}

// lifeline is the message of the port that watches a singleton's actor.
type lifeline struct{ actor.Message }

// RunSingleton makes this member a candidate for the singleton name: the
// member holding the key <name> in the singletons' bucket (whose entries
// live one TTL unless refreshed) runs the actor factory makes; when the
// holder stops refreshing (it died, or lost NATS), the key expires and
// another candidate takes it and starts its own actor. The holder stops
// its actor (actor.FinishedMsg) 4/5 of a TTL after its last successful
// refresh was sent, before the key can expire on the server, so that two
// actors never run at once (see the package documentation for the
// conditions). The actor is not restarted by the cluster if it ends by
// itself: give it supervision options. A member whose actor the fence
// stopped does not take the key again before that actor has ended. Call
// after Join; Leave stops the actor, waits for its end (bounded by
// Leave's context) while it keeps the key fresh, then deletes the key, so
// that another candidate starts its actor only after this one ended.
// Errors: ErrBadName, ErrNotJoined.
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
	s := &Singleton{c: c, name: name, spawn: func() (func(), <-chan struct{}, error) {
		a, err := actor.Spawn(c.sys, factory(), opts...)
		if err != nil {
			return nil, nil, err
		}
		stop := func() { _ = actor.SendPill(a, actor.FinishedMsg) }
		ended := make(chan struct{})
		p, err := actor.Bind(a, func(A, *lifeline) actor.Allocation { return actor.Nodelete })
		var w <-chan *actor.Terminated
		if err == nil {
			w, err = actor.WatchChan(p)
		}
		if err != nil { // ended already
			close(ended)
			return stop, ended, nil
		}
		go func() {
			<-w
			close(ended)
		}()
		return stop, ended, nil
	}}
	c.wg.Add(1)
	go s.run()
	return s, nil
}

// Holding reports whether this member holds the singleton's key and runs
// its actor (not after a failed spawn, which is tried again at the next
// refresh, the key held meanwhile).
func (s *Singleton) Holding() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held && s.stop != nil
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
			rev, held, ended := s.rev, s.held, s.ended
			s.loseLocked()
			if s.timer != nil {
				s.timer.Stop()
			}
			s.mu.Unlock()
			if held {
				s.release(rev, ended)
			} else if rev != 0 {
				// Stopped by the fence timer: Leave waits for its end
				// too, then deletes the key if this member wrote it last.
				s.release(rev, ended)
			}
			return
		case <-tick.C:
		}
	}
}

// release deletes the key at Leave once the actor, stopped already, has
// ended, refreshing the key while it waits, so that no other candidate
// starts its actor meanwhile. The wait is bounded by Leave's context: if
// it ends first, the key is left to expire (one TTL later), and another
// candidate may then start its actor while this one still runs.
func (s *Singleton) release(rev uint64, ended <-chan struct{}) {
	c := s.c
	c.mu.Lock()
	leave := c.leaveCtx
	c.mu.Unlock()
	val, _ := json.Marshal(ownerRecord{Node: c.Name(), Incarnation: c.Incarnation()})
	tick := time.NewTicker(c.cfg.ttl / 4)
	defer tick.Stop()
	for ended != nil {
		select {
		case <-ended:
			ended = nil
			continue
		case <-leave.Done():
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(leave, c.fenceAfter())
		newRev, err := c.singletons.Update(ctx, s.name, val, rev)
		cancel()
		if err != nil {
			if !isWrongRevision(err) {
				c.m.kvErrors.Inc()
			}
			return // lost: leave it
		}
		rev = newRev
	}
	ctx, cancel := context.WithTimeout(leave, c.cfg.ttl)
	defer cancel()
	if err := c.singletons.Delete(ctx, s.name, jetstream.LastRevision(rev)); err != nil && !isWrongRevision(err) {
		c.m.kvErrors.Inc()
	}
}

// attempt takes the key (not held) or refreshes it (held).
func (s *Singleton) attempt() {
	c := s.c
	s.mu.Lock()
	held, rev, epoch, ended := s.held, s.rev, s.epoch, s.ended
	s.mu.Unlock()
	if !held && ended != nil {
		select {
		case <-ended:
		default:
			return // the actor stopped by a fence has not ended yet
		}
	}
	inc := c.Incarnation()
	val, _ := json.Marshal(ownerRecord{Node: c.Name(), Incarnation: inc})
	ctx, cancel := context.WithTimeout(c.ctx, c.fenceAfter()) // see Cluster.refresh
	defer cancel()
	sent := time.Now()
	var err error
	var newRev uint64
	if held || rev != 0 {
		// Refresh, or take back the key that this member wrote last (a
		// fence stopped its actor, which has ended: see above).
		newRev, err = c.singletons.Update(ctx, s.name, val, rev)
	}
	if !held && (rev == 0 || err != nil) {
		newRev, err = c.singletons.Create(ctx, s.name, val)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.epoch != epoch || c.ctx.Err() != nil {
		// Fenced or left meanwhile. A late success still wrote the key:
		// keep its revision, so that the next attempt or Leave replaces
		// it instead of leaving it fresh, held by nobody, for a TTL.
		if err == nil {
			s.rev = newRev
		}
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
		stop, ended, err := s.spawn()
		if err != nil {
			c.log.Warn("cluster: spawning a singleton", "name", s.name, "err", err)
			// Hold the key anyway; the spawn is tried again at the next refresh.
		} else {
			s.ended = ended
		}
		s.stop, s.held = stop, true
		c.m.singletons.Inc()
	} else if s.stop == nil {
		if stop, ended, err := s.spawn(); err == nil {
			s.stop, s.ended = stop, ended
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
