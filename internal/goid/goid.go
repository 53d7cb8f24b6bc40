// Package goid identifies the calling goroutine cheaply.
//
// The executor needs to know, on the send path, whether the caller is one of
// its own worker goroutines (and which one) so that a behaviour sending to the
// queue its worker is draining can append to the worker's local batch without
// any atomic instruction, and so that per-worker statistics can count sends.
// Go has no goroutine-local storage, so Get reads the runtime's
// current-goroutine pointer (g) directly: in assembly on amd64 and arm64, where
// the runtime keeps it in thread-local storage (amd64) or in a dedicated
// register (arm64).
//
// The value is an opaque identity: it is unique among live goroutines and
// stable for a goroutine's whole life, and it may be reused by a new goroutine
// after the old one exits. Callers must therefore retire an identity before the
// goroutine that owns it exits (the executor does so when a worker stops).
//
// Reading g depends on the runtime's internal layout, so the package checks
// the assembly at initialization: the identity must be non-zero, stable for
// one goroutine across rescheduling, and distinct for goroutines alive at the
// same time. If the check fails, the package logs one warning with log/slog
// (its message starts with "actord: goroutine identity") and uses the portable
// fallback.
//
// In the portable fallback Supported is false and Get returns 0 ("unknown")
// for every goroutine: the executor then treats every sender as external,
// which is correct but forgoes the local fast path. The fallback is used on
// architectures other than amd64 and arm64, after a failed check, and when
// the environment variable ACTORD_GOID is set to "portable" when the program
// starts (no warning is logged then). Setting it for a test binary runs the
// whole binary on the fallback; other values of ACTORD_GOID are ignored.
package goid

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
)

// EnvVar is the environment variable that selects the implementation; the
// value EnvPortable forces the portable fallback. It is read once, during
// package initialization.
const (
	EnvVar      = "ACTORD_GOID"
	EnvPortable = "portable"
)

// Supported reports whether Get returns real goroutine identities. It is
// false on architectures without an assembly Get, when ACTORD_GOID=portable,
// and when the initialization self-check failed.
//
// Only this package's initialization writes Supported; nothing may assign it
// afterwards. Get and the executor read it without synchronization: package
// initialization completes before any code of an importing package runs, so
// every later read observes the final value.
var Supported = setup(archSupported, os.Getenv(EnvVar), getg, slog.Warn)

// Get returns an identity of the calling goroutine (its runtime g pointer),
// or 0 for every goroutine when Supported is false. It costs one load of
// Supported and, when true, a call to a three-instruction assembly routine.
func Get() uintptr {
	if !Supported {
		return 0
	}
	return getg()
}

// Unchecked is Get without the test of Supported, for hot paths that have
// tested Supported already: it must only be called when Supported is true.
func Unchecked() uintptr { return getg() }

// setup decides Supported: archOK says whether getg is implemented on this
// architecture, env is the value of ACTORD_GOID, and warn (slog.Warn in
// production) is called once if the self-check of get fails.
func setup(archOK bool, env string, get func() uintptr, warn func(msg string, args ...any)) bool {
	if !archOK || env == EnvPortable {
		return false
	}
	if err := selfCheck(get); err != nil {
		warn("actord: goroutine identity self-check failed; using the portable fallback (no local send fast path)",
			"err", err, "goarch", runtime.GOARCH, "go", runtime.Version())
		return false
	}
	return true
}

// checkGoroutines is how many goroutines selfCheck keeps alive at once.
const checkGoroutines = 4

// selfCheck reports whether get behaves as a goroutine identity: non-zero,
// equal across calls within one goroutine, unchanged after the goroutine is
// rescheduled (runtime.Gosched, blocking on a channel and being handed a
// value), and distinct for goroutines that are alive at the same time. It
// starts a few goroutines and completes in microseconds.
func selfCheck(get func() uintptr) error {
	self := get()
	if self == 0 {
		return errors.New("identity is 0")
	}
	if again := get(); again != self {
		return fmt.Errorf("identity changed between two calls in one goroutine (%#x, %#x)", self, again)
	}
	runtime.Gosched()
	if g := get(); g != self {
		return fmt.Errorf("identity changed across runtime.Gosched (%#x, %#x)", self, g)
	}

	// Each helper reports its identity, blocks until released (so the
	// helpers are alive together and each is rescheduled by a channel
	// hand-off), then reports whether its identity survived the block.
	type report struct {
		id     uintptr
		stable bool
	}
	first := make(chan uintptr, checkGoroutines)
	release := make(chan struct{})
	second := make(chan report, checkGoroutines)
	for range checkGoroutines {
		go func() {
			id := get()
			first <- id
			<-release
			g := get()
			second <- report{id: g, stable: g == id}
		}()
	}
	seen := map[uintptr]bool{self: true}
	var err error
	for range checkGoroutines {
		id := <-first // the main goroutine blocks here: a hand-off too
		switch {
		case err != nil:
		case id == 0:
			err = errors.New("identity is 0 in another goroutine")
		case seen[id]:
			err = fmt.Errorf("identity %#x shared by two live goroutines", id)
		}
		seen[id] = true
	}
	close(release)
	for range checkGoroutines {
		if r := <-second; err == nil && !r.stable {
			err = fmt.Errorf("identity changed after a channel hand-off (now %#x)", r.id)
		}
	}
	if err != nil {
		return err
	}
	if g := get(); g != self {
		return fmt.Errorf("identity changed after a channel hand-off (%#x, %#x)", self, g)
	}
	return nil
}

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
