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

// Supported reports whether Get returns real identities on this platform.
const Supported = supported
