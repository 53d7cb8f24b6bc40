package executor

import (
	"sync"
	"time"
)

// timers is the executor's timer set (placeholder: one time.Timer per
// pending timer, until the timer heap lands).
type timers struct {
	mu sync.Mutex
}

// Timer is a handle on a pending timer; Stop cancels it. The zero Timer is
// no timer.
type Timer struct {
	t *time.Timer
}

// Stop cancels the timer and reports whether it was still pending.
func (t Timer) Stop() bool {
	if t.t == nil {
		return false
	}
	return t.t.Stop()
}

// afterTimeout calls f.timedOut after d, unless the returned Timer is
// stopped first.
func (e *Executor) afterTimeout(d time.Duration, f interface{ timedOut() }) Timer {
	return Timer{t: time.AfterFunc(d, f.timedOut)}
}

// stats returns the pending, fired and dead timer counts.
func (ts *timers) stats() (pending int64, fired, dead uint64) { return 0, 0, 0 }
