package cluster_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestActivateRequestChecksKindAndID: the control subject applies Get's
// rules to a request from the wire. An id over 512 bytes is refused
// without an activation, and one of 3,000 bytes, which would make a
// key-value subject over the server's maximum control line (a fatal
// connection error in nats.go: the member's connection closed for good),
// is refused before any key-value request.
func TestActivateRequestChecksKindAndID(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	n0 := startSlow(t, ns.url(), "n0", reg, 2*time.Second, true)
	nc, err := nats.Connect(ns.url())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ask := func(id string) string {
		b, _ := json.Marshal(map[string]string{"kind": "slow", "id": id})
		m, err := nc.Request("actord.cluster.n0.activate", b, 6*time.Second)
		if err != nil {
			return "error: " + err.Error()
		}
		return string(m.Data)
	}
	t.Logf("600-byte id: %s", ask(strings.Repeat("a", 600)))
	if n := n0.k.LocalCount(); n != 0 {
		t.Errorf("an id over the documented 512-byte limit was activated through the control subject (%d activations)", n)
	}
	before := n0.node.Conn().Stats().Reconnects
	t.Logf("3000-byte id: %s (n0 last error: %v, connected %v)", ask(strings.Repeat("b", 3000)), n0.node.Conn().LastError(), n0.node.Conn().IsConnected())
	lastErr := n0.node.Conn().LastError()
	deadline := time.Now().Add(5 * time.Second)
	for !n0.node.Conn().IsConnected() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if after := n0.node.Conn().Stats().Reconnects; after != before || lastErr != nil || !n0.node.Conn().IsConnected() {
		t.Errorf("one forged activation request broke n0's connection: last error %v, %d reconnects, connected 5s later: %v",
			lastErr, after-before, n0.node.Conn().IsConnected())
	}
}

// Two members asked to activate the same ids at the same moment through
// their control subjects (as two members with different views would):
// the compare-and-set on the key lets one claim win, the other finds it;
// each id is activated once. (Every member normally sends an id to the
// same placement target, so no other test makes claims race across
// members.)
func TestConcurrentClaimsAcrossMembers(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	n0 := startSlow(t, ns.url(), "n0", reg, 2*time.Second, true)
	n1 := startSlow(t, ns.url(), "n1", reg, 2*time.Second, true)
	waitMembers(t, 2, n0, n1)
	nc, err := nats.Connect(ns.url())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for i := range 100 {
		id := "c1-" + strconv.Itoa(i)
		b, _ := json.Marshal(map[string]string{"kind": "slow", "id": id})
		var wg sync.WaitGroup
		for _, n := range []string{"n0", "n1"} {
			wg.Go(func() {
				if m, err := nc.Request("actord.cluster."+n+".activate", b, 5*time.Second); err != nil {
					t.Errorf("%s: %v", n, err)
				} else if strings.Contains(string(m.Data), `"err"`) {
					t.Errorf("%s: %s", n, m.Data)
				}
			})
		}
		wg.Wait()
	}
	// An activation answers before its actor's Started hook has run.
	waitFor(t, 5*time.Second, "100 activations started", func() bool {
		reg.mu.Lock()
		defer reg.mu.Unlock()
		n := 0
		for i := range 100 {
			n += min(reg.total["c1-"+strconv.Itoa(i)], 1)
		}
		return n == 100
	})
	time.Sleep(100 * time.Millisecond) // a second activation would show by now
	reg.check(t)
	reg.mu.Lock()
	defer reg.mu.Unlock()
	for i := range 100 {
		if n := reg.total["c1-"+strconv.Itoa(i)]; n != 1 {
			t.Errorf("c1-%d activated %d times", i, n)
		}
	}
}
