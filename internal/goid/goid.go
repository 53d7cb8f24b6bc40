// Package goid identifies the calling goroutine cheaply.
//
// The executor needs to know, on the send path, whether the caller is one of
// its own worker goroutines (and which one) so that a behaviour sending to the
// queue its worker is draining can append to the worker's local batch without
// any atomic instruction, and so that per-worker statistics can count sends.
// Go has no goroutine-local storage, so we read the runtime's current-goroutine
// pointer (g) directly: in assembly on amd64 and arm64, where the runtime keeps
// it in thread-local storage (amd64) or in a dedicated register (arm64).
//
// The value is an opaque identity: it is unique among live goroutines and
// stable for a goroutine's whole life, and it may be reused by a new goroutine
// after the old one exits. Callers must therefore retire an identity before the
// goroutine that owns it exits (the executor does so when a worker stops).
//
// On other architectures Get returns 0 ("unknown"): the executor then treats
// every sender as external, which is correct but forgoes the local fast path.
package goid

import (
	"bytes"
	"runtime"
)

// Supported reports whether Get returns real identities on this platform.
const Supported = supported

// Slow returns the calling goroutine's id as the runtime prints it in stack
// traces ("goroutine 42 [running]"). It works on every platform but costs a
// stack dump (microseconds): for rare checks where Get is not supported.
func Slow() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	var id uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}
