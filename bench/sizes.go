package bench

import "os"

// Full reports whether the chapters' full sizes were requested with the
// environment variable ACTORD_BENCH_FULL=1 (they take minutes and need many
// cores to be meaningful).
func Full() bool { return os.Getenv("ACTORD_BENCH_FULL") == "1" }

// ExecutorDefault is the executor benchmark's size: the Actors chapter's
// 40,000 actors in groups of 100 for 400 rounds with ACTORD_BENCH_FULL=1
// (1.6 billion messages), else 4,000 actors, 100 per group, 10 rounds
// (4 million messages).
func ExecutorDefault() ExecutorSize {
	if Full() {
		return ExecutorSize{Actors: 40000, Set: 100, Rounds: 400}
	}
	return ExecutorSize{Actors: 4000, Set: 100, Rounds: 10}
}
