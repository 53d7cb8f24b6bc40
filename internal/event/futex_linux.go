package event

import (
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const futexSupported = true

// Private futex operations (the word is never shared between processes).
const (
	futexWaitPrivate = 0 | 128 // FUTEX_WAIT | FUTEX_PRIVATE_FLAG
	futexWakePrivate = 1 | 128 // FUTEX_WAKE | FUTEX_PRIVATE_FLAG
)

// futexWait sleeps while *word == val. The kernel compares the word and
// queues the caller atomically with respect to futexWake, which is what makes
// the caller's "change the word, then wake" protocol free of lost wake-ups.
// EAGAIN (the word changed), EINTR and ETIMEDOUT all simply return.
func futexWait(word *atomic.Uint32, val uint32, timeout time.Duration) {
	var tsp unsafe.Pointer
	var ts unix.Timespec
	if timeout > 0 {
		ts = unix.NsecToTimespec(int64(timeout))
		tsp = unsafe.Pointer(&ts)
	}
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(word)), futexWaitPrivate,
		uintptr(val), uintptr(tsp), 0, 0)
}

// futexWake wakes at most one thread sleeping on word.
func futexWake(word *atomic.Uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(word)), futexWakePrivate,
		1, 0, 0, 0)
}
