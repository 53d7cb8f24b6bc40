package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks, after the tests, that no goroutine outlives the
// pipeline's system.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The pipeline delivers every job through every stage, and the pool reuses
// messages: far fewer are allocated than jobs run.
func TestPipeline(t *testing.T) {
	const jobs, stages, window = 20000, 4, 64
	r, err := run(jobs, stages, window)
	if err != nil {
		t.Fatal(err)
	}
	if want := jobs * (1 + 2 + 3 + 4); r.Sum != want {
		t.Fatalf("checksum %d, want %d", r.Sum, want)
	}
	if r.Allocated > jobs/2 {
		t.Fatalf("%d messages allocated for %d jobs: the pool is not reused", r.Allocated, jobs)
	}
}

// Flags the pipeline cannot run with are refused: a window of 0 waited for
// ever, no stages panicked.
func TestRunRefusesBadFlags(t *testing.T) {
	for _, c := range [][3]int{{10, 4, 0}, {10, 0, 4}, {-1, 4, 4}} {
		if _, err := run(c[0], c[1], c[2]); err == nil {
			t.Errorf("run(%d, %d, %d): no error", c[0], c[1], c[2])
		}
	}
}
