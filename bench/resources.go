package bench

import (
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"
)

// PeakRSS returns the process's peak resident set size so far, in bytes
// (the high-water mark over the whole process lifetime), from VmHWM in
// /proc/self/status. (getrusage's ru_maxrss is not used: Linux carries the
// parent's value into a child across fork and exec, so a fresh child
// process can report its parent's peak.) It returns 0 where /proc is not
// available.
func PeakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}

// MemorySampler records the peak of the memory the Go runtime holds from the
// operating system (/memory/classes/total:bytes minus the heap memory it has
// released back), sampling every millisecond. Unlike PeakRSS it can be
// restarted between benchmark runs in one process.
type MemorySampler struct {
	stop chan struct{}
	wg   sync.WaitGroup
	peak uint64
}

// StartMemorySampler starts sampling.
func StartMemorySampler() *MemorySampler {
	s := &MemorySampler{stop: make(chan struct{})}
	samples := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	read := func() {
		metrics.Read(samples)
		s.peak = max(s.peak, samples[0].Value.Uint64()-samples[1].Value.Uint64())
	}
	read()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				read()
				return
			case <-t.C:
				read()
			}
		}
	}()
	return s
}

// Stop ends sampling and returns the peak in bytes.
func (s *MemorySampler) Stop() uint64 {
	close(s.stop)
	s.wg.Wait()
	return s.peak
}
