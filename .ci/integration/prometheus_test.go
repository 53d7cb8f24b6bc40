//go:build integration

// Package integration tests actord against real parts: it builds and starts
// the actord server, starts a real Prometheus (Debian's prometheus package)
// that scrapes it on 127.0.0.1, and evaluates every PromQL expression of the
// Grafana dashboard through the Prometheus HTTP API.
//
//	go test -tags integration -v ./.ci/integration
//
// It skips when no prometheus binary is found, unless
// ACTORD_REQUIRE_PROMETHEUS=1 (set by .ci/run after installing it), in
// which case a missing binary fails the test.
package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/actord/actord/dashboards"
)

const (
	scrapeInterval = time.Second
	// rateInterval replaces Grafana's $__rate_interval: Grafana uses at
	// least four scrape intervals; ten gives every rate() several samples.
	rateInterval = "10s"
	// scrapesWanted is how many successful scrapes to wait for before
	// evaluating the dashboard: more than the rate interval covers.
	scrapesWanted = 12
)

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// promResponse is the envelope of every Prometheus HTTP API answer.
type promResponse struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Warnings  []string        `json:"warnings"`
}

type vectorSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

type queryData struct {
	ResultType string            `json:"resultType"`
	Result     []json.RawMessage `json:"result"`
}

func promGet(base, path string, params url.Values) (*promResponse, error) {
	resp, err := http.Get(base + path + "?" + params.Encode())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var r promResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: HTTP %d: %s", path, resp.StatusCode, b)
	}
	if r.Status != "success" {
		return &r, fmt.Errorf("%s: %s: %s", path, r.ErrorType, r.Error)
	}
	return &r, nil
}

// query evaluates expr at the current time and returns its result.
func query(base, expr string) (*queryData, []string, error) {
	r, err := promGet(base, "/api/v1/query", url.Values{"query": {expr}})
	if err != nil {
		return nil, nil, err
	}
	var d queryData
	if err := json.Unmarshal(r.Data, &d); err != nil {
		return nil, nil, err
	}
	return &d, r.Warnings, nil
}

// scalarOf returns the value of the single sample of a vector result.
func scalarOf(d *queryData) (string, error) {
	if d.ResultType != "vector" || len(d.Result) != 1 {
		return "", fmt.Errorf("want one sample, got %s with %d", d.ResultType, len(d.Result))
	}
	var s vectorSample
	if err := json.Unmarshal(d.Result[0], &s); err != nil {
		return "", err
	}
	v, _ := s.Value[1].(string)
	return v, nil
}

// startActord builds and starts actord on a free port; it returns the
// address it serves, the running command and its log file.
func startActord(t *testing.T, dir string) (string, *exec.Cmd, string) {
	t.Helper()
	bin := filepath.Join(dir, "actord")
	build := exec.Command("go", "build", "-o", bin, "./cmd/actord")
	build.Dir = filepath.Join("..", "..")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	logPath := filepath.Join(dir, "actord.log")
	logf, err := os.Create(logPath)
	require.NoError(t, err)
	t.Cleanup(func() { logf.Close() })
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(bin, "-listen", addr, "-log-format", "json", "-report-interval", "5s", "-rate", "5000")
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond, "actord did not become healthy")
	return addr, cmd, logPath
}

// startPrometheus starts a Prometheus scraping target every second, with its
// own configuration and storage under dir; it returns its base URL.
func startPrometheus(t *testing.T, prom, dir, target string) string {
	t.Helper()
	cfg := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`global:
  scrape_interval: %s
  evaluation_interval: %s
scrape_configs:
  - job_name: actord
    static_configs:
      - targets: [%q]
`, scrapeInterval, scrapeInterval, target)), 0o644))
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	require.NoError(t, err)
	t.Cleanup(func() { logf.Close() })
	cmd := exec.Command(prom, "--config.file", cfg, "--storage.tsdb.path", filepath.Join(dir, "tsdb"),
		"--web.listen-address", listen, "--log.level", "warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	base := "http://" + listen
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 100*time.Millisecond, "prometheus did not become ready; see %s", logf.Name())
	return base
}

func TestDashboardAgainstPrometheus(t *testing.T) {
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("ACTORD_REQUIRE_PROMETHEUS") == "1" {
			t.Fatalf("prometheus not found but required (ACTORD_REQUIRE_PROMETHEUS=1): %v", err)
		}
		t.Skipf("SKIPPED: no prometheus binary (%v); install Debian's prometheus package to run this test", err)
	}
	start := time.Now()
	dir := t.TempDir()
	addr, actord, actordLog := startActord(t, dir)
	base := startPrometheus(t, prom, dir, addr)
	t.Logf("actord on %s, prometheus on %s (%s)", addr, base, prom)

	// Wait for enough successful scrapes.
	var scrapes string
	require.Eventually(t, func() bool {
		d, _, err := query(base, fmt.Sprintf(`sum_over_time(up{job="actord",instance=%q}[1m])`, addr))
		if err != nil {
			return false
		}
		v, err := scalarOf(d)
		if err != nil {
			return false
		}
		scrapes = v
		var n float64
		_, _ = fmt.Sscan(v, &n)
		return n >= scrapesWanted
	}, 60*time.Second, 500*time.Millisecond, "fewer than %d successful scrapes (last count %q)", scrapesWanted, scrapes)
	t.Logf("%s successful scrapes after %v", scrapes, time.Since(start).Round(time.Millisecond))

	d, err := dashboards.Parse(dashboards.Actord)
	require.NoError(t, err)

	// The instance variable's label_values(metric, label) query.
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q := v.Query()
		var metric, label string
		_, err := fmt.Sscanf(strings.NewReplacer("(", " ", ",", " ", ")", " ").Replace(q), "label_values %s %s", &metric, &label)
		require.NoError(t, err, "variable %s: %q", v.Name, q)
		r, err := promGet(base, "/api/v1/label/"+label+"/values", url.Values{"match[]": {metric}})
		require.NoError(t, err, "variable %s", v.Name)
		var values []string
		require.NoError(t, json.Unmarshal(r.Data, &values))
		require.Contains(t, values, addr, "variable %s: %s", v.Name, q)
	}

	vars := map[string]string{
		"instance": addr, "job": "actord",
		"__rate_interval": rateInterval, "__interval": scrapeInterval.String(), "__interval_ms": "1000", "__range": "1m",
	}
	queries := d.Queries()
	require.Greater(t, len(queries), 40)
	var failures []string
	for _, q := range queries {
		expr, err := dashboards.Expand(q.Expr, vars)
		if err != nil {
			failures = append(failures, fmt.Sprintf("panel %d %q %s: %v", q.PanelID, q.PanelTitle, q.RefID, err))
			continue
		}
		res, warnings, err := query(base, expr)
		switch {
		case err != nil:
			failures = append(failures, fmt.Sprintf("panel %d %q %s: %s: %v", q.PanelID, q.PanelTitle, q.RefID, expr, err))
		case len(res.Result) == 0:
			failures = append(failures, fmt.Sprintf("panel %d %q %s: %s: no series", q.PanelID, q.PanelTitle, q.RefID, expr))
		default:
			if len(warnings) > 0 {
				t.Logf("panel %q %s: warnings %v", q.PanelTitle, q.RefID, warnings)
			}
		}
	}
	require.Empty(t, failures, "%d of %d dashboard queries failed", len(failures), len(queries))
	t.Logf("all %d dashboard queries returned series", len(queries))

	// The workload is really running, and scraping it is cheap.
	for _, expr := range []string{
		fmt.Sprintf(`sum(rate(actord_messages_sent_total{instance=%q}[%s])) > 1000`, addr, rateInterval),
		fmt.Sprintf(`actord_live_actors{instance=%q} > 0`, addr),
		// Failures and flow control move: the mixed workload's shards
		// restart, its audit actor's bounded mailbox drops, its monitor
		// is notified as sessions end.
		fmt.Sprintf(`sum(actord_restarts_total{instance=%q}) > 0`, addr),
		fmt.Sprintf(`actord_mailbox_overflows_total{instance=%q,reason="drop_oldest"} > 0`, addr),
		fmt.Sprintf(`actord_watch_notifications_total{instance=%q} > 0`, addr),
	} {
		res, _, err := query(base, expr)
		require.NoError(t, err, expr)
		require.NotEmpty(t, res.Result, "%s is false", expr)
	}
	res, _, err := query(base, fmt.Sprintf(`max_over_time(scrape_duration_seconds{instance=%q}[1m])`, addr))
	require.NoError(t, err)
	v, err := scalarOf(res)
	require.NoError(t, err)
	t.Logf("slowest scrape of actord: %s s", v)

	// Graceful stop on SIGTERM, with clean final statistics.
	require.NoError(t, actord.Process.Signal(syscall.SIGTERM))
	waitErr := make(chan error, 1)
	go func() { waitErr <- actord.Wait() }()
	select {
	case err := <-waitErr:
		require.NoError(t, err, "actord exit status; log:\n%s", readFile(t, actordLog))
	case <-time.After(60 * time.Second):
		t.Fatalf("actord did not stop within 60s of SIGTERM; log:\n%s", readFile(t, actordLog))
	}
	final := lastLogRecord(t, actordLog)
	require.Equal(t, "actord stopped cleanly", final["msg"], "log:\n%s", readFile(t, actordLog))
	require.EqualValues(t, 0, final["dead_letters"])
	require.EqualValues(t, final["actors_created"], final["actors_terminated"])
	require.Positive(t, final["restarts"], "shards restarted")
	require.EqualValues(t, 0, final["restart_budget_exhausted"])
	t.Logf("integration test took %v", time.Since(start).Round(time.Millisecond))
}

func readFile(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// lastLogRecord returns actord's last JSON log record.
func lastLogRecord(t *testing.T, path string) map[string]any {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var last map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) == nil {
			last = rec
		}
	}
	require.NoError(t, sc.Err())
	require.NotNil(t, last, "no JSON log record")
	return last
}
