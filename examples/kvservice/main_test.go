package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Every test shuts its service down; goleak then checks that no goroutine
// (worker, HTTP server, timer) outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testService is a service started in-process on a random loopback port.
type testService struct {
	t      *testing.T
	base   string // http://127.0.0.1:port
	client *http.Client
	stop   func() error // shuts the service down; returns serve's error
}

func start(t *testing.T, cfg config) *testService {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, cfg, log) }()
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	ts := &testService{
		t:      t,
		base:   "http://" + ln.Addr().String(),
		client: &http.Client{Transport: tr, Timeout: 10 * time.Second},
	}
	var once sync.Once
	var serveErr error
	ts.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case serveErr = <-done:
			case <-time.After(15 * time.Second):
				serveErr = errors.New("serve did not return after shutdown")
			}
			tr.CloseIdleConnections()
		})
		return serveErr
	}
	t.Cleanup(func() {
		if err := ts.stop(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return ts
}

// do sends a request and returns its status and body; a transport error
// fails the test.
func (ts *testService) do(method, path, body string) (int, string) {
	ts.t.Helper()
	code, got, err := ts.doCtx(context.Background(), method, path, body)
	if err != nil {
		ts.t.Fatalf("%s %s: %v", method, path, err)
	}
	return code, got
}

func (ts *testService) doCtx(ctx context.Context, method, path, body string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, method, ts.base+path, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func (ts *testService) health() health {
	ts.t.Helper()
	_, body := ts.do("GET", "/healthz", "")
	var h health
	if err := json.Unmarshal([]byte(body), &h); err != nil {
		ts.t.Fatalf("healthz: %v: %q", err, body)
	}
	return h
}

func defaultConfig() config {
	return config{Shards: 4, SessionIdle: time.Minute, Timeout: 5 * time.Second}
}

func expect(t *testing.T, what string, code, want int, body string) {
	t.Helper()
	if code != want {
		t.Fatalf("%s: status %d, want %d (body %q)", what, code, want, body)
	}
}

func TestPutGetDelete(t *testing.T) {
	ts := start(t, defaultConfig())
	code, body := ts.do("GET", "/kv/greeting", "")
	expect(t, "get before put", code, http.StatusNotFound, body)
	code, body = ts.do("PUT", "/kv/greeting", "hello")
	expect(t, "put", code, http.StatusCreated, body)
	code, body = ts.do("GET", "/kv/greeting", "")
	expect(t, "get", code, http.StatusOK, body)
	if body != "hello" {
		t.Fatalf("get: %q, want hello", body)
	}
	code, body = ts.do("PUT", "/kv/greeting", "bonjour")
	expect(t, "replace", code, http.StatusNoContent, body)
	if _, body = ts.do("GET", "/kv/greeting", ""); body != "bonjour" {
		t.Fatalf("get after replace: %q, want bonjour", body)
	}
	code, body = ts.do("DELETE", "/kv/greeting", "")
	expect(t, "delete", code, http.StatusNoContent, body)
	code, body = ts.do("GET", "/kv/greeting", "")
	expect(t, "get after delete", code, http.StatusNotFound, body)
	code, body = ts.do("DELETE", "/kv/greeting", "")
	expect(t, "delete again", code, http.StatusNotFound, body)
	if h := ts.health(); h.Status != "ok" || len(h.Keys) != 4 {
		t.Fatalf("healthz: %+v", h)
	}
}

// Many clients at once, each on its own keys: put, get (its own value
// back), delete. Every shard ends empty.
func TestConcurrentClients(t *testing.T) {
	ts := start(t, defaultConfig())
	const clients, requests = 20, 201 // 67 put/get/delete rounds each
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := range requests {
				key := fmt.Sprintf("/kv/c%d-k%d", c, i/3)
				value := fmt.Sprintf("value %d/%d", c, i/3)
				var method, body string
				var want int
				switch i % 3 {
				case 0:
					method, body, want = "PUT", value, http.StatusCreated
				case 1:
					method, want = "GET", http.StatusOK
				case 2:
					method, want = "DELETE", http.StatusNoContent
				}
				code, got, err := ts.doCtx(context.Background(), method, key, body)
				if err != nil || code != want || (method == "GET" && got != value) {
					t.Errorf("client %d: %s %s: %d %q %v; want %d", c, method, key, code, got, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	h := ts.health()
	for i, n := range h.Keys {
		if n != 0 {
			t.Errorf("shard %d holds %d keys after every client deleted its own", i, n)
		}
	}
}

// Many clients at once, each with its own session, touched in turn with
// a GET of one unknown id that every client asks for at once: each touch
// counts on its own session, and the unknown id is 404 for all of them.
func TestConcurrentSessions(t *testing.T) {
	ts := start(t, defaultConfig())
	const clients, touches = 20, 30
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			_, body, err := ts.doCtx(context.Background(), "POST", "/session", "")
			var info sessionInfo
			if err != nil || json.Unmarshal([]byte(body), &info) != nil {
				t.Errorf("client %d: new session: %q %v", c, body, err)
				return
			}
			for i := 2; i <= touches; i++ {
				code, body, err := ts.doCtx(context.Background(), "GET", "/session/"+info.ID, "")
				if err != nil || code != http.StatusOK || json.Unmarshal([]byte(body), &info) != nil || info.Hits != i {
					t.Errorf("client %d: touch %d: %d %q %v", c, i, code, body, err)
					return
				}
				if code, body, err = ts.doCtx(context.Background(), "GET", "/session/unknown", ""); code != http.StatusNotFound {
					t.Errorf("client %d: unknown session: %d %q %v", c, code, body, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if h := ts.health(); h.Sessions < clients {
		t.Fatalf("healthz: %d sessions, want at least %d", h.Sessions, clients)
	}
}

// A deadline ends the ask: the service's answer is 504, at the deadline and
// not when the slow reply would come. A client that hangs up ends its ask
// too, which the service counts.
func TestDeadline(t *testing.T) {
	ts := start(t, defaultConfig())
	code, body := ts.do("GET", "/slow?d=10ms", "")
	expect(t, "slow within the deadline", code, http.StatusOK, body)

	began := time.Now()
	code, body = ts.do("GET", "/slow?d=5s&timeout=50ms", "")
	expect(t, "slow past ?timeout=", code, http.StatusGatewayTimeout, body)
	if took := time.Since(began); took > 3*time.Second {
		t.Fatalf("the timeout took %v: the ask did not end at its deadline", took)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, _, err := ts.doCtx(ctx, "GET", "/slow?d=5s", ""); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("client deadline: %v, want context.DeadlineExceeded", err)
	}
	// The server notices the hang-up (r.Context() ends) and the ask ends.
	for deadline := time.Now().Add(5 * time.Second); ts.health().Canceled == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the service never counted the abandoned request as canceled")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if h := ts.health(); h.Timeouts != 1 {
		t.Fatalf("healthz: %+v, want 1 timeout", h)
	}
}

// A session lives as long as it is used, and expires (passivates) after
// its idle timeout once it is not; a GET does not bring it back.
func TestSessionExpires(t *testing.T) {
	cfg := defaultConfig()
	cfg.SessionIdle = 100 * time.Millisecond
	idle := cfg.SessionIdle
	ts := start(t, cfg)

	// A touch is a message: touched more often than its idle timeout, the
	// session outlives the timeout. lastTouch is when the last touch that
	// found it was sent, so it was received after lastTouch. On a
	// machine so loaded that two touches end up further apart than the
	// timeout, the session may expire: the test then starts over with a new
	// one, a few times at most.
	var path string
	var lastTouch time.Time
	for attempt := 1; path == ""; attempt++ {
		if attempt > 5 {
			t.Fatalf("touches kept coming more than %v apart: the machine is too loaded", idle)
		}
		lastTouch = time.Now()
		code, body := ts.do("POST", "/session", "")
		expect(t, "new session", code, http.StatusCreated, body)
		var info sessionInfo
		if err := json.Unmarshal([]byte(body), &info); err != nil || info.ID == "" || info.Hits != 1 {
			t.Fatalf("new session: %q %v", body, err)
		}
		path = "/session/" + info.ID
		created := lastTouch
		for hits := 2; time.Since(created) < 3*idle; hits++ {
			time.Sleep(idle / 10)
			sent := time.Now()
			code, body = ts.do("GET", path, "")
			if code == http.StatusNotFound {
				if gap := time.Since(lastTouch); gap < idle {
					t.Fatalf("the session expired %v after a touch, before its idle timeout %v", gap, idle)
				}
				path = "" // legitimately idle for too long: start over
				break
			}
			expect(t, "touch", code, http.StatusOK, body)
			if err := json.Unmarshal([]byte(body), &info); err != nil || info.Hits != hits {
				t.Fatalf("touch: %q %v, want %d hits", body, err, hits)
			}
			lastTouch = sent
		}
	}

	// Left alone, it expires, and not before its idle timeout.
	for deadline := time.Now().Add(10 * time.Second); ; {
		time.Sleep(2 * idle)
		sent := time.Now()
		code, body := ts.do("GET", path, "")
		if code == http.StatusNotFound {
			if gap := time.Since(lastTouch); gap < idle {
				t.Fatalf("the session expired %v after a touch, before its idle timeout %v", gap, idle)
			}
			break
		}
		expect(t, "touch while expiring", code, http.StatusOK, body)
		lastTouch = sent // a slow machine: that touch re-armed it
		if time.Now().After(deadline) {
			t.Fatal("the session never expired")
		}
	}
	// Expired, it stays so: each GET reaches a new incarnation, never
	// created, which answers 404 and ends.
	for range 3 {
		code, body := ts.do("GET", path, "")
		expect(t, "expired session", code, http.StatusNotFound, body)
		code, body = ts.do("GET", "/session/nosuchsession", "")
		expect(t, "unknown session", code, http.StatusNotFound, body)
	}
	waitNoSessions(t, ts, 10*time.Second)
}

// waitNoSessions waits until /healthz counts no live session.
func waitNoSessions(t *testing.T, ts *testService, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); ts.health().Sessions != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions still live after %v", ts.health().Sessions, within)
		}
	}
}

// A shard that panics is reported and restarted: the request that made it
// panic gets 503, the crashed shard's keys are gone, every other shard
// keeps its keys, and the restarted shard serves the next requests.
func TestPanicRestarts(t *testing.T) {
	cfg := defaultConfig()
	ts := start(t, cfg)
	const keys = 32
	for k := range keys {
		code, body := ts.do("PUT", fmt.Sprintf("/kv/k%d", k), "v")
		expect(t, "put", code, http.StatusCreated, body)
	}
	code, body := ts.do("POST", "/panic/k0", "")
	expect(t, "panic", code, http.StatusServiceUnavailable, body)
	crashed := shardOf("k0", cfg.Shards)
	for k := range keys {
		key := fmt.Sprintf("k%d", k)
		want := http.StatusOK
		if shardOf(key, cfg.Shards) == crashed {
			want = http.StatusNotFound // its state died with it
		}
		code, body := ts.do("GET", "/kv/"+key, "")
		expect(t, "get "+key+" after the panic", code, want, body)
	}
	code, body = ts.do("PUT", "/kv/k0", "again")
	expect(t, "put on the restarted shard", code, http.StatusCreated, body)
	if code, body = ts.do("GET", "/kv/k0", ""); code != http.StatusOK || body != "again" {
		t.Fatalf("get on the restarted shard: %d %q", code, body)
	}
	h := ts.health()
	if h.Status != "ok" || h.Panics != 1 || h.Restarts != 1 {
		t.Fatalf("healthz: %+v, want ok, 1 panic, 1 restart", h)
	}
}

// Past its restart budget (10 a minute) a shard terminates, and the next
// request to its name spawns a new one: every panic is answered 503 and
// the shard answers afterwards.
func TestPanicPastBudget(t *testing.T) {
	ts := start(t, defaultConfig())
	const panics = 12
	for range panics {
		code, body := ts.do("POST", "/panic/k", "")
		expect(t, "panic", code, http.StatusServiceUnavailable, body)
	}
	code, body := ts.do("PUT", "/kv/k", "v")
	expect(t, "put after the budget", code, http.StatusCreated, body)
	code, body = ts.do("GET", "/kv/k", "")
	expect(t, "get after the budget", code, http.StatusOK, body)
	if h := ts.health(); h.Status != "ok" || h.Panics != panics {
		t.Fatalf("healthz: %+v, want ok, %d panics", h, panics)
	}
}

// Shutdown ends the actors, live sessions included, and the listener:
// afterwards nothing answers and no goroutine is left.
func TestShutdown(t *testing.T) {
	ts := start(t, defaultConfig())
	ts.do("PUT", "/kv/a", "1")
	code, body := ts.do("POST", "/session", "") // live at shutdown (idle 1m)
	expect(t, "new session", code, http.StatusCreated, body)
	if err := ts.stop(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if _, _, err := ts.doCtx(context.Background(), "GET", "/kv/a", ""); err == nil {
		t.Fatal("the service still answers after shutdown")
	}
	goleak.VerifyNone(t)
}

// A session whose creating request ends before its first touch (a
// deadline of 1ns here; a client that hangs up alike) still expires:
// passivation begins when the actor is spawned, not at its first message.
func TestSessionExpiresWhenFirstTouchFails(t *testing.T) {
	cfg := defaultConfig()
	cfg.SessionIdle = 50 * time.Millisecond
	ts := start(t, cfg)
	for range 20 {
		code, body := ts.do("POST", "/session?timeout=1ns", "")
		expect(t, "new session, deadline passed", code, http.StatusGatewayTimeout, body)
	}
	waitNoSessions(t, ts, 20*time.Second)
}

// A PUT whose body stalls is cut off at the request's deadline, so a
// shutdown does not wait for it and ends cleanly.
func TestStalledUploadDoesNotBlockShutdown(t *testing.T) {
	cfg := defaultConfig()
	cfg.Timeout = 100 * time.Millisecond
	ts := start(t, cfg)
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "PUT /kv/x HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab") // 8 bytes short
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to the stalled upload: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("stalled upload: status %d, want %d", resp.StatusCode, http.StatusBadRequest)
	}
	if err := ts.stop(); err != nil {
		t.Fatalf("shutdown after a stalled upload: %v", err)
	}
}
