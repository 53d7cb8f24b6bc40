package actor_test

import (
	"github.com/actord/actord/actor"
	"github.com/actord/actord/executor"
)

// mustStats returns sys's statistics; sys is a started system.
func mustStats(sys *actor.System) executor.Stats {
	st, err := sys.Stats()
	if err != nil {
		panic(err)
	}
	return st
}

// mustConfig returns sys's configuration; sys is a started system.
func mustConfig(sys *actor.System) executor.Config {
	cfg, err := sys.Config()
	if err != nil {
		panic(err)
	}
	return cfg
}
