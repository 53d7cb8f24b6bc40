package remote

// Tests of unexported parts: conversions and states that the public API
// cannot reach deterministically.

import (
	"math"
	"testing"
	"time"
)

// A request's timeout from the wire saturates instead of overflowing: a
// huge value multiplied out to microseconds used to wrap to a negative
// timeout (none) or to a tiny positive one (the request failed at once
// with context.DeadlineExceeded).
func TestWireTimeoutSaturates(t *testing.T) {
	wrapsToTiny := uint64(math.MaxUint64/1000) + 1 // times 1000 wraps to 384ns
	for _, c := range []struct {
		us   uint64
		want time.Duration
	}{
		{0, 0},
		{1, time.Microsecond},
		{uint64(time.Hour / time.Microsecond), time.Hour},
		{uint64(maxTimeoutMicros), time.Duration(maxTimeoutMicros) * time.Microsecond},
		{uint64(maxTimeoutMicros) + 1, math.MaxInt64},
		{math.MaxInt64, math.MaxInt64},
		{wrapsToTiny, math.MaxInt64},
		{math.MaxUint64, math.MaxInt64},
	} {
		if got := wireTimeout(c.us); got != c.want {
			t.Errorf("wireTimeout(%d) = %v, want %v", c.us, got, c.want)
		}
	}
}
