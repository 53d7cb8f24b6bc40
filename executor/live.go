package executor

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The live-actor log: which actors were spawned, so that Shutdown can ask
// each one still alive to stop and a Stop whose context ended can name
// what was alive.
//
// Spawn appends (cell, incarnation, object) to one shard of the log: the
// spawning worker's own shard, or, for a goroutine outside the system, a
// shard picked by the cell's address. A termination writes nothing: an
// entry whose incarnation has ended is dropped when its shard next
// compacts (at an append that finds the shard at its limit, twice the
// entries alive at the last compaction and at least liveCompactMin, so
// each entry is looked at a bounded number of times, and a shard keeps
// at most as many ended actors reachable as it has alive, or
// liveCompactMin) or ignored by readers, which check each entry's state
// word. A spawn costs one uncontended lock and an
// append; nothing else on the hot path reads the log.

// liveRec is one spawn: the incarnation inc (incarnation bits) of cell c,
// whose object is obj (kept here so that readers never read Cell.obj,
// which a later Spawn may be writing).
type liveRec struct {
	c   *Cell
	obj any
	inc uint32
}

// alive reports whether r's incarnation is alive or ending (its
// termination hooks run): not yet over.
func (r *liveRec) alive() bool {
	s := r.c.state.Load()
	if incOf(s) != r.inc {
		return false
	}
	k := s & cellKindMask
	return k == cellAlive || k == cellEnding
}

// liveShard is one shard of the log.
type liveShard struct {
	// mu guards recs and limit: taken by the Spawn appending (add) and by
	// the readers (snapshot). It pairs with nothing else.
	mu    sync.Mutex
	recs  []liveRec
	limit int // compact at an append that finds len(recs) == limit
	_     cpu.CacheLinePad
}

// liveCompactMin is the smallest size at which a shard compacts.
const liveCompactMin = 32

func (s *liveShard) add(r liveRec) {
	s.mu.Lock()
	if len(s.recs) >= s.limit && s.limit >= liveCompactMin {
		n := 0
		for i := range s.recs {
			if s.recs[i].alive() {
				s.recs[n] = s.recs[i]
				n++
			}
		}
		clear(s.recs[n:]) // let the collector have the ended ones
		s.recs = s.recs[:n]
		s.limit = max(2*n, liveCompactMin)
	} else if s.limit < liveCompactMin {
		s.limit = liveCompactMin
	}
	s.recs = append(s.recs, r)
	s.mu.Unlock()
}

// initLive makes the log's shards: one per worker, as many for spawns from
// outside the workers.
func (e *Executor) initLive() {
	e.liveLog = make([]liveShard, 2*len(e.workers))
}

// noteSpawn records the spawn of incarnation inc of c (obj) by w (nil: a
// goroutine outside the system).
func (e *Executor) noteSpawn(w *worker, c *Cell, obj any, inc uint32) {
	var i int
	if w != nil {
		i = w.id
	} else {
		n := len(e.workers)
		i = n + int(uintptr(unsafe.Pointer(c))>>6)%n
	}
	e.liveLog[i].add(liveRec{c: c, obj: obj, inc: incOf(inc)})
}

// liveActors returns the actors of the log whose incarnation is alive or
// ending, shard by shard, newest first within each shard.
func (e *Executor) liveActors() []liveRec {
	var out []liveRec
	for i := range e.liveLog {
		s := &e.liveLog[i]
		s.mu.Lock()
		for k := len(s.recs) - 1; k >= 0; k-- {
			if s.recs[k].alive() {
				out = append(out, s.recs[k])
			}
		}
		s.mu.Unlock()
	}
	return out
}

// liveTypesMax bounds how many types aliveTypes names.
const liveTypesMax = 8

// aliveTypes says what rs are, by type with counts, most numerous first
// ("2 *main.Account, 1 *main.Ingest"); "" for none.
func aliveTypes(rs []liveRec) string {
	if len(rs) == 0 {
		return ""
	}
	count := map[string]int{}
	for _, r := range rs {
		count[fmt.Sprintf("%T", r.obj)]++
	}
	names := make([]string, 0, len(count))
	for k := range count {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		if count[names[i]] != count[names[j]] {
			return count[names[i]] > count[names[j]]
		}
		return names[i] < names[j]
	})
	var b strings.Builder
	for i, k := range names {
		if i == liveTypesMax {
			fmt.Fprintf(&b, ", and %d more types", len(names)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d %s", count[k], k)
	}
	return b.String()
}

// aliveError is the text of ErrActorsAlive's error after a context ended
// with n actors alive: their count, and their types with counts.
func (e *Executor) aliveError(n int64) string {
	msg := fmt.Sprintf("%d actors still alive when the context ended", n)
	if t := aliveTypes(e.liveActors()); t != "" {
		msg += " (" + t + " still alive)"
	}
	return msg
}
