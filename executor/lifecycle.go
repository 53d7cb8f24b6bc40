package executor

// An actor's life: the phase word and its transitions.
//
// Every incarnation of an actor (one Spawn of one Cell) goes through the
// phases below, kept in one atomic word, Cell.state, and changed only by
// the functions of this file, each named after its transition and
// returning what its caller does next (see terminate.go, which acts on
// the outcomes). docs/design.md ("An actor's life: the state machine")
// states the same table and why it is safe.
//
// The word: bits 0-2 the kind (cellNew ... cellDead), bits 3-4 a flag or a
// reason whose meaning depends on the kind, the upper 27 bits the
// incarnation, advanced by every Spawn (cellIncarnOne each): 1 for the
// first, up to MaxIncarnations (cellIncarnLast), after which Spawn refuses
// the cell, so the incarnation never wraps.
//
//	phase           word                              what runs
//	new             0                                 never spawned
//	spawning        inc|cellSpawning                  Spawn publishes mb, obj, ext
//	alive plain     inc|cellAlive|cellPlain           no extension: a delivery is one comparison
//	alive extended  inc|cellAlive                     a cellExt: options, hooks or watchers
//	ending plain    inc|cellEnding|cellEndingPlain    a plain actor's Destroy hook
//	ending          inc|cellEnding|reason<<3          an extended actor's Stopped, Destroy hooks
//	dead            inc|cellDead|reason<<3            nothing of it (its Release hook, at most)
//
// Transitions: from -> to, then the function, who may take it, and how
// (with the outcome its caller acts on).
//
//	new, dead, or alive in a closed executor -> spawning (next incarnation)
//	    startSpawn        Spawn                 CAS; lost: ErrAlreadySpawned
//	spawning -> the word before
//	    abortSpawn        Spawn                 store (the executor refused: ErrStopped)
//	spawning -> alive plain, or alive extended
//	    publishAlive      Spawn                 store
//	alive plain -> alive extended; ending plain -> ending (reasonNormal)
//	    extendForWatch    Watch                 CAS; lost: detach, look again
//	alive plain -> ending plain (a Destroy hook to run), or dead (reasonNormal)
//	    endPlainAlive     terminating worker    CAS; endWatched: end as extended
//	alive plain -> dead (reasonPanic)
//	    endPlainPanicked  terminating worker    CAS; endWatched: supervise, end as extended
//	ending plain -> dead (reasonNormal); ending (converted by a Watch) -> dead
//	    finishPlainEnd    terminating worker    CAS, else store; endWatched: finish the watch
//	alive extended -> ending (reason)
//	    startExtEnd       terminating worker    store
//	                      forced Stop           store, reasonNormal, under stop.mu
//	                                            (a Stopped hook late: stopExts)
//	ending (reason) -> dead (reason)
//	    finishExtEnd      terminating worker    store
//	                      Stop's hook goroutine store, after the late hook
//
// The terminating worker is the one running the incarnation's code (its
// mailbox is held by one worker at a time), so no two goroutines end one
// incarnation. A forced Stop takes no transition: an alive word whose
// executor has closed counts as dead (Cell.Alive, Spawn), and stopExts
// finishes the extended actors' watches without touching their words,
// except those of the actors whose code a worker it gave up on runs: that
// worker is their terminating worker, and ends each still alive once its
// code returns (endAtStop: startExtEnd, finishExtEnd, reasonNormal); and
// those whose Stopped hook it runs and has stopped waiting for (late): it
// takes them to ending under stop.mu, and the goroutine running the hooks,
// the only code of theirs that runs, takes each to dead once its hook has
// returned (stopHooks.run). An ending word counts as alive even in a
// closed executor (Cell.Alive), and no Spawn takes it.
//
// Why plain stores and CASes mix safely: Watch changes only the two plain
// words (alive plain, ending plain), by CASes that clear a bit; the
// terminating worker leaves those two words only by CASes too, so each side
// learns of the other (a failed CAS), and stores only words that nobody
// else changes (alive extended, ending, the dead word after a converted
// ending plain one). Spawn CASes only from new, dead, or alive in a closed
// executor (no worker of it runs any more); it stores only spawning words,
// which it owns. Every store that publishes (alive: mb, obj, ext; dead:
// the object to a re-spawn) is a release that the loads of senders,
// workers and Spawn acquire.

// Cell state word constants. The meaning of bits 3-4 depends on the kind:
// while alive, cellPlain is set when the incarnation has no extension (no
// supervision, bounded mailbox, lifecycle hook or watcher; see
// supervise.go). Senders stamp envelopes with the canonical alive word (the
// incarnation, alive, plain), so a delivery to a plain actor is one
// comparison, and a delivery to an extended one (plain clear) fails it and
// takes the slow path, which accepts the word with plain set back. While
// ending or dead, bits 3-4 hold the reason of the termination
// (reasonNormal, reasonPanic, reasonBudget), or, while a plain actor's
// Destroy hook runs, cellEndingPlain.
const (
	cellNew uint32 = iota
	cellSpawning
	cellAlive
	cellEnding
	cellDead

	cellKindMask    = 7
	cellPlain       = 8  // alive: no extension
	cellReasonShift = 3  // ending, dead: the reason, bits 3-4
	cellReasonMask  = 24 // ending, dead: the reason
	cellIncarnOne   = 32 // one incarnation, in the state word
	// cellIncarnLast is the last incarnation: a cell that has had it is
	// never spawned again (Spawn returns ErrIncarnationsExhausted), so
	// that no incarnation is ever reused and a port, timer or watch of
	// one never reaches another.
	cellIncarnLast = MaxIncarnations * cellIncarnOne
)

// incOf returns the incarnation bits of a state word.
func incOf(st uint32) uint32 { return st &^ (cellIncarnOne - 1) }

// cellEndingPlain, in the reason bits of an ending word, marks a plain
// incarnation whose Destroy hook runs (terminate) and that no watch has
// extended yet (see watch); no reason has this value, and the dead word
// that follows holds reasonNormal.
const cellEndingPlain = cellReasonMask

// Reasons as stored in the state word's bits 3-4 (see cellReasonMask).
const (
	reasonNormal uint32 = 0
	reasonPanic  uint32 = 1
	reasonBudget uint32 = 2
)

func reasonOf(bits uint32) Reason {
	switch bits {
	case reasonPanic:
		return ReasonPanic
	case reasonBudget:
		return ReasonBudget
	}
	return ReasonNormal
}

// phase is an incarnation's phase, as its state word tells it (phaseOf).
type phase uint8

const (
	phaseNew         phase = iota // never spawned
	phaseSpawning                 // Spawn is publishing the incarnation
	phaseAlivePlain               // alive, no extension
	phaseAliveExt                 // alive, extended
	phaseEndingPlain              // a plain actor's Destroy hook runs
	phaseEnding                   // an extended actor's termination hooks run
	phaseDead                     // terminated
)

var phaseNames = [...]string{"new", "spawning", "alive plain", "alive extended", "ending plain", "ending", "dead"}

func (p phase) String() string { return enumName(phaseNames[:], uint8(p), "phase") }

// phaseOf returns the phase of state word st.
func phaseOf(st uint32) phase {
	switch st & cellKindMask {
	case cellSpawning:
		return phaseSpawning
	case cellAlive:
		if st&cellPlain != 0 {
			return phaseAlivePlain
		}
		return phaseAliveExt
	case cellEnding:
		if st&cellReasonMask == cellEndingPlain {
			return phaseEndingPlain
		}
		return phaseEnding
	case cellDead:
		return phaseDead
	}
	return phaseNew
}

// endOutcome is what a terminating worker's transition out of a plain
// word tells it to do next.
type endOutcome uint8

const (
	// endPlainTaken: the transition is taken; the worker goes on ending
	// a plain actor.
	endPlainTaken endOutcome = iota
	// endWatched: a Watch extended the incarnation first (its CAS
	// cleared the plain bit). Out of an alive word: nothing is taken,
	// and the worker ends the actor as an extended one (terminateExt),
	// which finishes the watch. Out of an ending plain word
	// (finishPlainEnd): the dead word is stored, and the worker finishes
	// the watch's extension.
	endWatched
)

// startSpawn is Spawn's first transition: from the word from (new, dead,
// or alive in an executor that has closed) to spawning with incarnation
// next. It reports false if the word moved on (another Spawn, or a Watch
// of the closed executor's actor, took it first): ErrAlreadySpawned.
func (c *Cell) startSpawn(from, next uint32) bool {
	return c.state.CompareAndSwap(from, next|cellSpawning)
}

// abortSpawn puts back the word from that startSpawn replaced, when the
// executor refuses the spawn (ErrStopped). Spawn owns a spawning word:
// nobody else changes it.
func (c *Cell) abortSpawn(from uint32) { c.state.Store(from) }

// publishAlive ends Spawn: incarnation inc becomes alive, plain or
// extended. The store publishes mb, obj and ext, written before it, to
// the senders and workers that load the word.
func (c *Cell) publishAlive(inc uint32, plain bool) {
	if plain {
		c.state.Store(inc | cellAlive | cellPlain)
	} else {
		c.state.Store(inc | cellAlive)
	}
}

// extendForWatch is Watch's transition: s, the word the watch loaded, is
// alive plain (-> alive extended) or ending plain (-> ending,
// reasonNormal). It reports true if the word is the extended one now, by
// this watch's CAS or by another watch's; false if the word moved on (the
// incarnation ended, or its terminating worker took the plain word first):
// the watch detaches and looks again. The extension, stored in Cell.ext
// before the CAS, is published by it to the worker whose CAS then fails.
func (c *Cell) extendForWatch(s uint32) bool {
	ext := s &^ cellPlain
	if phaseOf(s) == phaseEndingPlain {
		ext = s &^ cellReasonMask
	}
	return c.state.CompareAndSwap(s, ext) || c.state.Load() == ext
}

// endPlainAlive is the terminating worker's first transition for a plain
// incarnation whose canonical word is alive: to ending plain if a Destroy
// hook is to run (hooked), else straight to dead (reasonNormal). It
// returns endWatched, taking nothing, if a Watch has extended the
// incarnation.
func (c *Cell) endPlainAlive(alive uint32, hooked bool) endOutcome {
	if c.state.Load() != alive { // extended: by Spawn, or by a Watch since
		return endWatched
	}
	next := incOf(alive) | cellDead
	if hooked {
		next = incOf(alive) | cellEnding | cellEndingPlain
	}
	if !c.state.CompareAndSwap(alive, next) {
		return endWatched
	}
	return endPlainTaken
}

// endPlainPanicked is the transition of a plain incarnation whose
// behaviour panicked, taken by the worker that recovered the panic: from
// s, the word it loaded, to dead (reasonPanic). It returns endWatched,
// taking nothing, if s is extended or a Watch extended it since.
func (c *Cell) endPlainPanicked(s uint32) endOutcome {
	if s&cellPlain == 0 || !c.state.CompareAndSwap(s, incOf(s)|cellDead|reasonPanic<<cellReasonShift) {
		return endWatched
	}
	return endPlainTaken
}

// finishPlainEnd takes a plain incarnation inc whose Destroy hook has
// returned or panicked from ending to dead (reasonNormal). If a Watch
// converted the ending plain word meanwhile, it stores the dead word (the
// converted word is nobody else's to change) and returns endWatched with
// the extension it loaded before that store: the word is ending until
// then, so no Spawn can have replaced it.
func (c *Cell) finishPlainEnd(inc uint32) (*cellExt, endOutcome) {
	if c.state.CompareAndSwap(inc|cellEnding|cellEndingPlain, inc|cellDead) {
		return nil, endPlainTaken
	}
	x := c.ext.Load()
	c.state.Store(inc | cellDead)
	return x, endWatched
}

// startExtEnd is the terminating worker's first transition for an
// extended incarnation inc: alive extended -> ending (reason). Sends fail
// from then on. A store: nobody else changes an extended word.
func (c *Cell) startExtEnd(inc, reason uint32) {
	c.state.Store(inc | cellEnding | reason<<cellReasonShift)
}

// finishExtEnd is the terminating worker's last transition for an
// extended incarnation inc: ending (reason) -> dead (reason). The store
// hands the object over to whoever may spawn it again.
func (c *Cell) finishExtEnd(inc, reason uint32) {
	c.state.Store(inc | cellDead | reason<<cellReasonShift)
}
