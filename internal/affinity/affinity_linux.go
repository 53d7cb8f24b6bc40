package affinity

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Allowed returns the CPUs the calling thread may run on, in increasing order:
// the process's allowed set, unless the calling thread was pinned.
func Allowed() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("affinity: sched_getaffinity: %w", err)
	}
	var cpus []int
	for c := 0; c < len(set)*64 && len(cpus) < set.Count(); c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// Pin restricts the calling thread to cpu. The caller must hold its thread
// with runtime.LockOSThread, and should not unlock it afterwards: the Go
// runtime then discards the thread when the goroutine exits, so the restricted
// thread is never reused for other goroutines.
func Pin(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("affinity: pin to CPU %d: %w", cpu, err)
	}
	return nil
}
