//go:build amd64 || arm64

package goid

// archSupported reports that getg is implemented in assembly here.
const archSupported = true

// getg returns the calling goroutine's runtime g pointer (goid_$GOARCH.s).
func getg() uintptr
