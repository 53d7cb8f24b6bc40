//go:build !amd64 && !arm64

package goid

// archSupported reports that this architecture has no assembly getg.
const archSupported = false

// getg is never called here (Supported is false); it returns 0.
func getg() uintptr { return 0 }
