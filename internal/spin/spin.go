// Package spin provides the bounded backoff used while waiting for a spin lock.
//
// Critical sections guarded by the executor's spin locks are a few dozen
// instructions (append an envelope, swap two slices), so waiters spin first.
// Go code cannot disable preemption, though: a lock holder may be descheduled
// inside its critical section, and with more workers than cores (which tests
// do on purpose) pure spinning would burn the holder's time slice. After a few
// rounds of exponential busy-waiting the backoff therefore yields the processor
// with runtime.Gosched, letting the holder run.
package spin

import "runtime"

const (
	maxShift  = 6 // busy rounds last 1, 2, 4, ... 64 iterations
	busyTries = 8 // rounds before yielding
)

// Backoff is the state of one wait; the zero value is ready to use.
type Backoff struct{ n uint32 }

// Pause waits a little longer each time it is called.
func (b *Backoff) Pause() {
	if b.n < busyTries {
		delay(1 << min(b.n, maxShift))
		b.n++
		return
	}
	runtime.Gosched()
}

// delay busy-waits for about n loop iterations. It is not inlined and returns
// its sum, so the compiler cannot remove the loop.
//
//go:noinline
func delay(n uint32) uint32 {
	s := uint32(0)
	for i := uint32(0); i < n; i++ {
		s += i
	}
	return s
}
