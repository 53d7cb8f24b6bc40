package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/executor"
	"github.com/actord/actord/stealing"
)

// errUsage: the command line or the environment is invalid (the message
// says how); the process exits with status 2, as flag does.
var errUsage = errors.New("actord: invalid usage")

// workloadNames lists the workloads, the default first.
var workloadNames = []string{"mixed", "executor", "repeat", "balance-one", "balance-multi", "matrix", "pipeline"}

// maxSize bounds -size per workload: a size is allocated up front (actors,
// matrices of size², sessions), so a mistyped one must be refused, not
// exhaust the memory.
var maxSize = map[string]int{
	"mixed":         1_000_000, // sessions
	"executor":      1_000_000, // actors
	"repeat":        1_000_000, // servers
	"balance-one":   1_000_000, // actors
	"balance-multi": 1_000_000,
	"matrix":        4096,    // three 4096² matrices of float64: 384 MiB
	"pipeline":      100_000, // stages
}

// maxRate bounds -rate: the pipeline keeps a run's messages (2 s of them)
// and their latencies.
const maxRate = 1e7

// config is the server's configuration, from flags with environment fallbacks.
type config struct {
	listen          string
	workers         int
	queuesPerWorker int
	steal           stealing.Heuristic
	pin             bool
	workload        string
	size            int     // workload size, 0: the workload's default (see usage)
	rate            float64 // requests or messages per second, 0: the workload's default
	duration        time.Duration
	report          time.Duration
	shutdownTimeout time.Duration
	logFormat       string
	logLevel        slog.Level
}

const usageHeader = `Usage: actord [flags]

actord runs an actor workload on actord's executor and serves its statistics:
  /metrics        Prometheus metrics (see package metrics for the list)
  /debug/pprof/   Go profiles
  /healthz        200 "ok" while the workload runs
It runs until SIGINT or SIGTERM (or -duration), then stops its actors
gracefully and logs the final statistics; a second signal ends it at once.

Workloads (-workload), with what -size and -rate mean for each:
  mixed          (default) a service-like load on one long-lived system:
                 sessions come and go, clients send requests at a rate that
                 follows a 2-minute sine wave with bursts, some requests fan out
                 to shard actors, and now and then a shard runs a long
                 behaviour so that other workers steal its queues; a shard
                 fails every 2s and restarts (WithRestart), an audit actor
                 with a bounded mailbox (DropOldest) stalls every 3s and
                 drops its oldest records, a monitor watches the sessions.
                 -size: sessions at the peak (default 1000);
                 -rate: mean requests per second (default 5000).
  executor       the executor benchmark: -size actors in groups of 100, 10 rounds
                 (default 4000).
  repeat         one client scatters to -size servers and gathers the replies,
                 20 rounds (default 10000).
  balance-one    executor-benchmark work placed on worker 0 only; the other
                 workers must steal it. -size: working actors (default 1600).
  balance-multi  the same on every other worker.
  matrix         -size x -size matrix product, one actor per row (default 512).
  pipeline       messages at -rate per second (default 10000) through -size
                 stage actors (default 12), in runs of about 2 seconds (a
                 stop ends the current run at once).
Each benchmark program runs again and again, each run on a fresh system.

Every flag can also be set with the environment variable shown in brackets;
a flag on the command line wins.

Flags:
`

// envName returns the environment variable of a flag: ACTORD_ and the flag
// name in upper case with dashes as underscores.
func envName(flagName string) string {
	return "ACTORD_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseConfig parses args, falling back to getenv for flags not given.
func parseConfig(args []string, getenv func(string) string, out io.Writer) (config, error) {
	var (
		c                          config
		steal, logLevel, workloads string
	)
	fs := flag.NewFlagSet("actord", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.listen, "listen", "127.0.0.1:9464", "address to serve /metrics, /debug/pprof/ and /healthz on")
	fs.IntVar(&c.workers, "workers", 0, "worker threads (0: GOMAXPROCS)")
	fs.IntVar(&c.queuesPerWorker, "queues-per-worker", 0, "mailboxes per worker (0: the executor's default, 16)")
	fs.StringVar(&steal, "steal", "longest", "steal heuristic: none, random or longest")
	fs.BoolVar(&c.pin, "pin-cpus", false, "pin each worker thread to its own CPU (Linux)")
	fs.StringVar(&workloads, "workload", workloadNames[0], "workload: "+strings.Join(workloadNames, ", "))
	fs.IntVar(&c.size, "size", 0, "workload size (see above; 0: the workload's default)")
	fs.Float64Var(&c.rate, "rate", 0, "requests (mixed) or messages (pipeline) per second (0: the workload's default)")
	fs.DurationVar(&c.duration, "duration", 0, "stop after this long (0: run until SIGINT or SIGTERM)")
	fs.DurationVar(&c.report, "report-interval", 10*time.Second, "log a statistics summary this often (0: never)")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long a graceful stop may take before actors are abandoned")
	fs.StringVar(&c.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageHeader)
		fs.VisitAll(func(f *flag.Flag) {
			fmt.Fprintf(fs.Output(), "  -%s [%s]\n    \t%s (default %q)\n", f.Name, envName(f.Name), f.Usage, f.DefValue)
		})
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, err
		}
		return c, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || envErr != nil {
			return
		}
		if v := getenv(envName(f.Name)); v != "" {
			if err := fs.Set(f.Name, v); err != nil {
				envErr = fmt.Errorf("%w: %s=%q: %v", errUsage, envName(f.Name), v, err)
			}
		}
	})
	if envErr != nil {
		return c, envErr
	}

	h, ok := stealing.ByName(steal)
	if !ok {
		return c, fmt.Errorf("%w: unknown steal heuristic %q (none, random or longest)", errUsage, steal)
	}
	c.steal = h
	c.workload = workloads
	if !slices.Contains(workloadNames, c.workload) {
		return c, fmt.Errorf("%w: unknown workload %q (%s)", errUsage, c.workload, strings.Join(workloadNames, ", "))
	}
	if err := c.logLevel.UnmarshalText([]byte(logLevel)); err != nil {
		return c, fmt.Errorf("%w: -log-level: %v", errUsage, err)
	}
	workers := c.workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	switch {
	case c.logFormat != "text" && c.logFormat != "json":
		return c, fmt.Errorf("%w: -log-format must be text or json, not %q", errUsage, c.logFormat)
	case c.workers < 0 || c.queuesPerWorker < 0 || c.size < 0:
		return c, fmt.Errorf("%w: -workers, -queues-per-worker and -size must not be negative", errUsage)
	case c.rate < 0 || c.duration < 0 || c.report < 0 || c.shutdownTimeout <= 0:
		return c, fmt.Errorf("%w: -rate, -duration and -report-interval must not be negative, -shutdown-timeout must be positive", errUsage)
	case !(c.rate <= maxRate): // NaN too
		return c, fmt.Errorf("%w: -rate %v (at most %g)", errUsage, c.rate, maxRate)
	case c.size > maxSize[c.workload]:
		return c, fmt.Errorf("%w: -size %d for workload %s (at most %d)", errUsage, c.size, c.workload, maxSize[c.workload])
	case c.workers > executor.MaxWorkers:
		return c, fmt.Errorf("%w: -workers %d (at most %d)", errUsage, c.workers, executor.MaxWorkers)
	case c.queuesPerWorker > executor.MaxQueues/workers:
		return c, fmt.Errorf("%w: -queues-per-worker %d for %d workers (at most %d queues in all)", errUsage, c.queuesPerWorker, workers, executor.MaxQueues)
	}
	return c, nil
}

// options returns the actor system options of c.
func (c *config) options() []actor.Option {
	opts := []actor.Option{actor.WithWorkers(c.workers), actor.WithStealing(c.steal)}
	if c.queuesPerWorker > 0 {
		opts = append(opts, actor.WithQueuesPerWorker(c.queuesPerWorker))
	}
	if c.pin {
		opts = append(opts, actor.WithCPUPinning())
	}
	return opts
}

// newLogger returns the structured logger c asks for, writing to w.
func (c *config) newLogger(w io.Writer) *slog.Logger {
	o := &slog.HandlerOptions{Level: c.logLevel}
	if c.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, o))
	}
	return slog.New(slog.NewTextHandler(w, o))
}
