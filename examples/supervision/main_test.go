package main

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/actord/actord/actor"
)

// TestMain checks, after the tests, that no goroutine outlives the
// example's system.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Within its budget the worker restarts after each poisoned task, loses
// none of the others, and ends normally (its pill); the watcher hears why.
// The sink receives every item through its small bounded mailbox.
func TestWithinBudget(t *testing.T) {
	r, err := run(20, 2, 3, 500, 4)
	if err != nil {
		t.Fatal(err)
	}
	if r.Completed != 18 || r.Restarts != 2 || r.Starts != 3 || r.BudgetExhausted != 0 {
		t.Fatalf("completed %d, restarts %d, starts %d, budget exhausted %d; want 18, 2, 3, 0",
			r.Completed, r.Restarts, r.Starts, r.BudgetExhausted)
	}
	if r.Reason != actor.ReasonNormal || r.WatchNotices != 1 {
		t.Fatalf("reason %v, %d notices; want normal, 1", r.Reason, r.WatchNotices)
	}
	if r.Received != r.Items {
		t.Fatalf("sink received %d of %d items", r.Received, r.Items)
	}
}

// Past its budget the worker terminates (ReasonBudget), and the watcher
// is told so.
func TestPastBudget(t *testing.T) {
	r, err := run(20, 4, 3, 200, 8)
	if err != nil {
		t.Fatal(err)
	}
	if r.Completed != 16 || r.Restarts != 3 || r.Starts != 4 || r.BudgetExhausted != 1 {
		t.Fatalf("completed %d, restarts %d, starts %d, budget exhausted %d; want 16, 3, 4, 1",
			r.Completed, r.Restarts, r.Starts, r.BudgetExhausted)
	}
	if r.Reason != actor.ReasonBudget || r.WatchNotices != 1 {
		t.Fatalf("reason %v, %d notices; want budget, 1", r.Reason, r.WatchNotices)
	}
	if r.Received != r.Items {
		t.Fatalf("sink received %d of %d items", r.Received, r.Items)
	}
}

// Flags that the example cannot run with are refused: run used to wait for
// ever for a termination notice that such flags never bring (fewer tasks
// than poisoned ones, a budget of 0, which means the default, or -1, no
// limit).
func TestRunRefusesBadFlags(t *testing.T) {
	for _, c := range []struct{ tasks, poison, budget, items, bound int }{
		{2, 4, 3, 10, 4},
		{20, 4, 0, 10, 4},
		{20, 4, -1, 10, 4},
		{20, 6, 3, 10, 4},
		{20, 4, 3, 10, 0},
	} {
		done := make(chan error, 1)
		go func() { _, err := run(c.tasks, c.poison, c.budget, c.items, c.bound); done <- err }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("run%+v: no error", c)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("run%+v did not return", c)
		}
	}
}
