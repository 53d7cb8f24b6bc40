// Command benchrun runs the benchmark programs of package compare on
// actord, goroutines with channels, protoactor-go and hollywood, side by
// side, N times for each worker count, each run in a fresh process; it
// records each run's environment and results, and draws plots and a summary
// with the ratios between systems and the status of the targets.
//
// Usage (from bench/compare):
//
//	go run ./cmd/benchrun [flags]
//
//	-programs list   programs to run (default: all; see -list)
//	-systems list    systems to run (default: all that each program supports)
//	-workers list    worker counts (default: 1, 2, 4, ... up to the CPU count, and the CPU count)
//	-runs n          runs of each (program, system, workers) (default 5)
//	-out dir         output directory (default results/<UTC timestamp>)
//	-quick           tiny sizes: a smoke test of the whole suite
//	-full            the chapter's full sizes (ACTORD_BENCH_FULL=1 in the children)
//	-timeout d       limit for one run (default 10m)
//	-hogs n          CPU-burning processes running beside every run (default 0):
//	                 other load on the machine, as a shared host has
//	-list            list the programs and their systems, and exit
//
// Each run is a child process (this binary again, told what to do by the
// BENCHRUN_CHILD environment variable) started with GOMAXPROCS set to the
// worker count, which runs one program once and prints one JSON record:
// the program's figures, the process's peak RSS (getrusage) and thread
// count, and the environment (Go version, CPU model, cores, kernel, OS,
// versions of the systems). A fresh process per run keeps runs from
// inheriting each other's heap, threads and peak RSS. Runs are interleaved:
// every combination runs once before any runs a second time, so a slow
// phase of a shared machine spreads over all systems.
//
// Outputs in the directory: runs.json and runs.csv (one record per run),
// <program>.svg and <program>.png (median with min/max error bars against
// workers, one line per system), memory.svg/.png (peak RSS of the executor
// program), and summary.md.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/actord/actord/bench/compare"
)

// childEnv carries a child's spec (JSON) from the parent.
const childEnv = "BENCHRUN_CHILD"

// spec is what one child runs.
type spec struct {
	Program       string       `json:"program"`
	System        string       `json:"system"`
	Workers       int          `json:"workers"`
	Mode          compare.Mode `json:"mode"`
	Full          bool         `json:"full"`
	Run           int          `json:"run"`
	ActordVersion string       `json:"actord_version"`
}

func main() {
	if s := os.Getenv(childEnv); s != "" {
		os.Exit(childMain(s, os.Stdout, os.Stderr))
	}
	if os.Getenv(hogEnv) != "" {
		hogMain()
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		os.Exit(1)
	}
	if err := run(os.Args[1:], exe, os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "benchrun:", err)
		}
		os.Exit(1)
	}
}

// childMain runs one spec and writes its record as one JSON line.
func childMain(js string, stdout, stderr io.Writer) int {
	var s spec
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		fmt.Fprintln(stderr, "benchrun child: bad spec:", err)
		return 2
	}
	rec := runChild(s)
	if err := json.NewEncoder(stdout).Encode(rec); err != nil {
		fmt.Fprintln(stderr, "benchrun child:", err)
		return 2
	}
	if rec.Error != "" {
		return 1
	}
	return 0
}

// options are the parent's parsed flags.
type options struct {
	programs []*compare.Program
	systems  []string // nil: all
	workers  []int
	runs     int
	out      string
	mode     compare.Mode
	full     bool
	timeout  time.Duration
	hogs     int
	args     []string
}

func parseFlags(args []string, stdout io.Writer) (*options, bool, error) {
	fs := flag.NewFlagSet("benchrun", flag.ContinueOnError)
	fs.SetOutput(stdout)
	var (
		programs = fs.String("programs", "", "comma-separated programs (default: all)")
		systems  = fs.String("systems", "", "comma-separated systems (default: all each program supports)")
		workers  = fs.String("workers", "", "comma-separated worker counts (default: powers of two up to the CPU count, and the CPU count)")
		runs     = fs.Int("runs", 5, "runs of each combination")
		out      = fs.String("out", "", "output directory (default results/<UTC timestamp>)")
		quick    = fs.Bool("quick", false, "tiny sizes (smoke test)")
		full     = fs.Bool("full", false, "the chapter's full sizes")
		timeout  = fs.Duration("timeout", 10*time.Minute, "limit for one run")
		hogCount = fs.Int("hogs", 0, "CPU-burning processes running beside every run")
		list     = fs.Bool("list", false, "list programs and systems, and exit")
	)
	if err := fs.Parse(args); err != nil {
		return nil, false, err
	}
	if fs.NArg() > 0 {
		return nil, false, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *list {
		for _, p := range compare.Programs {
			fmt.Fprintf(stdout, "%-17s %-14s %s\n  systems: %s\n", p.Name, p.Metric.Name, p.Doc, strings.Join(p.Systems, ", "))
		}
		return nil, true, nil
	}
	o := &options{runs: *runs, out: *out, mode: compare.Default, full: *full, timeout: *timeout, hogs: *hogCount, args: args}
	if o.hogs < 0 {
		return nil, false, errors.New("-hogs must not be negative")
	}
	if *quick && *full {
		return nil, false, errors.New("-quick and -full exclude each other")
	}
	if *quick {
		o.mode = compare.Quick
	}
	if o.runs < 1 {
		return nil, false, errors.New("-runs must be at least 1")
	}
	if *programs == "" {
		o.programs = compare.Programs
	} else {
		for _, name := range splitList(*programs) {
			p := compare.Lookup(name)
			if p == nil {
				return nil, false, fmt.Errorf("unknown program %q (see -list)", name)
			}
			o.programs = append(o.programs, p)
		}
	}
	if *systems != "" {
		for _, s := range splitList(*systems) {
			if !slices.Contains(compare.Systems, s) {
				return nil, false, fmt.Errorf("unknown system %q (systems: %s)", s, strings.Join(compare.Systems, ", "))
			}
			o.systems = append(o.systems, s)
		}
	}
	if *workers == "" {
		o.workers = defaultWorkers(runtime.NumCPU())
	} else {
		for _, f := range splitList(*workers) {
			w, err := strconv.Atoi(f)
			if err != nil || w < 1 {
				return nil, false, fmt.Errorf("bad worker count %q", f)
			}
			o.workers = append(o.workers, w)
		}
		slices.Sort(o.workers)
		o.workers = slices.Compact(o.workers)
	}
	if o.out == "" {
		o.out = filepath.Join("results", time.Now().UTC().Format("20060102-150405"))
	}
	return o, false, nil
}

// defaultWorkers returns 1, 2, 4, ... up to n, and n.
func defaultWorkers(n int) []int {
	var ws []int
	for w := 1; w < n; w *= 2 {
		ws = append(ws, w)
	}
	return append(ws, max(n, 1))
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// run is the parent: it runs every combination opts.runs times in child
// processes of exe and writes the outputs.
func run(args []string, exe string, stdout, stderr io.Writer) error {
	o, done, err := parseFlags(args, stdout)
	if err != nil || done {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	var specs []spec
	actordVersion := gitRevision()
	for r := 1; r <= o.runs; r++ {
		for _, p := range o.programs {
			for _, w := range o.workers {
				if w < p.MinWorkers {
					continue
				}
				for _, sys := range p.Systems {
					if o.systems != nil && !slices.Contains(o.systems, sys) {
						continue
					}
					specs = append(specs, spec{Program: p.Name, System: sys, Workers: w, Mode: o.mode, Full: o.full, Run: r, ActordVersion: actordVersion})
				}
			}
		}
	}
	if len(specs) == 0 {
		return errors.New("nothing to run: no program supports the systems chosen")
	}
	h, err := startHogs(exe, o.hogs)
	if err != nil {
		return err
	}
	defer h.stop()
	started := time.Now()
	var recs []Record
	failed := 0
	for i, s := range specs {
		rec := runSpec(exe, s, o.timeout)
		recs = append(recs, rec)
		status := fmt.Sprintf("%s %.4g (wall %.3fs, peak RSS %.1f MiB, %d threads)", rec.Metric, rec.Value, rec.WallS, float64(rec.PeakRSS)/(1<<20), rec.MaxThreads)
		if rec.Error != "" {
			failed++
			status = "FAILED: " + rec.Error
		}
		fmt.Fprintf(stderr, "[%d/%d] %s %s workers=%d run=%d: %s\n", i+1, len(specs), s.Program, s.System, s.Workers, s.Run, status)
	}
	h.stop()
	info := runInfo{Started: started.UTC(), Elapsed: time.Since(started), Args: append([]string{"benchrun"}, o.args...), Mode: modeName(o), Runs: o.runs, Workers: o.workers, Hogs: o.hogs}
	if err := writeOutputs(o.out, info, recs); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "benchrun: %d runs in %s; results in %s (summary.md)\n", len(recs), info.Elapsed.Round(time.Second), o.out)
	if failed > 0 {
		return fmt.Errorf("%d of %d runs failed (see runs.json)", failed, len(recs))
	}
	return nil
}

func modeName(o *options) string {
	if o.full {
		return "full"
	}
	return string(o.mode)
}

// runSpec runs one child and returns its record (with Error set if it
// failed).
func runSpec(exe string, s spec, timeout time.Duration) Record {
	fail := func(err error) Record {
		return Record{Program: s.Program, System: s.System, Workers: s.Workers, Run: s.Run, Mode: string(s.Mode), Error: err.Error()}
	}
	js, err := json.Marshal(s)
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = childEnviron(s, string(js))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	runErr := cmd.Run()
	var rec Record
	found := false
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) > 0 && line[0] == '{' {
			if err := json.Unmarshal(line, &rec); err == nil {
				found = true
			}
		}
	}
	switch {
	case !found && runErr != nil:
		return fail(fmt.Errorf("%w: %s", runErr, lastLines(errb.String(), 5)))
	case !found:
		return fail(fmt.Errorf("no record from the child: %s", lastLines(errb.String(), 5)))
	case runErr != nil && rec.Error == "":
		rec.Error = runErr.Error()
	}
	return rec
}

// childEnviron is the parent's environment with the child's settings.
func childEnviron(s spec, js string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "GOMAXPROCS" || k == childEnv || k == "ACTORD_BENCH_FULL" {
			continue
		}
		env = append(env, kv)
	}
	full := "0"
	if s.Full {
		full = "1"
	}
	return append(env, "GOMAXPROCS="+strconv.Itoa(s.Workers), "ACTORD_BENCH_FULL="+full, childEnv+"="+js)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// gitRevision returns the checked-out commit of the repository around the
// working directory (read-only), or "unknown". The working tree may hold
// uncommitted changes on top of it.
func gitRevision() string {
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}
