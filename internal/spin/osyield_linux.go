package spin

import "golang.org/x/sys/unix"

// OSYield gives the calling thread's CPU to other threads ready to run on
// it (sched_yield), then returns. It is for a waiter whose wait may depend
// on another OS thread that needs this very CPU (more Go processors than
// CPUs the process gets, or a CPU taken by the host): runtime.Gosched
// yields only the Go processor, and with no other goroutine to run it
// returns at once, the thread still holding its CPU until the kernel
// preempts it. Where the system call is not available it is
// runtime.Gosched.
func OSYield() {
	// Syscall, not RawSyscall: the yield may switch to another thread for
	// a while, during which the runtime may hand this goroutine's
	// processor to another thread.
	_, _, _ = unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
}
