// Package actortest helps unit-test actors: a deterministic system that
// a test stops and checks at its end, probes that record what actors send,
// and a request helper.
//
// # A system per test
//
// Start starts a system with one worker, one mailbox and no stealing, so
// behaviours run one at a time in the order their messages were queued, and
// stops it when the test ends, failing the test unless the stop is clean:
//
//	sys := actortest.Start(t)
//
// At the end of the test (t.Cleanup) the kit waits for every actor to
// terminate (DefaultGrace at most), then checks what actor.System.Stop
// reports. By default, each of these fails the test: an actor left alive
// (send the actors the test spawned a poison pill, such as
// actor.FinishedMsg, before the test ends; probes terminate themselves,
// after the other actors, so they receive what those send as they end),
// a behaviour that panicked (also logged, with its stack, when it happens),
// a message that was never delivered. StartWith takes a Policy that accepts
// some of them, for tests that need to.
//
// # Probes
//
// A Probe is an actor that records every message it receives. Give the
// actor under test the probe's port where it expects the port of a
// collaborator, then assert on what arrives:
//
//	totals := actortest.NewProbe[Total](t, sys) // a *Probe[*Total]
//	actor.Send(counter, &Flush{To: totals.Port()}, (*Counter).OnFlush)
//	got := totals.Expect(time.Second) // fails the test after a second
//	if got.N != 3 { ... }
//	totals.ExpectNone(10 * time.Millisecond) // and nothing more
//
// Probes of actor.Reply[R] receive the answers to actor.AskAsync, which is
// how an actor that asks other actors from its behaviours can be tested.
//
// # Requests
//
// Ask is actor.Ask with a timeout (AskTimeout) that fails the test instead
// of returning an error:
//
//	n := actortest.Ask(t, totalPort, &GetTotal{})
//
// # Tests, examples, programs
//
// The kit takes a TB, the part of testing.TB it uses: pass the test's
// *testing.T (or *testing.B). Run provides one outside go test, for
// examples and for programs that check actors at run time. The functions
// that can fail a test fatally (Start, NewProbe, Expect, ExpectNone, Ask)
// must run on the test's goroutine, as t.Fatalf requires.
//
// The package's Example and TestCounter (in example_test.go) test a small
// counter actor from end to end: copy them as a starting point.
package actortest
