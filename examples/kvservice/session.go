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

	// Changed only by the session's hook and behaviours.
	hits   int
	timer  actor.Timer // the pending expiry
	gen    uint64      // the generation of the pending expiry
	expire actor.Port[*expireMsg]

	// Bound once when the session is spawned, for the service.
	touch actor.Port[*touchReq]
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

// spawnSession spawns a session and binds the port the service touches it
// through. Its Started hook arms its idle timer, so that a session expires
// whatever becomes of the request that created it (a client that hangs up
// before the first touch, say).
func spawnSession(sys *actor.System, id string, idle time.Duration, forget func(string)) (*session, error) {
	s, err := actor.Spawn(sys, &session{id: id, idle: idle, created: time.Now(), forget: forget})
	if err != nil {
		return nil, err
	}
	if s.touch, err = actor.Bind(s, (*session).onTouch); err != nil {
		_ = actor.SendPill(s, actor.FinishedMsg) // not registered: nothing else would end it
		return nil, err
	}
	return s, nil
}

// Started runs on the session's worker before its first message: it binds
// the port its timer sends to and arms the timer, inside the actor like
// every later change of them.
func (s *session) Started() {
	// Bind and SendAfter fail only while the system stops, and the
	// session ends then.
	s.expire, _ = actor.Bind(s, (*session).onExpire)
	s.gen++
	s.timer, _ = actor.SendAfter(s.expire, s.idle, &expireMsg{gen: s.gen})
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
