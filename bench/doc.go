// Package bench holds the benchmark programs of the C∀ Actors chapter (and
// those adapted from the C∀ scheduler chapter and the CAF paper), each
// written for actord and, where the comparison makes sense, as the same
// program on plain goroutines and buffered channels. docs/design.md gives
// the full references; in this package "the Actors chapter", "the scheduler
// chapter" and "the CAF paper" name those three sources.
//
// The programs are ordinary functions, so that `go test -bench` (this
// package's tests), the actord server's workloads and the comparison runner
// all run exactly the same code. Default sizes suit a 2-core machine and
// finish quickly; Full selects the sizes the chapters use (set
// ACTORD_BENCH_FULL=1 for `go test -bench`).
//
// Every actor program takes a started *actor.System and returns when its
// actors have all terminated (it calls Stop), reporting Stop's error.
package bench
