package storerel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// Uint64 stores into the atomic's value: every later load sees it.
func TestUint64Stores(t *testing.T) {
	var x struct {
		before uint64
		w      atomic.Uint64
		after  uint64
	}
	for _, v := range []uint64{1, 0, 1 << 63, ^uint64(0), 0x0123456789abcdef} {
		Uint64(&x.w, v)
		if got := x.w.Load(); got != v {
			t.Fatalf("Load after Uint64(%#x) = %#x", v, got)
		}
	}
	if x.before != 0 || x.after != 0 {
		t.Fatalf("Uint64 wrote outside the word: %#x, %#x", x.before, x.after)
	}
}

// Message passing, the pattern of a lock's release: a writer fills a
// buffer, then publishes a sequence number with Uint64; a reader that loads
// the number sees every write made before it. Each round's buffer holds the
// round's number in every element.
func TestUint64PublishesEarlierWrites(t *testing.T) {
	const rounds = 20000
	var (
		seq atomic.Uint64
		buf [16]uint64
		ack atomic.Uint64
	)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for r := uint64(1); r <= rounds; r++ {
			for ack.Load() != r-1 {
				runtime.Gosched()
			}
			for i := range buf {
				buf[i] = r
			}
			Uint64(&seq, r)
		}
	}()
	for r := uint64(1); r <= rounds; r++ {
		for seq.Load() != r {
			runtime.Gosched()
		}
		for i, v := range buf {
			if v != r {
				t.Fatalf("round %d: buf[%d] = %d after the release was seen", r, i, v)
			}
		}
		ack.Store(r)
	}
	wg.Wait()
}

// Weak is set exactly where Uint64 is the plain store.
func TestWeak(t *testing.T) {
	want := runtime.GOARCH == "amd64" && !raceEnabled
	if Weak != want {
		t.Fatalf("Weak = %v on %s (race %v)", Weak, runtime.GOARCH, raceEnabled)
	}
}
