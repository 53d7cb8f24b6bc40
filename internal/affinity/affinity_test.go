package affinity

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPinRestrictsThread(t *testing.T) {
	cpus, err := Allowed()
	if err == ErrUnsupported {
		t.Skip(err)
	}
	require.NoError(t, err)
	require.NotEmpty(t, cpus)
	target := cpus[len(cpus)-1]
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the pinned thread dies with the goroutine
		require.NoError(t, Pin(target))
		got, err := Allowed() // the calling (pinned) thread's set
		require.NoError(t, err)
		require.Equal(t, []int{target}, got)
	}()
	<-done
	// The test goroutine's own thread is not affected.
	all, err := Allowed()
	require.NoError(t, err)
	require.Equal(t, cpus, all)
}
