// Command actord-node runs a mixed actor workload split over two processes
// that talk through one NATS server, each serving Prometheus metrics (the
// executor's and the remote node's) on /metrics.
//
//	actord-node -role server -nats-embed 127.0.0.1:4222   # embeds the NATS server
//	actord-node -role client -nats-url nats://127.0.0.1:4222
//
// The server exports a key-value store (asks: put with JSON, get with
// protobuf) and an event sink (one-way, CBOR); the client sends events at
// -rate and runs -askers goroutines of puts and gets with deadlines, and
// prints its figures every -report. With -duration the client stops after
// that time, checks that the server received every event it sent, in
// order, and exits 0 ("ok ...") or 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/metrics"
	"github.com/actord/actord/remote"
	"github.com/actord/actord/remote/remotemetrics"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Messages. Both roles are this one program, so they share the types; two
// programs would declare them alike (the type's name must match).

type Event struct {
	actor.Message
	Seq int
}

type Put struct {
	actor.Request[bool]
	Key, Value string
}

// Get is a protobuf message: the key is the embedded StringValue's Value.
type Get struct {
	actor.Request[string]
	wrapperspb.StringValue
}

type Totals struct {
	Events, OutOfOrder, Keys int
}

type Count struct {
	actor.Request[Totals]
}

// Store is the server's actor.
type Store struct {
	actor.Actor
	kv   map[string]string
	t    Totals
	next int
}

func (s *Store) OnEvent(m *Event) actor.Allocation {
	if m.Seq != s.next {
		s.t.OutOfOrder++
	}
	s.next = m.Seq + 1
	s.t.Events++
	return actor.Nodelete
}

func (s *Store) OnPut(m *Put) actor.Allocation {
	_, existed := s.kv[m.Key]
	s.kv[m.Key] = m.Value
	m.Reply(existed)
	return actor.Nodelete
}

func (s *Store) OnGet(m *Get) actor.Allocation {
	m.Reply(s.kv[m.GetValue()])
	return actor.Nodelete
}

func (s *Store) OnCount(m *Count) actor.Allocation {
	t := s.t
	t.Keys = len(s.kv)
	m.Reply(t)
	return actor.Nodelete
}

var (
	eventCodec = remote.CBOR[*Event]()
	putCodec   = remote.JSON[*Put]()
	boolCodec  = remote.JSON[bool]()
	getCodec   = remote.Proto[Get]()
	strCodec   = remote.CBOR[string]()
	countCodec = remote.CBOR[*Count]()
	totCodec   = remote.CBOR[Totals]()
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "actord-node:", err)
		os.Exit(1)
	}
}

func run() error {
	role := flag.String("role", "server", "server (exports the store) or client (runs the load against it)")
	name := flag.String("name", "", "node name (default: the role)")
	peerName := flag.String("server-node", "server", "client: the server's node name")
	natsURL := flag.String("nats-url", "", "NATS server URL (nats://host:port)")
	embed := flag.String("nats-embed", "", "embed a NATS server listening on this host:port (port 0: any) and use it")
	metricsAddr := flag.String("metrics-addr", "", "serve /metrics here (default 127.0.0.1:9465 for the server, :9466 for the client; \"off\": none)")
	rate := flag.Int("rate", 20000, "client: one-way events per second")
	askers := flag.Int("askers", 4, "client: goroutines asking (put then get) in a loop")
	duration := flag.Duration("duration", 0, "client: stop after this time and check the events (0: run until interrupted)")
	report := flag.Duration("report", 5*time.Second, "client: print figures this often")
	flag.Parse()
	if *name == "" {
		*name = *role
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	url := *natsURL
	if *embed != "" {
		host, port, err := net.SplitHostPort(*embed)
		if err != nil {
			return err
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return err
		}
		if p == 0 {
			p = -1 // random
		}
		ns, err := server.NewServer(&server.Options{Host: host, Port: p, NoSigs: true, NoLog: true})
		if err != nil {
			return err
		}
		ns.Start()
		if !ns.ReadyForConnections(10 * time.Second) {
			return errors.New("embedded NATS server not ready")
		}
		defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
		url = ns.ClientURL()
		fmt.Println("nats", url)
	}
	if url == "" {
		return errors.New("-nats-url or -nats-embed is required")
	}

	sys, err := actor.Start()
	if err != nil {
		return err
	}
	node, err := remote.Connect(sys, url, *name, remote.WithLogger(log),
		remote.WithNATS(nats.Name("actord-node "+*name), nats.MaxReconnects(-1)))
	if err != nil {
		return err
	}
	coll := metrics.NewCollector()
	coll.Attach(sys)
	reg, err := metrics.NewRegistry(coll, remotemetrics.New(node))
	if err != nil {
		return err
	}
	addr := *metricsAddr
	if addr == "" {
		addr = map[string]string{"server": "127.0.0.1:9465", "client": "127.0.0.1:9466"}[*role]
	}
	if addr != "off" && addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", metrics.Handler(reg))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
		fmt.Println("metrics", "http://"+ln.Addr().String()+"/metrics")
	}

	var store *Store
	switch *role {
	case "server":
		store, err = serve(sys, node)
		if err == nil {
			fmt.Println("ready", *name)
			<-ctx.Done()
		}
	case "client":
		err = load(ctx, node, *peerName, *rate, *askers, *duration, *report)
	default:
		err = fmt.Errorf("unknown -role %q", *role)
	}
	node.Close()
	if store != nil {
		actor.SendPill(store, actor.FinishedMsg)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if serr := sys.Stop(sctx); serr != nil && !errors.Is(serr, actor.ErrUndelivered) && err == nil {
		err = serr
	}
	return err
}

func serve(sys *actor.System, node *remote.Node) (*Store, error) {
	s, err := actor.Spawn(sys, &Store{kv: make(map[string]string)})
	if err != nil {
		return nil, err
	}
	ev, _ := actor.Bind(s, (*Store).OnEvent)
	put, _ := actor.Bind(s, (*Store).OnPut)
	get, _ := actor.Bind(s, (*Store).OnGet)
	count, _ := actor.Bind(s, (*Store).OnCount)
	return s, errors.Join(
		remote.Export(node, "events", ev, eventCodec),
		remote.ExportRequest(node, "put", put, putCodec, boolCodec),
		remote.ExportRequest(node, "get", get, getCodec, strCodec),
		remote.ExportRequest(node, "count", count, countCodec, totCodec),
	)
}

func load(ctx context.Context, node *remote.Node, peer string, rate, askers int, duration, report time.Duration) error {
	events, err := remote.Import(node, peer, "events", eventCodec)
	if err != nil {
		return err
	}
	put, _ := remote.ImportRequest(node, peer, "put", putCodec, boolCodec)
	get, _ := remote.ImportRequest(node, peer, "get", getCodec, strCodec)
	count, _ := remote.ImportRequest(node, peer, "count", countCodec, totCodec)

	// Wait for the server to answer.
	for {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := count.Ask(actx, &Count{})
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(50 * time.Millisecond)
	}
	base, _ := count.Ask(ctx, &Count{})

	if duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, duration)
		defer cancel()
	}
	var sent, sendErrs, asks, askErrs atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() { // events, in bursts every 10ms
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		per := max(rate/100, 1)
		seq := base.Events
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			for range per {
				if err := events.Send(&Event{Seq: seq}); err != nil {
					sendErrs.Add(1)
					continue
				}
				seq++
				sent.Add(1)
			}
		}
	})
	for g := range askers {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				key := fmt.Sprintf("k%d-%d", g, i%100)
				actx, cancel := context.WithTimeout(ctx, time.Second)
				_, err := put.Ask(actx, &Put{Key: key, Value: strconv.Itoa(i)})
				if err == nil {
					var v string
					v, err = get.Ask(actx, &Get{StringValue: wrapperspb.StringValue{Value: key}})
					if err == nil && v != strconv.Itoa(i) {
						err = fmt.Errorf("get %s: %q, want %d", key, v, i)
					}
				}
				cancel()
				if err != nil && ctx.Err() == nil {
					askErrs.Add(1)
				} else if err == nil {
					asks.Add(2)
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	tick := time.NewTicker(report)
	defer tick.Stop()
	start := time.Now()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-tick.C:
			fmt.Printf("events %d (errors %d), asks %d (errors %d) in %v\n", sent.Load(), sendErrs.Load(), asks.Load(), askErrs.Load(), time.Since(start).Round(time.Second))
		}
	}
	wg.Wait()
	if duration == 0 { // interrupted: nothing to check
		return nil
	}
	fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := node.Flush(fctx); err != nil {
		return err
	}
	tot, err := count.Ask(fctx, &Count{})
	if err != nil {
		return err
	}
	got := tot.Events - base.Events
	fmt.Printf("events sent %d, received %d, out of order %d; asks %d, ask errors %d, send errors %d\n",
		sent.Load(), got, tot.OutOfOrder, asks.Load(), askErrs.Load(), sendErrs.Load())
	if int64(got) != sent.Load() || tot.OutOfOrder != 0 || askErrs.Load() != 0 || sendErrs.Load() != 0 || asks.Load() == 0 {
		return errors.New("FAIL")
	}
	fmt.Println("ok")
	return nil
}
