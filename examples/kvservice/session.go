package main

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/actord/actord/actor"
)

// session is an entity per client session, named by its id and spawned
// WithPassivation(idle): once it has received nothing for idle, it ends by
// itself, and nothing in it measures time.
//
// Only POST /session makes a session: its touch carries create. A touch
// without it that reaches an incarnation never created (the id is
// unknown, or its session passivated and the Entities spawned a new one)
// fails with errNoSession, and that incarnation ends at once: a GET never
// brings an expired session back.
type session struct {
	actor.Actor
	id      string
	idle    time.Duration
	created time.Time
	hits    int           // 0 until the touch that creates it
	live    *atomic.Int64 // the service's count of live sessions
}

// errNoSession answers a touch of a session that does not exist.
var errNoSession = errors.New("no such session")

// touchReq marks the session as used and answers with its state.
type touchReq struct {
	actor.Request[sessionInfo]
	create bool // sent by POST /session only
}

// sessionInfo is what POST /session and GET /session/{id} return.
type sessionInfo struct {
	ID   string `json:"id"`
	Hits int    `json:"hits"`
	Age  string `json:"age"`
	Idle string `json:"idle_timeout"`
}

func (s *session) onTouch(m *touchReq) actor.Allocation {
	if s.hits == 0 && !m.create {
		m.Fail(errNoSession)
		return actor.Delete // ends this incarnation: the name is free again
	}
	if s.hits++; s.hits == 1 {
		s.live.Add(1) // created
	}
	m.Reply(sessionInfo{
		ID:   s.id,
		Hits: s.hits,
		Age:  time.Since(s.created).Round(time.Millisecond).String(),
		Idle: s.idle.String(),
	})
	return actor.Nodelete
}

// Stopped runs however the session ends: passivated, ended by a failed
// touch (never created: not counted), or at shutdown.
func (s *session) Stopped(actor.Reason) {
	if s.hits > 0 {
		s.live.Add(-1)
	}
}
