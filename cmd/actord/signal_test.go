package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/actord/actord/actor"
)

// asMainEnv, set to 1 in the environment of this test binary, makes it run
// as actord itself (see TestMain), with one more workload, "block", whose
// run never finishes: its graceful stop waits until -shutdown-timeout.
const asMainEnv = "TEST_ACTORD_AS_MAIN"

// blockStarted is what the "block" workload prints once its run has begun.
const blockStarted = "block workload: run started"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		workloadNames = append(workloadNames, "block")
		testPrograms["block"] = func(context.Context, *actor.System) error {
			fmt.Fprintln(os.Stderr, blockStarted)
			for {
				time.Sleep(time.Hour)
			}
		}
		main() // exits
		return
	}
	// The tests: after them, no goroutine may outlive the runs they stop
	// (the child branch above never returns here, so only this process
	// is checked).
	goleak.VerifyTestMain(m)
}

// TestSecondSignalKills runs actord (this test binary as its main) with a
// workload whose graceful stop cannot finish, sends it SIGTERM, and once the
// graceful stop has begun, SIGTERM again: the second signal must end the
// process at once, with exit status 128+SIGTERM. (The bug: the signals stayed
// caught until the workload's stop returned, so the second one was ignored
// and the process ran on until -shutdown-timeout.)
func TestSecondSignalKills(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-listen", "127.0.0.1:0", "-workload", "block", "-workers", "1",
		"-report-interval", "0", "-shutdown-timeout", "10m")
	cmd.Env = append(os.Environ(), asMainEnv+"=1")
	var logs syncBuffer
	cmd.Stdout = &logs
	cmd.Stderr = &logs
	require.NoError(t, cmd.Start())
	var waitErr error
	exited := make(chan struct{})
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // whatever happened; an error only means it has exited
		<-exited
	})

	// waitFor waits until the logs contain s, failing if the process exits
	// first or s does not come within a generous bound.
	waitFor := func(s string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for !strings.Contains(logs.String(), s) {
			select {
			case <-exited:
				t.Fatalf("actord exited (%v) before logging %q:\n%s", waitErr, s, logs.String())
			case <-deadline:
				t.Fatalf("actord did not log %q:\n%s", s, logs.String())
			case <-time.After(10 * time.Millisecond):
			}
		}
	}

	waitFor(blockStarted)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	waitFor("waiting for the current run to finish") // the graceful stop has begun, and cannot end
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("actord still running 10s after a second SIGTERM:\n%s", logs.String())
	}
	var exitErr *exec.ExitError
	require.True(t, errors.As(waitErr, &exitErr), "exit: %v\n%s", waitErr, logs.String())
	require.Equal(t, 128+int(syscall.SIGTERM), exitErr.ExitCode(), logs.String())
	require.Contains(t, logs.String(), "second signal", logs.String())
}
