// Package copyq implements a copy queue: a queue of values stored by value in
// one growable array, designed for the gulping pattern, where a producer side
// only appends and a consumer side, after taking the whole queue, only pops
// until it is empty.
//
// Next appends an element in place, doubling the array when it is full
// (amortised O(1), and no allocation at all once the array has grown to the
// working-set size), up to a segment's length (see Segments). A caller that
// must not allocate at that point (a producer holding a spin lock) checks
// Full first, allocates the array itself with NewArray(GrowCap())
// outside its critical section, and hands it over with Adopt. PopRef is an
// index increment (O(1), no shifting). Reset, called when a drained queue
// is handed back, clears the popped values (so the garbage collector can
// reclaim what they referenced) and applies the reclamation rule.
//
// # Segments
//
// An array never grows past SegmentLen elements by doubling. A full array
// of that size is sealed instead: it joins a list of full segments, in
// order, and a new empty segment becomes the array pushes append to. So
// a backlog of a million elements (an actor flooding another from one
// behaviour) costs one allocation per segment and no copy: doubling copied
// every element about once more, through the garbage collector's write
// barriers, and left the arrays it outgrew as garbage, twice the backlog's
// memory at the last growth. Pops read the segments in order, then the
// array; a segment read past is dropped at once, so a long drain gives its
// memory back as it goes, and Reset drops any left, keeping the last
// segment as the queue's array. The common case, a queue that never
// reaches a segment's length, pays one comparison per pop.
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
	// SegmentLen is the length (elements) at which an array stops doubling
	// and the queue grows by segments of this length (see Segments). For
	// the executor's 40-byte envelopes a segment is 160 KiB.
	SegmentLen = 4096
)

// clock returns a monotonic time in nanoseconds, never 0 (0 marks "not
// read"). A variable so that tests can drive it.
var clock = func() int64 { return int64(time.Since(epoch)) + 1 }

var epoch = time.Now()

// Queue is a copy queue of T. The zero value is an empty queue with no storage.
// A Queue is not safe for concurrent use; the executor guards it with its
// mailbox lock or owns it exclusively while draining. Every field is
// written and read only by that one holder; a Queue moves between holders
// by value (a gulp swaps two of them under the mailbox lock), and no field
// points into the Queue itself, so a moved Queue stays valid.
type Queue[T any] struct {
	// buf is the tail: pushes append to it. Live elements are the
	// unpopped ones of the sealed segments, then buf[head:] once every
	// segment is popped (rseg == len(sealed)).
	buf []T
	// head is the index of the next element to pop in the segment being
	// read: sealed[rseg], or buf when rseg == len(sealed).
	head int
	// sealed holds the full segments that came before buf, oldest first
	// (see Segments). A segment already read past is nil (dropped, for the
	// garbage collector); the slice itself is kept for reuse by Reset.
	sealed [][]T
	// rseg is the index in sealed of the segment being read;
	// len(sealed) when pops read buf.
	rseg int
	// nsealed is the number of elements in the sealed segments, popped or
	// not; npassed, in those read past (dropped).
	nsealed, npassed int
	// underHalf counts consecutive Resets whose drained length was below half
	// the capacity, and underSince is the clock at the streak's
	// ReclaimAfter-th (0 before it); both travel with the array when queues
	// are swapped.
	underHalf  int
	underSince int64
}

// segLen is the segment length, in elements (see Segments). A variable so
// that tests can make segments small; set before any queue is used.
var segLen = SegmentLen

// New returns an empty queue with room for capacity elements.
func New[T any](capacity int) Queue[T] {
	if capacity < 0 {
		capacity = 0
	}
	return Queue[T]{buf: make([]T, 0, capacity)}
}

// Len returns the number of elements not yet popped.
func (q *Queue[T]) Len() int { return q.Pushed() - q.popped() }

// popped returns the number of elements popped since the last Reset.
func (q *Queue[T]) popped() int {
	if q.rseg == len(q.sealed) {
		return q.nsealed + q.head
	}
	return q.npassed + q.head
}

// Pushed returns the number of elements pushed since the last Reset (popped or not).
func (q *Queue[T]) Pushed() int { return q.nsealed + len(q.buf) }

// Cap returns the number of elements the queue holds without growing: the
// tail's capacity plus the sealed segments' elements.
func (q *Queue[T]) Cap() int { return q.nsealed + cap(q.buf) }

// Full reports whether the next append needs a larger array (or a new segment).
func (q *Queue[T]) Full() bool { return len(q.buf) == cap(q.buf) }

// GrowCap returns the capacity of the array the next growth needs: double
// the tail's (at least 1), or a segment's length once the tail has reached it.
func (q *Queue[T]) GrowCap() int {
	if c := cap(q.buf); c >= segLen {
		return segLen
	}
	return max(2*cap(q.buf), 1)
}

// NewArray returns an empty array of the given capacity, for Adopt.
func NewArray[T any](capacity int) []T { return make([]T, 0, max(capacity, 0)) }

// Adopt makes room with arr, an empty array from NewArray(GrowCap()), in a
// full queue, and reports whether it did: below the segment length it moves
// the elements into arr if arr is larger than the current array; at or above
// it, it seals the tail and makes arr the new tail if arr holds a segment
// (no copy). Otherwise (the queue is not full, or arr is too small) it does
// nothing and reports false. It never allocates, but for the first
// segment's entry in the list of sealed segments.
func (q *Queue[T]) Adopt(arr []T) bool {
	if !q.Full() {
		return false
	}
	if cap(q.buf) >= segLen {
		if cap(arr) < segLen {
			return false
		}
		q.seal(arr[:0])
		return true
	}
	if cap(arr) <= cap(q.buf) {
		return false
	}
	arr = arr[:len(q.buf)]
	copy(arr, q.buf)
	q.buf = arr
	return true
}

// seal appends the full tail to the sealed segments and makes next, an
// empty array, the tail. A reader reading the tail now reads the segment it
// became (rseg stays, and indexes it).
func (q *Queue[T]) seal(next []T) {
	q.sealed = append(q.sealed, q.buf)
	q.nsealed += len(q.buf)
	q.buf = next
}

// Shrink replaces the array of an empty queue (every element popped, or
// none pushed) whose capacity is above floor by arr, an empty array from
// NewArray(floor), and reports whether it did. It never allocates.
func (q *Queue[T]) Shrink(floor int, arr []T) bool {
	if q.Len() != 0 || q.Cap() <= floor || cap(arr) >= q.Cap() {
		return false
	}
	q.dropSealed()
	clear(q.buf)
	q.buf, q.head, q.underHalf, q.underSince = arr[:0], 0, 0, 0
	return true
}

// dropSealed forgets every sealed segment (their elements are garbage once
// the segments are unreferenced: nothing needs clearing) and keeps the list
// for reuse.
func (q *Queue[T]) dropSealed() {
	clear(q.sealed)
	q.sealed, q.rseg, q.nsealed, q.npassed = q.sealed[:0], 0, 0, 0
}

// grow makes room for one more element: it doubles the tail's capacity (at
// least 1), keeping the elements and the head, below the segment length,
// and seals the tail and starts a new segment at or above it. Kept out of
// line so that Next stays small where it is inlined.
//
//go:noinline
func (q *Queue[T]) grow() {
	if cap(q.buf) >= segLen {
		q.seal(make([]T, 0, segLen))
		return
	}
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
// copying it. The element is zero (Reset clears every used slot of the
// tail; a new segment is zero). The pointer is valid until the next Next.
func (q *Queue[T]) Next() *T {
	if len(q.buf) == cap(q.buf) {
		q.grow()
	}
	q.buf = q.buf[:len(q.buf)+1]
	return &q.buf[len(q.buf)-1]
}

// PopRef removes the oldest element and returns a pointer to it, or nil when
// the queue is empty. The element stays valid until Reset, or until a later
// PopRef returns an element of a later segment (the segment read past is
// dropped then), whichever comes first; later pushes never move it.
func (q *Queue[T]) PopRef() *T {
	if q.rseg == len(q.sealed) { // reading the tail: always, unless the queue outgrew a segment
		if q.head == len(q.buf) {
			return nil
		}
		q.head++
		return &q.buf[q.head-1]
	}
	return q.popSealed()
}

// popSealed is PopRef while sealed segments are being read. A segment read
// to its end is dropped (and the reader moves on) only when the next
// element exists, so that LastPopped stays valid.
//
//go:noinline
func (q *Queue[T]) popSealed() *T {
	s := q.sealed[q.rseg]
	if q.head == len(s) {
		if q.rseg+1 == len(q.sealed) && len(q.buf) == 0 {
			return nil // the last popped element, s's, stays valid
		}
		q.sealed[q.rseg] = nil
		q.npassed += len(s)
		q.rseg++
		q.head = 0
		if q.rseg == len(q.sealed) {
			q.head = 1
			return &q.buf[0]
		}
		s = q.sealed[q.rseg]
	}
	q.head++
	return &s[q.head-1]
}

// LastPopped returns a pointer to the element most recently popped since the
// last Reset (by PopRef), or nil if none was.
func (q *Queue[T]) LastPopped() *T {
	if q.head == 0 {
		return nil // a reader never stands at the start of a segment after a pop (popSealed)
	}
	if q.rseg == len(q.sealed) {
		return &q.buf[q.head-1]
	}
	return &q.sealed[q.rseg][q.head-1]
}

// Reset empties the queue for reuse: it clears every slot used since the last
// Reset, so no stale reference is kept alive, and applies the reclamation rule
// (see the package documentation) with the given capacity floor.
func (q *Queue[T]) Reset(floor int) {
	used := q.Pushed()
	if len(q.sealed) != 0 {
		q.dropSealed() // the tail, a segment, stays: the queue is back to one array
	}
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
