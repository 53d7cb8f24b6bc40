//go:build !linux

package event

import (
	"sync/atomic"
	"time"
)

const futexSupported = false

func futexWait(*atomic.Uint32, uint32, time.Duration) { panic("event: futex not supported") }
func futexWake(*atomic.Uint32)                        { panic("event: futex not supported") }
