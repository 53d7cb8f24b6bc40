package main

import (
	"fmt"
	"time"

	"github.com/actord/actord/actor"
)

// shard is a store actor: it owns the keys that hash to it, in a plain map.
// Its behaviours never run concurrently with each other, so the map needs
// no lock; different shards run in parallel on the system's workers.
type shard struct {
	actor.Actor
	data map[string][]byte

	// Ports to the shard's behaviours, bound once when it is spawned and only
	// read afterwards. Handlers ask through them; the shard's timers send
	// through slowDone.
	get      actor.Port[*getReq]
	put      actor.Port[*putReq]
	del      actor.Port[*deleteReq]
	ping     actor.Port[*pingReq]
	slow     actor.Port[*slowReq]
	crash    actor.Port[*crashReq]
	slowDone actor.Port[*slowDone]
}

// Requests. Each embeds actor.Request[R], R being the type of its reply: the
// behaviour receiving it answers with m.Reply, which accepts only an R, and
// actor.Ask returns that R to the handler.
type (
	// getReq asks for a key's value.
	getReq struct {
		actor.Request[getResult]
		key string
	}
	getResult struct {
		value []byte
		found bool
	}

	// putReq stores a value; the reply says whether the key is new.
	putReq struct {
		actor.Request[bool]
		key   string
		value []byte
	}

	// deleteReq removes a key; the reply says whether it was there.
	deleteReq struct {
		actor.Request[bool]
		key string
	}

	// pingReq answers with the number of keys (health checks).
	pingReq struct {
		actor.Request[int]
	}

	// slowReq is answered after d: a stand-in for a slow backend.
	slowReq struct {
		actor.Request[string]
		d time.Duration
	}

	// crashReq makes the shard panic: a stand-in for a bug in a behaviour.
	crashReq struct {
		actor.Request[struct{}]
	}
)

// slowDone is the message a shard's timer delivers when a slow request is due.
type slowDone struct {
	actor.Message
	req *slowReq
}

// spawnShard spawns an empty shard in sys and binds its ports.
func spawnShard(sys *actor.System) (*shard, error) {
	sh, err := actor.Spawn(sys, &shard{data: make(map[string][]byte)})
	if err != nil {
		return nil, err
	}
	// Bind fails only if the shard has already terminated; nothing has been
	// sent to it yet, so the errors are joined and checked once.
	var errs [7]error
	sh.get, errs[0] = actor.Bind(sh, (*shard).onGet)
	sh.put, errs[1] = actor.Bind(sh, (*shard).onPut)
	sh.del, errs[2] = actor.Bind(sh, (*shard).onDelete)
	sh.ping, errs[3] = actor.Bind(sh, (*shard).onPing)
	sh.slow, errs[4] = actor.Bind(sh, (*shard).onSlow)
	sh.crash, errs[5] = actor.Bind(sh, (*shard).onCrash)
	sh.slowDone, errs[6] = actor.Bind(sh, (*shard).onSlowDone)
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return sh, nil
}

func (sh *shard) onGet(m *getReq) actor.Allocation {
	v, ok := sh.data[m.key]
	m.Reply(getResult{value: v, found: ok})
	return actor.Nodelete // keep receiving
}

func (sh *shard) onPut(m *putReq) actor.Allocation {
	_, existed := sh.data[m.key]
	sh.data[m.key] = m.value // the handler handed the slice over with the message
	m.Reply(!existed)
	return actor.Nodelete
}

func (sh *shard) onDelete(m *deleteReq) actor.Allocation {
	_, existed := sh.data[m.key]
	delete(sh.data, m.key)
	m.Reply(existed)
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
	if _, err := actor.SendAfter(sh.slowDone, m.d, &slowDone{req: m}); err != nil {
		// Only while the system stops: the asker's deadline ends its wait.
		return actor.Nodelete
	}
	return actor.Nodelete
}

func (sh *shard) onSlowDone(m *slowDone) actor.Allocation {
	m.req.Reply(fmt.Sprintf("done after %v", m.req.d))
	return actor.Nodelete
}

// onCrash panics. The executor recovers the panic, terminates this shard
// (its map goes with it), reports the panic to the system's error handler,
// and fails the pending asks with ErrTerminated; the worker and every other
// actor go on. The service respawns the shard (see service.failed).
func (sh *shard) onCrash(m *crashReq) actor.Allocation {
	panic("kvservice: shard asked to crash")
}
