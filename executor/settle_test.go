package executor

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// answerAfterUnlock holds mb's lock, as a pusher between its CAS and its
// unlock, while read runs in another goroutine: read must not answer
// while the lock is held. The test then unlocks with one envelope more,
// and returns read's answer.
func answerAfterUnlock[T any](t *testing.T, mb *mailbox, what string, read func() T) T {
	t.Helper()
	held := mb.lock()
	answer := make(chan T, 1)
	go func() { answer <- read() }()
	select {
	case got := <-answer:
		t.Fatalf("%s answered %v while the lock was held: it read the held word", what, got)
	case <-time.After(20 * time.Millisecond):
	}
	mb.unlock(held + wordLenOne) // the pusher's unlocking store, one envelope
	select {
	case got := <-answer:
		return got
	case <-time.After(10 * time.Second):
		t.Fatalf("%s still waits after the unlock", what)
	}
	panic("unreachable")
}

// The loads the wake-up protocol relies on wait for a held lock (see
// mailbox.settled and park.go, P1): a pusher's CAS may be visible before
// its unlocking store, so a parking worker's re-check (hasWork) that read
// the held lock as an empty mailbox could sleep on a message.
func TestProtocolReadsWaitForAHeldLock(t *testing.T) {
	mb := &mailbox{}
	x := &Executor{slots: make([]atomic.Pointer[mailbox], 1)}
	x.slots[0].Store(mb)
	w := &worker{e: x, lo: 0, hi: 1}
	require.False(t, w.hasWork(), "an empty, unlocked mailbox")

	assert.True(t, answerAfterUnlock(t, mb, "hasWork", w.hasWork),
		"hasWork missed the envelope published by the unlock")

	// settled itself, as serveDeferred and trySteal use it.
	got := answerAfterUnlock(t, mb, "settled", mb.settled)
	assert.Zero(t, got&wordLocked, "settled returned a locked word")
	assert.Equal(t, 2, wordLen(got), "settled returned a word older than the unlock")
}
