package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/actord/actord/bench"
	"github.com/actord/actord/bench/compare"
)

// Record is one run: what ran, what it measured, and where.
type Record struct {
	Program       string             `json:"program"`
	System        string             `json:"system"`
	SystemVersion string             `json:"system_version"`
	Run           int                `json:"run"`
	Mode          string             `json:"mode"` // quick, default or full
	Workers       int                `json:"workers"`
	GOMAXPROCS    int                `json:"gomaxprocs"`
	Queues        int                `json:"queues"`    // actord: mailboxes; others: one per actor
	Heuristic     string             `json:"heuristic"` // actord's stealing heuristic, or "go"
	Actors        int                `json:"actors"`
	Messages      int                `json:"messages"`
	WallS         float64            `json:"wall_s"`
	MsgPerS       float64            `json:"msg_per_s"`
	Metric        string             `json:"metric"` // the program's figure of merit
	Value         float64            `json:"value"`
	LowerIsBetter bool               `json:"lower_is_better"`
	Metrics       map[string]float64 `json:"metrics,omitempty"`
	CPUS          float64            `json:"cpu_s"`           // user+system CPU time of the run
	StartRSS      int64              `json:"start_rss_bytes"` // RSS before the run
	PeakRSS       int64              `json:"peak_rss_bytes"`  // peak RSS of the process (VmHWM)
	StartThreads  int                `json:"start_threads"`
	MaxThreads    int                `json:"max_threads"`     // sampled every 5 ms
	ThreadsMade   int                `json:"threads_created"` // by the Go runtime, over the process
	GoVersion     string             `json:"go_version"`
	OS            string             `json:"os"` // GOOS/GOARCH and the distribution
	Kernel        string             `json:"kernel"`
	CPUModel      string             `json:"cpu_model"`
	Cores         int                `json:"cores"` // runtime.NumCPU
	Start         time.Time          `json:"start"`
	Error         string             `json:"error,omitempty"`
}

// runChild runs s once in this process and returns its record.
func runChild(s spec) Record {
	rec := Record{
		Program: s.Program, System: s.System, Run: s.Run, Mode: string(s.Mode), Workers: s.Workers,
		GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(), Cores: runtime.NumCPU(),
		OS: osName(), Kernel: kernel(), CPUModel: cpuModel(), Start: time.Now().UTC(),
	}
	if s.Full {
		rec.Mode = "full"
	}
	rec.SystemVersion = systemVersion(s.System, s.ActordVersion)
	p := compare.Lookup(s.Program)
	if p == nil {
		rec.Error = fmt.Sprintf("unknown program %q", s.Program)
		return rec
	}
	rec.Metric, rec.LowerIsBetter = p.Metric.Name, p.Metric.Lower
	if s.Full != bench.Full() {
		rec.Error = "ACTORD_BENCH_FULL does not match the spec"
		return rec
	}
	sz := compare.SizesFor(s.Mode, s.Workers)
	rec.StartRSS, _, rec.StartThreads = procStatus()
	threads := startThreadSampler(5 * time.Millisecond)
	cpu0 := bench.CPUTime()
	r, err := p.Run(s.System, s.Workers, sz)
	rec.CPUS = (bench.CPUTime() - cpu0).Seconds()
	rec.MaxThreads = max(threads.stop(), rec.StartThreads)
	// The peak RSS is the kernel's high-water mark of this process's
	// memory (VmHWM), which starts afresh at exec. (getrusage's ru_maxrss
	// does not: it carries over the RSS the parent had when it forked.)
	_, rec.PeakRSS, _ = procStatus()
	rec.ThreadsMade = pprof.Lookup("threadcreate").Count()
	if err != nil {
		rec.Error = err.Error()
		return rec
	}
	rec.Queues, rec.Heuristic, rec.Actors, rec.Messages = r.Queues, r.Heuristic, r.Actors, r.Messages
	rec.WallS = r.Wall.Seconds()
	rec.MsgPerS = float64(r.Messages) / r.Wall.Seconds()
	rec.Value = p.Metric.Value(r)
	rec.Metrics = r.Metrics
	return rec
}

// systemVersion names the version of system's code in this binary.
func systemVersion(system, actordVersion string) string {
	module := ""
	switch system {
	case compare.Chan:
		return runtime.Version()
	case compare.ProtoActor:
		module = "github.com/asynkron/protoactor-go"
	case compare.Hollywood:
		module = "github.com/anthdm/hollywood"
	default:
		return "git " + actordVersion
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == module {
				return d.Version
			}
		}
	}
	return "unknown"
}

// procStatus returns the process's current and peak RSS (bytes) and thread
// count from /proc/self/status (zero where unavailable).
func procStatus() (rss, peak int64, threads int) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			rss = n * 1024 // kB
		case "VmHWM":
			peak = n * 1024
		case "Threads":
			threads = int(n)
		}
	}
	return rss, peak, threads
}

// threadSampler records the highest thread count seen.
type threadSampler struct {
	done chan struct{}
	wg   sync.WaitGroup
	max  int // written by the sampling goroutine only; read after wg.Wait
}

func startThreadSampler(every time.Duration) *threadSampler {
	s := &threadSampler{done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			_, _, n := procStatus()
			s.max = max(s.max, n)
			select {
			case <-s.done:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// stop ends the sampling (after one last sample) and returns the maximum.
func (s *threadSampler) stop() int {
	close(s.done)
	s.wg.Wait()
	_, _, n := procStatus()
	return max(s.max, n)
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func kernel() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "unknown"
	}
	return unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
}

// osName is GOOS/GOARCH and the distribution's pretty name.
func osName() string {
	name := runtime.GOOS + "/" + runtime.GOARCH
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return name
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return name + " (" + strings.Trim(v, `"`) + ")"
		}
	}
	return name
}
