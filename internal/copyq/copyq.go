// Package copyq implements a copy queue: a queue of values stored by value in
// one growable array, designed for the gulping pattern, where a producer side
// only appends and a consumer side, after taking the whole queue, only pops
// until it is empty.
//
// Next appends an element in place, doubling the array when it is full
// (amortised O(1), and no allocation at all once the array has grown to the
// working-set size). A caller that must not allocate at that point (a
// producer holding a spin lock) checks Full first, allocates a larger array
// itself with NewArray outside its critical section, and hands it over with
// Adopt. PopRef is an index increment (O(1), no shifting). Reset, called when
// a drained queue is handed back, clears the popped values (so the garbage
// collector can reclaim what they referenced) and applies the reclamation
// rule.
//
// # Reclamation
//
// An array shrinks only after drains that used less than half of it, and
// never below a floor: the half-use check keeps a queue whose load peaks just
// above a power of two from oscillating between two sizes. In Go every shrink
// is a new allocation plus a copy, so shrinking a little after every such
// drain would allocate on nearly every drain; instead the array is
// reallocated at half its capacity after a streak of consecutive under-half
// drains that is both ReclaimAfter drains long and at least ReclaimAge old.
// Since each of those drains used less than half, the halved array still
// holds the recent peak, so no regrowth follows; capacity converges to at
// most twice the recent peak. The window is long because buffers circulate
// between queues whose loads differ (a gulp swaps buffers), and a short window
// would halve buffers that the next busy queue regrows at once
// (docs/design.md). It is measured in time as well as in drains because a busy
// worker makes thousands of drains per millisecond: a window of drains alone
// let the buffers of a stream from outside the system shrink and regrow after
// every scheduling hiccup, the garbage slowing every sender (write barriers,
// assists, collections). The clock is read once per ReclaimAfter under-half
// drains, never per drain. Shrink releases a grown array at once, for queues
// that have gone idle.
package copyq

import "time"

const (
	// ReclaimAfter is the number of consecutive drains that used less than
	// half of the array after which the array may be halved, and the
	// period at which the clock is read during such a streak.
	ReclaimAfter = 1024
	// ReclaimAge is how long such a streak must have lasted (from its
	// ReclaimAfter-th drain) before the array is halved.
	ReclaimAge = time.Second
)

// clock returns a monotonic time in nanoseconds, never 0 (0 marks "not
// read"). A variable so that tests can drive it.
var clock = func() int64 { return int64(time.Since(epoch)) + 1 }

var epoch = time.Now()

// Queue is a copy queue of T. The zero value is an empty queue with no storage.
// A Queue is not safe for concurrent use; the executor guards it with its
// mailbox lock or owns it exclusively while draining.
type Queue[T any] struct {
	buf  []T // live elements are buf[head:]; len(buf) counts every push since the last Reset
	head int // index of the next element to pop
	// underHalf counts consecutive Resets whose drained length was below half
	// the capacity, and underSince is the clock at the streak's
	// ReclaimAfter-th (0 before it); both travel with the array when queues
	// are swapped.
	underHalf  int
	underSince int64
}

// New returns an empty queue with room for capacity elements.
func New[T any](capacity int) Queue[T] {
	if capacity < 0 {
		capacity = 0
	}
	return Queue[T]{buf: make([]T, 0, capacity)}
}

// Len returns the number of elements not yet popped.
func (q *Queue[T]) Len() int { return len(q.buf) - q.head }

// Pushed returns the number of elements pushed since the last Reset (popped or not).
func (q *Queue[T]) Pushed() int { return len(q.buf) }

// Cap returns the capacity of the underlying array.
func (q *Queue[T]) Cap() int { return cap(q.buf) }

// Full reports whether the next append needs a larger array.
func (q *Queue[T]) Full() bool { return len(q.buf) == cap(q.buf) }

// GrowCap returns the capacity the next growth doubles to (at least 1).
func (q *Queue[T]) GrowCap() int { return max(2*cap(q.buf), 1) }

// NewArray returns an empty array of the given capacity, for Adopt.
func NewArray[T any](capacity int) []T { return make([]T, 0, max(capacity, 0)) }

// Adopt moves the queue's elements into arr, an empty array from NewArray,
// and keeps arr as the queue's array, if arr is larger than the current one;
// otherwise it does nothing and reports false. It never allocates.
func (q *Queue[T]) Adopt(arr []T) bool {
	if cap(arr) <= cap(q.buf) {
		return false
	}
	arr = arr[:len(q.buf)]
	copy(arr, q.buf)
	q.buf = arr
	return true
}

// Shrink replaces the array of an empty queue (every element popped, or
// none pushed) whose capacity is above floor by arr, an empty array from
// NewArray(floor), and reports whether it did. It never allocates.
func (q *Queue[T]) Shrink(floor int, arr []T) bool {
	if q.head != len(q.buf) || cap(q.buf) <= floor || cap(arr) >= cap(q.buf) {
		return false
	}
	clear(q.buf)
	q.buf, q.head, q.underHalf, q.underSince = arr[:0], 0, 0, 0
	return true
}

// grow doubles the capacity (at least 1), keeping the elements and the head.
// Kept out of line so that Next stays small where it is inlined.
//
//go:noinline
func (q *Queue[T]) grow() {
	c := 2 * cap(q.buf)
	if c == 0 {
		c = 1
	}
	nb := make([]T, len(q.buf), c)
	copy(nb, q.buf)
	q.buf = nb
}

// Next appends a new element and returns a pointer to it, for the caller to
// fill in place; with large T this avoids building the value elsewhere and
// copying it. The element is zero (Reset clears every used slot). The pointer
// is valid until the next Next.
func (q *Queue[T]) Next() *T {
	if len(q.buf) == cap(q.buf) {
		q.grow()
	}
	q.buf = q.buf[:len(q.buf)+1]
	return &q.buf[len(q.buf)-1]
}

// PopRef removes the oldest element and returns a pointer to it, or nil when
// the queue is empty. The element stays valid until Reset, even if later
// pushes reallocate the array (the pointer then keeps the old array alive).
func (q *Queue[T]) PopRef() *T {
	if q.head == len(q.buf) {
		return nil
	}
	q.head++
	return &q.buf[q.head-1]
}

// Peek returns a pointer to the oldest element without removing it, or
// nil when the queue is empty.
func (q *Queue[T]) Peek() *T {
	if q.head == len(q.buf) {
		return nil
	}
	return &q.buf[q.head]
}

// LastPopped returns a pointer to the element most recently popped since the
// last Reset (by PopRef), or nil if none was.
func (q *Queue[T]) LastPopped() *T {
	if q.head == 0 {
		return nil
	}
	return &q.buf[q.head-1]
}

// Reset empties the queue for reuse: it clears every slot used since the last
// Reset, so no stale reference is kept alive, and applies the reclamation rule
// (see the package documentation) with the given capacity floor.
func (q *Queue[T]) Reset(floor int) {
	used := len(q.buf)
	clear(q.buf)
	q.buf = q.buf[:0]
	q.head = 0
	c := cap(q.buf)
	if c <= floor || 2*used >= c {
		q.underHalf, q.underSince = 0, 0
		return
	}
	q.underHalf++
	if q.underHalf%ReclaimAfter != 0 {
		return
	}
	now := clock()
	if q.underSince == 0 {
		q.underSince = now // the streak is ReclaimAfter long: now it must age
		return
	}
	if now-q.underSince < int64(ReclaimAge) {
		return
	}
	q.underHalf, q.underSince = 0, 0
	nc := max(c/2, floor)
	q.buf = make([]T, 0, nc)
}
