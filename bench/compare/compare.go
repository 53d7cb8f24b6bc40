// Package compare runs the benchmark programs of package bench side by side
// on actord (with each stealing heuristic where stealing matters), on
// goroutines with channels (package bench's versions), on protoactor-go
// (package protoactor) and on hollywood (package hollywood), so that every
// figure can be read as a ratio between systems measured in the same run.
//
// Programs lists the programs; Program.Run runs one of them once on one
// system and measures it. The benchmarks in this package's tests and the
// runner in cmd/benchrun both go through Run. Run does not set GOMAXPROCS:
// the caller does (the runner starts a process per run with GOMAXPROCS set
// to the worker count; `go test -bench` has -cpu), and actord is started
// with as many workers.
//
// This package links both peers, which register conflicting protobuf
// files; package internal/protoconflict, imported here, makes that work
// without any environment variable (see its documentation).
package compare

import (
	"fmt"
	"github.com/actord/actord/actortest"
	"slices"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/bench"
	"github.com/actord/actord/bench/compare/hollywood"
	_ "github.com/actord/actord/bench/compare/internal/protoconflict" // before the peers' init: see its doc
	"github.com/actord/actord/bench/compare/protoactor"
	"github.com/actord/actord/stealing"
	hollywoodgo "github.com/anthdm/hollywood/actor"
	protoactorgo "github.com/asynkron/protoactor-go/actor"
)

// System names.
const (
	Actord        = "actord"         // actord, default stealing heuristic (longest victim)
	ActordNoSteal = "actord-nosteal" // actord without stealing
	ActordRandom  = "actord-random"  // actord, random victim
	Chan          = "chan"           // goroutines and buffered channels
	ProtoActor    = "protoactor"     // github.com/asynkron/protoactor-go
	Hollywood     = "hollywood"      // github.com/anthdm/hollywood
)

// Systems lists every system name, in display order.
var Systems = []string{Actord, ActordNoSteal, ActordRandom, Chan, ProtoActor, Hollywood}

// Peers are the systems other than actord's variants.
var Peers = []string{Chan, ProtoActor, Hollywood}

var (
	actordOnly  = []string{Actord, ActordNoSteal, ActordRandom}
	allSystems  = []string{Actord, Chan, ProtoActor, Hollywood}
	allStealing = Systems
)

// Mode selects the programs' sizes.
type Mode string

const (
	// Quick: tiny sizes, for a smoke test of the whole suite.
	Quick Mode = "quick"
	// Default: package bench's default sizes, or the chapter's full sizes
	// when the environment has ACTORD_BENCH_FULL=1.
	Default Mode = "default"
)

// PipelineSize is one constant-rate pipeline configuration.
type PipelineSize struct {
	Stages int
	Rate   float64 // messages per second
	N      int     // messages
}

// Sizes holds every program's size for one mode and worker count.
type Sizes struct {
	Static, Dynamic             int // messages (hops)
	Executor                    bench.ExecutorSize
	Repeat                      bench.RepeatSize
	Matrix                      int // matrix order
	Balance                     bench.BalanceSize
	CycleBusy, CycleIdle        bench.CycleSize
	Churn                       bench.ChurnSize
	LocalityNoshare, LocalShare bench.ChurnSize
	PipelineRare                PipelineSize // 10 msg/s: every message finds the workers asleep
	PipelineLow, PipelineHigh   PipelineSize
	TransferSpin, TransferProbe time.Duration
	LeaderTransfers             int           // transfer-leader: transfers per run
	LeaderTimeout               time.Duration // transfer-leader: a transfer slower than this did not complete
	Counting                    int           // counting: messages from outside the system to one actor
	ForkJoin                    bench.ForkJoinSize
	PingPong, TokenRing         int // hops
	Asks                        int // ask, ask64: asks in all
}

// SizesFor returns the sizes for mode on workers workers.
func SizesFor(mode Mode, workers int) Sizes {
	workers = max(workers, 1)
	if mode == Quick {
		return Sizes{
			Static:          100_000,
			Dynamic:         5_000,
			Executor:        bench.ExecutorSize{Actors: 400, Set: 20, Rounds: 3},
			Repeat:          bench.RepeatSize{Servers: 500, Rounds: 3},
			Matrix:          64,
			Balance:         bench.BalanceSize{Working: 128, Set: 16, Rounds: 2},
			CycleBusy:       bench.CycleSize{Rings: 100 * workers, RingSize: 5, Hops: max(50_000/(100*workers), 5)},
			CycleIdle:       bench.CycleSize{Rings: workers, RingSize: 5, Hops: max(10_000/workers, 5)},
			Churn:           bench.ChurnSize{Clients: 20 * workers, Spots: 10 * workers, Iterations: 50},
			LocalityNoshare: bench.ChurnSize{Clients: 20 * workers, Spots: 10 * workers, Iterations: 50, Words: 2048, Cells: 64},
			LocalShare:      bench.ChurnSize{Clients: 20 * workers, Spots: 10 * workers, Iterations: 50, Words: 2048, Cells: 64, Share: true},
			PipelineRare:    PipelineSize{Stages: 12, Rate: 10, N: 5},
			PipelineLow:     PipelineSize{Stages: 12, Rate: 1000, N: 50},
			PipelineHigh:    PipelineSize{Stages: 12, Rate: 100_000, N: 5000},
			TransferSpin:    20 * time.Millisecond,
			TransferProbe:   100 * time.Microsecond,
			LeaderTransfers: 3,
			LeaderTimeout:   5 * time.Second,
			Counting:        20_000,
			ForkJoin:        bench.ForkJoinSize{Actors: 10, Messages: 500},
			PingPong:        2_000,
			TokenRing:       5_000,
			Asks:            2_000,
		}
	}
	full := bench.Full()
	scale := 1
	if full {
		scale = 10
	}
	s := Sizes{
		Static:          10_000_000,
		Dynamic:         100_000,
		Executor:        bench.ExecutorDefault(),
		Repeat:          bench.RepeatDefault(),
		Matrix:          bench.MatrixDefault(),
		Balance:         bench.BalanceDefault(),
		CycleBusy:       bench.CycleDefault(workers, true),
		CycleIdle:       bench.CycleDefault(workers, false),
		Churn:           bench.ChurnDefault(workers),
		LocalityNoshare: bench.LocalityDefault(workers, false),
		LocalShare:      bench.LocalityDefault(workers, true),
		PipelineRare:    PipelineSize{Stages: 12, Rate: 10, N: 30 * scale},
		PipelineLow:     PipelineSize{Stages: 12, Rate: 1000, N: 1000 * scale},
		PipelineHigh:    PipelineSize{Stages: 12, Rate: 100_000, N: 100_000 * scale},
		TransferSpin:    100 * time.Millisecond,
		TransferProbe:   100 * time.Microsecond,
		LeaderTransfers: 30,
		LeaderTimeout:   5 * time.Second,   // the chapter's
		Counting:        1_000_000 * scale, // Savina's 1 M
		ForkJoin:        bench.ForkJoinDefault(),
		PingPong:        bench.PingPongDefault(),
		TokenRing:       bench.TokenRingDefault(),
		Asks:            50_000, // a quarter of the service-path measurement's, for 2 cores
	}
	if full {
		// The chapter's counts: 100 M static sends; 2 M dynamic sends (what
		// it ran the peers with; actord alone could do 20 M). 10,000 leader
		// transfers (we measured about 0.1 s per transfer on 2 workers, so
		// more would take hours).
		s.Static, s.Dynamic, s.LeaderTransfers = 100_000_000, 2_000_000, 10_000
		// The service-path measurement's 200,000 asks.
		s.Asks = 200_000
	}
	return s
}

// Result is what one run of a program on one system measured.
type Result struct {
	Wall      time.Duration      // the program, from its first spawn to its last actor's termination
	Actors    int                // actors (goroutines for chan) the program created
	Messages  int                // messages sent (the pipeline: by the generator)
	Queues    int                // actord: its mailboxes; the others: one mailbox (channel) per actor
	Heuristic string             // actord's stealing heuristic; "go" (the Go scheduler's) for the others
	Metrics   map[string]float64 // program-specific figures (see Program.Metric)
}

// Metric is the figure a program is judged by.
type Metric struct {
	Name  string // short, with its unit, e.g. "ns/msg"
	Label string // for axes, e.g. "time per message (ns)"
	Lower bool   // lower is better
	// Key is the Result.Metrics key holding it; "" for derived metrics
	// (ns/msg, runtime, msg/s), computed from Wall and Messages.
	Key string
}

// Value returns m's value for r.
func (m Metric) Value(r Result) float64 {
	switch m.Name {
	case "ns/msg":
		return float64(r.Wall.Nanoseconds()) / float64(max(r.Messages, 1))
	case "runtime-s":
		return r.Wall.Seconds()
	case "msg/s":
		return float64(r.Messages) / r.Wall.Seconds()
	}
	return r.Metrics[m.Key]
}

var (
	nsPerMsg   = Metric{Name: "ns/msg", Label: "time per message (ns)", Lower: true}
	runtime_   = Metric{Name: "runtime-s", Label: "runtime (s)", Lower: true}
	msgPerS    = Metric{Name: "msg/s", Label: "messages per second"}
	opsPerS    = Metric{Name: "ops/s", Label: "operations per second", Key: "ops/s"}
	p50        = Metric{Name: "p50-us", Label: "median latency (µs)", Lower: true, Key: "p50-us"}
	p99        = Metric{Name: "p99-us", Label: "99th percentile latency (µs)", Lower: true, Key: "p99-us"}
	perLead    = Metric{Name: "us/transfer", Label: "time per leader transfer (µs)", Lower: true, Key: "us/transfer"}
	nsPerAsk   = Metric{Name: "ns/ask", Label: "time per ask (ns)", Lower: true, Key: "ns/ask"}
	p99OverP50 = Metric{Name: "p99/p50", Label: "99th percentile over median latency", Lower: true, Key: "p99/p50"}
	behind99   = Metric{Name: "behind-p99-ms", Label: "99th percentile delay behind the spinner (ms)", Lower: true, Key: "behind-p99-ms"}
)

// Program is one benchmark program.
type Program struct {
	Name    string
	Doc     string
	Metric  Metric
	Systems []string // systems it runs on, in display order
	// MinWorkers is the fewest workers the program can run with (0: any).
	MinWorkers int
	run        func(system string, workers int, sz Sizes) (Result, error)
}

// Run runs p once on system with workers workers (see the package doc for
// GOMAXPROCS) at sizes sz, and checks what it computed.
func (p *Program) Run(system string, workers int, sz Sizes) (Result, error) {
	if !slices.Contains(p.Systems, system) {
		return Result{}, fmt.Errorf("compare: program %s does not run on system %q (it runs on %v)", p.Name, system, p.Systems)
	}
	if workers < p.MinWorkers {
		return Result{}, fmt.Errorf("compare: program %s needs at least %d workers", p.Name, p.MinWorkers)
	}
	r, err := p.run(system, workers, sz)
	if err != nil {
		return r, fmt.Errorf("%s on %s: %w", p.Name, system, err)
	}
	if r.Heuristic == "" {
		r.Heuristic = "go"
	}
	if r.Queues == 0 {
		r.Queues = r.Actors
	}
	return r, nil
}

// Lookup returns the program named name, or nil.
func Lookup(name string) *Program {
	for _, p := range Programs {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// Programs lists every program, in display order.
var Programs = []*Program{
	{Name: "static", Metric: nsPerMsg, Systems: allSystems, run: runStatic,
		Doc: "static send: one actor re-sends one preallocated message to itself"},
	{Name: "dynamic", Metric: nsPerMsg, Systems: allSystems, run: runDynamic,
		Doc: "dynamic send: each receive spawns an actor, sends it a new message and terminates"},
	{Name: "executor", Metric: runtime_, Systems: allStealing, run: runExecutor,
		Doc: "executor: actors in groups send one shared message round-robin within the group"},
	{Name: "repeat", Metric: runtime_, Systems: allStealing, run: runRepeat,
		Doc: "repeat: one client scatters to many servers and gathers their replies, round after round"},
	{Name: "matrix", Metric: runtime_, Systems: allSystems, run: runMatrix,
		Doc: "matrix: one actor per row of Z = X*Y (compute-bound)"},
	{Name: "balance-one", Metric: runtime_, Systems: actordOnly, run: runBalance(bench.BalanceOne),
		Doc: "balance-one: all the work on worker 0's queues (stealing must spread it)"},
	{Name: "balance-multi", Metric: runtime_, Systems: actordOnly, run: runBalance(bench.BalanceMulti),
		Doc: "balance-multi: the work on every other worker's queues"},
	{Name: "cycle", Metric: msgPerS, Systems: allSystems, run: runCycle(func(s Sizes) bench.CycleSize { return s.CycleBusy }),
		Doc: "cycle: rings of 5 actors passing a token, 100 rings per worker"},
	{Name: "cycle-idle", Metric: msgPerS, Systems: allSystems, run: runCycle(func(s Sizes) bench.CycleSize { return s.CycleIdle }),
		Doc: "cycle, near idle: one ring of 5 per worker"},
	{Name: "churn", Metric: opsPerS, Systems: allSystems, run: runChurn(func(s Sizes) bench.ChurnSize { return s.Churn }),
		Doc: "churn: clients wake each other through random spots"},
	{Name: "locality-noshare", Metric: opsPerS, Systems: allSystems, run: runChurn(func(s Sizes) bench.ChurnSize { return s.LocalityNoshare }),
		Doc: "locality, noshare: churn where each client touches its own array"},
	{Name: "locality-share", Metric: opsPerS, Systems: allSystems, run: runChurn(func(s Sizes) bench.ChurnSize { return s.LocalShare }),
		Doc: "locality, share: churn where the arrays travel with the wake-ups"},
	{Name: "pipeline-rare", Metric: p50, Systems: allSystems, run: runPipeline(func(s Sizes) PipelineSize { return s.PipelineRare }),
		Doc: "constant-rate pipeline of 12 actors at 10 msg/s: median end-to-end latency when every message finds the system idle"},
	{Name: "pipeline-low", Metric: p99, Systems: allSystems, run: runPipeline(func(s Sizes) PipelineSize { return s.PipelineLow }),
		Doc: "constant-rate pipeline of 12 actors at a low rate: end-to-end latency"},
	{Name: "pipeline-high", Metric: p99, Systems: allSystems, run: runPipeline(func(s Sizes) PipelineSize { return s.PipelineHigh }),
		Doc: "constant-rate pipeline of 12 actors at a high rate: end-to-end latency"},
	{Name: "counting", Metric: nsPerMsg, Systems: allSystems, run: runCounting,
		Doc: "counting: a goroutine outside the system sends 1 M messages to one actor, then asks for the total (Savina)"},
	{Name: "counting-actor", Metric: nsPerMsg, Systems: allSystems, run: runCountingActor,
		Doc: "counting from an actor: one behaviour of a producer actor sends 1 M messages to a counter actor, then asks it for the total (Savina)"},
	{Name: "fork-join", Metric: nsPerMsg, Systems: allSystems, run: runForkJoin,
		Doc: "fork-join throughput: a goroutine outside the system sends round-robin to 60 actors, 50,000 messages each (Savina)"},
	{Name: "ping-pong", Metric: nsPerMsg, Systems: allSystems, run: runHandoff(bench.PingPongSize, func(s Sizes) int { return s.PingPong }),
		Doc: "ping-pong: two actors pass one token back and forth (actord: on different workers)"},
	{Name: "token-ring", Metric: nsPerMsg, Systems: allSystems, run: runHandoff(bench.TokenRingSize, func(s Sizes) int { return s.TokenRing }),
		Doc: "token ring: 100 actors pass one token around (Savina thread ring)"},
	{Name: "ask", Metric: nsPerAsk, Systems: allSystems, run: runAsk(1),
		Doc: "ask from a goroutine: one goroutine outside the system asks one server actor and waits for each reply (p50/p99 per ask)"},
	{Name: "ask64", Metric: p99OverP50, Systems: allSystems, run: runAsk(Askers),
		Doc: "ask from 64 goroutines at once, the same asks in all: p99 over p50 of the ask latency"},
	{Name: "transfer", Metric: behind99, Systems: actordOnly, MinWorkers: 2, run: runTransfer,
		Doc: "transfer: delay of messages to actors on the worker of a spinning behaviour (there is no other worker to take them with 1)"},
	{Name: "transfer-leader", Metric: perLead, Systems: []string{Actord, ActordRandom}, MinWorkers: 2, run: runTransferLeader,
		Doc: "transfer, the chapter's version: a spinning leader waits for every other actor (one per queue) to see its epoch; without stealing it never completes"},
}

// ---- runners ---------------------------------------------------------------

// withActord starts an actord system for system on workers workers, runs
// prog on it and times it.
func withActord(system string, workers int, prog func(*actor.System) (Result, error)) (Result, error) {
	opts := []actor.Option{actor.WithWorkers(workers)}
	switch system {
	case Actord:
	case ActordNoSteal:
		opts = append(opts, actor.WithStealing(stealing.None))
	case ActordRandom:
		opts = append(opts, actor.WithStealing(stealing.Random))
	default:
		return Result{}, fmt.Errorf("compare: %q is not an actord system", system)
	}
	sys, err := actor.Start(opts...)
	if err != nil {
		return Result{}, err
	}
	cfg := actortest.MustConfig(sys)
	t0 := time.Now()
	r, err := prog(sys)
	r.Wall = time.Since(t0)
	r.Queues = cfg.Queues
	r.Heuristic = stealing.LongestVictim.String()
	if cfg.Steal != nil {
		r.Heuristic = cfg.Steal.String()
	}
	return r, err
}

// timed times f.
func timed(f func()) time.Duration {
	t0 := time.Now()
	f()
	return time.Since(t0)
}

func expect(what string, got, want int) error {
	if got != want {
		return fmt.Errorf("compare: %s: got %d, want %d", what, got, want)
	}
	return nil
}

// onSystems is one program written for each kind of system: chan_ runs
// it on goroutines and channels, protoactor on a protoactor-go system,
// hollywood on a hollywood engine and actord on an actord system. Each
// returns what the program computed (what run checks, or a count).
type onSystems[T any] struct {
	chan_      func() T
	protoactor func(*protoactorgo.ActorSystem) T
	hollywood  func(*hollywoodgo.Engine) T
	actord     func(*actor.System) (T, error)
}

// run runs the program on system (with workers workers for actord) and
// returns r with its Wall set (and, for actord, what withActord sets),
// and what the program returned. Only the program is timed: the peers'
// systems are created before the clock starts (withActord times actord's).
func (on onSystems[T]) run(system string, workers int, r Result) (Result, T, error) {
	var got T
	switch system {
	case Chan:
		r.Wall = timed(func() { got = on.chan_() })
	case ProtoActor:
		sys := protoactor.NewSystem()
		r.Wall = timed(func() { got = on.protoactor(sys) })
	case Hollywood:
		e, err := hollywood.NewEngine()
		if err != nil {
			return r, got, err
		}
		r.Wall = timed(func() { got = on.hollywood(e) })
	default:
		var err error
		r, err = withActord(system, workers, func(sys *actor.System) (Result, error) {
			var err error
			got, err = on.actord(sys)
			return r, err
		})
		if err != nil {
			return r, got, err
		}
	}
	return r, got, nil
}

// counted runs on on system, r being the result it fills, and checks that
// the program counted want (what names the count in the error).
func counted(system string, workers int, r Result, what string, want int, on onSystems[int]) (Result, error) {
	r, got, err := on.run(system, workers, r)
	if err != nil {
		return r, err
	}
	return r, expect(what, got, want)
}

func runStatic(system string, workers int, sz Sizes) (Result, error) {
	n := sz.Static
	return counted(system, workers, Result{Actors: 1, Messages: n}, "receives", n, onSystems[int]{
		chan_:      func() int { bench.StaticSendChan(n); return n },
		protoactor: func(sys *protoactorgo.ActorSystem) int { return protoactor.StaticSend(sys, n) },
		hollywood:  func(e *hollywoodgo.Engine) int { return hollywood.StaticSend(e, n) },
		actord:     func(sys *actor.System) (int, error) { return n, bench.StaticSend(sys, n) },
	})
}

func runDynamic(system string, workers int, sz Sizes) (Result, error) {
	n := sz.Dynamic
	return counted(system, workers, Result{Actors: n, Messages: n}, "hops", n, onSystems[int]{
		chan_:      func() int { bench.DynamicSendChan(n); return n },
		protoactor: func(sys *protoactorgo.ActorSystem) int { return protoactor.DynamicSend(sys, n) },
		hollywood:  func(e *hollywoodgo.Engine) int { return hollywood.DynamicSend(e, n) },
		actord:     func(sys *actor.System) (int, error) { return n, bench.DynamicSend(sys, n) },
	})
}

func runExecutor(system string, workers int, sz Sizes) (Result, error) {
	ex := sz.Executor
	n := ex.Messages()
	return counted(system, workers, Result{Actors: ex.Actors, Messages: n}, "receives", n, onSystems[int]{
		chan_:      func() int { bench.ExecutorChan(ex); return n },
		protoactor: func(sys *protoactorgo.ActorSystem) int { return protoactor.Executor(sys, ex) },
		hollywood:  func(e *hollywoodgo.Engine) int { return hollywood.Executor(e, ex) },
		actord:     func(sys *actor.System) (int, error) { return n, bench.Executor(sys, ex) },
	})
}

func runRepeat(system string, workers int, sz Sizes) (Result, error) {
	rp := sz.Repeat
	n := rp.Messages()
	return counted(system, workers, Result{Actors: rp.Servers + 1, Messages: n}, "requests and replies", n, onSystems[int]{
		chan_:      func() int { bench.RepeatChan(rp); return n },
		protoactor: func(sys *protoactorgo.ActorSystem) int { return protoactor.Repeat(sys, rp) },
		hollywood:  func(e *hollywoodgo.Engine) int { return hollywood.Repeat(e, rp) },
		actord:     func(sys *actor.System) (int, error) { return n, bench.Repeat(sys, rp) },
	})
}

func runMatrix(system string, workers int, sz Sizes) (Result, error) {
	m := bench.NewMatrices(sz.Matrix)
	r, _, err := onSystems[struct{}]{
		chan_:      func() struct{} { bench.MatrixChan(m); return struct{}{} },
		protoactor: func(sys *protoactorgo.ActorSystem) struct{} { protoactor.Matrix(sys, m); return struct{}{} },
		hollywood:  func(e *hollywoodgo.Engine) struct{} { hollywood.Matrix(e, m); return struct{}{} },
		actord:     func(sys *actor.System) (struct{}, error) { return struct{}{}, bench.Matrix(sys, m) },
	}.run(system, workers, Result{Actors: m.N, Messages: m.N})
	r.Metrics = map[string]float64{"checksum": m.Check()}
	return r, err
}

func runBalance(prog func(*actor.System, bench.BalanceSize) error) func(string, int, Sizes) (Result, error) {
	return func(system string, workers int, sz Sizes) (Result, error) {
		b := sz.Balance
		return withActord(system, workers, func(sys *actor.System) (Result, error) {
			err := prog(sys, b)
			// Actors: the working ones and the dummies (one message each),
			// as the system counted them (Total includes the actors
			// spawned from outside the workers).
			st := actortest.MustStats(sys)
			return Result{Actors: int(st.Total().ActorsCreated), Messages: b.Messages()}, err
		})
	}
}

func runCycle(size func(Sizes) bench.CycleSize) func(string, int, Sizes) (Result, error) {
	return func(system string, workers int, sz Sizes) (Result, error) {
		cy := size(sz)
		return runRing(system, workers, cy, func(sys *actor.System) error { return bench.Cycle(sys, cy) })
	}
}

// runRing runs cy, one or more rings passing tokens: the peers run their
// Cycle, actord runs onActord.
func runRing(system string, workers int, cy bench.CycleSize, onActord func(*actor.System) error) (Result, error) {
	n := cy.Messages()
	return counted(system, workers, Result{Actors: cy.Actors(), Messages: n}, "hops", n, onSystems[int]{
		chan_:      func() int { return bench.CycleChan(cy) },
		protoactor: func(sys *protoactorgo.ActorSystem) int { return protoactor.Cycle(sys, cy) },
		hollywood:  func(e *hollywoodgo.Engine) int { return hollywood.Cycle(e, cy) },
		actord:     func(sys *actor.System) (int, error) { return n, onActord(sys) },
	})
}

func runChurn(size func(Sizes) bench.ChurnSize) func(string, int, Sizes) (Result, error) {
	return func(system string, workers int, sz Sizes) (Result, error) {
		ch := size(sz)
		r, c, err := onSystems[bench.ChurnResult]{
			chan_:      func() bench.ChurnResult { return bench.ChurnChan(ch) },
			protoactor: func(sys *protoactorgo.ActorSystem) bench.ChurnResult { return protoactor.Churn(sys, ch) },
			hollywood:  func(e *hollywoodgo.Engine) bench.ChurnResult { return hollywood.Churn(e, ch) },
			actord:     func(sys *actor.System) (bench.ChurnResult, error) { return bench.Churn(sys, ch) },
		}.run(system, workers, Result{})
		if err != nil {
			return r, err
		}
		r.Actors = ch.Clients + ch.Spots
		if system == Chan {
			r.Actors = ch.Clients // goroutines; the spots are channels
		}
		// The channel version has no messages; count its V and P as one
		// each, like an arrival and a wake.
		r.Messages = c.Messages
		if r.Messages == 0 {
			r.Messages = c.Arrivals + c.Ops
		}
		r.Metrics = map[string]float64{
			"ops":   float64(c.Ops),
			"ops/s": float64(c.Ops) / r.Wall.Seconds(),
		}
		if c.Sum != uint64(ch.Cells)*uint64(c.Arrivals) {
			return r, fmt.Errorf("compare: arrays sum to %d, want %d cells x %d arrivals", c.Sum, ch.Cells, c.Arrivals)
		}
		return r, nil
	}
}

func runPipeline(size func(Sizes) PipelineSize) func(string, int, Sizes) (Result, error) {
	return func(system string, workers int, sz Sizes) (Result, error) {
		ps := size(sz)
		// The pipeline measures its own wall time, which replaces run's.
		r, p, err := onSystems[bench.PipelineResult]{
			chan_: func() bench.PipelineResult { return bench.PipelineChan(ps.Stages, ps.Rate, ps.N) },
			protoactor: func(sys *protoactorgo.ActorSystem) bench.PipelineResult {
				return protoactor.Pipeline(sys, ps.Stages, ps.Rate, ps.N)
			},
			hollywood: func(e *hollywoodgo.Engine) bench.PipelineResult {
				return hollywood.Pipeline(e, ps.Stages, ps.Rate, ps.N)
			},
			actord: func(sys *actor.System) (bench.PipelineResult, error) {
				return bench.Pipeline(sys, ps.Stages, ps.Rate, ps.N)
			},
		}.run(system, workers, Result{})
		if err != nil {
			return r, err
		}
		if len(p.Latencies) != ps.N {
			return r, fmt.Errorf("compare: %d latencies for %d messages", len(p.Latencies), ps.N)
		}
		us := func(q float64) float64 { return float64(bench.Quantile(p.Latencies, q)) / 1e3 }
		r.Wall = p.Wall
		r.Actors = ps.Stages + 1
		r.Messages = ps.N
		r.Metrics = map[string]float64{
			"rate":       ps.Rate,
			"achieved":   p.Achieved(),
			"late-sends": float64(p.Late),
			"cpu-%":      p.CPUPercent(),
			"p50-us":     us(0.5),
			"p99-us":     us(0.99),
			"p999-us":    us(0.999),
			"max-us":     us(1),
		}
		return r, nil
	}
}

func runTransfer(system string, workers int, sz Sizes) (Result, error) {
	var t bench.TransferResult
	r, err := withActord(system, workers, func(sys *actor.System) (Result, error) {
		var err error
		t, err = bench.TransferDelay(sys, sz.TransferSpin, sz.TransferProbe)
		return Result{Actors: actortest.MustConfig(sys).Queues}, err
	})
	if err != nil {
		return r, err
	}
	ms := func(s []time.Duration, q float64) float64 { return float64(bench.Quantile(s, q)) / 1e6 }
	r.Messages = len(t.Behind) + len(t.Other)
	r.Metrics = map[string]float64{
		"spin-ms":       float64(t.Spin) / 1e6,
		"behind-p50-ms": ms(t.Behind, 0.5),
		"behind-p99-ms": ms(t.Behind, 0.99),
		"behind-max-ms": ms(t.Behind, 1),
		"other-p50-ms":  ms(t.Other, 0.5),
		"other-p99-ms":  ms(t.Other, 0.99),
		"probes-behind": float64(len(t.Behind)),
	}
	return r, nil
}

func runTransferLeader(system string, workers int, sz Sizes) (Result, error) {
	var t bench.TransferLeaderResult
	r, err := withActord(system, workers, func(sys *actor.System) (Result, error) {
		var err error
		t, err = bench.TransferLeader(sys, sz.LeaderTransfers, sz.LeaderTimeout)
		return Result{}, err
	})
	if err != nil {
		return r, err
	}
	r.Actors = t.Actors
	r.Messages = t.Transfers * t.Actors // epoch messages and leads
	r.Metrics = map[string]float64{"us/transfer": float64(t.PerTransfer()) / 1e3, "transfers": float64(t.Transfers)}
	if t.DNC {
		return r, fmt.Errorf("compare: did not complete: after %d transfers, %d actors had not seen the epoch after %v", t.Transfers, t.Stuck, sz.LeaderTimeout)
	}
	return r, nil
}

func runCounting(system string, workers int, sz Sizes) (Result, error) {
	n := sz.Counting
	return counted(system, workers, Result{Actors: 1, Messages: n}, "total", n, onSystems[int]{
		chan_:      func() int { return bench.CountingChan(n) },
		protoactor: func(sys *protoactorgo.ActorSystem) int { return protoactor.Counting(sys, n) },
		hollywood:  func(e *hollywoodgo.Engine) int { return hollywood.Counting(e, n) },
		actord:     func(sys *actor.System) (int, error) { return n, bench.Counting(sys, n) },
	})
}

func runForkJoin(system string, workers int, sz Sizes) (Result, error) {
	fj := sz.ForkJoin
	n := fj.Total()
	return counted(system, workers, Result{Actors: fj.Actors, Messages: n}, "receives", n, onSystems[int]{
		chan_:      func() int { return bench.ForkJoinChan(fj) },
		protoactor: func(sys *protoactorgo.ActorSystem) int { return protoactor.ForkJoin(sys, fj) },
		hollywood:  func(e *hollywoodgo.Engine) int { return hollywood.ForkJoin(e, fj) },
		actord:     func(sys *actor.System) (int, error) { return bench.ForkJoin(sys, fj) },
	})
}

// runHandoff runs ping-pong or the token ring: a cycle of one ring of the
// given shape (the peers run their Cycle; actord's ping-pong places its two
// actors on different workers).
func runHandoff(shape func(int) bench.CycleSize, hops func(Sizes) int) func(string, int, Sizes) (Result, error) {
	return func(system string, workers int, sz Sizes) (Result, error) {
		cy := shape(hops(sz))
		return runRing(system, workers, cy, func(sys *actor.System) error {
			if cy.RingSize == 2 {
				return bench.PingPong(sys, cy.Hops)
			}
			return bench.Cycle(sys, cy)
		})
	}
}
