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
// segment in turn, which becomes the array being read. Reset leaves the
// drained queue one array, its last segment, and puts the others, cleared,
// in a pool of segments (a sync.Pool) that later growths take from: a
// queue flooded again and again reuses its segments instead of making
// garbage, and the memory of a flood that does not come back returns to
// the system after two garbage collections. A queue that never reaches a
// segment's length runs the same instructions as a plain array: a pop
// looks for a next segment only when the array is exhausted, and a push
// takes its slow path only when the array is full.
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

import (
	"sync"
	"time"
	"unsafe"
)

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
	// those of the pending segments, from next to tail. Pushes append to
	// buf while none is pending (always, unless the queue outgrew a
	// segment), else to tail; while one is, buf is full (it was full when
	// the first segment was chained, and a segment that is not the last is
	// full).
	buf  []T
	head int // index in buf of the next element to pop
	// next is the first pending segment (not yet read), nil when none is.
	next *segment[T]
	// first and tail are the first and the last segment chained since the
	// last Reset, linked by their next fields, read or not (Reset gives
	// them to the segment pool); nil when none was. While segments are
	// pending, tail is the last of them.
	first, tail *segment[T]
	// outside is the number of elements, pushed since the last Reset, that
	// are not in buf: in the arrays the reader has left and in the pending
	// segments.
	outside int
	// underHalf counts consecutive Resets whose drained length was below half
	// the capacity, and underSince is the clock at the streak's
	// ReclaimAfter-th (0 before it); both travel with the array when queues
	// are swapped.
	underHalf  int
	underSince int64
}

// segment is an array chained after a queue's array (see Segments).
type segment[T any] struct {
	elems []T // its elements; once the reader makes it buf, buf's length is the true one
	next  *segment[T]
}

// segments is the pool of free segments, one sync.Pool per element type
// (keyed by a nil *T), so that a queue flooded again and again reuses the
// segments of its last drain instead of allocating them, and an idle
// process gives them back (a sync.Pool empties over two garbage
// collections). A segment is clean (every element zero) in the pool.
// Puts come from Reset and Shrink (a worker after its drain, or the idle
// watcher); Gets from growths (a pusher outside the mailbox lock, or a
// worker appending to its batch). The pool's Put and Get order the clearing
// before the segment's next use, on whatever goroutine takes it; the map
// is written once per element type (LoadOrStore) and read at every Get and
// Put.
var segments sync.Map

func segPool[T any]() *sync.Pool {
	key := any((*T)(nil))
	if p, ok := segments.Load(key); ok {
		return p.(*sync.Pool)
	}
	p, _ := segments.LoadOrStore(key, new(sync.Pool))
	return p.(*sync.Pool)
}

// newSegment returns an empty segment, from the pool if it has one.
func newSegment[T any]() *segment[T] {
	if s, ok := segPool[T]().Get().(*segment[T]); ok && cap(s.elems) == segLen {
		return s
	}
	return &segment[T]{elems: make([]T, 0, segLen)}
}

// freeSegments clears the segments of a chain from s, but keep, and puts
// them in the pool.
func freeSegments[T any](s, keep *segment[T]) {
	pool := segPool[T]()
	for s != nil {
		n := s.next
		if s != keep {
			// The whole array: a segment's elems may be shorter than what
			// was pushed into it once the reader had made it buf.
			clear(s.elems[:cap(s.elems)])
			s.elems, s.next = s.elems[:0], nil
			pool.Put(s)
		}
		s = n
	}
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
func (q *Queue[T]) Len() int {
	n := len(q.buf) - q.head
	for s := q.next; s != nil; s = s.next {
		n += len(s.elems)
	}
	return n
}

// Pushed returns the number of elements pushed since the last Reset (popped or not).
func (q *Queue[T]) Pushed() int { return q.outside + len(q.buf) }

// Cap returns the number of elements the queue holds without growing: its
// array's capacity plus the pending segments'.
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
	return q.next == nil || len(q.tail.elems) == cap(q.tail.elems)
}

// GrowCap returns the capacity of the room the next growth needs: double
// the array's (at least 1, at most a segment's length), or a segment's
// length once the array has reached it.
func (q *Queue[T]) GrowCap() int {
	if q.next != nil || cap(q.buf) >= segLen {
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

// NewRoom returns room for a growth to the given capacity (GrowCap): a
// segment (from the pool if it has one) at a segment's length, else an array.
func NewRoom[T any](capacity int) Room[T] {
	if capacity >= segLen {
		return Room[T]{seg: newSegment[T]()}
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
	if q.next != nil || cap(q.buf) >= segLen {
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

// chain appends s, an empty segment, to the pending ones (and to the
// chain since the last Reset).
func (q *Queue[T]) chain(s *segment[T]) {
	if q.tail == nil {
		q.first = s
	} else {
		q.tail.next = s
	}
	q.tail = s
	if q.next == nil {
		q.next = s
	}
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
	// Segments are dropped, not pooled: a mailbox shrinks under its lock,
	// where a Put, which may allocate, has no place. (An empty queue has
	// chained segments only when room was adopted and not pushed to.)
	q.next, q.first, q.tail, q.outside = nil, nil, nil, 0
	return true
}

// Next appends a new element and returns a pointer to it, for the caller to
// fill in place; with large T this avoids building the value elsewhere and
// copying it. The element is zero (Reset clears every used slot; a new
// array or segment is zero). The pointer is valid until the next Next.
func (q *Queue[T]) Next() *T {
	if len(q.buf) == cap(q.buf) {
		if t := q.tail; q.next != nil && len(t.elems) < cap(t.elems) {
			t.elems = t.elems[:len(t.elems)+1] // the last pending segment has room
			q.outside++
			return &t.elems[len(t.elems)-1]
		}
		return q.nextSlow()
	}
	q.buf = q.buf[:len(q.buf)+1]
	return &q.buf[len(q.buf)-1]
}

// nextSlow is Next when the array and the last pending segment, if any,
// are full: below a segment's length it doubles the array (keeping the
// elements and the head), else it chains a new segment and appends to it.
// Kept out of line so that Next stays small where it is inlined.
//
//go:noinline
func (q *Queue[T]) nextSlow() *T {
	if q.next == nil && cap(q.buf) < segLen {
		nb := make([]T, len(q.buf)+1, doubled(cap(q.buf)))
		copy(nb, q.buf)
		q.buf = nb
		return &q.buf[len(q.buf)-1]
	}
	q.chain(newSegment[T]())
	t := q.tail
	t.elems = t.elems[:1]
	q.outside++
	return &t.elems[0]
}

// PopRef removes the oldest element and returns a pointer to it, or nil when
// the queue is empty. The element stays valid until Reset, whatever is
// pushed meanwhile. When the array is exhausted and a segment is pending,
// that segment becomes the array (an empty last segment, adopted but not
// pushed to, is left pending).
func (q *Queue[T]) PopRef() *T {
	for q.head == len(q.buf) {
		s := q.next
		if s == nil || len(s.elems) == 0 {
			return nil // the last popped element stays valid
		}
		q.outside += len(q.buf) - len(s.elems)
		q.buf, q.head, q.next = s.elems, 0, s.next
	}
	q.head++
	return &q.buf[q.head-1]
}

// Peek returns a pointer to the oldest element without removing it (the
// one PopRef would return next, in the next segment when the array is
// exhausted), or nil when the queue is empty.
func (q *Queue[T]) Peek() *T {
	if q.head < len(q.buf) {
		return &q.buf[q.head]
	}
	if s := q.next; s != nil && len(s.elems) > 0 {
		return &s.elems[0] // PopRef makes s the array, then returns this
	}
	return nil
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
	if q.first != nil { // segments were chained (outside is 0 otherwise)
		q.resetChain()
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

// resetChain is Reset's part for a queue that chained segments since the
// last Reset. The reader stands in the last segment it read (a drained
// queue's is the tail): its array stays as buf, the others go to the pool.
//
//go:noinline
func (q *Queue[T]) resetChain() {
	var keep *segment[T]
	for s := q.first; s != nil && keep == nil; s = s.next {
		if unsafe.SliceData(s.elems) == unsafe.SliceData(q.buf) {
			keep = s
		}
	}
	q.resetSegments(keep)
	q.outside = 0
}

// resetSegments gives the segments chained since the last Reset to the
// pool, but keep, the one whose array the reader made buf, which stays as
// the queue's array.
func (q *Queue[T]) resetSegments(keep *segment[T]) {
	freeSegments(q.first, keep)
	q.next, q.first, q.tail = nil, nil, nil
}
