// Package copyq implements the copy queue of the Actors chapter: a queue of
// values stored by value in one growable array, designed for the gulping
// pattern, where a producer side only pushes and a consumer side, after taking
// the whole queue, only pops until it is empty.
//
// Push appends, doubling the array when it is full (amortised O(1), and no
// allocation at all once the array has grown to the working-set size); Pop is
// an index increment (O(1), no shifting). Reset, called when a drained queue is
// handed back, clears the popped values (so the garbage collector can reclaim
// what they referenced) and applies the reclamation rule.
//
// # Reclamation
//
// The chapter shrinks an array by one element after a gulp that used less than
// half of it, while its capacity is above a small floor; the half-use check is
// what stops a queue that peaks at 19 elements from oscillating between 20 and
// 36 slots. In C the shrink is an in-place realloc. In Go every shrink is a new
// allocation plus a copy, so shrinking one element per gulp would allocate on
// nearly every gulp. We keep the rule (shrink only after under-half use, never
// below the floor) but batch it: after ReclaimAfter consecutive under-half
// drains the array is reallocated at half its capacity. Since each of those
// drains used less than half, the halved array still holds the recent peak, so
// no regrowth follows; capacity converges to at most twice the recent peak, the
// same bound the chapter's rule reaches.
//
// The window must be long. Executor queues see gulp sizes that vary widely
// from one gulp to the next, and buffers circulate between mailboxes (a gulp
// swaps the mailbox's buffer with the worker's spare), so a short window
// (8 was measured) halves buffers that the next busy mailbox regrows at
// once: on the executor benchmark that churned 1.3 GB through the allocator
// and let the garbage collector dominate the run. With 64 consecutive
// under-half drains required, a buffer shrinks only when its load has really
// fallen for a while, and a shrink costs at most one allocation per 64 gulps.
package copyq

// ReclaimAfter is the number of consecutive drains that used less than half of
// the array after which the array is halved.
const ReclaimAfter = 64

// Queue is a copy queue of T. The zero value is an empty queue with no storage.
// A Queue is not safe for concurrent use; the executor guards it with its
// mailbox lock or owns it exclusively while draining.
type Queue[T any] struct {
	buf  []T // live elements are buf[head:]; len(buf) counts every push since the last Reset
	head int // index of the next element to pop
	// underHalf counts consecutive Resets whose drained length was below half
	// the capacity; it travels with the array when queues are swapped.
	underHalf int
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

// Push appends v, doubling the array when it is full.
func (q *Queue[T]) Push(v T) {
	if len(q.buf) == cap(q.buf) {
		q.grow()
	}
	q.buf = append(q.buf, v) // never reallocates: room was made above
}

// grow doubles the capacity (at least 1), keeping the elements and the head.
// Kept out of line so that Push and Next stay small where they are inlined.
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
// is valid until the next Push or Next.
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

// LastPopped returns a pointer to the element most recently popped since the
// last Reset (by Pop or PopRef), or nil if none was.
func (q *Queue[T]) LastPopped() *T {
	if q.head == 0 {
		return nil
	}
	return &q.buf[q.head-1]
}

// Pop removes and returns the oldest element; ok is false when the queue is empty.
// The popped slot keeps its value until Reset clears it.
func (q *Queue[T]) Pop() (v T, ok bool) {
	if q.head == len(q.buf) {
		return v, false
	}
	v = q.buf[q.head]
	q.head++
	return v, true
}

// Reset empties the queue for reuse: it clears every slot used since the last
// Reset, so no stale reference is kept alive, and applies the reclamation rule
// (see the package documentation) with the given capacity floor. It reports
// whether the array was reallocated at a smaller capacity.
func (q *Queue[T]) Reset(floor int) (shrunk bool) {
	used := len(q.buf)
	clear(q.buf)
	q.buf = q.buf[:0]
	q.head = 0
	c := cap(q.buf)
	if c <= floor || 2*used >= c {
		q.underHalf = 0
		return false
	}
	q.underHalf++
	if q.underHalf < ReclaimAfter {
		return false
	}
	q.underHalf = 0
	nc := max(c/2, floor)
	q.buf = make([]T, 0, nc)
	return true
}
