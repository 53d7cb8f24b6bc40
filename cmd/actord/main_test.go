package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

func gatherAll(t *testing.T, cs ...prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	for _, c := range cs {
		require.NoError(t, reg.Register(c))
	}
	fams, err := reg.Gather()
	require.NoError(t, err)
	m := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		m[f.GetName()] = f
	}
	return m
}

// syncBuffer is a bytes.Buffer safe for the logger and the test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// startRun runs the program with args in the background; it returns the
// address served and a function that waits for the exit status.
func startRun(t *testing.T, ctx context.Context, args ...string) (string, func() int, *syncBuffer) {
	t.Helper()
	var logs syncBuffer
	addr := make(chan string, 1)
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, append([]string{"-listen", "127.0.0.1:0"}, args...), func(string) string { return "" }, &logs,
			func(a string) { addr <- a })
	}()
	select {
	case a := <-addr:
		return "http://" + a, func() int { return <-code }, &logs
	case c := <-code:
		t.Fatalf("actord exited with %d before serving: %s", c, logs.String())
	case <-time.After(20 * time.Second):
		t.Fatal("actord did not start")
	}
	return "", nil, nil
}

// TestServe runs the default (mixed) workload, checks every endpoint, then
// stops it with SIGTERM, as a service manager would, and checks that it
// stopped cleanly and logged its final statistics.
func TestServe(t *testing.T) {
	base, wait, logs := startRun(t, context.Background(), "-size", "50", "-rate", "2000", "-report-interval", "200ms")
	// 503 while the workload's system starts, then 200.
	code, body := get(t, base+"/healthz")
	for deadline := time.Now().Add(10 * time.Second); code == http.StatusServiceUnavailable && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		code, body = get(t, base+"/healthz")
	}
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok\n", body)

	// Every series below is exported from the first scrape on; a scrape
	// that misses one is retried until the deadline, then reported.
	names := []string{"actord_messages_sent_total ", `actord_gulp_size_bucket{worker="0",le="1"}`,
		`actord_workload_info{workload="mixed"} 1`, "go_goroutines ", "process_resident_memory_bytes ",
		`actord_restarts_total{worker="0"}`, `actord_mailbox_overflows_total{reason="drop_oldest"}`, "actord_watch_notifications_total "}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, body = get(t, base+"/metrics")
		require.Equal(t, http.StatusOK, code)
		missing := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return strings.Contains(body, n) })
		if len(missing) == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "never exported: %q", missing)
	}
	code, body = get(t, base+"/debug/pprof/")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "goroutine")
	code, _ = get(t, base+"/debug/pprof/heap?debug=1")
	require.Equal(t, http.StatusOK, code)
	code, body = get(t, base+"/")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "/metrics")

	// The periodic statistics record (every 200ms here) is logged before
	// the stop.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "msg=statistics"); time.Sleep(10 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "no statistics record logged:\n%s", logs.String())
	}
	require.NoError(t, syscall.Kill(syscall.Getpid(), syscall.SIGTERM))
	require.Equal(t, 0, wait(), logs.String())
	require.Contains(t, logs.String(), `msg="actord stopped cleanly"`)
	require.Contains(t, logs.String(), "dead_letters=0")
	require.Contains(t, logs.String(), "msg=statistics")
	_, err := http.Get(base + "/healthz")
	require.Error(t, err, "the server is closed")
}

// TestBenchmarkWorkloads runs each benchmark program at a small size for a
// moment and checks that it ran at least one full run on fresh systems and
// stopped cleanly.
func TestBenchmarkWorkloads(t *testing.T) {
	for _, tc := range [][]string{
		{"-workload", "executor", "-size", "200"},
		{"-workload", "repeat", "-size", "200"},
		{"-workload", "balance-one", "-size", "200"},
		{"-workload", "balance-multi", "-size", "200"},
		{"-workload", "matrix", "-size", "32"},
		{"-workload", "pipeline", "-size", "3", "-rate", "500"},
	} {
		t.Run(tc[1], func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			base, wait, logs := startRun(t, ctx, append(tc, "-report-interval", "0", "-workers", "2")...)
			var body string
			require.Eventually(t, func() bool {
				_, body = get(t, base+"/metrics")
				return !strings.Contains(body, "actord_workload_runs_total{workload=\""+tc[1]+"\"} 0")
			}, 20*time.Second, 20*time.Millisecond, "no run finished")
			cancel()
			require.Equal(t, 0, wait(), logs.String())
			require.Contains(t, logs.String(), `msg="actord stopped cleanly"`)
			if tc[1] == "pipeline" {
				require.NotContains(t, body, `actord_workload_requests_total{workload="pipeline"} 0`)
			}
		})
	}
}

func TestRunErrors(t *testing.T) {
	var out syncBuffer
	require.Equal(t, 2, run(context.Background(), []string{"-workload", "nope"}, func(string) string { return "" }, &out, nil))
	require.Contains(t, out.String(), "unknown workload")
	require.Equal(t, 0, run(context.Background(), []string{"-h"}, func(string) string { return "" }, &out, nil))
	require.Equal(t, 1, run(context.Background(), []string{"-listen", "256.0.0.1:1"}, func(string) string { return "" }, &out, nil))
	require.Contains(t, out.String(), "cannot listen")
}
