package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/actortest"
)

// TestMain checks that no goroutine outlives the tests: the system, the
// load generators and the HTTP servers are all stopped.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// The HTTP surface end to end: hits through the named port, counts asked of
// the counter, the scheduler's metrics on /metrics, and a clean close.
func TestServe(t *testing.T) {
	m, err := start(time.Hour, quiet())
	require.NoError(t, err)
	srv := httptest.NewServer(m.handler())
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	for range 3 {
		code, _ := get("/hit/home")
		assert.Equal(t, http.StatusNoContent, code)
	}
	code, _ := get("/hit/about")
	assert.Equal(t, http.StatusNoContent, code)
	code, body := get("/counts") // after the hits: one sender, FIFO through one actor
	require.Equal(t, http.StatusOK, code)
	var pages map[string]int
	require.NoError(t, json.Unmarshal([]byte(body), &pages))
	assert.Equal(t, map[string]int{"home": 3, "about": 1}, pages)

	code, body = get("/metrics")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "actord_messages_sent_total")
	assert.Contains(t, body, "actord_gulp_size_bucket")
	assert.Contains(t, body, "actord_timers_pending 1", "the periodic timer is pending")

	require.NoError(t, m.close(context.Background()))
	code, body = get("/hit/home")
	assert.Equal(t, http.StatusServiceUnavailable, code, "the name is released with its actor")
	assert.Contains(t, body, actor.ErrNoName.Error())
}

// The load generators send through the named port until their context
// ends, and the counter sees their hits.
func TestGenerate(t *testing.T) {
	m, err := start(time.Hour, quiet())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := m.generate(ctx, 2)
	p, err := actor.Lookup[*counts](m.sys, countsName)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		pages, err := actor.Ask(context.Background(), p, &counts{})
		return err == nil && pages["generated-0"] > 0 && pages["generated-1"] > 0
	}, 10*time.Second, time.Millisecond)
	cancel()
	<-done
	require.NoError(t, m.close(context.Background()))
}

// The counter alone, on the test kit's deterministic system: a tick logs
// the rate from the second one on, and counts are copies.
func TestCounterTicks(t *testing.T) {
	sys := actortest.Start(t)
	var log strings.Builder
	c := &counter{pages: map[string]int{}, log: slog.New(slog.NewTextHandler(&log, nil))}
	_, err := actor.Spawn(sys, c)
	require.NoError(t, err)
	for _, page := range []string{"a", "b", "a"} {
		require.NoError(t, actor.Send(c, &hit{page: page}, (*counter).onHit))
	}
	require.NoError(t, actor.Send(c, &tick{}, (*counter).onTick))
	require.NoError(t, actor.Send(c, &hit{page: "a"}, (*counter).onHit))
	require.NoError(t, actor.Send(c, &tick{}, (*counter).onTick))
	asks, err := actor.Bind(c, (*counter).onCounts)
	require.NoError(t, err)
	pages := actortest.Ask(t, asks, &counts{})
	assert.Equal(t, map[string]int{"a": 3, "b": 1}, pages)
	pages["a"] = 100 // the asker's copy
	assert.Equal(t, 3, actortest.Ask(t, asks, &counts{})["a"])
	require.NoError(t, actor.SendPill(c, actor.FinishedMsg))
	assert.Equal(t, 1, strings.Count(log.String(), "msg=hits"), "only the second tick has a previous one")
	assert.Contains(t, log.String(), "total=4")
}

// Page names come from clients: past maxPages distinct ones, hits count
// under otherPages, so input cannot grow the counter without bound.
func TestCounterBoundsPages(t *testing.T) {
	sys := actortest.Start(t)
	c := &counter{pages: map[string]int{}, log: slog.New(slog.DiscardHandler)}
	_, err := actor.Spawn(sys, c)
	require.NoError(t, err)
	for i := range maxPages + 10 {
		require.NoError(t, actor.Send(c, &hit{page: fmt.Sprint("p", i)}, (*counter).onHit))
	}
	require.NoError(t, actor.Send(c, &hit{page: "p0"}, (*counter).onHit)) // known: counted by name
	asks, err := actor.Bind(c, (*counter).onCounts)
	require.NoError(t, err)
	pages := actortest.Ask(t, asks, &counts{})
	assert.Len(t, pages, maxPages+1)
	assert.Equal(t, 10, pages[otherPages])
	assert.Equal(t, 2, pages["p0"])
	require.NoError(t, actor.SendPill(c, actor.FinishedMsg))
}

// start with a period SendEvery refuses fails, and stops its system: the
// counter, spawned already, used to stay alive, and Stop waited for ever.
func TestStartFailsCleanly(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		_, err := start(0, slog.New(slog.DiscardHandler))
		done <- err
	}()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, actor.ErrBadPeriod)
	case <-time.After(20 * time.Second):
		t.Fatal("start(0) did not return")
	}
}
