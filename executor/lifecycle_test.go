package executor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The transitions of lifecycle.go, taken on a bare cell (no executor), in
// the orders its table allows, with the outcome each returns.

const inc1 = cellIncarnOne // the first incarnation

func aliveCell(t *testing.T, plain bool) *Cell {
	t.Helper()
	c := new(Cell)
	require.Equal(t, phaseNew, phaseOf(c.state.Load()))
	require.True(t, c.startSpawn(0, inc1))
	require.Equal(t, phaseSpawning, phaseOf(c.state.Load()))
	c.publishAlive(inc1, plain)
	return c
}

func TestLifecycleSpawn(t *testing.T) {
	c := new(Cell)
	require.True(t, c.startSpawn(0, inc1))
	assert.False(t, c.startSpawn(0, inc1), "a second Spawn loses the CAS")
	c.abortSpawn(0) // the executor refused it
	assert.Equal(t, phaseNew, phaseOf(c.state.Load()))
	require.True(t, c.startSpawn(0, inc1))
	c.publishAlive(inc1, true)
	assert.Equal(t, inc1|cellAlive|cellPlain, c.state.Load())
	assert.Equal(t, phaseAlivePlain, phaseOf(c.state.Load()))

	x := aliveCell(t, false)
	assert.Equal(t, inc1|cellAlive, x.state.Load())
	assert.Equal(t, phaseAliveExt, phaseOf(x.state.Load()))
}

func TestLifecyclePlainEnd(t *testing.T) {
	alive := inc1 | cellAlive | cellPlain
	c := aliveCell(t, true)
	assert.Equal(t, endPlainTaken, c.endPlainAlive(alive, false))
	assert.Equal(t, inc1|cellDead, c.state.Load(), "no Destroy hook: straight to dead, reasonNormal")
	assert.True(t, c.startSpawn(c.state.Load(), inc1+cellIncarnOne), "a dead cell may be spawned again")

	c = aliveCell(t, true)
	assert.Equal(t, endPlainTaken, c.endPlainAlive(alive, true))
	assert.Equal(t, phaseEndingPlain, phaseOf(c.state.Load()))
	x, o := c.finishPlainEnd(inc1)
	assert.Equal(t, endPlainTaken, o)
	assert.Nil(t, x)
	assert.Equal(t, inc1|cellDead, c.state.Load())

	c = aliveCell(t, true)
	assert.Equal(t, endPlainTaken, c.endPlainPanicked(alive))
	assert.Equal(t, phaseDead, phaseOf(c.state.Load()))
	assert.Equal(t, ReasonPanic, reasonOf(c.state.Load()&cellReasonMask>>cellReasonShift))
}

// A Watch that extends a plain actor first makes the terminating worker
// end it as an extended one; one that comes after the worker's CAS fails.
func TestLifecycleWatchRace(t *testing.T) {
	alive := inc1 | cellAlive | cellPlain
	c := aliveCell(t, true)
	require.True(t, c.extendForWatch(alive))
	assert.Equal(t, phaseAliveExt, phaseOf(c.state.Load()))
	assert.True(t, c.extendForWatch(alive), "a second watch finds it extended")
	assert.Equal(t, endWatched, c.endPlainAlive(alive, true), "watched: end as extended")
	assert.Equal(t, endWatched, c.endPlainPanicked(c.state.Load()))
	assert.Equal(t, inc1|cellAlive, c.state.Load(), "nothing taken")
	c.startExtEnd(inc1, reasonPanic)
	assert.Equal(t, phaseEnding, phaseOf(c.state.Load()))
	assert.False(t, c.extendForWatch(alive), "an ending extended word is nobody's to change")
	c.finishExtEnd(inc1, reasonPanic)
	assert.Equal(t, inc1|cellDead|reasonPanic<<cellReasonShift, c.state.Load())

	c = aliveCell(t, true)
	require.Equal(t, endPlainTaken, c.endPlainAlive(alive, false))
	assert.False(t, c.extendForWatch(alive), "the worker took the plain word first")
}

// A Watch that converts the ending plain word of a plain actor whose
// Destroy hook runs is finished by the worker after its dead store.
func TestLifecycleWatchWhileEndingPlain(t *testing.T) {
	alive := inc1 | cellAlive | cellPlain
	c := aliveCell(t, true)
	require.Equal(t, endPlainTaken, c.endPlainAlive(alive, true))
	ending := c.state.Load()
	ext := &cellExt{inc: inc1}
	c.ext.Store(ext)
	require.True(t, c.extendForWatch(ending))
	assert.Equal(t, phaseEnding, phaseOf(c.state.Load()))
	assert.Equal(t, ReasonNormal, reasonOf(c.state.Load()&cellReasonMask>>cellReasonShift))
	x, o := c.finishPlainEnd(inc1)
	assert.Equal(t, endWatched, o, "finish the watch's extension")
	assert.Same(t, ext, x)
	assert.Equal(t, inc1|cellDead, c.state.Load())
}

func TestPhaseNames(t *testing.T) {
	for p := phaseNew; p <= phaseDead; p++ {
		assert.NotContains(t, p.String(), "phase(")
	}
	assert.Equal(t, "phase(9)", phase(9).String())
}
