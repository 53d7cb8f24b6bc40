package main

import (
	"time"

	"github.com/actord/actord/actor"
)

// session is an actor per client session. It expires after idle time
// without use: a timer sends it an expire message, re-armed on every touch.
// When the timer fires, the session removes itself from the registry and
// terminates.
type session struct {
	actor.Actor
	id      string
	idle    time.Duration
	created time.Time
	forget  func(id string) // removes the session from the service's registry

	// Changed only by the session's behaviours.
	hits  int
	timer actor.Timer // the pending expiry; the zero Timer before the first touch
	gen   uint64      // the generation of the pending expiry

	// Ports, bound once when the session is spawned.
	touch  actor.Port[*touchReq]
	expire actor.Port[*expireMsg]
}

// touchReq marks the session as used and answers with its state.
type touchReq struct {
	actor.Request[sessionInfo]
}

// sessionInfo is what GET /session/{id} returns.
type sessionInfo struct {
	ID   string `json:"id"`
	Hits int    `json:"hits"`
	Age  string `json:"age"`
	Idle string `json:"idle_timeout"`
}

// expireMsg is sent by the session's timer. gen tells a stale expiry (one
// that fired just as a touch re-armed the timer) from the current one.
type expireMsg struct {
	actor.Message
	gen uint64
}

// endMsg ends the session at once (service shutdown).
type endMsg struct {
	actor.Message
}

// spawnSession spawns a session and binds its ports. Its timer is armed by
// its first touch, inside a behaviour like every later change.
func spawnSession(sys *actor.System, id string, idle time.Duration, forget func(string)) (*session, error) {
	s, err := actor.Spawn(sys, &session{id: id, idle: idle, created: time.Now(), forget: forget})
	if err != nil {
		return nil, err
	}
	if s.touch, err = actor.Bind(s, (*session).onTouch); err != nil {
		return nil, err
	}
	if s.expire, err = actor.Bind(s, (*session).onExpire); err != nil {
		return nil, err
	}
	return s, nil
}

// onTouch re-arms the idle timer: it stops the pending one and starts a new
// one. If Stop reports false, the old timer has fired already and its
// expireMsg is on its way; its generation is stale by then, so onExpire
// ignores it.
func (s *session) onTouch(m *touchReq) actor.Allocation {
	s.timer.Stop()
	s.gen++
	// SendAfter fails only while the system stops, and the session ends then.
	s.timer, _ = actor.SendAfter(s.expire, s.idle, &expireMsg{gen: s.gen})
	s.hits++
	m.Reply(sessionInfo{
		ID:   s.id,
		Hits: s.hits,
		Age:  time.Since(s.created).Round(time.Millisecond).String(),
		Idle: s.idle.String(),
	})
	return actor.Nodelete
}

// onExpire ends an idle session: it leaves the registry, and returning
// Delete terminates the actor (without a Release hook the garbage collector
// frees it). Asks that reach it afterwards fail with ErrTerminated.
func (s *session) onExpire(m *expireMsg) actor.Allocation {
	if m.gen != s.gen {
		return actor.Nodelete // stale: the session was touched since
	}
	s.forget(s.id)
	return actor.Delete
}

// onEnd ends the session at shutdown, cancelling its timer.
func (s *session) onEnd(*endMsg) actor.Allocation {
	s.timer.Stop()
	s.forget(s.id)
	return actor.Delete
}
