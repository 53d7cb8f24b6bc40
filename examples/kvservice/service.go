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
	"sync"
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

// service holds the actor system, the shards and the sessions, and serves
// them over HTTP.
type service struct {
	cfg config
	log *slog.Logger
	sys *actor.System

	// shards[i] is the live incarnation of shard i; the handlers read it
	// without a lock, and respawn replaces it after a crash.
	shards []atomic.Pointer[shard]

	sessions sync.Map // session id -> *session

	mu      sync.Mutex // serializes respawns, session spawns and close
	closing bool       // set by close: nothing is spawned any more

	// Counters, reported by /healthz.
	panics, respawns, timeouts, canceled atomic.Int64
}

// newService starts an actor system and spawns the shards.
func newService(cfg config, log *slog.Logger) (*service, error) {
	if cfg.Shards < 1 || cfg.SessionIdle <= 0 || cfg.Timeout <= 0 {
		return nil, fmt.Errorf("kvservice: invalid configuration %+v", cfg)
	}
	s := &service{cfg: cfg, log: log, shards: make([]atomic.Pointer[shard], cfg.Shards)}
	// The error handler is called, on the worker, with every panic recovered
	// from a behaviour (a *actor.PanicError): the panicking actor has been
	// terminated, everything else goes on. Stop reports the panics again.
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
	for i := range s.shards {
		sh, err := spawnShard(sys)
		if err != nil {
			return nil, errors.Join(err, s.close(context.Background()))
		}
		s.shards[i].Store(sh)
	}
	return s, nil
}

// routes maps the endpoints to their handlers (Go 1.22 patterns).
func (s *service) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /kv/{key}", s.getKey)
	mux.HandleFunc("PUT /kv/{key}", s.putKey)
	mux.HandleFunc("DELETE /kv/{key}", s.deleteKey)
	mux.HandleFunc("POST /session", s.newSession)
	mux.HandleFunc("GET /session/{id}", s.touchSession)
	mux.HandleFunc("GET /healthz", s.healthz)
	// Demonstrations: a slow reply, and a shard that panics.
	mux.HandleFunc("GET /slow", s.slow)
	mux.HandleFunc("POST /panic/{key}", s.panicShard)
	return mux
}

// requestContext is the context every ask of a request is made with: the
// request's own context, which ends when the client goes away, with the
// service's deadline, or a shorter one the client asks for with ?timeout=.
// When it ends, actor.Ask returns its error at once.
func (s *service) requestContext(r *http.Request) (context.Context, context.CancelFunc) {
	d := s.cfg.Timeout
	if t, err := time.ParseDuration(r.URL.Query().Get("timeout")); err == nil && t > 0 && t < d {
		d = t
	}
	return context.WithTimeout(r.Context(), d)
}

// shardFor returns the index and current incarnation of the shard that owns
// key.
func (s *service) shardFor(key string) (int, *shard) {
	i := shardIndex(key, len(s.shards))
	return i, s.shards[i].Load()
}

// shardIndex is the shard, of n, that owns key.
func shardIndex(key string, n int) int {
	h := fnv.New32a()
	io.WriteString(h, key)
	return int(h.Sum32() % uint32(n))
}

// --- Keys ---

func (s *service) getKey(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.requestContext(r)
	defer cancel()
	key := r.PathValue("key")
	i, sh := s.shardFor(key)
	res, err := actor.Ask(ctx, sh.get, &getReq{key: key})
	if err != nil {
		s.shardFailed(w, r, i, sh, err)
		return
	}
	if !res.found {
		http.Error(w, "no such key", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(res.value)
}

// maxValue bounds the size of a value.
const maxValue = 1 << 20

func (s *service) putKey(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.requestContext(r)
	defer cancel()
	// The request's deadline covers reading its body too: a client that
	// stalls mid-upload must not hold the handler (and a shutdown) for ever.
	if dl, ok := ctx.Deadline(); ok {
		_ = http.NewResponseController(w).SetReadDeadline(dl)
	}
	value, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxValue))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	case err != nil:
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	key := r.PathValue("key")
	i, sh := s.shardFor(key)
	created, err := actor.Ask(ctx, sh.put, &putReq{key: key, value: value})
	if err != nil {
		s.shardFailed(w, r, i, sh, err)
		return
	}
	if created {
		w.WriteHeader(http.StatusCreated)
	} else {
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *service) deleteKey(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.requestContext(r)
	defer cancel()
	key := r.PathValue("key")
	i, sh := s.shardFor(key)
	existed, err := actor.Ask(ctx, sh.del, &deleteReq{key: key})
	if err != nil {
		s.shardFailed(w, r, i, sh, err)
		return
	}
	if !existed {
		http.Error(w, "no such key", http.StatusNotFound)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// --- Sessions ---

func (s *service) newSession(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.requestContext(r)
	defer cancel()
	id := rand.Text()
	sess, err := s.spawnSession(id)
	if err != nil {
		s.failed(w, r, err)
		return
	}
	// Its first touch: the session is registered and its idle timer armed
	// already, so it expires even if this ask fails (the client hung up).
	info, err := actor.Ask(ctx, sess.touch, &touchReq{})
	if err != nil {
		s.failed(w, r, err)
		return
	}
	w.Header().Set("Location", "/session/"+id)
	writeJSON(w, http.StatusCreated, info)
}

// spawnSession spawns a session and registers it, unless the service is
// closing (then it fails with actor.ErrStopped).
func (s *service) spawnSession(id string) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, actor.ErrStopped
	}
	sess, err := spawnSession(s.sys, id, s.cfg.SessionIdle, s.forgetSession)
	if err != nil {
		return nil, err
	}
	s.sessions.Store(id, sess)
	return sess, nil
}

// forgetSession is called by a session's behaviour when it ends.
func (s *service) forgetSession(id string) { s.sessions.Delete(id) }

func (s *service) touchSession(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.requestContext(r)
	defer cancel()
	v, ok := s.sessions.Load(r.PathValue("id"))
	if !ok {
		http.Error(w, "no such session", http.StatusNotFound)
		return
	}
	info, err := actor.Ask(ctx, v.(*session).touch, &touchReq{})
	if errors.Is(err, actor.ErrTerminated) {
		// It expired between the lookup and the ask.
		http.Error(w, "no such session", http.StatusNotFound)
		return
	}
	if err != nil {
		s.failed(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

// --- Health ---

// health is what /healthz returns.
type health struct {
	Status   string `json:"status"`
	Keys     []int  `json:"keys_per_shard"`
	Sessions int    `json:"sessions"`
	Panics   int64  `json:"panics"`
	Respawns int64  `json:"respawns"`
	Timeouts int64  `json:"timeouts"`
	Canceled int64  `json:"canceled"`
}

// healthz asks every shard for its key count: it checks that the actors
// answer, not only that the HTTP server does.
func (s *service) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.requestContext(r)
	defer cancel()
	h := health{Status: "ok", Keys: make([]int, len(s.shards))}
	code := http.StatusOK
	for i := range s.shards {
		sh := s.shards[i].Load()
		n, err := actor.Ask(ctx, sh.ping, &pingReq{})
		if err != nil {
			if errors.Is(err, actor.ErrTerminated) {
				s.respawn(i, sh)
			}
			_, msg := statusFor(err)
			h.Status, code, n = "shard "+strconv.Itoa(i)+": "+msg, http.StatusServiceUnavailable, -1
		}
		h.Keys[i] = n
	}
	s.sessions.Range(func(_, _ any) bool { h.Sessions++; return true })
	h.Panics, h.Respawns = s.panics.Load(), s.respawns.Load()
	h.Timeouts, h.Canceled = s.timeouts.Load(), s.canceled.Load()
	writeJSON(w, code, h)
}

// --- Demonstrations ---

// slow asks shard 0 for a reply that takes ?d= (default 1s). With a
// shorter deadline (?timeout=, or the service's), the ask ends at the
// deadline and the client gets 504; a client that hangs up ends it too.
func (s *service) slow(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.requestContext(r)
	defer cancel()
	d, err := time.ParseDuration(r.URL.Query().Get("d"))
	if err != nil || d < 0 || d > time.Minute {
		d = time.Second
	}
	sh := s.shards[0].Load()
	msg, err := actor.Ask(ctx, sh.slow, &slowReq{d: d})
	if err != nil {
		s.shardFailed(w, r, 0, sh, err)
		return
	}
	io.WriteString(w, msg+"\n")
}

// panicShard makes the shard that owns {key} panic. The ask fails with
// the panic (ErrPanic), the service respawns the shard (empty: a crashed actor's
// state is gone) and answers 503; the next requests are served as usual.
func (s *service) panicShard(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.requestContext(r)
	defer cancel()
	i, sh := s.shardFor(r.PathValue("key"))
	if _, err := actor.Ask(ctx, sh.crash, &crashReq{}); err != nil {
		s.shardFailed(w, r, i, sh, err)
		return
	}
	w.WriteHeader(http.StatusNoContent) // not reached: the shard panics
}

// --- Errors ---

// statusClientClosedRequest is nginx's status for a client that went away
// before the answer: nobody reads it, but it shows in logs.
const statusClientClosedRequest = 499

// statusFor maps the errors of an ask to an HTTP status and the message the
// client gets (the error itself, which may hold a panic value, is logged).
func statusFor(err error) (int, string) {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, "timed out" // the actor did not answer in time
	case errors.Is(err, context.Canceled):
		return statusClientClosedRequest, "canceled" // the client went away
	case errors.Is(err, actor.ErrPanic), errors.Is(err, actor.ErrTerminated):
		return http.StatusServiceUnavailable, "crashed; retry" // a retry reaches its successor
	case errors.Is(err, actor.ErrStopped):
		return http.StatusServiceUnavailable, "shutting down"
	default:
		return http.StatusInternalServerError, "internal error"
	}
}

// shardFailed answers a request whose ask to shard i failed. ErrPanic
// means the shard crashed on it (a panic in a behaviour terminates its
// actor), ErrTerminated that it had crashed: it is respawned, so that the
// next request finds a live shard.
func (s *service) shardFailed(w http.ResponseWriter, r *http.Request, i int, sh *shard, err error) {
	if errors.Is(err, actor.ErrPanic) || errors.Is(err, actor.ErrTerminated) {
		s.respawn(i, sh)
	}
	s.failed(w, r, err)
}

// failed answers a request whose ask failed, with the status statusFor
// gives.
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
	s.log.Warn("request failed", "method", r.Method, "path", r.URL.Path, "status", code, "err", err)
	http.Error(w, msg, code)
}

// respawn replaces shard i with a new, empty incarnation if dead is still
// the current one: of the requests that saw the crash, the first respawns
// it and the others find it replaced.
func (s *service) respawn(i int, dead *shard) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing || s.shards[i].Load() != dead {
		return
	}
	sh, err := spawnShard(s.sys)
	if err != nil {
		s.log.Error("respawning a shard", "shard", i, "err", err)
		return
	}
	s.shards[i].Store(sh)
	s.respawns.Add(1)
	s.log.Warn("shard respawned", "shard", i)
}

// --- Shutdown ---

// close ends every session and shard, then stops the actor system. It runs
// after the HTTP server has shut down, so no handler asks any more.
func (s *service) close(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.sessions.Range(func(_, v any) bool {
		actor.Send(v.(*session), &endMsg{}, (*session).onEnd) // ErrTerminated: it expired meanwhile
		return true
	})
	for i := range s.shards {
		if sh := s.shards[i].Load(); sh != nil { // nil: newService failed before spawning it
			actor.SendPill(sh, actor.FinishedMsg)
		}
	}
	// Stop waits until every actor has terminated. Its error repeats the
	// panics (logged already) and counts messages never delivered (a
	// timer that fired just as its actor ended); only actors still alive
	// when ctx ends make the shutdown fail.
	err := s.sys.Stop(ctx)
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
	if err == nil {
		return 0, "none"
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	undelivered = "none"
	for _, e := range errs {
		var pe *actor.PanicError
		switch {
		case errors.As(e, &pe):
			panics++
		case errors.Is(e, actor.ErrPanic): // "n more panics not kept"
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
