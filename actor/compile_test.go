package actor_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUnsupportedSendsDoNotCompile proves the static typing of Send: sending
// a message type for which the actor has no behaviour (or a non-message, or
// to a non-actor) is a compile error. It builds testdata/badsend with the go
// command and requires an error on each line marked "// ERROR", and builds
// the well-typed control program testdata/goodsend, which must succeed (so
// the test cannot pass because of a broken setup).
func TestUnsupportedSendsDoNotCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs with the go command")
	}
	gotool, err := exec.LookPath("go")
	if err != nil {
		gotool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	build := func(dir string) (string, error) {
		cmd := exec.Command(gotool, "build", "-o", os.DevNull, "./testdata/"+dir)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := build("goodsend")
	require.NoError(t, err, "the control program must build:\n%s", out)

	out, err = build("badsend")
	require.Error(t, err, "badsend compiled, but it sends unsupported message types")
	t.Logf("compiler output:\n%s", out)

	f, err := os.Open("testdata/badsend/main.go")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	marked := 0
	for line := 1; sc.Scan(); line++ {
		if !strings.Contains(sc.Text(), "// ERROR") {
			continue
		}
		marked++
		want := fmt.Sprintf("main.go:%d:", line)
		require.Contains(t, out, want, "no compile error on line %d: %s", line, strings.TrimSpace(sc.Text()))
	}
	require.Equal(t, 4, marked)
}
