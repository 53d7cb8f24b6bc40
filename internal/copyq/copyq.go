// Package copyq implements a copy queue: a queue of values stored by value in
// one growable array, designed for the gulping pattern, where a producer side
// only appends and a consumer side, after taking the whole queue, only pops
// until it is empty.
//
// Next appends an element in place, doubling the array when it is full
// (amortised O(1), and no allocation at all once the array has grown to the
// working-set size), up to a segment's length (see Segments). A caller that
// must not allocate at that point (a producer holding a spin lock) checks
// Full first, allocates the room itself with NewRoom(GrowCap()) outside
// its critical section, and hands it over with Adopt. PopRef is an index
// increment (O(1), no shifting). Reset, called when a drained queue is
// handed back, clears the popped values (so the garbage collector can
// reclaim what they referenced) and applies the reclamation rule.
//
// # Segments
//
// An array never grows past SegmentLen elements by doubling. When a full
// array of that size needs room, the queue chains segments of SegmentLen
// elements after it instead, in order, pushes appending to the last one.
// So a backlog of a million elements (an actor flooding another from one
// behaviour) costs one allocation per segment and no copy: doubling copied
// every element about once more, through the garbage collector's write
// barriers, and left the arrays it outgrew as garbage, up to twice the
// backlog's memory at the last growth. Pops read the array, then each
// segment in turn, which becomes the array being read: the one read past
// is dropped at once, so a long drain gives its memory back as it goes, and
// the drained queue is left with one array, its last segment. A queue that
// never reaches a segment's length runs the same instructions as a plain
// array: a pop checks for a next segment only when the array is exhausted,
// and a push takes its slow path only when the array is full.
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
// by value (a gulp swaps two of them under the mailbox lock), and nothing
// points into the Queue itself, so a moved Queue stays valid.
type Queue[T any] struct {
	// buf is the array being read: the live elements are buf[head:], then
	// those of the segments from next on. Pushes append to it while next
	// is nil (always, unless the queue outgrew a segment); while next is
	// not nil, buf is full (it was full when the first segment was chained,
	// and a segment that is not the last is full).
	buf  []T
	head int // index in buf of the next element to pop
	// next is the first segment chained after buf, last the last one,
	// which pushes append to; both nil when there is none.
	next, last *segment[T]
	// outside is the number of elements, pushed since the last Reset, that
	// are not in buf: in the arrays the reader has left (behind, which
	// counts them alone) and in the chained segments.
	outside, behind int
	// underHalf counts consecutive Resets whose drained length was below half
	// the capacity, and underSince is the clock at the streak's
	// ReclaimAfter-th (0 before it); both travel with the array when queues
	// are swapped.
	underHalf  int
	underSince int64
}

// segment is an array chained after a queue's array (see Segments).
type segment[T any] struct {
	elems []T
	next  *segment[T]
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
func (q *Queue[T]) Len() int { return q.Pushed() - q.behind - q.head }

// Pushed returns the number of elements pushed since the last Reset (popped or not).
func (q *Queue[T]) Pushed() int { return q.outside + len(q.buf) }

// Cap returns the number of elements the queue holds without growing: its
// array's capacity plus the chained segments'.
func (q *Queue[T]) Cap() int {
	c := cap(q.buf)
	for s := q.next; s != nil; s = s.next {
		c += cap(s.elems)
	}
	return c
}

// Full reports whether the next push needs room (Adopt).
func (q *Queue[T]) Full() bool {
	if len(q.buf) != cap(q.buf) {
		return false
	}
	return q.last == nil || len(q.last.elems) == cap(q.last.elems)
}

// GrowCap returns the capacity of the room the next growth needs: double
// the array's (at least 1), or a segment's length once the array has
// reached it.
func (q *Queue[T]) GrowCap() int {
	if q.last != nil || cap(q.buf) >= segLen {
		return segLen
	}
	return doubled(cap(q.buf))
}

// doubled returns the capacity an array of capacity c below a segment's
// length doubles to: at least 1, at most a segment's length.
func doubled(c int) int { return min(max(2*c, 1), segLen) }

// NewArray returns an empty array of the given capacity, for Shrink.
func NewArray[T any](capacity int) []T { return make([]T, 0, max(capacity, 0)) }

// Room is storage for a queue's growth, allocated by NewRoom outside the
// critical section of the queue's holder and handed over by Adopt.
type Room[T any] struct {
	arr []T         // below a segment's length: the larger array
	seg *segment[T] // at it: the segment to chain
}

// NewRoom returns room for a growth to the given capacity (GrowCap).
func NewRoom[T any](capacity int) Room[T] {
	if capacity >= segLen {
		return Room[T]{seg: &segment[T]{elems: make([]T, 0, capacity)}}
	}
	return Room[T]{arr: NewArray[T](capacity)}
}

// Adopt makes room in a full queue with r, from NewRoom(GrowCap()), and
// reports whether it did: below a segment's length it moves the elements
// into r's array if that is larger than the current one; at it, it chains
// r's segment (no copy). Otherwise (the queue is not full, or r does not
// fit: the queue changed since GrowCap) it does nothing and reports false.
// It never allocates.
func (q *Queue[T]) Adopt(r Room[T]) bool {
	if !q.Full() {
		return false
	}
	if q.last != nil || cap(q.buf) >= segLen {
		if r.seg == nil {
			return false
		}
		q.chain(r.seg)
		return true
	}
	arr := r.arr
	if arr == nil && r.seg != nil { // a doubling to a segment's length: NewRoom made a segment
		arr = r.seg.elems
	}
	if cap(arr) <= cap(q.buf) {
		return false
	}
	arr = arr[:len(q.buf)]
	copy(arr, q.buf)
	q.buf = arr
	return true
}

// chain appends s, an empty segment, after the last array.
func (q *Queue[T]) chain(s *segment[T]) {
	if q.last == nil {
		q.next = s
	} else {
		q.last.next = s
	}
	q.last = s
}

// Shrink replaces the array of an empty queue (every element popped, or
// none pushed) whose capacity is above floor by arr, an empty array from
// NewArray(floor), and reports whether it did. It never allocates.
func (q *Queue[T]) Shrink(floor int, arr []T) bool {
	if q.Len() != 0 || q.Cap() <= floor || cap(arr) >= q.Cap() {
		return false
	}
	clear(q.buf)
	q.buf, q.head, q.underHalf, q.underSince = arr[:0], 0, 0, 0
	q.next, q.last, q.outside, q.behind = nil, nil, 0, 0
	return true
}

// Next appends a new element and returns a pointer to it, for the caller to
// fill in place; with large T this avoids building the value elsewhere and
// copying it. The element is zero (Reset clears every used slot; a new
// array or segment is zero). The pointer is valid until the next Next.
func (q *Queue[T]) Next() *T {
	if len(q.buf) == cap(q.buf) {
		return q.nextSlow()
	}
	q.buf = q.buf[:len(q.buf)+1]
	return &q.buf[len(q.buf)-1]
}

// nextSlow is Next when the array is full: it doubles the array below a
// segment's length (keeping the elements and the head), else appends to
// the last segment, chaining a new one when that is full too. Kept out of
// line so that Next stays small where it is inlined.
//
//go:noinline
func (q *Queue[T]) nextSlow() *T {
	if q.last == nil && cap(q.buf) < segLen {
		nb := make([]T, len(q.buf)+1, doubled(cap(q.buf)))
		copy(nb, q.buf)
		q.buf = nb
		return &q.buf[len(q.buf)-1]
	}
	if q.last == nil || len(q.last.elems) == cap(q.last.elems) {
		q.chain(&segment[T]{elems: make([]T, 0, segLen)})
	}
	t := q.last
	t.elems = t.elems[:len(t.elems)+1]
	q.outside++
	return &t.elems[len(t.elems)-1]
}

// PopRef removes the oldest element and returns a pointer to it, or nil when
// the queue is empty. The element stays valid until Reset, or until a later
// PopRef returns an element of a later segment (the array read past is
// dropped then), whichever comes first; later pushes never move it. When
// the array is exhausted and a segment follows, that segment becomes the
// array (an empty last segment, adopted but not pushed to, is skipped).
func (q *Queue[T]) PopRef() *T {
	for q.head == len(q.buf) {
		s := q.next
		if s == nil || len(s.elems) == 0 && s.next == nil {
			return nil // the last popped element stays valid
		}
		q.behind += len(q.buf)
		q.outside += len(q.buf) - len(s.elems)
		q.buf, q.head, q.next = s.elems, 0, s.next
		if q.next == nil {
			q.last = nil // pushes append to buf again
		}
	}
	q.head++
	return &q.buf[q.head-1]
}

// LastPopped returns a pointer to the element most recently popped since the
// last Reset (by PopRef), or nil if none was.
func (q *Queue[T]) LastPopped() *T {
	if q.head == 0 {
		return nil // PopRef never leaves the reader at the start of an array
	}
	return &q.buf[q.head-1]
}

// Reset empties the queue for reuse: it clears every slot used since the last
// Reset, so no stale reference is kept alive, and applies the reclamation rule
// (see the package documentation) with the given capacity floor.
func (q *Queue[T]) Reset(floor int) {
	used := q.Pushed()
	if q.next != nil { // not drained (the executor drains before Reset): drop the segments
		q.next, q.last = nil, nil
	}
	q.outside, q.behind = 0, 0
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
