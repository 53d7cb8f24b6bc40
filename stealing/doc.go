// Package stealing holds the pure algorithms of queue stealing in an inverted
// (message-centric) actor executor, free of executor types: the wait-free swap
// of two queue pointers in a shared slot array, and victim-selection
// heuristics.
//
// # The swap
//
// Workers own disjoint, contiguous ranges of a shared []atomic.Pointer[T]
// ("slots"); actors keep their own fixed pointers to the queue objects, so
// senders never look at the slots and are never disturbed by a swap. A thief
// steals a victim's queue by exchanging the pointer in one of the victim's
// slots with the pointer in one of its own slots. TrySwapHooked does this with
// try_swap_queues, the swap of the C∀ actor executor (docs/design.md gives the
// reference): two loads, a nil check, and two compare-and-swaps, with no loop,
// no lock and no retry, so it is wait-free. nil marks a slot in the middle of
// a swap: only a thief writes nil, only into its own slot, and only that thief
// writes the slot again (the invariant on which the algorithm's correctness
// proof rests, and which this package's tests check over every interleaving of
// up to three thieves). Callers must skip nil slots, and a worker's own slots
// are nil only while that worker is itself inside TrySwapHooked.
//
// # Victim selection
//
// A Heuristic creates a Selector for n workers. None never steals; Random
// picks a uniformly random other worker; LongestVictim (the C∀ executor's
// longest-victim heuristic, and actord's default) keeps a timestamp per
// worker, written each time that worker attempts a steal, and picks the worker
// whose timestamp is oldest: the worker that has gone longest without looking
// for work is the likeliest to have a backlog. Its timestamps come from a
// logical clock (a counter that every steal attempt advances), since only
// their order matters.
package stealing
