//go:build amd64 || arm64

package goid

const supported = true

// Get returns an identity of the calling goroutine (its runtime g pointer).
//
//go:noescape
func Get() uintptr
