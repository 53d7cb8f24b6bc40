package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/actord/actord/bench/compare"
)

// The test binary doubles as the runner's child, as the command does.
func TestMain(m *testing.M) {
	if s := os.Getenv(childEnv); s != "" {
		os.Exit(childMain(s, os.Stdout, os.Stderr))
	}
	if os.Getenv(hogEnv) != "" {
		hogMain()
	}
	os.Exit(m.Run())
}

// TestQuick runs the whole suite once at the quick sizes on 1 and 2
// workers, each run in a child process, and checks the outputs.
func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a hundred processes")
	}
	// Under -race, each child would otherwise sleep a second at exit.
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	dir := t.TempDir()
	exe, err := os.Executable()
	require.NoError(t, err)
	require.NoError(t, run([]string{"-quick", "-runs", "1", "-workers", "1,2", "-out", dir}, exe, io.Discard, io.Discard))

	js, err := os.ReadFile(filepath.Join(dir, "runs.json"))
	require.NoError(t, err)
	var recs []Record
	require.NoError(t, json.Unmarshal(js, &recs))
	want := 0
	for _, p := range compare.Programs {
		for _, w := range []int{1, 2} {
			if w >= p.MinWorkers {
				want += len(p.Systems)
			}
		}
	}
	require.Len(t, recs, want)
	for _, r := range recs {
		require.Empty(t, r.Error, "%s on %s", r.Program, r.System)
		require.Equal(t, r.Workers, r.GOMAXPROCS, "the child runs with GOMAXPROCS = workers")
		require.Positive(t, r.WallS)
		require.Positive(t, r.Value)
		require.Positive(t, r.PeakRSS)
		require.GreaterOrEqual(t, r.MaxThreads, r.Workers)
		require.NotEmpty(t, r.GoVersion)
		require.NotEmpty(t, r.CPUModel)
		require.NotEmpty(t, r.SystemVersion)
		require.Equal(t, "quick", r.Mode)
	}

	csv, err := os.ReadFile(filepath.Join(dir, "runs.csv"))
	require.NoError(t, err)
	require.Len(t, strings.Split(strings.TrimSpace(string(csv)), "\n"), want+1)

	for _, p := range compare.Programs {
		for _, ext := range []string{".svg", ".png"} {
			fi, err := os.Stat(filepath.Join(dir, p.Name+ext))
			require.NoError(t, err)
			require.Positive(t, fi.Size())
		}
	}
	sum, err := os.ReadFile(filepath.Join(dir, "summary.md"))
	require.NoError(t, err)
	for _, s := range []string{"## Targets", "## executor", "![memory](memory.png)", "Every run computed the same matrix"} {
		require.Contains(t, string(sum), s)
	}
}

func TestFlags(t *testing.T) {
	_, _, err := parseFlags([]string{"-programs", "nope"}, io.Discard)
	require.ErrorContains(t, err, "unknown program")
	_, _, err = parseFlags([]string{"-systems", "erlang"}, io.Discard)
	require.ErrorContains(t, err, "unknown system")
	_, _, err = parseFlags([]string{"-quick", "-full"}, io.Discard)
	require.Error(t, err)
	_, _, err = parseFlags([]string{"-workers", "0"}, io.Discard)
	require.Error(t, err)
	_, _, err = parseFlags([]string{"-hogs", "-1"}, io.Discard)
	require.Error(t, err)
	o, done, err := parseFlags([]string{"-workers", "2,1,2", "-programs", "static,matrix"}, io.Discard)
	require.NoError(t, err)
	require.False(t, done)
	require.Equal(t, []int{1, 2}, o.workers)
	require.Len(t, o.programs, 2)
	require.Equal(t, []int{1, 2, 4, 8, 16}, defaultWorkers(16))
	require.Equal(t, []int{1, 2, 4, 6}, defaultWorkers(6))
	require.Equal(t, []int{1}, defaultWorkers(1))
}

func TestTargets(t *testing.T) {
	rec := func(program, system string, workers int, value float64, rss int64) Record {
		return Record{Program: program, System: system, Workers: workers, Value: value, LowerIsBetter: true, PeakRSS: rss}
	}
	recs := []Record{
		rec("static", compare.Actord, 2, 10, 0), rec("static", compare.Actord, 2, 12, 0), rec("static", compare.Actord, 2, 11, 0),
		rec("static", compare.Chan, 2, 25, 0),
		rec("static", compare.ProtoActor, 2, 20, 0),
		rec("executor", compare.Actord, 2, 1, 30<<20),
		rec("executor", compare.Chan, 2, 1.9, 20<<20),
		rec("executor", compare.ProtoActor, 2, 6, 40<<20),
		rec("matrix", compare.Actord, 1, 1.04, 0),
		rec("matrix", compare.Chan, 1, 1.2, 0),
		rec("matrix", compare.Hollywood, 1, 1.0, 0),
		{Program: "matrix", System: compare.ProtoActor, Workers: 1, Value: 0.1, Error: "boom"}, // ignored
	}
	st := aggregate(recs)
	require.Equal(t, 11.0, st[point{"static", compare.Actord, 2}].med)
	status := func(prefix, workers string) string {
		for _, tg := range targets(st) {
			if strings.HasPrefix(tg.name, prefix) && tg.workers == workers {
				return tg.status
			}
		}
		return "absent"
	}
	require.Equal(t, pass, status("static send: at most 0.5x", "2")) // 25/11 = 2.3x faster
	require.Equal(t, miss, status("static send: at least 3x", "2"))  // 20/11 = 1.8x
	require.Equal(t, miss, status("executor: at least 2x", "2"))     // 1.9x
	require.Equal(t, pass, status("executor: at least 5x", "2"))     // 6x
	require.Equal(t, pass, status("matrix: within 5%", "1"))         // 1.04 against hollywood's 1.0
	require.Equal(t, pass, status("memory high-water mark", "2"))    // 30 against 40 MiB

	// Paired by run number: actord's run r against the goroutines' run r.
	st = aggregate([]Record{
		{Program: "ping-pong", System: compare.Actord, Workers: 2, Run: 1, Value: 50, LowerIsBetter: true},
		{Program: "ping-pong", System: compare.Chan, Workers: 2, Run: 1, Value: 200, LowerIsBetter: true},
		{Program: "ping-pong", System: compare.Actord, Workers: 2, Run: 2, Value: 100, LowerIsBetter: true},
		{Program: "ping-pong", System: compare.Chan, Workers: 2, Run: 2, Value: 100, LowerIsBetter: true},
		{Program: "ping-pong", System: compare.Actord, Workers: 2, Run: 3, Value: 60, LowerIsBetter: true},
		{Program: "ping-pong", System: compare.Chan, Workers: 2, Run: 3, Value: 150, LowerIsBetter: true},
	})
	p, n := pairedSpeedup(st[point{"ping-pong", compare.Actord, 2}], st[point{"ping-pong", compare.Chan, 2}])
	require.Equal(t, 3, n)
	require.Equal(t, 2.5, p) // the runs' speed-ups are 4, 1 and 2.5
	for _, tg := range targets(st) {
		if strings.HasPrefix(tg.name, "ping-pong") {
			require.Contains(t, tg.measured, "paired by run: 2.50x")
		}
	}

	// The executor targets are on 2 workers: without that run, not measured.
	st = aggregate([]Record{rec("executor", compare.Actord, 1, 1, 1), rec("executor", compare.Chan, 1, 3, 1)})
	require.Equal(t, notMeasured, status("executor: at least 2x", "2"))
	require.Equal(t, 1.0, timesBest(2, 2, true))
	require.Equal(t, 2.0, timesBest(1, 2, false))
}

// serialPoints flags actord points on two workers or more that kept about
// one core busy where the goroutines kept more busy, and nothing else.
func TestSerialPoints(t *testing.T) {
	rec := func(program, system string, workers int, cpu, wall float64) Record {
		return Record{Program: program, System: system, Workers: workers, CPUS: cpu, WallS: wall, Value: wall, LowerIsBetter: true}
	}
	recs := []Record{
		rec("matrix", compare.Actord, 2, 1.0, 1.0), rec("matrix", compare.Actord, 2, 1.1, 1.0), rec("matrix", compare.Actord, 2, 1.05, 1.0),
		rec("matrix", compare.Chan, 2, 1.71, 0.9), rec("matrix", compare.Chan, 2, 1.62, 0.9),
		rec("matrix", compare.Actord, 1, 1.0, 1.0), rec("matrix", compare.Chan, 1, 1.0, 1.0), // one worker: not flagged
		rec("executor", compare.Actord, 2, 1.9, 1.0), rec("executor", compare.Chan, 2, 1.9, 1.0), // both cores: not flagged
		rec("pipeline", compare.Actord, 2, 0.1, 1.0), rec("pipeline", compare.Chan, 2, 0.1, 1.0), // the goroutines too: not flagged
		rec("cycle", compare.Actord, 2, 1.0, 1.0), rec("cycle", compare.Chan, 2, 3.6, 2.0), // one core, but faster: not flagged
	}
	got := serialPoints(aggregate(recs))
	require.Len(t, got, 1)
	require.True(t, strings.HasPrefix(got[0], "matrix on actord, 2 workers: 1.05 cores busy (goroutines 1.85)"), got[0])
}

// -hogs runs CPU-burning children beside the runs, says so in the summary,
// and ends them: each hog burns CPU until its standard input closes, then
// exits cleanly.
func TestHogs(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	h, err := startHogs(exe, 2)
	require.NoError(t, err)
	cmds := h.cmds
	time.Sleep(300 * time.Millisecond)
	h.stop()
	require.Len(t, cmds, 2)
	for _, c := range cmds {
		require.True(t, c.ProcessState.Success(), "a hog did not exit cleanly: %v", c.ProcessState)
		require.Positive(t, c.ProcessState.UserTime(), "a hog burned no CPU")
	}

	if testing.Short() {
		return
	}
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	dir := t.TempDir()
	require.NoError(t, run([]string{"-quick", "-runs", "1", "-workers", "1", "-programs", "static", "-systems", "actord", "-hogs", "1", "-out", dir}, exe, io.Discard, io.Discard))
	md, err := os.ReadFile(filepath.Join(dir, "summary.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "1 CPU-burning process(es)")
}
