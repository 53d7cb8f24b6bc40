package spin

import (
	"sync"
	"sync/atomic"
	"testing"
)

// A spin lock built on Backoff must give mutual exclusion and progress even
// with many more goroutines than processors (the holder may be descheduled).
func TestBackoffLockProgress(t *testing.T) { lockProgress(t, 32, 2000, false) }

// The lengthened backoff keeps mutual exclusion and progress too.
func TestLengthenedBackoffLockProgress(t *testing.T) { lockProgress(t, 16, 1000, true) }

// lockProgress runs goroutines goroutines that each take a spin lock built
// on Backoff iters times (lengthened if lengthen) to increment a counter.
func lockProgress(t *testing.T, goroutines, iters int, lengthen bool) {
	var word atomic.Uint32
	counter := 0
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < iters; i++ {
				var b Backoff
				if lengthen {
					b.Lengthen()
				}
				for !word.CompareAndSwap(0, 1) {
					b.Pause()
				}
				counter++
				word.Store(0)
			}
		}()
	}
	wg.Wait()
	if counter != goroutines*iters {
		t.Fatalf("counter = %d, want %d", counter, goroutines*iters)
	}
}

// A wait yields after busyTries busy rounds, or longTries once lengthened,
// whenever in the wait Lengthen is called.
func TestLengthenedBackoffYieldsLater(t *testing.T) {
	rounds := func(lengthenAt int) int {
		var b Backoff
		n := 0
		for ; !b.Yielding(); n++ {
			if n == lengthenAt {
				b.Lengthen()
			}
			b.Pause()
			if n > 100 {
				t.Fatal("never yields")
			}
		}
		return n
	}
	if got := rounds(-1); got != busyTries {
		t.Errorf("short wait: %d busy rounds, want %d", got, busyTries)
	}
	for _, at := range []int{0, 3, busyTries - 1} {
		if got := rounds(at); got != longTries {
			t.Errorf("lengthened at round %d: %d busy rounds, want %d", at, got, longTries)
		}
	}
	var b Backoff
	for !b.Yielding() {
		b.Pause()
	}
	b.Lengthen() // after the short phase: the wait goes on spinning
	if b.Yielding() {
		t.Error("a wait lengthened at the end of its short phase yields at once")
	}
}
