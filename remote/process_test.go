package remote_test

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/remote"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Types of cmd/actord-node, declared here alike: the wire names types by
// their name without package path.

type Event struct {
	actor.Message
	Seq int
}

type Put struct {
	actor.Request[bool]
	Key, Value string
}

type KeyGet struct {
	actor.Request[string]
	wrapperspb.StringValue
}

// TestTwoProcesses builds cmd/actord-node, runs its server role as another
// OS process on this test's NATS server, and talks to it from this process;
// then runs its client role, a third process, against it.
func TestTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := filepath.Join(t.TempDir(), "actord-node")
	build := exec.Command("go", "build", "-o", bin, "./cmd/actord-node")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	url := startNATS(t, 0)
	srv := exec.Command(bin, "-role", "server", "-nats-url", url, "-metrics-addr", "127.0.0.1:0")
	srv.Stderr = os.Stderr
	out, err := srv.StdoutPipe()
	must(t, err)
	must(t, srv.Start())
	exited := make(chan error, 1)
	t.Cleanup(func() {
		srv.Process.Kill() // a no-op once it has exited
		<-exited
	})
	lines := bufio.NewScanner(out)
	ready := make(chan bool, 1)
	metricsURL := make(chan string, 1)
	go func() {
		for lines.Scan() {
			if u, ok := strings.CutPrefix(lines.Text(), "metrics "); ok {
				metricsURL <- u
			}
			if strings.HasPrefix(lines.Text(), "ready") {
				ready <- true
			}
		}
		close(ready)
		exited <- srv.Wait() // after the last read of its output
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("server exited before it was ready")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("server not ready")
	}

	sys := startSystem(t)
	n := connect(t, sys, url, "tester")
	events, err := remote.Import(n, "server", "events", remote.CBOR[*Event]())
	must(t, err)
	put, err := remote.ImportRequest(n, "server", "put", remote.JSON[*Put](), remote.JSON[bool]())
	must(t, err)
	get, err := remote.ImportRequest(n, "server", "get", remote.Proto[KeyGet](), remote.CBOR[string]())
	must(t, err)
	for i := range 100 {
		must(t, events.Send(&Event{Seq: i}))
	}
	if existed := ask(t, put, &Put{Key: "greeting", Value: "hello"}); existed {
		t.Error("new key reported as existing")
	}
	if v := ask(t, get, &KeyGet{StringValue: wrapperspb.StringValue{Value: "greeting"}}); v != "hello" {
		t.Fatalf("get: %q", v)
	}
	n.Close()

	// The server process serves the node's metrics.
	resp, err := http.Get(<-metricsURL)
	must(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections() // no connection goroutine left for goleak
	must(t, err)
	for _, m := range []string{`actord_remote_messages_received_total{node="server"}`, "actord_remote_ask_duration_seconds_bucket", "actord_messages_sent_total"} {
		if !strings.Contains(string(body), m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}

	client := exec.Command(bin, "-role", "client", "-nats-url", url, "-duration", "1s", "-rate", "5000", "-metrics-addr", "127.0.0.1:0")
	cout, err := client.CombinedOutput()
	if err != nil || !strings.Contains(string(cout), "\nok\n") {
		t.Errorf("client: %v\n%s", err, cout)
	}

	must(t, srv.Process.Signal(os.Interrupt))
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		if err != nil {
			t.Errorf("server exit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("server did not stop on interrupt")
	}
	stopSystem(t, sys)
}
