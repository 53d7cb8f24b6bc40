package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/actord/actord/stealing"
)

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestConfigDefaults(t *testing.T) {
	c, err := parseConfig(nil, env(nil), io.Discard)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:9464", c.listen)
	require.Equal(t, "mixed", c.workload)
	require.Equal(t, stealing.LongestVictim, c.steal)
	require.Zero(t, c.duration, "run until signalled")
	require.Equal(t, slog.LevelInfo, c.logLevel)
}

func TestConfigEnvAndFlags(t *testing.T) {
	e := env(map[string]string{
		"ACTORD_LISTEN": "127.0.0.1:1", "ACTORD_WORKERS": "3", "ACTORD_QUEUES_PER_WORKER": "4",
		"ACTORD_STEAL": "random", "ACTORD_WORKLOAD": "matrix", "ACTORD_SIZE": "64", "ACTORD_RATE": "12.5",
		"ACTORD_DURATION": "2m", "ACTORD_LOG_FORMAT": "json", "ACTORD_LOG_LEVEL": "debug", "ACTORD_PIN_CPUS": "true",
	})
	c, err := parseConfig(nil, e, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:1", c.listen)
	require.Equal(t, 3, c.workers)
	require.Equal(t, 4, c.queuesPerWorker)
	require.Equal(t, stealing.Random, c.steal)
	require.Equal(t, "matrix", c.workload)
	require.Equal(t, 64, c.size)
	require.Equal(t, 12.5, c.rate)
	require.Equal(t, 2*time.Minute, c.duration)
	require.Equal(t, "json", c.logFormat)
	require.Equal(t, slog.LevelDebug, c.logLevel)
	require.True(t, c.pin)
	require.Len(t, c.options(), 4)

	// A flag on the command line wins over the environment.
	c, err = parseConfig([]string{"-workers", "1", "-steal", "none", "-workload", "pipeline"}, e, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 1, c.workers)
	require.Equal(t, stealing.None, c.steal)
	require.Equal(t, "pipeline", c.workload)
	require.Equal(t, 64, c.size, "still from the environment")
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
	}{
		{args: []string{"-workload", "nope"}},
		{args: []string{"-steal", "greedy"}},
		{args: []string{"-workers", "-1"}},
		{args: []string{"-rate", "-5"}},
		{args: []string{"-rate", "NaN"}},
		{args: []string{"-rate", "+Inf"}},
		{args: []string{"-workload", "pipeline", "-rate", "1e18"}},
		{args: []string{"-workload", "matrix", "-size", "5000000000"}},
		{args: []string{"-workload", "executor", "-size", "1000000000"}},
		{args: []string{"-workers", "5000"}},
		{args: []string{"-workers", "2", "-queues-per-worker", "100000000"}},
		{args: []string{"-log-format", "xml"}},
		{args: []string{"-log-level", "loud"}},
		{args: []string{"-shutdown-timeout", "0s"}},
		{args: []string{"extra"}},
		{args: []string{"-bogus"}},
		{env: map[string]string{"ACTORD_WORKERS": "many"}},
		{env: map[string]string{"ACTORD_WORKLOAD": "nope"}},
	} {
		var out bytes.Buffer
		_, err := parseConfig(tc.args, env(tc.env), &out)
		require.ErrorIs(t, err, errUsage, "%v %v", tc.args, tc.env)
	}
	var out bytes.Buffer
	_, err := parseConfig([]string{"-h"}, env(nil), &out)
	require.True(t, errors.Is(err, flag.ErrHelp))
	require.Contains(t, out.String(), "ACTORD_LISTEN")
	require.Contains(t, out.String(), "balance-multi")
}

// TestStartAttrs: the start-up log line names the values in use, the
// workload's defaults where a flag was left at 0, and no rate for a
// workload that has none.
func TestStartAttrs(t *testing.T) {
	attrs := func(args ...string) map[string]any {
		t.Helper()
		c, err := parseConfig(args, env(nil), io.Discard)
		require.NoError(t, err)
		kv := startAttrs(c, "127.0.0.1:1")
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	m := attrs()
	require.Equal(t, 16, m["queues_per_worker"])
	require.Equal(t, 1000, m["size"])
	require.Equal(t, 5000.0, m["rate"])

	m = attrs("-workload", "pipeline")
	require.Equal(t, 12, m["size"])
	require.Equal(t, 10000.0, m["rate"])

	m = attrs("-workload", "executor", "-queues-per-worker", "4")
	require.Equal(t, 4, m["queues_per_worker"])
	require.Equal(t, 4000, m["size"])
	require.NotContains(t, m, "rate")

	m = attrs("-workload", "matrix", "-size", "64")
	require.Equal(t, 64, m["size"])
}
