package executor

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/actord/actord/internal/affinity"
)

// A goroutine outside the system flooding an actor while the process has
// two Go processors but one CPU (every thread pinned to it) does not wait
// out floodWait at its flood points: once its runtime.Gosched calls are
// spent, its yield gives the CPU to the worker's thread, which gulps. With
// Gosched alone the producer kept the CPU until floodWait passed (or the
// kernel preempted it) at most flood points.
func TestFloodYieldGivesTheCPUToTheWorker(t *testing.T) {
	cpus, err := affinity.Allowed()
	if err != nil {
		t.Skip("no CPU affinity here:", err)
	}
	require.NotEmpty(t, cpus)
	var allowed, one unix.CPUSet
	for _, c := range cpus {
		allowed.Set(c)
	}
	one.Set(cpus[0])
	if runtime.GOMAXPROCS(0) < 2 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	}
	var yields, timeouts atomic.Int64
	testHookFloodYield = func(timedOut bool) {
		yields.Add(1)
		if timedOut {
			timeouts.Add(1)
		}
	}
	defer func() { testHookFloodYield = nil }()

	// Every thread of the process on one CPU, the way a host that takes
	// the other CPUs leaves it; restored at the end (threads made meanwhile
	// inherit the pinning, so all of them are restored).
	defer func() { require.NoError(t, setThreadsAffinity(&allowed)) }()
	if err := setThreadsAffinity(&one); err != nil {
		t.Skip("cannot pin threads here:", err)
	}

	e, err := Start(Config{Workers: 1})
	require.NoError(t, err)
	const n = 64 * floodLimit
	p := finishingProbe(n, nil)
	p.spawn(t, e)
	errc := make(chan error, 1)
	go func() {
		m := &probeMsg{}
		for i := 0; i < n; i++ {
			if err := Send(&p.cell, p, m, probeBehaviour); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	require.NoError(t, <-errc)
	require.NoError(t, e.Stop(context.Background()))
	assert.Equal(t, uint64(n), e.Stats().Total().GulpSize.Sum)
	require.NotZero(t, yields.Load(), "no flood point reached")
	assert.LessOrEqual(t, timeouts.Load(), yields.Load()/4,
		"flood yields that waited out floodWait (of %d)", yields.Load())
	t.Logf("%d flood yields, %d timed out", yields.Load(), timeouts.Load())
}

// setThreadsAffinity sets the CPU affinity of every thread of the process.
func setThreadsAffinity(set *unix.CPUSet) error {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, ent := range ents {
		tid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH {
			return err
		}
	}
	return nil
}
