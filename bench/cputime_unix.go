//go:build unix

package bench

import (
	"time"

	"golang.org/x/sys/unix"
)

// CPUTime returns the process's user plus system CPU time so far
// (getrusage), or 0 where it cannot be read.
func CPUTime() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
