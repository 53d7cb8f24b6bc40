package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// freeAddr returns a free 127.0.0.1 address.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestThreeMembers runs three members in this process (the first with the
// embedded NATS server), adds to a cart through one member's HTTP front,
// reads it through the others, stops the member holding it and finds the
// cart again (empty) on another member.
func TestThreeMembers(t *testing.T) {
	type member struct {
		http   string
		cancel context.CancelFunc
		done   chan error
	}
	natsAddr := freeAddr(t)
	members := map[string]*member{}
	for _, name := range []string{"a", "b", "c"} {
		cfg := config{name: name, httpAddr: "127.0.0.1:0", ttl: 2 * time.Second}
		if name == "a" {
			cfg.natsEmbed = natsAddr
		} else {
			cfg.natsURL = "nats://" + natsAddr
		}
		ctx, cancel := context.WithCancel(context.Background())
		m := &member{cancel: cancel, done: make(chan error, 1)}
		ready := make(chan string, 1)
		go func() { m.done <- run(ctx, cfg, func(_, httpURL string) { ready <- httpURL }) }()
		select {
		case m.http = <-ready:
		case err := <-m.done:
			t.Fatal(err)
		case <-time.After(20 * time.Second):
			t.Fatal(name, "not ready")
		}
		members[name] = m
	}
	stop := func(name string) {
		m := members[name]
		if m == nil {
			return
		}
		m.cancel()
		if err := <-m.done; err != nil {
			t.Errorf("%s: %v", name, err)
		}
		delete(members, name)
	}
	// b and c stop before a, which runs the NATS server.
	defer stop("a")
	defer stop("b")
	defer stop("c")

	call := func(method, name, path string) Contents {
		t.Helper()
		req, _ := http.NewRequest(method, members[name].http+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var c Contents
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s on %s: %s", method, path, name, resp.Status)
		}
		if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	for len(members) > 0 { // every member sees the three
		resp, err := http.Get(members["c"].http + "/members")
		if err != nil {
			t.Fatal(err)
		}
		var ms []json.RawMessage
		json.NewDecoder(resp.Body).Decode(&ms)
		resp.Body.Close()
		if len(ms) == 3 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Pick a cart that does not live on a, so that stopping its member
	// keeps the NATS server up.
	var id string
	var holder string
	for i := 0; ; i++ {
		id = fmt.Sprint("cart", i)
		if got := call("POST", "a", "/carts/"+id+"?sku=tea&qty=2"); got.Member != "a" {
			holder = got.Member
			break
		}
	}
	call("POST", "b", "/carts/"+id+"?sku=jam&qty=1")
	got := call("GET", "c", "/carts/"+id)
	if got.Member != holder || got.Items["tea"] != 2 || got.Items["jam"] != 1 {
		t.Fatalf("cart from c: %+v, want tea 2, jam 1 on %s", got, holder)
	}
	stop(holder)
	// The handler answers 503 ("try again") while the cart's old member is
	// still being found dead or gone: a client retries, as this one does.
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(members["a"].http + "/carts/" + id)
		if err != nil {
			t.Fatal(err)
		}
		status := resp.StatusCode
		resp.Body.Close()
		if status != http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /carts/%s on a: still 503 after 20 s", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
	got = call("GET", "a", "/carts/"+id)
	if got.Member == holder || len(got.Items) != 0 {
		t.Fatalf("after %s left: %+v, want an empty cart elsewhere", holder, got)
	}
}
