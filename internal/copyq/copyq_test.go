package copyq

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFIFOAndGrowth(t *testing.T) {
	q := New[int](2)
	for i := 0; i < 100; i++ {
		push(&q, i)
	}
	require.Equal(t, 100, q.Len())
	require.Equal(t, 128, q.Cap(), "capacity doubles from 2")
	for i := 0; i < 100; i++ {
		v, ok := pop(&q)
		require.True(t, ok)
		require.Equal(t, i, v)
	}
	_, ok := pop(&q)
	require.False(t, ok)
	require.Equal(t, 100, q.Pushed())
}

func TestPushWhileDraining(t *testing.T) {
	// The executor appends to a batch while popping from it (local sends).
	q := New[int](1)
	push(&q, 0)
	next := 1
	var got []int
	for {
		v, ok := pop(&q)
		if !ok {
			break
		}
		got = append(got, v)
		if next < 50 {
			push(&q, next)
			next++
		}
	}
	require.Len(t, got, 50)
	for i, v := range got {
		require.Equal(t, i, v)
	}
}

func TestNextAndPopRef(t *testing.T) {
	q := New[[2]int](1)
	for i := 0; i < 10; i++ {
		p := q.Next()
		require.Equal(t, [2]int{}, *p, "new slots are zero")
		p[0], p[1] = i, -i
	}
	first := q.PopRef()
	for i := 10; i < 100; i++ { // reallocates while first is held
		*q.Next() = [2]int{i, -i}
	}
	require.Equal(t, [2]int{0, 0}, *first)
	for i := 1; i < 100; i++ {
		p := q.PopRef()
		require.Equal(t, [2]int{i, -i}, *p)
	}
	require.Nil(t, q.PopRef())
	q.Reset(0)
	for i := 0; i < 5; i++ {
		require.Equal(t, [2]int{}, *q.Next(), "slots reused after Reset are zero")
	}
}

func TestZeroValueUsable(t *testing.T) {
	var q Queue[string]
	push(&q, "a")
	v, ok := pop(&q)
	require.True(t, ok)
	require.Equal(t, "a", v)
	before := q.Cap()
	q.Reset(4)
	require.Equal(t, before, q.Cap())
}

func TestResetClearsReferences(t *testing.T) {
	q := New[*int](4)
	x := 1
	push(&q, &x)
	pop(&q)
	q.Reset(0)
	full := q.buf[:cap(q.buf)]
	for _, p := range full {
		require.Nil(t, p, "Reset must drop references so the GC can free them")
	}
}

func TestReclaimNeedsUnderHalfUse(t *testing.T) {
	// The chapter's example: a workload that never has more than 19 elements
	// in flight must not make the queue oscillate (grow to 36, shrink, ...).
	q := New[int](10)
	fill := func(n int) {
		for i := 0; i < n; i++ {
			push(&q, i)
		}
		for q.Len() > 0 {
			pop(&q)
		}
	}
	fill(19)
	q.Reset(4)
	require.Equal(t, 20, q.Cap())
	for round := 0; round < 1000; round++ {
		fill(19)
		q.Reset(4)
		require.Equal(t, 20, q.Cap(), "19 of 20 used is over half: never shrink")
	}
}

// fakeClock makes the package clock advance by step at every read, for the
// duration of the test, and returns the number of reads so far.
func fakeClock(t *testing.T, step time.Duration) func() int {
	t.Helper()
	old := clock
	now, reads := int64(1), 0
	clock = func() int64 {
		reads++
		now += int64(step)
		return now
	}
	t.Cleanup(func() { clock = old })
	return func() int { return reads }
}

func TestReclaimShrinksUnderUsedArrays(t *testing.T) {
	reads := fakeClock(t, ReclaimAge) // every read is ReclaimAge after the previous one
	q := New[int](4)
	for i := 0; i < 1000; i++ {
		push(&q, i)
	}
	q.Reset(4)
	require.Equal(t, 1024, q.Cap())
	// A burst is over; the queue now carries 3 elements per gulp.
	shrinks := 0
	for round := 0; round < 20*ReclaimAfter; round++ {
		for i := 0; i < 3; i++ {
			push(&q, i)
		}
		before := q.Cap()
		q.Reset(4)
		if q.Cap() < before {
			shrinks++
		}
	}
	// Halves while fewer than half the slots are used: ... 8 (3 < 4), 4 (3 >= 2): stop.
	require.Equal(t, 4, q.Cap())
	require.Equal(t, 8, shrinks)
	// The clock is read once per ReclaimAfter under-half drains: twice per halving.
	require.Equal(t, 2*8, reads())
	// Alternating under-half and over-half use resets the count: no shrink.
	q2 := New[int](64)
	for round := 0; round < 100; round++ {
		n := 10
		if round%2 == 1 {
			n = 40
		}
		for i := 0; i < n; i++ {
			push(&q2, i)
		}
		q2.Reset(4)
		require.Equal(t, 64, q2.Cap())
	}
	require.Equal(t, 64, q2.Cap())
}

// TestReclaimWaitsForAge: however many under-half drains a streak has, the
// array is kept until the streak is ReclaimAge old, and an over-half drain
// starts the age over.
func TestReclaimWaitsForAge(t *testing.T) {
	fakeClock(t, ReclaimAge/4) // four reads (4 * ReclaimAfter drains) per ReclaimAge
	q := New[int](64)
	drain := func(n int) {
		for i := 0; i < n; i++ {
			push(&q, i)
		}
		q.Reset(4)
	}
	for round := 0; round < 4*ReclaimAfter; round++ {
		drain(1)
	}
	require.Equal(t, 64, q.Cap(), "a streak of 4*ReclaimAfter drains spanning 3/4 of ReclaimAge: kept")
	drain(40) // over half: the streak ends
	for round := 0; round < 4*ReclaimAfter; round++ {
		drain(1)
	}
	require.Equal(t, 64, q.Cap(), "a new streak ages from its own start")
	for round := 0; round < ReclaimAfter; round++ {
		drain(1)
	}
	require.Equal(t, 32, q.Cap(), "the streak reached ReclaimAge: halved")
}

func TestReclaimRespectsFloor(t *testing.T) {
	fakeClock(t, ReclaimAge)
	q := New[int](64)
	for round := 0; round < 20*ReclaimAfter; round++ {
		push(&q, 1)
		q.Reset(16)
	}
	require.Equal(t, 16, q.Cap())
}

func BenchmarkPushPop(b *testing.B) {
	q := New[[5]uintptr](16)
	var e [5]uintptr
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		push(&q, e)
		if q.Len() == 16 {
			for q.Len() > 0 {
				pop(&q)
			}
			q.Reset(4)
		}
	}
}

func push[T any](q *Queue[T], v T) { *q.Next() = v }

func pop[T any](q *Queue[T]) (v T, ok bool) {
	p := q.PopRef()
	if p == nil {
		return v, false
	}
	return *p, true
}

func TestAdoptAndShrink(t *testing.T) {
	q := New[int](2)
	push(&q, 1)
	push(&q, 2)
	if !q.Full() || q.GrowCap() != 4 {
		t.Fatalf("full %v growcap %d", q.Full(), q.GrowCap())
	}
	if q.Adopt(NewRoom[int](2)) {
		t.Fatal("adopted an array no larger than the current one")
	}
	if !q.Adopt(NewRoom[int](q.GrowCap())) || q.Cap() != 4 || q.Full() {
		t.Fatalf("adopt: cap %d", q.Cap())
	}
	push(&q, 3)
	for i := 1; i <= 3; i++ {
		if v, ok := pop(&q); !ok || v != i {
			t.Fatalf("pop %d: %d %v", i, v, ok)
		}
	}
	if !q.Shrink(2, NewArray[int](2)) || q.Cap() != 2 || q.Len() != 0 {
		t.Fatalf("shrink: cap %d len %d", q.Cap(), q.Len())
	}
	push(&q, 4)
	if q.Shrink(1, NewArray[int](1)) {
		t.Fatal("shrank a queue holding an element")
	}
}

// Peek returns the element PopRef would return next, without removing it.
func TestPeek(t *testing.T) {
	q := New[int](2)
	require.Nil(t, q.Peek())
	*q.Next() = 1
	*q.Next() = 2
	require.Equal(t, 1, *q.Peek())
	require.Equal(t, 1, *q.Peek(), "Peek does not remove")
	require.Equal(t, 1, *q.PopRef())
	require.Equal(t, 2, *q.Peek())
	require.Equal(t, 1, *q.LastPopped())
	q.PopRef()
	require.Nil(t, q.Peek())
}

// Peek sees the next segment's first element when the array is exhausted.
func TestPeekAcrossSegments(t *testing.T) {
	q := New[int](2)
	n := SegmentLen + 3
	for i := range n {
		*q.Next() = i
	}
	for i := range n {
		p := q.Peek()
		require.NotNil(t, p, "element %d", i)
		require.Equal(t, i, *p)
		require.Equal(t, i, *q.PopRef())
	}
	require.Nil(t, q.Peek())
}
