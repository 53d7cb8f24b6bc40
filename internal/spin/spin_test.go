package spin

import (
	"sync"
	"sync/atomic"
	"testing"
)

// A spin lock built on Backoff must give mutual exclusion and progress even
// with many more goroutines than processors (the holder may be descheduled).
func TestBackoffLockProgress(t *testing.T) {
	var word atomic.Uint32
	counter := 0
	const goroutines, iters = 32, 2000
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < iters; i++ {
				var b Backoff
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
