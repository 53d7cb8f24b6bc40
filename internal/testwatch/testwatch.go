// Package testwatch helps diagnose a test binary that hangs: go test's
// -timeout panic prints every goroutine, and a log that keeps only its tail
// (a CI summary) loses the head, which names the tests still running.
// Arm, called from a TestMain after flag.Parse, prints that dump itself a
// little before the timeout, then a short summary of the goroutines whose
// stacks are in test files, last, and exits with status 2.
package testwatch

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// maxMargin is the most the watchdog fires before -test.timeout (a quarter
// of the timeout for short ones): enough for the dump to be written before
// the testing package's own panic.
const maxMargin = 20 * time.Second

// Arm starts the watchdog if the binary runs with a -test.timeout (0
// disables it, as it disables the timeout); it returns a function that
// disarms it. It must be called after flag.Parse.
func Arm() (disarm func()) {
	f := flag.Lookup("test.timeout")
	if f == nil {
		return func() {}
	}
	d, err := time.ParseDuration(f.Value.String())
	if err != nil || d <= 0 {
		return func() {}
	}
	margin := min(d/4, maxMargin)
	t := time.AfterFunc(d-margin, func() { fire(d-margin, d) })
	return func() { t.Stop() }
}

// fire writes every goroutine's stack, then the summary, to stderr, and
// exits.
func fire(after, d time.Duration) {
	buf := make([]byte, 64<<20)
	buf = buf[:runtime.Stack(buf, true)]
	fmt.Fprintf(os.Stderr, "testwatch: still running %v into a %v -timeout; all goroutines:\n%s\n", after, d, buf)
	fmt.Fprintf(os.Stderr, "testwatch: goroutines in test code (first test-file frame of each):\n")
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		lines := strings.Split(string(g), "\n")
		for i, l := range lines {
			if strings.Contains(l, "_test.go:") && i > 0 {
				fmt.Fprintf(os.Stderr, "  %s | %s | %s\n", lines[0], strings.TrimSpace(lines[i-1]), strings.TrimSpace(l))
				break
			}
		}
	}
	os.Exit(2)
}
