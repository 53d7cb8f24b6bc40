package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/actord/actord/bench/compare"
)

// runInfo describes the whole invocation.
type runInfo struct {
	Started time.Time
	Elapsed time.Duration
	Args    []string
	Mode    string
	Runs    int
	Workers []int
	Hogs    int // CPU-burning processes beside every run (-hogs)
}

// point is one (program, system, workers) combination.
type point struct {
	program, system string
	workers         int
}

// stat aggregates the successful runs of a point.
type stat struct {
	n                 int
	med, min, max     float64 // the program's figure
	rssMed            float64 // peak RSS, bytes
	threadsMax        int
	wallMed, cpuMed   float64
	coresMed          float64 // median over runs of CPU time / wall time: the cores kept busy
	lower             bool
	checksums         []float64 // matrix
	values, rss, wall []float64
	byRun             map[int]float64 // the figure of each run, by run number
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func aggregate(recs []Record) map[point]*stat {
	st := map[point]*stat{}
	cpus := map[point][]float64{}
	cores := map[point][]float64{}
	for _, r := range recs {
		if r.Error != "" {
			continue
		}
		k := point{r.Program, r.System, r.Workers}
		s := st[k]
		if s == nil {
			s = &stat{lower: r.LowerIsBetter}
			st[k] = s
		}
		s.values = append(s.values, r.Value)
		if s.byRun == nil {
			s.byRun = map[int]float64{}
		}
		s.byRun[r.Run] = r.Value
		s.rss = append(s.rss, float64(r.PeakRSS))
		s.wall = append(s.wall, r.WallS)
		cpus[k] = append(cpus[k], r.CPUS)
		if r.WallS > 0 {
			cores[k] = append(cores[k], r.CPUS/r.WallS)
		}
		s.threadsMax = max(s.threadsMax, r.MaxThreads)
		if c, ok := r.Metrics["checksum"]; ok {
			s.checksums = append(s.checksums, c)
		}
	}
	for k, s := range st {
		s.n = len(s.values)
		s.med = median(s.values)
		s.min, s.max = slices.Min(s.values), slices.Max(s.values)
		s.rssMed = median(s.rss)
		s.wallMed = median(s.wall)
		s.cpuMed = median(cpus[k])
		if len(cores[k]) > 0 {
			s.coresMed = median(cores[k])
		}
	}
	return st
}

// Thresholds of serialPoints, in cores kept busy (CPU time / wall time).
const (
	serialCores   = 1.25 // at most this: about one core
	parallelCores = 1.6  // at least this: the goroutines used more than one
)

// serialPoints returns the actord points on two workers or more whose runs
// kept about one core busy (median CPU time / wall time below serialCores)
// while the goroutine version of the same program at the same worker count
// kept at least parallelCores busy, and whose figure is worse than the
// goroutines': the executor ran on one core although the program had work
// for more, which the figure alone shows only as a slowdown within the
// machine's noise. (A program that idles does not count: there fewer cores
// busy at a better figure is the point.) Sorted.
func serialPoints(st map[point]*stat) []string {
	var out []string
	for k, s := range st {
		if k.workers < 2 || !strings.HasPrefix(k.system, compare.Actord) || s.coresMed == 0 || s.coresMed >= serialCores {
			continue
		}
		g := st[point{k.program, compare.Chan, k.workers}]
		if g == nil || g.coresMed < parallelCores || timesBest(s.med, g.med, s.lower) <= 1 {
			continue
		}
		out = append(out, fmt.Sprintf("%s on %s, %d workers: %.2f cores busy (goroutines %.2f)", k.program, k.system, k.workers, s.coresMed, g.coresMed))
	}
	slices.Sort(out)
	return out
}

// timesBest returns how many times worse than best a value is (1 = best).
func timesBest(v, best float64, lower bool) float64 {
	if lower {
		return v / best
	}
	return best / v
}

// best returns the best median among systems at (program, workers).
func best(st map[point]*stat, program string, workers int, systems []string) (float64, string) {
	b, who := math.NaN(), ""
	for _, sys := range systems {
		s := st[point{program, sys, workers}]
		if s == nil {
			continue
		}
		if who == "" || (s.lower && s.med < b) || (!s.lower && s.med > b) {
			b, who = s.med, sys
		}
	}
	return b, who
}

func writeOutputs(dir string, info runInfo, recs []Record) error {
	js, err := json.MarshalIndent(recs, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "runs.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	if err := writeCSV(filepath.Join(dir, "runs.csv"), recs); err != nil {
		return err
	}
	st := aggregate(recs)
	plots, err := writePlots(dir, st, info.Workers)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "summary.md"), []byte(summary(info, recs, st, plots)), 0o644)
}

func writeCSV(path string, recs []Record) error {
	keySet := map[string]bool{}
	for _, r := range recs {
		for k := range r.Metrics {
			keySet[k] = true
		}
	}
	keys := slices.Sorted(maps.Keys(keySet))
	header := []string{"program", "system", "system_version", "run", "mode", "workers", "gomaxprocs", "queues", "heuristic",
		"actors", "messages", "wall_s", "msg_per_s", "metric", "value", "lower_is_better", "cpu_s", "start_rss_bytes",
		"peak_rss_bytes", "start_threads", "max_threads", "threads_created", "go_version", "os", "kernel", "cpu_model",
		"cores", "start", "error"}
	for _, k := range keys {
		header = append(header, "m:"+k)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	itoa, ftoa := strconv.Itoa, func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	rows := [][]string{header}
	for _, r := range recs {
		row := []string{r.Program, r.System, r.SystemVersion, itoa(r.Run), r.Mode, itoa(r.Workers), itoa(r.GOMAXPROCS),
			itoa(r.Queues), r.Heuristic, itoa(r.Actors), itoa(r.Messages), ftoa(r.WallS), ftoa(r.MsgPerS), r.Metric,
			ftoa(r.Value), strconv.FormatBool(r.LowerIsBetter), ftoa(r.CPUS), strconv.FormatInt(r.StartRSS, 10),
			strconv.FormatInt(r.PeakRSS, 10), itoa(r.StartThreads), itoa(r.MaxThreads), itoa(r.ThreadsMade), r.GoVersion,
			r.OS, r.Kernel, r.CPUModel, itoa(r.Cores), r.Start.Format(time.RFC3339Nano), r.Error}
		for _, k := range keys {
			v, ok := r.Metrics[k]
			if ok {
				row = append(row, ftoa(v))
			} else {
				row = append(row, "")
			}
		}
		rows = append(rows, row)
	}
	if err := w.WriteAll(rows); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ---- summary ---------------------------------------------------------------

// target is one of the targets, evaluated on the medians.
type target struct {
	name, workers, measured, status string
}

const (
	pass        = "PASS"
	miss        = "**MISS**"
	notMeasured = "not measured"
)

func verdict(ok bool) string {
	if ok {
		return pass
	}
	return miss
}

func workersOf(st map[point]*stat, program, system string) []int {
	var ws []int
	for k := range st {
		if k.program == program && k.system == system {
			ws = append(ws, k.workers)
		}
	}
	slices.Sort(ws)
	return ws
}

// speedupTargets checks, at each worker count actord ran with (or only at
// onlyW when > 0), that actord's median is at least minSpeedup times better
// than other's (times faster, for a time; times higher, for a rate).
func speedupTargets(st map[point]*stat, name, program, other string, minSpeedup float64, onlyW int) []target {
	var ts []target
	ws := workersOf(st, program, compare.Actord)
	if onlyW > 0 {
		ws = []int{onlyW}
	}
	for _, w := range ws {
		a, o := st[point{program, compare.Actord, w}], st[point{program, other, w}]
		if a == nil || o == nil {
			ts = append(ts, target{name, strconv.Itoa(w), "", notMeasured})
			continue
		}
		sp := timesBest(o.med, a.med, a.lower) // how many times faster actord is
		measured := fmt.Sprintf("actord %s, %s %s: actord %.2fx faster (target %.2gx)", fmtVal(a.med), other, fmtVal(o.med), sp, minSpeedup)
		if p, n := pairedSpeedup(a, o); n > 1 {
			measured += fmt.Sprintf("; paired by run: %.2fx", p)
		}
		ts = append(ts, target{name, strconv.Itoa(w), measured, verdict(sp >= minSpeedup)})
	}
	if len(ts) == 0 {
		ts = append(ts, target{name, "-", "", notMeasured})
	}
	return ts
}

// pairedSpeedup returns the median over the runs both a and o made (by
// run number) of how many times faster actord's run was than other's run
// of the same number, and how many runs were paired. The runner makes
// run r of every system one after the other, so a pair shares the
// machine's load of the moment, which the ratio of the two medians does
// not. The verdict stays on the medians; the paired figure is reported
// beside it.
func pairedSpeedup(a, o *stat) (float64, int) {
	var sp []float64
	for r, av := range a.byRun {
		if ov, ok := o.byRun[r]; ok {
			sp = append(sp, timesBest(ov, av, a.lower))
		}
	}
	return median(sp), len(sp)
}

// rssTargets checks, at each worker count actord ran with, that actord's
// median peak RSS is at most maxRatio times other's.
func rssTargets(st map[point]*stat, name, program, other string, maxRatio float64) []target {
	var ts []target
	for _, w := range workersOf(st, program, compare.Actord) {
		a, o := st[point{program, compare.Actord, w}], st[point{program, other, w}]
		if a == nil || o == nil {
			ts = append(ts, target{name, strconv.Itoa(w), "", notMeasured})
			continue
		}
		r := a.rssMed / o.rssMed
		ts = append(ts, target{name, strconv.Itoa(w),
			fmt.Sprintf("actord %.1f MiB, %s %.1f MiB: %.2fx (target %.2gx)", a.rssMed/(1<<20), other, o.rssMed/(1<<20), r, maxRatio),
			verdict(r <= maxRatio)})
	}
	if len(ts) == 0 {
		ts = append(ts, target{name, "-", "", notMeasured})
	}
	return ts
}

func targets(st map[point]*stat) []target {
	var ts []target
	ts = append(ts, speedupTargets(st, "static send: at most 0.5x goroutine+channel (time per message)", "static", compare.Chan, 2, 0)...)
	ts = append(ts, speedupTargets(st, "static send: at least 3x faster than protoactor-go", "static", compare.ProtoActor, 3, 0)...)
	ts = append(ts, speedupTargets(st, "executor: at least 2x faster than goroutine+channel on 2 workers", "executor", compare.Chan, 2, 2)...)
	ts = append(ts, speedupTargets(st, "executor: at least 5x faster than protoactor-go on 2 workers", "executor", compare.ProtoActor, 5, 2)...)
	// Sends from outside the system.
	ts = append(ts, speedupTargets(st, "counting: at most 1.0x goroutine+channel (time)", "counting", compare.Chan, 1, 0)...)
	ts = append(ts, rssTargets(st, "counting: peak RSS at most 2x the goroutine+channel program's", "counting", compare.Chan, 2)...)
	ts = append(ts, speedupTargets(st, "fork-join: at most 1.0x goroutine+channel (time)", "fork-join", compare.Chan, 1, 0)...)
	// Cross-worker handoff.
	ts = append(ts, speedupTargets(st, "ping-pong: at least 2x faster than goroutines on 2 workers", "ping-pong", compare.Chan, 2, 2)...)
	ts = append(ts, speedupTargets(st, "token ring: at least 2x faster than goroutines on 2 workers", "token-ring", compare.Chan, 2, 2)...)
	ts = append(ts, speedupTargets(st, "churn: at least 1.5x goroutines on 2 workers", "churn", compare.Chan, 1.5, 2)...)
	ts = append(ts, speedupTargets(st, "busy cycle: at least 2x goroutines on 2 workers", "cycle", compare.Chan, 2, 2)...)
	ts = append(ts, speedupTargets(st, "pipeline at 10 msg/s: median latency at most goroutines' on 2 workers", "pipeline-rare", compare.Chan, 1, 2)...)
	ts = append(ts, speedupTargets(st, "pipeline at 1k msg/s: p99 latency at most goroutines' on 2 workers", "pipeline-low", compare.Chan, 1, 2)...)
	// Matrix: within 5% of the best peer.
	name := "matrix: within 5% of the best peer (compute-bound)"
	mws := workersOf(st, "matrix", compare.Actord)
	for _, w := range mws {
		a := st[point{"matrix", compare.Actord, w}]
		b, who := best(st, "matrix", w, compare.Peers)
		if who == "" {
			ts = append(ts, target{name, strconv.Itoa(w), "", notMeasured})
			continue
		}
		r := a.med / b
		ts = append(ts, target{name, strconv.Itoa(w),
			fmt.Sprintf("actord %s s, best peer %s %s s: %.3fx", fmtVal(a.med), who, fmtVal(b), r), verdict(r <= 1.05)})
	}
	if len(mws) == 0 {
		ts = append(ts, target{name, "-", "", notMeasured})
	}
	// Memory: executor's peak RSS no more than protoactor-go's.
	name = "memory high-water mark (peak RSS) of executor: no more than protoactor-go's"
	ews := workersOf(st, "executor", compare.Actord)
	for _, w := range ews {
		a, p := st[point{"executor", compare.Actord, w}], st[point{"executor", compare.ProtoActor, w}]
		if p == nil {
			ts = append(ts, target{name, strconv.Itoa(w), "", notMeasured})
			continue
		}
		ts = append(ts, target{name, strconv.Itoa(w),
			fmt.Sprintf("actord %.1f MiB, protoactor-go %.1f MiB", a.rssMed/(1<<20), p.rssMed/(1<<20)), verdict(a.rssMed <= p.rssMed)})
	}
	if len(ews) == 0 {
		ts = append(ts, target{name, "-", "", notMeasured})
	}
	return ts
}

func fmtVal(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 2, 64) + "M"
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 0.01:
		return strconv.FormatFloat(v, 'f', 3, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

func envLine(recs []Record) (env, versions string) {
	seen := map[string]string{}
	for _, r := range recs {
		if r.Error == "" && r.GoVersion != "" {
			env = fmt.Sprintf("%s, %s, kernel %s, CPU %q, %d cores (runtime.NumCPU)", r.GoVersion, r.OS, r.Kernel, r.CPUModel, r.Cores)
			if r.SystemVersion != "" {
				seen[r.System] = r.SystemVersion
			}
		}
	}
	var vs []string
	for _, sys := range compare.Systems {
		v, ok := seen[sys]
		if !ok {
			continue
		}
		if a, isActord := seen[compare.Actord]; sys != compare.Actord && isActord && a == v {
			continue // an actord variant: same code
		}
		vs = append(vs, sys+" "+v)
	}
	return env, strings.Join(vs, "; ")
}

func summary(info runInfo, recs []Record, st map[point]*stat, plots map[string]bool) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	env, versions := envLine(recs)
	ws := make([]string, len(info.Workers))
	for i, w := range info.Workers {
		ws[i] = strconv.Itoa(w)
	}
	p("# actord benchmark comparison\n\n")
	p("- started %s, took %s\n", info.Started.Format(time.RFC3339), info.Elapsed.Round(time.Second))
	p("- command (in bench/compare): `go run ./cmd/benchrun %s`\n", strings.Join(info.Args[1:], " "))
	p("- sizes: %s; %d run(s) per point, each in a fresh process with GOMAXPROCS = workers; workers: %s\n", info.Mode, info.Runs, strings.Join(ws, ", "))
	if info.Hogs > 0 {
		p("- beside every run: %d CPU-burning process(es) (`-hogs`), other load on the machine\n", info.Hogs)
	}
	p("- environment: %s\n", env)
	p("- versions: %s\n\n", versions)
	p("Each figure is the median of the runs; plots show min and max as error bars. ")
	p("\"x best\" is how many times worse than the best system at the same worker count (1.00 = best).\n\n")

	p("## Targets (medians of this run)\n\nThe status compares medians; \"paired by run\" is the median, over run numbers, of actord's run against the other system's run of the same number (made right after it), which the machine's changing load disturbs less.\n\n| target | workers | measured | status |\n| --- | --- | --- | --- |\n")
	for _, t := range targets(st) {
		p("| %s | %s | %s | %s |\n", t.name, t.workers, t.measured, t.status)
	}
	p("\n")

	p("## Cores used\n\n")
	if sp := serialPoints(st); len(sp) > 0 {
		p("**On about one core** (median CPU time / wall time below %.2f while the goroutines' was %.1f or more at the same point):\n\n", serialCores, parallelCores)
		for _, l := range sp {
			p("- %s\n", l)
		}
		p("\n")
	} else {
		p("No actord point on two workers or more kept about one core busy (median CPU time / wall time below %.2f) where the goroutines kept %.1f or more busy.\n\n", serialCores, parallelCores)
	}

	var failures []Record
	for _, r := range recs {
		if r.Error != "" {
			failures = append(failures, r)
		}
	}
	if len(failures) > 0 {
		p("## Failed runs\n\n")
		for _, r := range failures {
			p("- %s on %s, %d workers, run %d: %s\n", r.Program, r.System, r.Workers, r.Run, r.Error)
		}
		p("\n")
	}

	for _, prog := range compare.Programs {
		var pts []point
		for k := range st {
			if k.program == prog.Name {
				pts = append(pts, k)
			}
		}
		if len(pts) == 0 {
			continue
		}
		order := func(sys string) int { return slices.Index(compare.Systems, sys) }
		slices.SortFunc(pts, func(a, b point) int {
			if a.workers != b.workers {
				return a.workers - b.workers
			}
			return order(a.system) - order(b.system)
		})
		better := "higher is better"
		if prog.Metric.Lower {
			better = "lower is better"
		}
		p("## %s\n\n%s. Figure: %s, %s (%s).\n\n", prog.Name, prog.Doc, prog.Metric.Label, better, prog.Metric.Name)
		if plots[prog.Name] {
			p("![%s](%s.png)\n\n", prog.Name, prog.Name)
		}
		p("| workers | system | median | min | max | x best | runs | wall s | CPU s | peak RSS MiB | max threads |\n")
		p("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
		for _, k := range pts {
			s := st[k]
			bv, _ := best(st, k.program, k.workers, prog.Systems)
			p("| %d | %s | %s | %s | %s | %.2f | %d | %.3f | %.3f | %.1f | %d |\n", k.workers, k.system, fmtVal(s.med), fmtVal(s.min),
				fmtVal(s.max), timesBest(s.med, bv, s.lower), s.n, s.wallMed, s.cpuMed, s.rssMed/(1<<20), s.threadsMax)
		}
		if prog.Name == "matrix" {
			var all []float64
			for _, k := range pts {
				all = append(all, st[k].checksums...)
			}
			if len(all) > 0 && slices.Min(all) == slices.Max(all) {
				p("\nEvery run computed the same matrix (checksum %g).\n", all[0])
			} else {
				p("\n**The matrix checksums differ between runs.**\n")
			}
		}
		p("\n")
	}
	if plots["memory"] {
		p("## memory\n\nPeak RSS of the executor program (MiB, lower is better), one process per run.\n\n![memory](memory.png)\n")
	}
	return b.String()
}
