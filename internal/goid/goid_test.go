package goid

import (
	"sync"
	"testing"
)

func TestGetStableAndDistinct(t *testing.T) {
	if !Supported {
		if Get() != 0 {
			t.Fatal("unsupported platform must return 0")
		}
		t.Skip("goroutine identity not supported on this architecture")
	}
	self := Get()
	if self == 0 {
		t.Fatal("Get returned 0 on a supported platform")
	}
	for i := 0; i < 1000; i++ {
		if Get() != self {
			t.Fatal("identity changed within one goroutine")
		}
	}
	// Live goroutines have pairwise distinct identities, and each keeps its
	// identity across blocking (which may move it to another thread).
	const n = 64
	ids := make([]uintptr, n)
	var ready, release sync.WaitGroup
	ready.Add(n)
	release.Add(1)
	var done sync.WaitGroup
	done.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			defer done.Done()
			ids[i] = Get()
			ready.Done()
			release.Wait()
			if Get() != ids[i] {
				t.Error("identity changed after blocking")
			}
		}()
	}
	ready.Wait()
	seen := map[uintptr]bool{self: true}
	for _, id := range ids {
		if id == 0 || seen[id] {
			t.Fatalf("identity %#x is zero or shared by two live goroutines", id)
		}
		seen[id] = true
	}
	release.Done()
	done.Wait()
}

func BenchmarkGet(b *testing.B) {
	var s uintptr
	for i := 0; i < b.N; i++ {
		s += Get()
	}
	_ = s
}
