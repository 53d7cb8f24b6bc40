//go:build !linux

package affinity

// Allowed is not supported on this platform.
func Allowed() ([]int, error) { return nil, ErrUnsupported }

// Pin is not supported on this platform.
func Pin(int) error { return ErrUnsupported }
