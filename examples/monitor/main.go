// Command monitor is an actor program that shows its scheduler to
// Prometheus while it serves HTTP. It shows:
//
//   - the system's statistics exported with package metrics: a Collector
//     attached to the system, served on /metrics by metrics.Handler
//     (gulps, steals, parks, queue depths, asks and timers per worker);
//   - actors found by name: the counter's ports are registered with
//     actor.Register, and the HTTP handlers find them with actor.Lookup,
//     typed by message, without holding actor pointers;
//   - a periodic timer: actor.SendEvery delivers a tick to the counter every
//     -report interval, and the counter logs the rate of hits since the
//     previous tick;
//   - a load generator: -load goroutines send hits outside the HTTP path,
//     so that the metrics move on their own.
//
// Run it and look:
//
//	go run ./examples/monitor -addr 127.0.0.1:9465 -load 2 -report 2s
//
//	curl 127.0.0.1:9465/hit/home          # counts a hit on "home"
//	curl 127.0.0.1:9465/counts            # every page's hits, asked of the counter
//	curl -s 127.0.0.1:9465/metrics | grep actord_gulp_size
package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9465", "address to listen on")
	load := flag.Int("load", 2, "goroutines sending hits on their own (0: only HTTP requests)")
	report := flag.Duration("report", 2*time.Second, "how often the counter logs the rate of hits")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if *report <= 0 || *load < 0 {
		log.Error("-report must be positive and -load not negative")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Error("listen", "err", err)
		os.Exit(1)
	}
	m, err := start(*report, log)
	if err != nil {
		log.Error("start", "err", err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: m.handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("serve", "err", err)
			stop()
		}
	}()
	loadDone := m.generate(ctx, *load)
	log.Info("serving", "addr", ln.Addr().String(), "metrics", "http://"+ln.Addr().String()+"/metrics")

	<-ctx.Done()
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = errors.Join(srv.Shutdown(sctx))
	<-loadDone
	if err = errors.Join(err, m.close(sctx)); err != nil {
		log.Error("shutdown", "err", err)
		os.Exit(1)
	}
}
