package stealing_test

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/actord/actord/stealing"
)

// A heuristic chosen by name, as from a command-line flag, and the
// victims its selector picks: LongestVictim picks the worker whose last
// steal attempt is oldest.
func ExampleByName() {
	h, ok := stealing.ByName("longest")
	fmt.Println(h, ok)
	sel := h.NewSelector(3)
	r := rand.New(rand.NewPCG(1, 2))
	sel.Attempt(0) // worker 0 looks for work: its stamp is now the newest
	sel.Attempt(1)
	fmt.Println("worker 1 steals from", sel.Victim(1, r))
	_, ok = stealing.ByName("fastest")
	fmt.Println(ok)
	// Output:
	// longest true
	// worker 1 steals from 2
	// false
}

type queue struct{ name string }

// ownerHooks records each queue's owner at the moments the swap lets it
// change: while the queue is in no slot.
type ownerHooks struct {
	owner         map[*queue]int
	thief, victim int
	given, taken  *queue
}

func (h *ownerHooks) Giving(q *queue)   { h.owner[q] = h.victim; h.given = q }
func (h *ownerHooks) Ungiving(q *queue) { h.owner[q] = h.thief }
func (h *ownerHooks) Taking(q *queue)   { h.owner[q] = h.thief; h.taken = q }

// Two workers own one slot each; worker 1 steals worker 0's queue by
// exchanging the two slots' pointers, keeping the owners exact with hooks.
func ExampleTrySwapHooked() {
	a, b := &queue{"a"}, &queue{"b"}
	slots := make([]atomic.Pointer[queue], 2)
	slots[0].Store(a) // worker 0's slot
	slots[1].Store(b) // worker 1's slot
	h := &ownerHooks{owner: map[*queue]int{a: 0, b: 1}, thief: 1, victim: 0}
	ok := stealing.TrySwapHooked(slots, 0, 1, h)
	fmt.Println("swapped:", ok)
	fmt.Println("slot 0:", slots[0].Load().name, "slot 1:", slots[1].Load().name)
	fmt.Println("owner of a:", h.owner[a], "owner of b:", h.owner[b])
	// Output:
	// swapped: true
	// slot 0: b slot 1: a
	// owner of a: 1 owner of b: 0
}
