package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/actord/actord/actor"
)

// config is what the flags set.
type config struct {
	Shards      int           // store actors the keys are spread over
	SessionIdle time.Duration // a session expires after this long unused
	Timeout     time.Duration // deadline of every request; ?timeout= may shorten it
}

// service holds the actor system and its two entity types, and serves them
// over HTTP.
type service struct {
	cfg      config
	log      *slog.Logger
	sys      *actor.System
	shards   *actor.Entities[shard, *shard]     // named "0" to cfg.Shards-1
	sessions *actor.Entities[session, *session] // named by session id

	// Counters, reported by /healthz: sessions is the number of sessions
	// created (by POST /session) and not yet ended.
	sessionsLive, panics, restarts, timeouts, canceled atomic.Int64
}

// newService starts an actor system and spawns the shards.
func newService(cfg config, log *slog.Logger) (*service, error) {
	if cfg.Shards < 1 || cfg.SessionIdle <= 0 || cfg.Timeout <= 0 {
		return nil, fmt.Errorf("kvservice: invalid configuration %+v", cfg)
	}
	s := &service{cfg: cfg, log: log}
	// The error handler is called, on the worker, with every panic recovered
	// from a behaviour (a *actor.PanicError), whether supervision restarts
	// the actor or it terminates.
	sys, err := actor.Start(actor.WithErrorHandler(func(err error) {
		s.panics.Add(1)
		log.Error("actor panicked", "err", err)
		if pe, ok := errors.AsType[*actor.PanicError](err); ok {
			log.Debug("panic stack", "stack", string(pe.Stack))
		}
	}))
	if err != nil {
		return nil, err
	}
	s.sys = sys
	// The zero Budget allows 10 restarts a minute, without backoff.
	s.shards = actor.NewEntities(sys, func(string) *shard { return &shard{restarts: &s.restarts} },
		actor.WithRestart(nil, actor.Budget{}))
	s.sessions = actor.NewEntities(sys, func(id string) *session {
		return &session{id: id, idle: cfg.SessionIdle, created: time.Now(), live: &s.sessionsLive}
	}, actor.WithPassivation(cfg.SessionIdle))
	for i := range cfg.Shards { // spawned now, so that a bad option fails the start
		if _, err := s.shards.Get(context.Background(), strconv.Itoa(i)); err != nil {
			return nil, errors.Join(err, s.close(context.Background()))
		}
	}
	return s, nil
}

// routes maps the endpoints to their handlers (Go 1.22 patterns).
func (s *service) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /kv/{key}", s.handle(s.getKey))
	mux.HandleFunc("PUT /kv/{key}", s.handle(s.putKey))
	mux.HandleFunc("DELETE /kv/{key}", s.handle(s.deleteKey))
	mux.HandleFunc("POST /session", s.handle(s.newSession))
	mux.HandleFunc("GET /session/{id}", s.handle(s.touchSession))
	mux.HandleFunc("GET /healthz", s.handle(s.healthz))
	// Demonstrations: a slow reply, and a shard that panics.
	mux.HandleFunc("GET /slow", s.handle(s.slow))
	mux.HandleFunc("POST /panic/{key}", s.handle(s.panicShard))
	return mux
}

// handler is the shape of every endpoint: read the request, ask an entity
// with ctx, write the answer; or return the error of the ask, which handle
// turns into a status.
type handler func(ctx context.Context, w http.ResponseWriter, r *http.Request) error

// handle runs h with the request's own context, which ends when the client
// goes away, under the service's deadline or a shorter one the client asks
// for with ?timeout=. When ctx ends, the ask ends at once.
func (s *service) handle(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		d := s.cfg.Timeout
		if t, err := time.ParseDuration(r.URL.Query().Get("timeout")); err == nil && t > 0 && t < d {
			d = t
		}
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		if err := h(ctx, w, r); err != nil {
			s.failed(w, r, err)
		}
	}
}

// ask asks the entity name of es through behaviour. An ask that fails with
// ErrTerminated was never delivered: the incarnation ended (passivated,
// say) between EntityPort and the send. Every behaviour here answers
// before its actor ends, so asking again is safe, and reaches the next
// incarnation (as EntitySend does for a plain message).
func ask[T any, A actor.Ref[T], TR, R any, Req interface {
	actor.RequestPtr[TR, R]
	actor.Msg[TR]
}](ctx context.Context, es *actor.Entities[T, A], name string, behaviour func(A, Req) actor.Allocation, req Req) (R, error) {
	for {
		p, err := actor.EntityPort(ctx, es, name, behaviour)
		if err != nil {
			var zero R
			return zero, err
		}
		r, err := actor.Ask(ctx, p, req)
		if !errors.Is(err, actor.ErrTerminated) {
			return r, err
		}
	}
}

// shardOf names the shard, of n, that owns key.
func shardOf(key string, n int) string {
	h := fnv.New32a()
	io.WriteString(h, key)
	return strconv.Itoa(int(h.Sum32() % uint32(n)))
}

// --- Keys ---

func (s *service) getKey(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	key := r.PathValue("key")
	v, err := ask(ctx, s.shards, shardOf(key, s.cfg.Shards), (*shard).onGet, &getReq{key: key})
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, err = w.Write(v)
	return err
}

// maxValue bounds the size of a value.
const maxValue = 1 << 20

func (s *service) putKey(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	// The request's deadline covers reading its body too: a client that
	// stalls mid-upload must not hold the handler (and a shutdown) for ever.
	if dl, ok := ctx.Deadline(); ok {
		_ = http.NewResponseController(w).SetReadDeadline(dl)
	}
	value, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxValue))
	if err != nil {
		code := http.StatusBadRequest
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			code = http.StatusRequestEntityTooLarge
		}
		http.Error(w, "reading the body: "+err.Error(), code)
		return nil
	}
	key := r.PathValue("key")
	created, err := ask(ctx, s.shards, shardOf(key, s.cfg.Shards), (*shard).onPut, &putReq{key: key, value: value})
	switch {
	case err != nil:
		return err
	case created:
		w.WriteHeader(http.StatusCreated)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
	return nil
}

func (s *service) deleteKey(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	key := r.PathValue("key")
	if _, err := ask(ctx, s.shards, shardOf(key, s.cfg.Shards), (*shard).onDelete, &deleteReq{key: key}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// --- Sessions ---

// newSession creates a session under a new id. If its ask fails (the
// client hung up, say), the session may exist or not; if it does, nobody
// knows its id, and it passivates when idle like any other.
func (s *service) newSession(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	id := rand.Text()
	info, err := ask(ctx, s.sessions, id, (*session).onTouch, &touchReq{create: true})
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/session/"+id)
	writeJSON(w, http.StatusCreated, info)
	return nil
}

// touchSession touches a session: errNoSession (404) once it has expired.
func (s *service) touchSession(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	info, err := ask(ctx, s.sessions, r.PathValue("id"), (*session).onTouch, &touchReq{})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

// --- Health ---

// health is what /healthz returns.
type health struct {
	Status   string `json:"status"`
	Keys     []int  `json:"keys_per_shard"`
	Sessions int    `json:"sessions"`
	Panics   int64  `json:"panics"`
	Restarts int64  `json:"restarts"`
	Timeouts int64  `json:"timeouts"`
	Canceled int64  `json:"canceled"`
}

// healthz asks every shard for its key count: it checks that the actors
// answer, not only that the HTTP server does.
func (s *service) healthz(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	h := health{Status: "ok", Keys: make([]int, s.cfg.Shards)}
	code := http.StatusOK
	for i := range h.Keys {
		n, err := ask(ctx, s.shards, strconv.Itoa(i), (*shard).onPing, &pingReq{})
		if err != nil {
			_, msg := statusFor(err)
			h.Status, code, n = "shard "+strconv.Itoa(i)+": "+msg, http.StatusServiceUnavailable, -1
		}
		h.Keys[i] = n
	}
	h.Sessions = int(s.sessionsLive.Load())
	h.Panics, h.Restarts = s.panics.Load(), s.restarts.Load()
	h.Timeouts, h.Canceled = s.timeouts.Load(), s.canceled.Load()
	writeJSON(w, code, h)
	return nil
}

// --- Demonstrations ---

// slow asks shard 0 for a reply that takes ?d= (default 1s). With a
// shorter deadline (?timeout=, or the service's), the ask ends at the
// deadline and the client gets 504; a client that hangs up ends it too.
func (s *service) slow(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	d, err := time.ParseDuration(r.URL.Query().Get("d"))
	if err != nil || d < 0 || d > time.Minute {
		d = time.Second
	}
	msg, err := ask(ctx, s.shards, "0", (*shard).onSlow, &slowReq{d: d})
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, msg+"\n")
	return err
}

// panicShard makes the shard that owns {key} panic: the ask fails with the
// panic (ErrPanic), answered 503, and the shard restarts, empty, for the
// next requests.
func (s *service) panicShard(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	_, err := ask(ctx, s.shards, shardOf(r.PathValue("key"), s.cfg.Shards), (*shard).onCrash, &crashReq{})
	return err // never nil: the shard panics
}

// --- Errors ---

// statusClientClosedRequest is nginx's status for a client that went away
// before the answer: nobody reads it, but it shows in logs.
const statusClientClosedRequest = 499

// statusFor maps the error of an ask to an HTTP status and the message the
// client gets (the error itself, which may hold a panic value, is logged).
// In the order of the tests, with the outcome each stands for:
//
//	errNoKey, errNoSession  Request.Fail: the behaviour's own answer   404
//	actor.ErrPanic          failed: the behaviour panicked              503, retry
//	                        (the shard restarted: a retry reaches it)
//	DeadlineExceeded        timeout: no answer within the deadline      504
//	context.Canceled        the client went away                        499
//	actor.ErrMailboxFull    busy (no mailbox is bounded here)           503, retry
//	actor.ErrTerminated     gone (ask retries it on the next            503, retry
//	                        incarnation, so it is rarely seen here)
//	actor.ErrStopped        the system stopped: shutting down           503
//	anything else           a bug                                       500
func statusFor(err error) (int, string) {
	switch {
	case errors.Is(err, errNoKey), errors.Is(err, errNoSession):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, actor.ErrPanic):
		return http.StatusServiceUnavailable, "crashed; retry"
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, "timed out"
	case errors.Is(err, context.Canceled):
		return statusClientClosedRequest, "canceled"
	case errors.Is(err, actor.ErrMailboxFull), errors.Is(err, actor.ErrTerminated):
		return http.StatusServiceUnavailable, "busy; retry"
	case errors.Is(err, actor.ErrStopped):
		return http.StatusServiceUnavailable, "shutting down"
	default:
		return http.StatusInternalServerError, "internal error"
	}
}

// failed answers a request whose ask failed, with the status statusFor
// gives, and counts and logs the failures of the service.
func (s *service) failed(w http.ResponseWriter, r *http.Request, err error) {
	code, msg := statusFor(err)
	switch code {
	case http.StatusGatewayTimeout:
		s.timeouts.Add(1)
	case statusClientClosedRequest:
		s.canceled.Add(1)
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
	}
	if code >= 500 {
		s.log.Warn("request failed", "method", r.Method, "path", r.URL.Path, "status", code, "err", err)
	}
	http.Error(w, msg, code)
}

// --- Shutdown ---

// close ends every session and shard, then stops the actor system. It runs
// after the HTTP server has shut down, so no handler asks any more.
func (s *service) close(ctx context.Context) error {
	// Shutdown stops every live actor (their Stopped hooks run), then the
	// system. Its error repeats the panics that terminated an actor and
	// counts messages never delivered; only actors still alive when ctx
	// ends make the shutdown fail.
	err := s.sys.Shutdown(ctx)
	if errors.Is(err, actor.ErrActorsAlive) {
		return err
	}
	// Every actor terminated: the shutdown succeeded. What Stop repeats
	// happened earlier (a panic was logged at ERROR when it happened), so
	// the line says so in counts and keeps the repeat itself for DEBUG.
	panics, undelivered := stopReport(err)
	s.log.Info("actor system stopped cleanly", "earlier_panics", panics, "undelivered_messages", undelivered)
	if err != nil {
		s.log.Debug("stop report", "report", err)
	}
	return nil
}

// stopReport counts the panics Stop's error repeats and tells whether it
// reports undelivered messages (its text then says how many).
func stopReport(err error) (panics int, undelivered string) {
	undelivered = "none"
	if err == nil {
		return 0, undelivered
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		switch {
		case errors.Is(e, actor.ErrPanic): // a *PanicError, or "n more panics not kept"
			panics++
		case errors.Is(e, actor.ErrUndelivered):
			undelivered = e.Error()
		}
	}
	return panics, undelivered
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
