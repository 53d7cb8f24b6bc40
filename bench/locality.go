package bench

import (
	"fmt"

	"github.com/actord/actord/actor"
)

// ---- locality (share and noshare) ------------------------------------------
//
// Adapted from the scheduler chapter's locality benchmark: churn (see
// churn.go) where each client owns an array of Words 64-bit words and, before
// each arrival, increments Cells random cells of it.
//
//   - noshare: the client keeps its array. An actor stays on its queue, so
//     its data stays in the cache of the worker serving that queue unless
//     the queue is stolen.
//   - share: the arrival carries the array and the spot hands it to the
//     client it wakes, so the array changes owner, and usually worker, on
//     every operation (the scheduler chapter's
//     spots[r].V(a); a = spots[r].P()).
//
// The scheduler chapter gives no array size, cells per operation or spot
// count. We use 2048 words (16 KiB, half of a 32 KiB L1 data cache) and 64
// cells per operation (64 random cache lines of the array's 256), 100 clients
// per worker (the scheduler chapter's left column) and half as many spots, as
// for churn: 50 clients per worker circulate, so a worker's circulating arrays
// (800 KiB) overflow its private caches and touching them costs about as much
// as the messaging. (With few circulating clients, such as the scheduler
// chapter's source default of threads minus processors spots, the run is
// dominated by the latency of waking the next client instead; see
// BENCHMARKS.md.)

// LocalityDefault is the locality benchmark's size on workers workers (see
// above), with about 500,000 operations in all (5 million with
// ACTORD_BENCH_FULL=1).
func LocalityDefault(workers int, share bool) ChurnSize {
	workers = max(workers, 1)
	clients, total := 100*workers, 500_000
	if Full() {
		total *= 10
	}
	return ChurnSize{
		Clients:    clients,
		Spots:      clients / 2,
		Iterations: max(total/clients, 1),
		Words:      2048,
		Cells:      64,
		Share:      share,
	}
}

func checkLocality(sz ChurnSize) {
	if sz.Words < 1 || sz.Cells < 1 {
		panic(fmt.Sprintf("bench: locality needs Words and Cells >= 1, got %+v", sz))
	}
}

// Locality runs the locality benchmark (share or noshare, by sz.Share) on a
// fresh sys and stops it.
func Locality(sys *actor.System, sz ChurnSize) (ChurnResult, error) {
	checkLocality(sz)
	return Churn(sys, sz)
}

// LocalityChan is Locality on goroutines and channels (see ChurnChan); with
// share the array is passed through the channel.
func LocalityChan(sz ChurnSize) ChurnResult {
	checkLocality(sz)
	return ChurnChan(sz)
}
