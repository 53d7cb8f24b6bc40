//go:build !amd64 && !arm64

package goid

const supported = false

// Get returns 0: goroutine identity is not available on this architecture.
func Get() uintptr { return 0 }
