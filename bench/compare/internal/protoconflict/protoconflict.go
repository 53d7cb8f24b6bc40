// Package protoconflict lets protoactor-go and hollywood share one binary.
//
// Both register a protobuf message named actor.PID (protoactor-go's file is
// "actor.proto", hollywood's "actor/actor.proto"), and the protobuf runtime
// panics at start-up on the second registration unless the environment
// variable GOLANG_PROTOBUF_REGISTRATION_CONFLICT is "warn" or "ignore". The
// variable is read when the conflict happens, during the peers' package
// initialisation, so it cannot be set from main or TestMain, which run after
// it. This package sets it from its own init instead: it imports nothing but
// os, and its import path sorts before both peers', and since Go 1.21 a
// program initialises its packages in import-path order among those whose
// imports are initialised (the Go specification, "Package initialization"),
// so this init runs before theirs. Import it (blank) from every package that
// links both peers. A value already set in the environment is kept.
//
// Neither peer uses the protobuf registry for local messaging, so ignoring
// the conflict does not change what the benchmarks measure.
package protoconflict

import "os"

// Env is the protobuf runtime's conflict-policy variable.
const Env = "GOLANG_PROTOBUF_REGISTRATION_CONFLICT"

func init() {
	if os.Getenv(Env) == "" {
		if err := os.Setenv(Env, "ignore"); err != nil {
			panic("protoconflict: " + err.Error())
		}
	}
}
