package copyq

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// withSegLen runs the test with segments of n elements. Not parallel:
// segLen is a package variable.
func withSegLen(t testing.TB, n int) {
	old := segLen
	segLen = n
	t.Cleanup(func() { segLen = old })
}

// nsegments returns the number of pending segments (chained after the
// array being read).
func nsegments[T any](q *Queue[T]) int {
	n := 0
	for s := q.next; s != nil; s = s.next {
		n++
	}
	return n
}

func TestSegmentsFIFOAcrossBoundaries(t *testing.T) {
	withSegLen(t, 8)
	q := New[int](2)
	for i := 0; i < 100; i++ {
		push(&q, i)
	}
	require.Equal(t, 100, q.Len())
	require.Equal(t, 100, q.Pushed())
	require.Equal(t, 8, cap(q.buf), "the array doubles from 2 to a segment's length, no further")
	require.Equal(t, 12, nsegments(&q), "then 92 elements in segments of 8")
	require.Equal(t, 8+12*8, q.Cap())
	for i := 0; i < 100; i++ {
		v, ok := pop(&q)
		require.True(t, ok)
		require.Equal(t, i, v)
		require.Equal(t, 100-i-1, q.Len())
		require.Equal(t, 100, q.Pushed())
	}
	_, ok := pop(&q)
	require.False(t, ok)
	require.Equal(t, 99, *q.LastPopped(), "the last element stays valid at the end")
	require.Zero(t, nsegments(&q), "the reader made the last segment its array")
	q.Reset(2)
	require.Equal(t, 0, q.Len())
	require.Equal(t, 0, q.Pushed())
	require.Equal(t, 8, q.Cap(), "one segment stays as the array")
	require.Nil(t, q.PopRef())
	require.Nil(t, q.LastPopped())
	for i := 0; i < 8; i++ { // the kept segment is clean and reused without growth
		require.Zero(t, *q.Next())
	}
	require.Equal(t, 8, q.Cap())
}

func TestSegmentsReadInTurn(t *testing.T) {
	withSegLen(t, 4)
	q := New[*int](4)
	vals := make([]int, 20)
	for i := range vals {
		push(&q, &vals[i])
	}
	require.Equal(t, 4, nsegments(&q))
	for i := 0; i < 9; i++ { // into the third array
		p := q.PopRef()
		require.Same(t, &vals[i], *p)
		require.Same(t, p, q.LastPopped())
	}
	require.Equal(t, 2, nsegments(&q), "the reader moved into the third array")
	require.Equal(t, 11, q.Len())
	require.Equal(t, 20, q.Pushed())
}

func TestSegmentsPushWhileDraining(t *testing.T) {
	// A batch being drained gets local sends appended, into the array
	// being read or into segments chained after it.
	withSegLen(t, 4)
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
		for k := 0; k < 3 && next < 200; k++ {
			push(&q, next)
			next++
		}
		require.Equal(t, next-len(got), q.Len())
		require.Equal(t, next, q.Pushed())
	}
	require.Len(t, got, 200)
	for i, v := range got {
		require.Equal(t, i, v)
	}
}

func TestSegmentsAdopt(t *testing.T) {
	withSegLen(t, 4)
	q := New[int](4)
	for i := 0; i < 4; i++ {
		push(&q, i)
	}
	require.True(t, q.Full())
	require.Equal(t, 4, q.GrowCap(), "a full segment-sized array asks for a segment, not a double")
	require.False(t, q.Adopt(NewRoom[int](2)), "an array is no room for a segment")
	r := NewRoom[int](q.GrowCap())
	require.True(t, q.Adopt(r))
	require.False(t, q.Full())
	require.Equal(t, 8, q.Cap())
	require.False(t, q.Adopt(NewRoom[int](4)), "not full")
	push(&q, 4)
	require.Same(t, &r.seg.elems[0], &q.tail.elems[0], "the segment was chained, not copied")
	for i := 0; i < 5; i++ {
		v, ok := pop(&q)
		require.True(t, ok)
		require.Equal(t, i, v)
	}
	require.True(t, q.Shrink(2, NewArray[int](2)))
	require.Equal(t, 2, q.Cap())
	require.Zero(t, nsegments(&q))
}

func TestSegmentsEmptyAdoptedSegment(t *testing.T) {
	// A pusher may adopt a segment and then not push (the mailbox closed):
	// the empty last segment is no element, and is used by later pushes.
	withSegLen(t, 2)
	q := New[int](2)
	push(&q, 0)
	push(&q, 1)
	require.True(t, q.Adopt(NewRoom[int](q.GrowCap())))
	for i := 0; i < 2; i++ {
		v, ok := pop(&q)
		require.True(t, ok)
		require.Equal(t, i, v)
	}
	require.Nil(t, q.PopRef())
	require.Equal(t, 1, *q.LastPopped())
	require.Equal(t, 0, q.Len())
	push(&q, 2)
	v, ok := pop(&q)
	require.True(t, ok)
	require.Equal(t, 2, v)
}

func TestSegmentsSwappedByValue(t *testing.T) {
	// A gulp swaps a mailbox's queue with a worker's: a Queue moved by
	// value keeps working.
	withSegLen(t, 4)
	var a, b Queue[int]
	for i := 0; i < 10; i++ {
		push(&a, i)
	}
	a, b = b, a
	push(&b, 10)
	for i := 0; i <= 10; i++ {
		v, ok := pop(&b)
		require.True(t, ok)
		require.Equal(t, i, v)
	}
	require.Equal(t, 0, a.Len())
}

// FuzzSegments drives a queue with a random sequence of pushes (by Next,
// or through Full, GrowCap and Adopt as the mailbox does), pops, resets
// and shrinks, against a slice as the model: FIFO order, exactly-once
// delivery, the counts, and the last popped element.
func FuzzSegments(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 1, 1, 2}, uint8(2))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4}, uint8(1))
	f.Add([]byte{3, 3, 3, 3, 5, 3, 5, 1, 1, 1, 1, 1, 1, 0, 1, 1, 2, 4}, uint8(0x21))
	f.Fuzz(func(t *testing.T, ops []byte, seg uint8) {
		withSegLen(t, int(seg%8)+1)
		q := New[int](int(seg>>4) % 4)
		var model []int // pushed, not yet popped
		pushed, next, last := 0, 0, -1
		for _, op := range ops {
			switch op % 6 {
			case 0, 3: // push (3: making room first, as the mailbox does)
				if op%6 == 3 && q.Full() {
					require.True(t, q.Adopt(NewRoom[int](q.GrowCap())))
					require.False(t, q.Full())
				}
				p := q.Next()
				require.Zero(t, *p, "a new slot is zero, in a reused segment too")
				*p = next
				model = append(model, next)
				next++
				pushed++
			case 1: // pop
				p := q.PopRef()
				if len(model) == 0 {
					require.Nil(t, p)
					break
				}
				require.NotNil(t, p)
				require.Equal(t, model[0], *p)
				last, model = model[0], model[1:]
			case 2: // reset (the executor resets drained queues only)
				if len(model) != 0 {
					break
				}
				q.Reset(1)
				pushed, last = 0, -1
			case 4:
				if q.Shrink(1, NewArray[int](1)) {
					require.Equal(t, 0, len(model))
					require.Equal(t, 1, q.Cap())
					pushed, last = 0, -1
				}
			case 5: // room made, then no push (a closed mailbox)
				if q.Full() {
					require.True(t, q.Adopt(NewRoom[int](q.GrowCap())))
				}
			}
			require.Equal(t, len(model), q.Len())
			require.Equal(t, pushed, q.Pushed())
			require.GreaterOrEqual(t, q.Cap(), q.Len())
			if lp := q.LastPopped(); last < 0 {
				require.Nil(t, lp)
			} else {
				require.NotNil(t, lp)
				require.Equal(t, last, *lp)
			}
		}
	})
}
