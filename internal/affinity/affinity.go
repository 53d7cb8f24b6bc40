// Package affinity pins the calling OS thread to one CPU.
//
// The executor pins worker i, after runtime.LockOSThread, to the i-th CPU of
// the process's allowed set (modulo its size) when CPU pinning is requested.
// Pinning is supported on Linux (sched_setaffinity through golang.org/x/sys);
// elsewhere Pin reports ErrUnsupported.
package affinity

import "errors"

// ErrUnsupported is returned where thread affinity cannot be set.
var ErrUnsupported = errors.New("affinity: CPU pinning is not supported on this platform")
