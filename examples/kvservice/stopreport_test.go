package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/actord/actord/actor"
)

// TestStopReport: the shutdown line counts the panics Stop repeats and
// names undelivered messages, instead of logging the report as if the
// shutdown had failed.
func TestStopReport(t *testing.T) {
	if p, u := stopReport(nil); p != 0 || u != "none" {
		t.Fatalf("nil: %d %q", p, u)
	}
	err := errors.Join(&actor.PanicError{Value: "boom"}, fmt.Errorf("%w: 2 messages", actor.ErrUndelivered))
	p, u := stopReport(err)
	if p != 1 || u != fmt.Sprintf("%v: 2 messages", actor.ErrUndelivered) {
		t.Fatalf("got %d %q", p, u)
	}
}
