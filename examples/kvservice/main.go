// Command kvservice is an HTTP key-value service built on actors, with the
// standard library's net/http only. It has the shape of every service on
// actord: entity types (actor.NewEntities), each a set of actors named by
// a key, and HTTP handlers that ask an entity by its name with the
// request's context and turn the error of the ask into a status, in one
// function. It shows:
//
//   - keys sharded over store entities, named "0" to "n-1", each owning a
//     plain map (shard.go);
//   - a session entity per client, named by its id, spawned
//     WithPassivation: idle for the session timeout, it ends by itself
//     (session.go). Only POST /session creates a session: a GET of an
//     unknown or expired id reaches a new incarnation that was never
//     created, which answers 404 and ends at once, so an expired session
//     stays expired;
//   - a shard spawned WithRestart: a panic is reported to the error
//     handler, the request that caused it gets 503, and the shard
//     restarts, empty (its keys are lost), for the next requests, while
//     the service goes on answering. Past its budget (10 restarts a
//     minute) it terminates, and the next request spawns a new one;
//   - deadlines: a request's deadline, or a client that goes away, ends
//     its ask (504, or 499 in the logs);
//   - the errors of an ask mapped to HTTP statuses in one table
//     (statusFor, service.go);
//   - graceful shutdown on SIGINT/SIGTERM: the HTTP server first, then
//     System.Shutdown, which stops every actor, their Stopped hooks run,
//     and then the system (main.go, service.go).
//
// Run it and talk to it:
//
//	go run ./examples/kvservice -addr 127.0.0.1:8080 -shards 8 -session-idle 30s
//
//	curl -X PUT --data-binary hello 127.0.0.1:8080/kv/greeting   # 201 Created (204 when replaced)
//	curl 127.0.0.1:8080/kv/greeting                              # hello
//	curl -X DELETE 127.0.0.1:8080/kv/greeting                    # 204 No Content
//	curl -i -X POST 127.0.0.1:8080/session                       # 201, Location: /session/{id}
//	curl 127.0.0.1:8080/session/{id}                             # touches it; 404 once it has expired
//	curl -i '127.0.0.1:8080/slow?d=2s&timeout=100ms'             # 504 Gateway Timeout
//	curl -i -X POST 127.0.0.1:8080/panic/greeting                # 503; the shard restarts, empty
//	curl 127.0.0.1:8080/healthz                                  # every shard answers; counters
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
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	shards := flag.Int("shards", 8, "store actors the keys are spread over")
	idle := flag.Duration("session-idle", 30*time.Second, "a session expires after this long unused")
	timeout := flag.Duration("timeout", 5*time.Second, "deadline of every request (a client may ask for less with ?timeout=)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	// The first SIGINT or SIGTERM starts a graceful shutdown; a second one
	// ends the process at once (stop restores the default handling).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Error("listen", "err", err)
		os.Exit(1)
	}
	log.Info("kvservice listening", "addr", ln.Addr().String(), "shards", *shards, "session_idle", *idle)
	cfg := config{Shards: *shards, SessionIdle: *idle, Timeout: *timeout}
	if err := serve(ctx, ln, cfg, log); err != nil {
		log.Error("kvservice", "err", err)
		os.Exit(1)
	}
	log.Info("kvservice stopped")
}

// shutdownTimeout bounds the graceful shutdown.
const shutdownTimeout = 10 * time.Second

// serve runs the service on ln until ctx ends, then shuts it down: the HTTP
// server stops accepting and waits for the requests in flight, then the
// actors are ended and the system stopped.
func serve(ctx context.Context, ln net.Listener, cfg config, log *slog.Logger) error {
	svc, err := newService(cfg, log)
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{
		Handler:           svc.routes(),
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served: // the listener failed
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	shutErr := srv.Shutdown(sctx)
	if serveErr == nil {
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			serveErr = err
		}
	}
	// The actors get a timeout of their own: a Shutdown that used up its
	// time on a stuck request must not leave them none.
	actx, cancelActors := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancelActors()
	return errors.Join(serveErr, shutErr, svc.close(actx))
}
