package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/metrics"
)

// The names under which the counter's ports are registered.
const (
	hitName    = "counter.hit"
	countsName = "counter.counts"
)

// hit counts one visit of a page.
type hit struct {
	actor.Message
	page string
}

// counts asks for every page's hits so far.
type counts struct {
	actor.Request[map[string]int]
}

// tick is the periodic timer's message: log the rate since the last one.
type tick struct{ actor.Message }

// counter owns the hit counts: only its behaviours touch them, one at a
// time, so they need no lock.
type counter struct {
	actor.Actor
	pages   map[string]int
	total   int
	lastN   int
	lastAt  time.Time
	log     *slog.Logger
	reports int // ticks logged (for tests)
}

// maxPages bounds the pages counted by name: page names come from clients,
// and state that input can grow must be bounded. Hits on further pages
// count under otherPages.
const (
	maxPages   = 1000
	otherPages = "(other)"
)

func (c *counter) onHit(m *hit) actor.Allocation {
	page := m.page
	if _, ok := c.pages[page]; !ok && len(c.pages) >= maxPages {
		page = otherPages
	}
	c.pages[page]++
	c.total++
	return actor.Nodelete
}

func (c *counter) onCounts(m *counts) actor.Allocation {
	m.Reply(maps.Clone(c.pages)) // a copy: the asker reads it on its own goroutine
	return actor.Nodelete
}

func (c *counter) onTick(*tick) actor.Allocation {
	now := time.Now()
	if !c.lastAt.IsZero() {
		rate := float64(c.total-c.lastN) / now.Sub(c.lastAt).Seconds()
		c.log.Info("hits", "total", c.total, "per_second", strconv.FormatFloat(rate, 'f', 0, 64))
	}
	c.lastN, c.lastAt = c.total, now
	c.reports++
	return actor.Nodelete
}

// monitor is the running program: the system, its metrics, the counter.
type monitor struct {
	sys     *actor.System
	metrics http.Handler // the system's statistics in Prometheus' format
	c       *counter
	timer   actor.Timer
}

// start starts the system, attaches the metrics collector, spawns the
// counter, names its ports and sets its periodic timer.
func start(report time.Duration, log *slog.Logger) (*monitor, error) {
	sys, err := actor.Start()
	if err != nil {
		return nil, err
	}
	coll := metrics.NewCollector()
	coll.Attach(sys)
	reg, err := metrics.NewRegistry(coll)
	if err != nil {
		return nil, errors.Join(err, sys.Stop(context.Background()))
	}
	m := &monitor{sys: sys, metrics: metrics.Handler(reg), c: &counter{pages: map[string]int{}, log: log}}
	if err := m.spawn(report); err != nil {
		// The counter, if it was spawned, must terminate, or Stop waits
		// for it for ever.
		_ = actor.SendPill(m.c, actor.FinishedMsg)
		return nil, errors.Join(err, sys.Stop(context.Background()))
	}
	return m, nil
}

func (m *monitor) spawn(report time.Duration) error {
	if _, err := actor.Spawn(m.sys, m.c); err != nil {
		return err
	}
	hits, err := actor.Bind(m.c, (*counter).onHit)
	if err != nil {
		return err
	}
	asks, err := actor.Bind(m.c, (*counter).onCounts)
	if err != nil {
		return err
	}
	ticks, err := actor.Bind(m.c, (*counter).onTick)
	if err != nil {
		return err
	}
	if err := actor.Register(m.sys, hitName, hits); err != nil {
		return err
	}
	if err := actor.Register(m.sys, countsName, asks); err != nil {
		return err
	}
	m.timer, err = actor.SendEvery(ticks, report, &tick{})
	return err
}

// handler serves /hit/{page}, /counts and /metrics. The handlers find the
// counter by name at each request, as code that never saw the actor would.
func (m *monitor) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hit/{page}", func(w http.ResponseWriter, r *http.Request) {
		p, err := actor.Lookup[*hit](m.sys, hitName)
		if err == nil {
			err = p.Send(&hit{page: r.PathValue("page")})
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /counts", func(w http.ResponseWriter, r *http.Request) {
		p, err := actor.Lookup[*counts](m.sys, countsName)
		var pages map[string]int
		if err == nil {
			pages, err = actor.Ask(r.Context(), p, &counts{})
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(pages)
	})
	mux.Handle("GET /metrics", m.metrics)
	return mux
}

// generate starts n goroutines that send hits until ctx ends; the returned
// channel is closed once they have all returned.
func (m *monitor) generate(ctx context.Context, n int) <-chan struct{} {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := actor.Lookup[*hit](m.sys, hitName)
			if err != nil {
				return
			}
			page := fmt.Sprintf("generated-%d", i)
			for ctx.Err() == nil {
				if p.Send(&hit{page: page}) != nil {
					return
				}
				time.Sleep(100 * time.Microsecond)
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	return done
}

// close stops the timer, terminates the counter and stops the system.
func (m *monitor) close(ctx context.Context) error {
	m.timer.Stop()
	return errors.Join(actor.SendPill(m.c, actor.FinishedMsg), m.sys.Stop(ctx))
}
