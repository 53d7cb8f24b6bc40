// Package spin provides the bounded backoff used while waiting for a spin
// lock, and OSYield, for waits that may need another thread to get this CPU.
//
// Critical sections guarded by the executor's spin locks are a few dozen
// instructions (append an envelope, swap two slices), so waiters spin first.
// Go code cannot disable preemption, though: a lock holder may be descheduled
// inside its critical section, and with more workers than cores (which tests
// do on purpose) pure spinning would burn the holder's time slice. After a few
// rounds of exponential busy-waiting the backoff therefore yields the processor
// with runtime.Gosched, letting the holder run. A waiter whose yield is dear
// (a goroutine locked to its thread hands its processor to another thread,
// which it wakes, and waits to be handed one back) may lengthen the busy
// phase to a few microseconds first (Backoff.Lengthen).
package spin

import "runtime"

const (
	maxShift  = 6 // busy rounds last 1, 2, 4, ... 64 iterations
	busyTries = 8 // rounds before yielding

	// A lengthened wait goes on after busyTries with rounds of up to
	// 1<<longShift iterations, up to longTries rounds in all: about 7,000
	// iterations more, a few microseconds.
	longShift = 10
	longTries = 16
)

// Backoff is the state of one wait; the zero value is ready to use.
type Backoff struct {
	n    uint32
	long bool
}

// Lengthen makes the wait spin up to longTries rounds before it yields,
// instead of busyTries. It may be called at any point of the wait.
func (b *Backoff) Lengthen() { b.long = true }

// Yielding reports whether the next Pause yields the processor rather than
// spin.
func (b *Backoff) Yielding() bool { return b.n >= b.tries() }

func (b *Backoff) tries() uint32 {
	if b.long {
		return longTries
	}
	return busyTries
}

// Pause waits a little longer each time it is called.
func (b *Backoff) Pause() {
	if b.n < b.tries() {
		shift := uint32(maxShift)
		if b.n >= busyTries {
			shift = longShift
		}
		delay(1 << min(b.n, shift))
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
