package testwatch

import (
	"flag"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	flag.Parse()
	Arm()
	os.Exit(m.Run())
}

// hangs blocks forever when the test binary runs it as the child of
// TestWatchdogNamesTheHangingTest.
func TestHangingChild(t *testing.T) {
	if os.Getenv("TESTWATCH_CHILD") != "1" {
		t.Skip("run by TestWatchdogNamesTheHangingTest")
	}
	select {}
}

// A binary whose test hangs exits with status 2 before its -timeout, and
// the last lines it writes name the hanging test's frame in its test file.
func TestWatchdogNamesTheHangingTest(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHangingChild$", "-test.timeout", "2s")
	cmd.Env = append(os.Environ(), "TESTWATCH_CHILD=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "output:\n%s", out)
	assert.Equal(t, 2, exit.ExitCode(), "the watchdog's status, not the timeout panic's")
	assert.Regexp(t, `testwatch: goroutines in test code[^\n]*\n(?:[^\n]*\n)*[^\n]*TestHangingChild[^\n]*testwatch_test.go:\d+ [^\n]*\n$`, string(out))
}
