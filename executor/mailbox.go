package executor

import (
	"sync/atomic"
	"unsafe"

	"github.com/actord/actord/internal/copyq"
	"github.com/actord/actord/internal/goid"
	"github.com/actord/actord/internal/spin"
	"github.com/actord/actord/internal/storerel"
	"golang.org/x/sys/cpu"
)

// Lock-word layout. One 64-bit word carries a mailbox's spin lock, its flags
// and its length, so that:
//   - a push costs one CAS (lock) and one release store (unlock, which also
//     publishes the new length): on amd64 one locked instruction, as for
//     any spin lock (see unlock);
//   - the worker's "is it empty?" test, the thieves' "is it a candidate?"
//     test and the senders' "is it closed?" test are single atomic loads,
//     which on amd64 and arm64 are plain loads.
//   - an 8-bit gulp sequence, advanced by every gulp in the same unlocking
//     store, lets a thief tell "still waiting since I looked" from "served
//     and refilled" with one load (see worker.steal).
const (
	wordLocked     = 1 << 0 // held by a pusher, a gulper, a releaser or the closer
	wordProcessing = 1 << 1 // being processed: a worker holds the gulped buffer
	wordClosed     = 1 << 2 // the executor has stopped: pushes fail
	wordSeqShift   = 3      // bits 3..10: gulp sequence, mod 256
	wordSeqMask    = 0xff << wordSeqShift
	wordGrowing    = 1 << 11 // a pusher is allocating a larger buf (see push)
	wordLenShift   = 12      // bits 12..63: number of envelopes in buf
	wordLenOne     = 1 << wordLenShift
)

func wordLen(w uint64) int { return int(w >> wordLenShift) }

// gulped returns the word of a mailbox just gulped: length 0, processing,
// the closed bit kept, the gulp sequence advanced.
func gulped(w uint64) uint64 {
	return w&wordClosed | wordProcessing | (w+1<<wordSeqShift)&wordSeqMask
}

// mailbox is one of the executor's sharded message queues. Many actors share
// a mailbox (actor i uses mailbox i mod M for its whole life); a worker gulps
// the whole mailbox at once by swapping buffers with it.
//
// The mailbox layer knows nothing of workers: its owner is a worker index,
// and its drainer the batch (below) that a worker drains. Two arrays point at mailboxes:
// Executor.mailboxes, indexed by ticket, which senders use and which never
// changes; and Executor.slots, which workers scan
// and thieves permute with stealing.TrySwapHooked. A swap therefore never disturbs a
// sender, and a gulp works on a mailbox pointer loaded once into a local, so a
// swap during a gulp is harmless; wordProcessing keeps one mailbox (and hence
// each of its actors) on at most one worker at a time.
type mailbox struct {
	_ cpu.CacheLinePad
	// word is the lock word above. The lock bit is taken with CAS and
	// released with a release store of the complete new word (unlock);
	// every change to buf and wordClosed, and every setting of
	// wordProcessing, happens between the two, so the unlocking store
	// publishes them. The one exception is release's fast path, which
	// clears wordProcessing of an unlocked, empty word with one CAS: that
	// CAS then publishes the batch's writes to the next locker. Readers
	// that do not hold the lock only ever load the word (emptiness
	// checks, candidate checks, queue-depth gauges); the value
	// they see may be stale by the time they act, which the gulp
	// (re-checked under the lock) tolerates. Readers whose answer the
	// wake-up protocol relies on wait for a held lock first (settled).
	word atomic.Uint64
	// buf holds the queued envelopes. Guarded by the lock bit: written by
	// pushers and gulpers (which swap it with a worker's empty buffer), read
	// by nobody else.
	buf copyq.Queue[envelope]
	// owner is the index of the worker whose slot range currently holds
	// this mailbox: the worker to wake when a push finds it parked. Written
	// at start and by a thief's swap hooks while the mailbox is out of the
	// slots (Giving and Taking; Ungiving undoes Giving when the swap fails,
	// see stealHooks); read by pushers and releasers. It
	// can be briefly stale after a swap; the thief's post-swap check (see
	// worker.trySteal) covers that window.
	owner atomic.Int32
	// drainer is the batch of the worker that most recently gulped this
	// mailbox. Written by that worker when it gulps (only if it changed);
	// read by senders, which use it only to ask "am I the goroutine
	// draining this mailbox right now?" (see send): a stale value never
	// matches a wrong caller.
	drainer atomic.Pointer[batch]
	// sent counts envelopes ever pushed into this mailbox. Guarded by the
	// lock bit (incremented by pushers, read by Stats under the lock).
	sent uint64
	// pushG is the goroutine identity (goid.Get) of the latest pusher, 0
	// where identities are not supported. Guarded by the lock bit: written
	// by pushers, read by releasers (see batchwait.go).
	pushG uintptr
	// exec is the executor it belongs to; immutable. Everything a push
	// does after it (wake-up, handoff, deep count) goes to exec, never to
	// the executor the pushed cell names (see pushTo).
	exec  *Executor
	index int  // position in Executor.mailboxes (spares: after the real ones); immutable
	spare bool // no actor is ever placed on it (see Config.SpareQueues); immutable
	_     cpu.CacheLinePad
}

// batch is a gulped batch being drained: the part of a worker that the
// local send path appends to (see send). Every field but g is touched only
// by the goroutine draining it, including the behaviours it runs, which
// recognise it by g.
type batch struct {
	// g is the draining goroutine's identity (goid.Get). Written by that
	// goroutine when it starts (or resumes after runtime.Goexit) and before
	// it exits; read by senders to recognise it.
	g atomic.Uintptr
	// The padding keeps g, which every sender into a mailbox being
	// processed loads, off the cache line of buf, which the draining
	// worker writes at every message: a sender from another core would
	// otherwise take that line from the worker at each such send.
	_   cpu.CacheLinePad
	buf copyq.Queue[envelope] // the gulped envelopes being drained, else an empty spare
	cur *mailbox              // mailbox whose envelopes are in buf, nil between gulps
	// limit bounds local sends: they may append to buf while it holds
	// fewer than limit envelopes (the gulped ones plus Config.LocalBatch).
	// Set per batch; 0 between batches.
	limit int
}

// lock spins until it holds the lock and returns the word as it was (unlocked).
func (m *mailbox) lock() uint64 { return m.lockFor(false) }

// lockFor is lock; push says that the caller is a pusher. A pusher that
// has spun through the short busy phase without the lock, and is a worker,
// lengthens its wait (spin.Backoff.Lengthen) before it yields: a worker's
// yield hands its locked thread's processor to another thread, which it
// wakes, and it then waits to be handed one back, while the holder, another
// worker taking the same mailbox, is about to release it. Gulps and
// releases keep the short phase: there the holder is often a goroutine
// outside the system flooding the mailbox, and the worker's yield is what
// lets that producer's pushes gather into large gulps (docs/design.md,
// "Idle workers"). The identity lookup is made only once the short phase
// has passed, so an uncontended push never pays it.
func (m *mailbox) lockFor(push bool) uint64 {
	var b spin.Backoff
	asked := !push
	for {
		w := m.word.Load()
		if w&wordLocked == 0 && m.word.CompareAndSwap(w, w|wordLocked) {
			return w
		}
		if !asked && b.Yielding() {
			asked = true
			if runningWorker() != nil {
				b.Lengthen()
			}
		}
		b.Pause()
	}
}

// unlock releases the lock, publishing w (which must not have wordLocked set)
// as the new word, with a release store (storerel.Uint64): the writes of
// the critical section are visible to whoever loads w, but the store is no
// barrier for the caller's later loads, which may be performed before
// other processors see it (where storerel.Weak). The lock's CAS is the
// barrier the wake-up protocol orders against (park.go, P1); readers whose
// answer the protocol relies on use settled. A sequentially consistent
// store would cost a second locked instruction on every push and gulp.
func (m *mailbox) unlock(w uint64) { storerel.Uint64(&m.word, w) }

// settled returns the word once no lock is held on it: if a pusher,
// gulper or releaser holds the lock, it waits for the unlocking store. The
// loads of the wake-up protocol use it (a parking worker's re-check, a
// worker serving deferred wake-ups, a thief's check of the mailbox it gave
// away): a holder's CAS may be visible to them before its unlocking store,
// and the holder may meanwhile have loaded the sleepers count as it was
// before they parked (see park.go). Waiting for the store, rather than
// reading a held lock as "empty", keeps them from missing the envelope it
// publishes; reading it as "has work" would send a parking worker round
// again at every push of a flooded mailbox it owns but another worker
// processes. The holder's critical section is a few dozen instructions,
// except a push that grows the buffer, which copies the queue into the
// larger array under the lock, fewer than copyq.SegmentLen envelopes
// (larger queues grow by segments, without a copy; gulpers wait for it the
// same way).
func (m *mailbox) settled() uint64 {
	var b spin.Backoff
	for {
		if w := m.word.Load(); w&wordLocked == 0 {
			return w
		}
		b.Pause()
	}
}

// push appends an envelope built in place from its fields and returns the
// mailbox's length after it. It fails only when the mailbox is closed, and
// then returns -1.
//
// The lock is never held across an allocation: when the buffer is full, the
// pusher sets wordGrowing, releases the lock, allocates the array the queue
// grows by (the doubled array, or past copyq.SegmentLen a new segment),
// takes the lock again, hands the room over (copyq's Adopt; unless a gulp
// swapped in an emptier buffer meanwhile, or one the room does not fit:
// then the room is dropped, and a buffer still full is grown again) and
// clears wordGrowing. Other pushers that find the buffer full while wordGrowing is
// set wait for it to clear instead of allocating too; gulps go on. A pusher
// preempted or assisting the garbage collector in the allocation thus never
// keeps the worker spinning on the lock.
//
// push is pushGated without a gate; the send path calls pushGated itself,
// saving the call.
func (m *mailbox) push(c *Cell, fn unsafe.Pointer, msg any, coff, want uint32) int {
	return m.pushGated(c, fn, msg, coff, want, nil)
}

// pushGated is push with a gate: when gate is non-nil and set, read under
// the lock, nothing is queued and it returns pushGateShut. The gate is a
// passivating actor's (passivator.shut): its worker sets it under this
// lock (passivator.close), so a push either comes before that, and its
// envelope lies before the end marker pushed after it, or sees it set.
func (m *mailbox) pushGated(c *Cell, fn unsafe.Pointer, msg any, coff, want uint32, gate *atomic.Bool) int {
	w := m.lockFor(true)
	for w&wordClosed == 0 && m.buf.Full() {
		if w&wordGrowing != 0 {
			// Another pusher is allocating: wait for it (or for a gulp
			// that swaps in an emptier buffer) rather than allocate too.
			m.unlock(w)
			var b spin.Backoff
			for m.word.Load()&wordGrowing != 0 {
				b.Pause()
			}
			w = m.lockFor(true)
			continue
		}
		need := m.buf.GrowCap()
		m.unlock(w | wordGrowing)
		if testHookGrow != nil {
			testHookGrow(m)
		}
		room := copyq.NewRoom[envelope](need)
		w = m.lockFor(true)
		if m.buf.Full() {
			m.buf.Adopt(room)
		}
		w &^= wordGrowing
	}
	if w&wordClosed != 0 {
		m.unlock(w)
		return -1
	}
	if gate != nil && gate.Load() {
		m.unlock(w)
		return pushGateShut
	}
	m.buf.Next().set(c, fn, msg, coff, want) // room was made: does not allocate
	m.sent++
	if goid.Supported {
		m.pushG = goid.Unchecked()
	}
	m.unlock(w + wordLenOne)
	return wordLen(w) + 1
}

// testHookGrow, if set (by tests only, before any push), runs in push after
// the lock is released for a growth and before the allocation.
var testHookGrow func(*mailbox)

// shrink gives back a grown buffer of an idle mailbox: if m is empty and not
// being processed and its buffer's capacity is above floor, the buffer is
// replaced by one of capacity floor. Called by the watcher in an idle
// system (see reclaimIdle). The new array is allocated before taking the
// lock.
func (m *mailbox) shrink(floor int) bool {
	arr := copyq.NewArray[envelope](floor)
	w := m.lock()
	ok := w&(wordProcessing|wordClosed) == 0 && wordLen(w) == 0 && m.buf.Shrink(floor, arr)
	m.unlock(w)
	return ok
}

// sentCount returns the number of envelopes ever pushed (takes the lock).
func (m *mailbox) sentCount() uint64 {
	w := m.lock()
	n := m.sent
	m.unlock(w)
	return n
}

// gulp takes every queued envelope by swapping m's buffer with into, which
// must be empty, and marks m being processed. It returns the number taken;
// missed reports that m was already being processed (by a worker that has
// since lost it to a thief, or a thief that took it), in which case nothing
// is taken.
func (m *mailbox) gulp(into *copyq.Queue[envelope]) (n int, missed bool) {
	w := m.lock()
	if w&wordProcessing != 0 {
		m.unlock(w)
		return 0, true
	}
	n = wordLen(w)
	if n == 0 { // emptied between the unlocked check and the lock
		m.unlock(w)
		return 0, false
	}
	m.buf, *into = *into, m.buf
	m.unlock(gulped(w))
	m.taken(n)
	return n, false
}

// release ends the processing of a gulped batch. If regulp is true and
// envelopes arrived meanwhile, it gulps them into into (which must be empty)
// and keeps m being processed, returning their number; this saves the
// unlock/lock pair of a separate release and gulp. Otherwise it clears
// wordProcessing and returns 0 and the number of envelopes left queued.
// by is the latest pusher's identity (pushG), which matters when
// envelopes arrived (see batchwait.go).
func (m *mailbox) release(into *copyq.Queue[envelope], regulp bool) (n, left int, by uintptr) {
	// Nothing arrived (the common case): clearing wordProcessing is then
	// the whole release, made with one CAS from the unlocked word instead
	// of the lock's CAS and the unlocking store. The CAS is the release's
	// publishing point, as the unlocking store is below: it succeeds only
	// if no pusher holds or took the lock since the load (a push changes
	// the length, so the word differs).
	if w := m.word.Load(); w&wordLocked == 0 && wordLen(w) == 0 &&
		m.word.CompareAndSwap(w, w&^wordProcessing) {
		return 0, 0, 0
	}
	w := m.lock()
	n, by = wordLen(w), m.pushG
	if regulp && n > 0 {
		m.buf, *into = *into, m.buf
		m.unlock(gulped(w))
		m.taken(n)
		return n, 0, by
	}
	m.unlock(w &^ wordProcessing)
	return 0, n, by
}

// close marks m closed, so that every later push fails, and returns the
// messages still queued (then discarded), in two counts: dead, those whose
// actor's incarnation had terminated (dead letters: requests among them are
// failed with ErrTerminated), and alive, the others (requests failed with
// ErrStopped). Control envelopes are in neither. Only Stop calls it, after
// the workers have exited (or it gave up on them: an actor that a stuck
// worker ends meanwhile may be counted either way, but only once).
func (m *mailbox) close() (dead, alive int) {
	w := m.lock()
	n := wordLen(w)
	buf := m.buf
	m.buf = copyq.Queue[envelope]{}
	m.unlock(wordClosed)
	m.taken(n)
	for env := buf.PopRef(); env != nil; env = buf.PopRef() {
		switch {
		case env.fn == ctlFn: // a control envelope (supervise.go) is not a message
		case env.cell.state.Load()|cellPlain != env.want:
			dead++
			if m.exec != nil {
				m.exec.noteDead(env.msg) // for Stop's error
			}
			dropped(env.msg, ErrTerminated) // requests: tell their requesters
		default:
			alive++
			dropped(env.msg, ErrStopped)
		}
	}
	return dead, alive
}

// taken is called after n envelopes were taken from m at once (a gulp, a
// re-take, close): if that made m no longer deep, it takes m off the
// executor's deep count (see Executor.deepQueues, flood.go).
func (m *mailbox) taken(n int) {
	if n >= floodStep && m.exec != nil {
		m.exec.deepQueues.Add(-1) // paired with notify's +1
	}
}

// queued returns the current length (a racy snapshot, for gauges).
func (m *mailbox) queued() int { return wordLen(m.word.Load()) }

// grown reports whether m's buffer is above floor (takes the lock).
func (m *mailbox) grown(floor int) bool {
	w := m.lock()
	g := m.buf.Cap() > floor
	m.unlock(w)
	return g
}
