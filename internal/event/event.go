// Package event parks one goroutine until another wakes it or a timeout passes.
//
// It is the per-worker sleep primitive of the executor's idle protocol. The
// protocol itself lives in the caller: a 32-bit state word that the sleeper
// sets to a "parked" value before sleeping and that a waker changes (with a
// compare-and-swap) before calling Wake. Wait returns at once if the word no
// longer holds the parked value, so a Wake that lands between the sleeper's
// last check and its Wait is never lost.
//
// Three implementations exist. KindChan parks the goroutine on a one-slot
// channel with a reusable timer: the Go scheduler releases the sleeping
// worker's processor at once, and a wake hands one back to its locked
// thread, which takes two thread wake-ups. KindFutex (Linux only) sleeps in
// the futex system call on the state word itself: a wake is one FUTEX_WAKE,
// but the sleeping thread keeps its processor in the system call until the
// runtime's monitor retakes it, which the runtime pays for in processor
// hand-offs. KindTwoPhase sleeps in the futex for at most a bounded phase
// (WaitFutex), then on the channel (WaitChan): a short sleep ends with one
// FUTEX_WAKE, a long one gives its processor back. Each Wake makes one
// signal, the one for the phase the sleeper is in. Default is KindChan;
// the executor chooses its own default (executor.ParkDefault).
package event

import (
	"strconv"
	"sync/atomic"
	"time"
)

// Kind selects an implementation.
type Kind uint8

const (
	// Default is KindChan.
	Default Kind = iota
	// KindFutex sleeps in futex(2) on the state word (Linux only).
	KindFutex
	// KindChan sleeps on a channel receive with a timer.
	KindChan
	// KindTwoPhase sleeps in futex(2) on the state word for at most
	// TwoPhaseFutex, then on the channel (Linux only; elsewhere KindChan).
	KindTwoPhase
)

// TwoPhaseFutex is how long a KindTwoPhase sleeper stays in the futex
// before it moves to the channel: about what a wake-up through the channel
// costs a thread-locked sleeper, so that the cheap futex wake-up serves the
// short sleeps and a long sleep gives its processor back like KindChan.
const TwoPhaseFutex = 50 * time.Microsecond

// Valid reports whether k is a defined kind: Default, KindFutex, KindChan or
// KindTwoPhase. The answer does not depend on the platform: KindFutex and
// KindTwoPhase are valid everywhere, and Init uses KindChan for them where
// futexes are not supported.
func Valid(k Kind) bool { return k <= KindTwoPhase }

// String returns "default", "futex" or "chan", and "Kind(n)" for an undefined
// kind n.
func (k Kind) String() string {
	switch k {
	case Default:
		return "default"
	case KindFutex:
		return "futex"
	case KindChan:
		return "chan"
	case KindTwoPhase:
		return "twophase"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Event parks one goroutine. Init must be called before use; an Event must
// not be copied after Init.
type Event struct {
	kind Kind
	// inFutex is 1 while a KindTwoPhase sleeper is in phase one (WaitFutex):
	// stored by the sleeper before its last check of the word and cleared
	// after the futex returns; loaded by Wake after the waker changed the
	// word. Both are sequentially consistent, so a waker that loads 0 can
	// rely on the sleeper seeing the changed word before it sleeps on the
	// channel, and one that loads 1 reaches it with FUTEX_WAKE (or the
	// futex sees the changed word): each wake-up makes one of the two
	// signals, not both.
	inFutex atomic.Uint32
	ch      chan struct{} // KindChan, KindTwoPhase: the wake token (capacity 1)
	timer   *time.Timer   // KindChan, KindTwoPhase: reused for timeouts; only the sleeper touches it
}

// Init prepares the event. Default resolves to KindChan, and so does
// KindFutex on a platform without futexes. Init panics if kind is not Valid.
func (e *Event) Init(kind Kind) {
	if !Valid(kind) {
		panic("event: Init with undefined kind " + kind.String())
	}
	if kind == Default || (kind != KindChan && !futexSupported) {
		kind = KindChan
	}
	e.kind = kind
	if kind == KindChan || kind == KindTwoPhase {
		e.ch = make(chan struct{}, 1)
		e.timer = time.NewTimer(time.Hour)
		e.timer.Stop()
	}
}

// Kind returns the event's kind as Init resolved it (never Default).
func (e *Event) Kind() Kind { return e.kind }

// Wait blocks while word holds parked, until Wake is called or timeout passes
// (timeout <= 0 means no timeout). It may return spuriously: callers re-check
// their state word. Only one goroutine may Wait on an Event at a time. A
// KindTwoPhase event waits in both phases: WaitFutex for at most
// TwoPhaseFutex (or the timeout, if shorter), then on the channel.
func (e *Event) Wait(word *atomic.Uint32, parked uint32, timeout time.Duration) {
	if word.Load() != parked {
		return
	}
	if e.kind == KindFutex {
		futexWait(word, parked, timeout)
		return
	}
	if e.kind == KindTwoPhase {
		if timeout > 0 && timeout <= TwoPhaseFutex {
			e.WaitFutex(word, parked, timeout)
			return
		}
		e.WaitFutex(word, parked, TwoPhaseFutex)
		if timeout > 0 {
			timeout -= TwoPhaseFutex
		}
	}
	e.waitChan(word, parked, timeout)
}

// WaitChan is Wait without the futex phase: it sleeps on the channel (the
// processor is released at once). For KindFutex it is Wait.
func (e *Event) WaitChan(word *atomic.Uint32, parked uint32, timeout time.Duration) {
	if e.kind == KindFutex {
		e.Wait(word, parked, timeout)
		return
	}
	e.waitChan(word, parked, timeout)
}

// WaitFutex is phase one of a KindTwoPhase event alone: it sleeps in
// futex(2) while word holds parked, for at most d (d > 0), keeping the
// goroutine's processor in the system call. Other kinds use Wait with d.
func (e *Event) WaitFutex(word *atomic.Uint32, parked uint32, d time.Duration) {
	if e.kind != KindTwoPhase {
		e.Wait(word, parked, d)
		return
	}
	e.inFutex.Store(1) // before the word's last check (see inFutex)
	if word.Load() == parked {
		futexWait(word, parked, d)
	}
	e.inFutex.Store(0) // before the caller's next check of the word
}

// waitChan sleeps on the channel while word holds parked.
func (e *Event) waitChan(word *atomic.Uint32, parked uint32, timeout time.Duration) {
	if word.Load() != parked {
		return
	}
	if timeout <= 0 {
		<-e.ch
		return
	}
	e.timer.Reset(timeout)
	select {
	case <-e.ch:
		e.timer.Stop()
	case <-e.timer.C:
	}
}

// Wake wakes the goroutine waiting on word, if any. The caller must already
// have changed word from the parked value (that change is what makes a
// concurrent Wait return); Wake only ends a sleep that has begun.
func (e *Event) Wake(word *atomic.Uint32) {
	if e.kind == KindFutex {
		futexWake(word)
		return
	}
	if e.kind == KindTwoPhase && e.inFutex.Load() == 1 {
		// The sleeper is in phase one, or has just left it and will
		// see the changed word before the channel (see inFutex).
		futexWake(word)
		return
	}
	select {
	case e.ch <- struct{}{}:
	default: // a token is already pending: the sleeper will see it
	}
}
