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

func TestSegmentsFIFOAcrossBoundaries(t *testing.T) {
	withSegLen(t, 8)
	q := New[int](2)
	for i := 0; i < 100; i++ {
		push(&q, i)
	}
	require.Equal(t, 100, q.Len())
	require.Equal(t, 100, q.Pushed())
	require.Equal(t, 12, len(q.sealed), "2, 4, 8 by doubling, sealed at 8, then segments of 8: 96 sealed, 4 in the tail")
	require.Equal(t, 8, cap(q.buf), "the tail never grows past a segment")
	for i := 0; i < 100; i++ {
		v, ok := pop(&q)
		require.True(t, ok)
		require.Equal(t, i, v)
		require.Equal(t, 100-i-1, q.Len())
	}
	_, ok := pop(&q)
	require.False(t, ok)
	require.Equal(t, 99, *q.LastPopped(), "the last element stays valid at the end")
	q.Reset(2)
	require.Equal(t, 0, q.Len())
	require.Equal(t, 0, q.Pushed())
	require.Empty(t, q.sealed, "Reset drops the segments")
	require.Equal(t, 8, q.Cap(), "the last segment stays as the array")
	require.Nil(t, q.PopRef())
	require.Nil(t, q.LastPopped())
}

func TestSegmentsDroppedWhenReadPast(t *testing.T) {
	withSegLen(t, 4)
	q := New[*int](4)
	vals := make([]int, 20)
	for i := range vals {
		push(&q, &vals[i])
	}
	require.Len(t, q.sealed, 4)
	for i := 0; i < 9; i++ { // into the third segment
		p := q.PopRef()
		require.Same(t, &vals[i], *p)
		require.Same(t, p, q.LastPopped())
	}
	require.Nil(t, q.sealed[0], "a segment read past is dropped")
	require.Nil(t, q.sealed[1])
	require.NotNil(t, q.sealed[2])
	require.Equal(t, 11, q.Len())
}

func TestSegmentsPushWhileDraining(t *testing.T) {
	// A batch being drained gets local sends appended: the tail the reader
	// is reading may be sealed under it.
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
	require.Equal(t, 4, q.GrowCap(), "a full segment asks for a new segment, not a double")
	require.False(t, q.Adopt(NewArray[int](2)), "too small for a segment")
	arr := NewArray[int](q.GrowCap())
	require.True(t, q.Adopt(arr))
	require.False(t, q.Full())
	require.Equal(t, 8, q.Cap())
	require.False(t, q.Adopt(NewArray[int](4)), "not full")
	push(&q, 4)
	require.Same(t, &arr[:1][0], &q.buf[0], "the segment was adopted, not copied")
	for i := 0; i < 5; i++ {
		v, ok := pop(&q)
		require.True(t, ok)
		require.Equal(t, i, v)
	}
	require.True(t, q.Shrink(2, NewArray[int](2)))
	require.Equal(t, 2, q.Cap())
	require.Empty(t, q.sealed)
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

// FuzzSegments drives a queue with a random sequence of pushes, pops,
// resets, adopts and shrinks, against a slice as the model: FIFO order,
// exactly-once delivery, the counts, and the last popped element.
func FuzzSegments(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 1, 1, 2}, uint8(2))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4}, uint8(1))
	f.Fuzz(func(t *testing.T, ops []byte, seg uint8) {
		withSegLen(t, int(seg%8)+1)
		q := New[int](int(seg>>4) % 4)
		var model []int // pushed, not yet popped
		pushed, next, last := 0, 0, -1
		for _, op := range ops {
			switch op % 5 {
			case 0, 3: // push (3: through Full, GrowCap and Adopt, as the mailbox does)
				if op%5 == 3 && q.Full() {
					require.True(t, q.Adopt(NewArray[int](q.GrowCap())))
				}
				*q.Next() = next
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
			case 2: // reset (drained or not: the executor resets drained queues only)
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
			}
			require.Equal(t, len(model), q.Len())
			require.Equal(t, pushed, q.Pushed())
			if lp := q.LastPopped(); last < 0 {
				require.Nil(t, lp)
			} else {
				require.NotNil(t, lp)
				require.Equal(t, last, *lp)
			}
		}
	})
}
