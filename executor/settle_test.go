package executor

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The loads the wake-up protocol relies on wait for a held lock (see
// mailbox.settled and park.go, P1): a pusher's CAS may be visible before
// its unlocking store, so a parking worker's re-check (hasWork) that read
// the held lock as an empty mailbox could sleep on a message. Here the
// lock is held by the test, as a pusher between its CAS and its unlock:
// hasWork must not answer until the unlock, and then see the envelope.
func TestProtocolReadsWaitForAHeldLock(t *testing.T) {
	mb := &mailbox{}
	x := &Executor{slots: make([]atomic.Pointer[mailbox], 1)}
	x.slots[0].Store(mb)
	w := &worker{e: x, lo: 0, hi: 1}
	require.False(t, w.hasWork(), "an empty, unlocked mailbox")

	held := mb.lock() // a pusher's CAS; its envelope and unlock to come
	answer := make(chan bool, 1)
	go func() { answer <- w.hasWork() }()
	select {
	case got := <-answer:
		t.Fatalf("hasWork answered %v while the lock was held: it read the held word", got)
	case <-time.After(20 * time.Millisecond):
	}
	mb.unlock(held + wordLenOne) // the pusher's unlocking store, one envelope
	select {
	case got := <-answer:
		assert.True(t, got, "hasWork missed the envelope published by the unlock")
	case <-time.After(10 * time.Second):
		t.Fatal("hasWork still waits after the unlock")
	}

	// settled itself, as serveDeferred and trySteal use it.
	held = mb.lock()
	words := make(chan uint64, 1)
	go func() { words <- mb.settled() }()
	select {
	case got := <-words:
		t.Fatalf("settled returned %#x while the lock was held", got)
	case <-time.After(20 * time.Millisecond):
	}
	mb.unlock(held + wordLenOne)
	select {
	case got := <-words:
		assert.Zero(t, got&wordLocked, "settled returned a locked word")
		assert.Equal(t, 2, wordLen(got), "settled returned a word older than the unlock")
	case <-time.After(10 * time.Second):
		t.Fatal("settled still waits after the unlock")
	}
}
