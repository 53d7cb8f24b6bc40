// Command cluster is one member of a cluster of shopping carts: run three
// of them (three processes) and send HTTP requests to any one. Each cart
// is a virtual entity: it lives on one member at a time, chosen when it is
// first used, and every member reaches it there; when that member stops,
// the next request activates the cart on another member (empty: this
// example keeps carts in memory only).
//
//	go run . -name a -nats-embed 127.0.0.1:4222 -store /tmp/carts-nats -http 127.0.0.1:8081
//	go run . -name b -nats-url nats://127.0.0.1:4222 -http 127.0.0.1:8082
//	go run . -name c -nats-url nats://127.0.0.1:4222 -http 127.0.0.1:8083
//
//	curl -X POST '127.0.0.1:8082/carts/alice?sku=tea&qty=2'  # {"cart":"alice","items":2,"member":"a"}
//	curl '127.0.0.1:8083/carts/alice'                       # the same cart, from another member
//	curl '127.0.0.1:8081/members'
//
// Member a runs the NATS server (with JetStream, its store in -store);
// the others connect to it. Each member runs until interrupted, then
// leaves the cluster (its carts are released at once).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/cluster"
	"github.com/actord/actord/remote"
	"github.com/nats-io/nats-server/v2/server"
)

// Add adds qty of sku to a cart (qty 0 only reads it); the reply is the
// cart's contents.
type Add struct {
	actor.Request[Contents]
	SKU string
	Qty int
}

// Contents is a cart's answer: its items and the member it runs on.
type Contents struct {
	Cart   string         `json:"cart"`
	Items  map[string]int `json:"items"`
	Member string         `json:"member"`
}

// Cart is the entity: only its behaviour touches its fields.
type Cart struct {
	actor.Actor
	id, member string
	items      map[string]int
}

func (c *Cart) OnAdd(m *Add) actor.Allocation {
	if m.SKU != "" && m.Qty != 0 {
		c.items[m.SKU] += m.Qty
	}
	items := make(map[string]int, len(c.items))
	for k, v := range c.items {
		items[k] = v
	}
	m.Reply(Contents{Cart: c.id, Items: items, Member: c.member})
	return actor.Nodelete
}

type config struct {
	name, natsURL, natsEmbed, store, httpAddr string
	ttl                                       time.Duration
}

func main() {
	var cfg config
	flag.StringVar(&cfg.name, "name", "", "this member's name (required)")
	flag.StringVar(&cfg.natsURL, "nats-url", "", "the NATS server to connect to")
	flag.StringVar(&cfg.natsEmbed, "nats-embed", "", "run a NATS server with JetStream on this address")
	flag.StringVar(&cfg.store, "store", "", "JetStream store directory of the embedded server (default: a temporary one)")
	flag.StringVar(&cfg.httpAddr, "http", "127.0.0.1:8080", "HTTP address")
	flag.DurationVar(&cfg.ttl, "ttl", 3*time.Second, "membership lease: a dead member's carts move after about this long")
	flag.Parse()
	if cfg.name == "" || (cfg.natsURL == "") == (cfg.natsEmbed == "") {
		fmt.Fprintln(os.Stderr, "need -name, and one of -nats-url and -nats-embed")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, func(natsURL, httpURL string) {
		fmt.Printf("member %s: NATS %s, HTTP %s\n", cfg.name, natsURL, httpURL)
	}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run runs one member until ctx ends; ready is called with the NATS URL
// and the HTTP URL once it serves.
func run(ctx context.Context, cfg config, ready func(natsURL, httpURL string)) error {
	url := cfg.natsURL
	if cfg.natsEmbed != "" {
		host, port, err := net.SplitHostPort(cfg.natsEmbed)
		if err != nil {
			return err
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return err
		}
		store := cfg.store
		if store == "" {
			if store, err = os.MkdirTemp("", "carts-nats"); err != nil {
				return err
			}
			defer os.RemoveAll(store)
		}
		ns, err := server.NewServer(&server.Options{Host: host, Port: p, NoLog: true, NoSigs: true, JetStream: true, StoreDir: store})
		if err != nil {
			return err
		}
		ns.Start()
		defer ns.WaitForShutdown()
		defer ns.Shutdown()
		if !ns.ReadyForConnections(10 * time.Second) {
			return errors.New("embedded NATS server not ready")
		}
		url = ns.ClientURL()
	}

	sys, err := actor.Start()
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		sys.Shutdown(sctx)
	}()
	node, err := remote.Connect(sys, url, cfg.name)
	if err != nil {
		return err
	}
	defer node.Close()
	c, err := cluster.New(sys, node, cluster.WithTTL(cfg.ttl))
	if err != nil {
		return err
	}
	carts, err := cluster.NewKind(c, "cart", remote.JSON[*Add](), remote.JSON[Contents]())
	if err != nil {
		return err
	}
	err = cluster.Host(carts, func(id string) *Cart { return &Cart{id: id, member: cfg.name, items: map[string]int{}} },
		(*Cart).OnAdd, actor.WithPassivation(10*time.Minute))
	if err != nil {
		return err
	}
	jctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = c.Join(jctx)
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		lctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.Leave(lctx)
	}()

	ln, err := net.Listen("tcp", cfg.httpAddr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: handler(c, carts), ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	ready(url, "http://"+ln.Addr().String())
	select {
	case <-ctx.Done():
	case err := <-served:
		return err
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

func handler(c *cluster.Cluster, carts *cluster.Kind[Add, Contents, *Add]) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /members", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, c.Members())
	})
	cart := func(w http.ResponseWriter, r *http.Request) {
		add := &Add{}
		if r.Method == http.MethodPost {
			add.SKU = r.URL.Query().Get("sku")
			add.Qty, _ = strconv.Atoi(r.URL.Query().Get("qty"))
		}
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		got, err := carts.Ask(ctx, r.PathValue("id"), add)
		if err != nil {
			status := http.StatusInternalServerError
			if errors.Is(err, cluster.ErrOwnerLost) || errors.Is(err, cluster.ErrNoHost) {
				status = http.StatusServiceUnavailable // try again
			}
			http.Error(w, err.Error(), status)
			return
		}
		writeJSON(w, got)
	}
	mux.HandleFunc("GET /carts/{id}", cart)
	mux.HandleFunc("POST /carts/{id}", cart)
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
