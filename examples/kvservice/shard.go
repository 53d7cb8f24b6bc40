package main

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/actord/actord/actor"
)

// shard is a store actor: it owns the keys that hash to it, in a plain map.
// Its behaviours never run concurrently with each other, so the map needs
// no lock; different shards run in parallel on the system's workers.
//
// Shards are entities named "0" to "n-1", spawned WithRestart: a panic in
// a behaviour restarts the shard in place, and its Started hook, run again,
// gives it an empty map (its keys are lost, as a crashed process's memory
// is). Past the restart budget it terminates, and the next request to its
// name spawns a new one.
type shard struct {
	actor.Actor
	data     map[string][]byte
	slowDone actor.Port[*slowDone] // where its timers send due slow requests
	restarts *atomic.Int64         // the service's counter
}

// errNoKey answers a request for a key the shard does not hold.
var errNoKey = errors.New("no such key")

// Requests. Each embeds actor.Request[R], R being the type of its reply: the
// behaviour receiving it answers with m.Reply, which accepts only an R, or
// with m.Fail(err), and actor.Ask returns that R, or err, to the handler.
type (
	getReq struct { // a key's value; errNoKey
		actor.Request[[]byte]
		key string
	}
	putReq struct { // stores a value; the reply says whether the key is new
		actor.Request[bool]
		key   string
		value []byte
	}
	deleteReq struct { // removes a key; errNoKey
		actor.Request[struct{}]
		key string
	}
	pingReq struct { // the number of keys (health checks)
		actor.Request[int]
	}
	slowReq struct { // answered after d: a stand-in for a slow backend
		actor.Request[string]
		d time.Duration
	}
	crashReq struct { // makes the shard panic: a stand-in for a bug
		actor.Request[struct{}]
	}
)

// slowDone is the message a shard's timer delivers when a slow request is due.
type slowDone struct {
	actor.Message
	req *slowReq
}

// Started runs on the shard's worker before its first message, and again
// after each restart: the state it makes is the whole state.
func (sh *shard) Started() {
	if sh.data != nil {
		sh.restarts.Add(1)
	}
	sh.data = make(map[string][]byte)
	sh.slowDone, _ = actor.Bind(sh, (*shard).onSlowDone) // fails only for an ended actor
}

func (sh *shard) onGet(m *getReq) actor.Allocation {
	if v, ok := sh.data[m.key]; ok {
		m.Reply(v)
	} else {
		m.Fail(errNoKey)
	}
	return actor.Nodelete // keep receiving
}

func (sh *shard) onPut(m *putReq) actor.Allocation {
	_, existed := sh.data[m.key]
	sh.data[m.key] = m.value // the handler handed the slice over with the message
	m.Reply(!existed)
	return actor.Nodelete
}

func (sh *shard) onDelete(m *deleteReq) actor.Allocation {
	if _, ok := sh.data[m.key]; ok {
		delete(sh.data, m.key)
		m.Reply(struct{}{})
	} else {
		m.Fail(errNoKey)
	}
	return actor.Nodelete
}

func (sh *shard) onPing(m *pingReq) actor.Allocation {
	m.Reply(len(sh.data))
	return actor.Nodelete
}

// onSlow does not sleep: a sleeping behaviour would hold its worker's thread.
// It keeps the request and arms a timer that sends it back to the shard
// when it is due; meanwhile the shard serves its other keys. If the asker
// gives up first (its context ends), the late reply is counted and dropped.
func (sh *shard) onSlow(m *slowReq) actor.Allocation {
	// SendAfter fails only while the system stops; the asker's deadline
	// ends its wait then.
	_, _ = actor.SendAfter(sh.slowDone, m.d, &slowDone{req: m})
	return actor.Nodelete
}

func (sh *shard) onSlowDone(m *slowDone) actor.Allocation {
	m.req.Reply(fmt.Sprintf("done after %v", m.req.d))
	return actor.Nodelete
}

// onCrash panics. The executor recovers the panic, reports it to the
// system's error handler, fails this request with the *actor.PanicError
// and restarts the shard (WithRestart); the worker, the requests queued
// for the shard and every other actor go on.
func (sh *shard) onCrash(*crashReq) actor.Allocation {
	panic("kvservice: shard asked to crash")
}
