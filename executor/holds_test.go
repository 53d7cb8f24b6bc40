package executor

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holdsPair lays two messages side by side, so that &b.Message is the
// address just past a.
type holdsPair struct {
	a struct {
		Message
		x uint64
	}
	b struct {
		Message
		y uint64
	}
	c struct {
		y       uint64
		Message // last: Go pads the struct so that it stays inside
	}
}

// envelope.holds, which guards SetAllocation, accepts a pointer into the
// message being delivered and refuses the address just past it (the next
// object's). It accepted that address, so a behaviour could set the status
// of the message it was delivered through another message laid after it.
func TestHoldsExcludesTheEnd(t *testing.T) {
	var p holdsPair
	require.Equal(t, unsafe.Pointer(&p.b.Message), unsafe.Add(unsafe.Pointer(&p.a), unsafe.Sizeof(p.a)))
	env := &envelope{msg: &p.a}
	assert.True(t, env.holds(unsafe.Pointer(&p.a.Message)))
	assert.True(t, env.holds(unsafe.Pointer(&p.a.x)))
	assert.False(t, env.holds(unsafe.Pointer(&p.b.Message)), "the next message's Message")
	env = &envelope{msg: &p.c}
	assert.True(t, env.holds(unsafe.Pointer(&p.c.Message)), "a Message embedded last")
	assert.False(t, (*envelope)(nil).holds(unsafe.Pointer(&p.a.Message)))
}
