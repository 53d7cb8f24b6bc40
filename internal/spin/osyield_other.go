//go:build !linux

package spin

import "runtime"

// OSYield gives the calling thread's CPU to other threads ready to run on
// it, where the platform lets Go do so; here it is runtime.Gosched (see
// the Linux version).
func OSYield() { runtime.Gosched() }
