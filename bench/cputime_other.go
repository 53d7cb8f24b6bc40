//go:build !unix

package bench

import "time"

// CPUTime returns the process's user plus system CPU time so far; 0 on
// this platform, where the benchmarks do not read it (see the unix
// version).
func CPUTime() time.Duration { return 0 }
