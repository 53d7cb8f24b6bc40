package stealing

// A model checker for trySwapOn.
//
// Each thief runs the REAL trySwapOn (or, in the self-tests, a deliberately
// broken copy of it) on an instrumented Slots and Hooks that hand every load,
// compare-and-swap, store and hook call to the checker as a request and wait:
// the checker decides which thief performs the next step, so the thieves'
// calls interleave at the granularity of single atomic operations (and hook
// calls), and a depth-first search over the checker's choices visits every
// interleaving. Two drivers run the thieves:
//   - coroRun: each thief is a coroutine (iter.Pull) suspended at each
//     request, literally single-stepped; a run is forked by replaying its
//     schedule prefix from the initial state.
//   - reRun (the default, much faster, more so under -race): no coroutines;
//     to make a thief's next step, its current call is re-run from the start
//     with the recorded results of its earlier requests, the next request is
//     performed, and the call is abandoned at the request after it. A run is
//     forked by copying its state.
// TestModelEnginesAgree checks that both visit the same states and outcomes.
//
// The search is stateful. A state is the slot array plus, for every thief,
// the sequence of values its requests returned (which, the algorithm being
// deterministic, fixes its program counter and local variables), plus every
// piece of bookkeeping the checks below use. Two schedules that reach the same
// state have the same futures and the same verdicts, so each state is expanded
// once and the number of complete schedules below it is memoised: the count
// reported as "interleavings" is the exact number of distinct complete
// schedules, every one of which is covered. (TestModelEnginesAgree also runs
// the two-thief scenarios without memoisation, every schedule one by one, and
// gets the same counts and outcomes.)
//
// Checked after every step of every schedule:
//   - nil invariant (the one the swap's correctness proof rests on): a slot
//     that holds nil written by thief X is next written only by X; nil is
//     written only into the writer's own slot; a thief never reads nil from
//     its own slot.
//   - custody: every queue is at every moment either in exactly one slot or
//     "held" by the one thief whose write took it out of the array, and only
//     that thief may write it back. This rules out losing and duplicating
//     queues at the first step that would do it, not only at the end.
//   - linearizability: a successful call linearizes at its write to the victim
//     slot (its step-3 CAS). An abstract slot array starts equal to the real one
//     and is swapped at each linearization point; the thief's CAS must swap
//     exactly the abstract contents of its two slots at that instant (no stale
//     queue), and every real slot holds either its abstract content or nil
//     (only while its owner is between step 2 and its final store).
//   - hooks: Giving(q), Ungiving(q) and Taking(q) are called only while q is
//     held by the calling thief (so in no slot, and no other thief can touch
//     it: what the executor's owner bookkeeping relies on), in the order
//     Giving then exactly one of Ungiving (the call fails) or Taking (it succeeds).
//   - on return: true iff the call linearized (and called Giving, Taking);
//     the thief left no nil behind and holds no queue; and a false return
//     is justified: during the call another thief wrote one of its two slots,
//     or it read nil from its victim slot (another thief mid-swap). A swap that
//     runs without interference on its two slots always succeeds.
//
// Checked at the end of every schedule: the slots are a permutation of the
// initial queues (no nil, none lost or duplicated) and equal the abstract
// array, i.e. the composition, in linearization order, of exactly the swaps
// that reported success.

import (
	"errors"
	"fmt"
	"iter"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// mq is a model queue; the queue initially in slot i has id i.
type mq struct{ id int }

func qid(q *mq) int8 {
	if q == nil {
		return -1
	}
	return int8(q.id)
}

func b2byte(ok bool) byte {
	if ok {
		return 1
	}
	return 0
}

func qname(q *mq) string {
	if q == nil {
		return "nil"
	}
	return fmt.Sprintf("q%d", q.id)
}

// swapCall is one TrySwap(victim, mine) call.
type swapCall struct{ victim, mine int }

// modelThief is one worker making its calls one after the other.
type modelThief struct {
	worker int
	calls  []swapCall
}

// scenario is a slot array partitioned among workers and the thieves that
// run concurrently on it; slot i initially holds queue i.
type scenario struct {
	name    string
	owner   []int // owner[i] is the worker owning slot i
	thieves []modelThief
}

func (sc *scenario) validate() error {
	seen := map[int]bool{}
	for _, th := range sc.thieves {
		if seen[th.worker] {
			return fmt.Errorf("worker %d runs two thieves", th.worker)
		}
		seen[th.worker] = true
		for _, c := range th.calls {
			if sc.owner[c.mine] != th.worker || sc.owner[c.victim] == th.worker {
				return fmt.Errorf("worker %d: bad call %d<-%d", th.worker, c.mine, c.victim)
			}
		}
	}
	return nil
}

// swapAlgo is the algorithm under test, instantiated on the model's Slots and Hooks.
type swapAlgo func(s *modelSlots, victim, mine int, h modelHooks) bool

func realSwap(s *modelSlots, victim, mine int, h modelHooks) bool {
	return trySwapOn[mq, *modelSlots, modelHooks](s, victim, mine, h)
}

var errAborted = errors.New("schedule abandoned")

// modelSlots is the instrumented Slots of one thief. Every operation becomes
// a request handed to do, which returns only when the checker has scheduled
// the thief and performed the request on the shared world (on the checker's
// stack), leaving the result in res or ok. Two drivers implement do (see
// coroRun and reRun below).
type modelSlots struct {
	do  func(request)
	res *mq  // result of a Load
	ok  bool // result of a CompareAndSwap
	// returned is set when a TrySwap call has returned ret, for the checker
	// to pick up together with the step that ended the call (coroRun).
	returned, ret bool
}

type request struct {
	op       byte // 'L', 'C', 'S' or 'H'
	i        int
	old, new *mq // CAS operands; new is also the stored value or the hook's queue
	hook     hookKind
}

// perform executes thief t's request on the world and leaves the result in s.
func (w *world) perform(t int, r request, s *modelSlots) {
	switch r.op {
	case 'L':
		s.res = w.load(t, r.i)
	case 'C':
		s.ok = w.cas(t, r.i, r.old, r.new)
	case 'S':
		w.store(t, r.i, r.new)
	case 'H':
		w.hook(t, r.hook, r.new)
	}
}

func (s *modelSlots) Load(i int) *mq {
	s.do(request{op: 'L', i: i})
	return s.res
}

func (s *modelSlots) CompareAndSwap(i int, old, new *mq) bool {
	s.do(request{op: 'C', i: i, old: old, new: new})
	return s.ok
}

func (s *modelSlots) Store(i int, v *mq) {
	s.do(request{op: 'S', i: i, new: v})
}

type hookKind byte

const (
	hookNone hookKind = iota
	hookGiving
	hookUngiving
	hookTaking
)

func (k hookKind) String() string {
	return [...]string{"-", "Giving", "Ungiving", "Taking"}[k]
}

// modelHooks makes each hook call a scheduled step of its thief.
type modelHooks struct{ s *modelSlots }

func (h modelHooks) Giving(q *mq)   { h.s.do(request{op: 'H', new: q, hook: hookGiving}) }
func (h modelHooks) Ungiving(q *mq) { h.s.do(request{op: 'H', new: q, hook: hookUngiving}) }
func (h modelHooks) Taking(q *mq)   { h.s.do(request{op: 'H', new: q, hook: hookTaking}) }

// thState is a thief's state as the checker sees it.
type thState struct {
	call       int  // index of the current call
	active     bool // the current call has performed a step
	interfered bool // another thief wrote one of the call's slots, or it read nil
	// dirty has bit 0 (victim) or 1 (mine) set when another thief wrote
	// that slot since this thief last loaded it.
	dirty   uint8
	lins    int // linearization points of the current call
	phase   hookKind
	given   *mq
	obs     []byte    // every step and its result: fixes the thief's state
	steps   []stepRec // the current call's requests and results (reRun)
	results []bool
	done    bool
}

// world is the shared memory plus the checker's bookkeeping.
type world struct {
	sc     *scenario
	queues []*mq
	slots  []*mq
	abs    []int8 // linearized (abstract) content of each slot
	nilBy  []int8 // thief that wrote the nil now in slot i, or -1
	held   []int8 // per queue: thief holding it out of the array, or -1 if in a slot
	th     []thState
	err    error
	trace  *strings.Builder // nil unless tracing
	// aba records a successful CAS on a slot that other thieves wrote
	// (and wrote back) since the thief loaded it: bit 0 on the victim slot
	// (step 3), bit 1 on the thief's own slot (step 2).
	aba uint8
}

func newWorld(sc *scenario) *world {
	n := len(sc.owner)
	w := &world{
		sc:     sc,
		queues: make([]*mq, n),
		slots:  make([]*mq, n),
		abs:    make([]int8, n),
		nilBy:  make([]int8, n),
		held:   make([]int8, n),
		th:     make([]thState, len(sc.thieves)),
	}
	for i := range n {
		w.queues[i] = &mq{id: i}
		w.slots[i] = w.queues[i]
		w.abs[i] = int8(i)
		w.nilBy[i] = -1
		w.held[i] = -1
	}
	return w
}

func (w *world) failf(format string, args ...any) {
	if w.err == nil {
		w.err = fmt.Errorf(format, args...)
	}
}

// tracef is called only when w.trace is set (callers check, to keep the
// formatting off the search's hot path).
func (w *world) tracef(format string, args ...any) {
	fmt.Fprintf(w.trace, format+"\n", args...)
}

func (w *world) cur(t int) swapCall {
	return w.sc.thieves[t].calls[w.th[t].call]
}

func (w *world) worker(t int) int { return w.sc.thieves[t].worker }

func (w *world) begin(t int) {
	st := &w.th[t]
	if !st.active {
		*st = thState{call: st.call, active: true, obs: st.obs, results: st.results}
	}
}

func (w *world) where(q *mq) string {
	if h := w.held[q.id]; h >= 0 {
		return fmt.Sprintf("held by thief %d", h)
	}
	for i, v := range w.slots {
		if v == q {
			return fmt.Sprintf("in slot %d", i)
		}
	}
	return "nowhere"
}

func (w *world) load(t, i int) *mq {
	w.begin(t)
	v := w.slots[i]
	w.th[t].obs = append(w.th[t].obs, 'L', byte(qid(v)))
	w.th[t].dirty &^= slotBits(w.cur(t), i)
	if w.trace != nil {
		w.tracef("  T%d  Load(%d) = %s", t, i, qname(v))
	}
	if v == nil {
		if i == w.cur(t).mine {
			w.failf("thief %d read nil from its own slot %d outside its own swap", t, i)
		}
		w.th[t].interfered = true
	}
	return v
}

func (w *world) cas(t, i int, old, new *mq) bool {
	w.begin(t)
	ok := w.slots[i] == old
	w.th[t].obs = append(w.th[t].obs, 'C', b2byte(ok))
	if w.trace != nil {
		w.tracef("  T%d  CAS(%d, %s, %s) = %v   (slot held %s)", t, i, qname(old), qname(new), ok, qname(w.slots[i]))
	}
	if ok {
		if w.th[t].dirty&slotBits(w.cur(t), i) != 0 {
			w.aba |= slotBits(w.cur(t), i)
		}
		w.write(t, i, new)
	}
	return ok
}

// slotBits is 1 if i is c's victim slot, 2 if it is c's own slot.
func slotBits(c swapCall, i int) uint8 {
	switch i {
	case c.victim:
		return 1
	case c.mine:
		return 2
	}
	return 0
}

func (w *world) store(t, i int, v *mq) {
	w.begin(t)
	w.th[t].obs = append(w.th[t].obs, 'S', 0)
	if w.trace != nil {
		w.tracef("  T%d  Store(%d, %s)   (slot held %s)", t, i, qname(v), qname(w.slots[i]))
	}
	w.write(t, i, v)
}

// write performs and checks every write to a slot (successful CAS or store).
func (w *world) write(t, i int, v *mq) {
	c := w.cur(t)
	old := w.slots[i]
	if nb := w.nilBy[i]; nb >= 0 && int(nb) != t {
		w.failf("nil invariant broken: slot %d holds the nil written by thief %d, but thief %d wrote it next (%s)", i, nb, t, qname(v))
	}
	if v == nil && w.sc.owner[i] != w.worker(t) {
		w.failf("thief %d (worker %d) wrote nil into slot %d of worker %d", t, w.worker(t), i, w.sc.owner[i])
	}
	if v != nil && v != old && int(w.held[v.id]) != t {
		w.failf("thief %d wrote %s into slot %d but %s is %s (not held by thief %d): it would be duplicated or stolen",
			t, qname(v), i, qname(v), w.where(v), t)
	}
	if old != nil && old != v {
		w.held[old.id] = int8(t) // old leaves the array, in t's hands
	}
	if v != nil {
		w.held[v.id] = -1
	}
	w.slots[i] = v
	w.nilBy[i] = -1
	if v == nil {
		w.nilBy[i] = int8(t)
	}
	for u := range w.th {
		if u != t && w.th[u].active {
			if b := slotBits(w.cur(u), i); b != 0 {
				w.th[u].interfered = true
				w.th[u].dirty |= b
			}
		}
	}
	if i == c.victim { // linearization point of a successful swap
		st := &w.th[t]
		st.lins++
		if st.lins > 1 {
			w.failf("thief %d wrote its victim slot %d twice in one call", t, i)
		}
		if w.abs[c.victim] != qid(old) || w.abs[c.mine] != qid(v) {
			w.failf("thief %d's swap is not an atomic swap: it took %s from slot %d and gave %s, but at that instant slot %d is linearized as q%d and slot %d as q%d",
				t, qname(old), c.victim, qname(v), c.victim, w.abs[c.victim], c.mine, w.abs[c.mine])
		}
		w.abs[c.victim], w.abs[c.mine] = w.abs[c.mine], w.abs[c.victim]
		if w.trace != nil {
			w.tracef("        -> linearized: slots %d and %d swapped; abstract %v", c.victim, c.mine, w.abs)
		}
	}
	for j, q := range w.slots {
		if q == nil {
			nb := w.nilBy[j]
			if nb < 0 || !w.th[nb].active || w.cur(int(nb)).mine != j {
				w.failf("slot %d holds nil but no thief is mid-swap on it", j)
			}
		} else if q.id != int(w.abs[j]) {
			w.failf("slot %d holds %s but the linearized state says q%d", j, qname(q), w.abs[j])
		}
	}
}

func (w *world) hook(t int, k hookKind, q *mq) {
	w.begin(t)
	st := &w.th[t]
	st.obs = append(st.obs, 'H', byte(k))
	if w.trace != nil {
		w.tracef("  T%d  %s(%s)", t, k, qname(q))
	}
	if q == nil {
		w.failf("thief %d: %s(nil)", t, k)
		return
	}
	if int(w.held[q.id]) != t {
		w.failf("thief %d called %s(%s) while %s is %s", t, k, qname(q), qname(q), w.where(q))
	}
	switch k {
	case hookGiving:
		if st.phase != hookNone || st.lins != 0 {
			w.failf("thief %d: Giving after %s", t, st.phase)
		}
		st.given = q
	case hookUngiving:
		if st.phase != hookGiving || q != st.given || st.lins != 0 {
			w.failf("thief %d: Ungiving(%s) after %s(%s)", t, qname(q), st.phase, qname(st.given))
		}
	case hookTaking:
		if st.phase != hookGiving || q == st.given || st.lins != 1 {
			w.failf("thief %d: Taking(%s) after %s(%s), %d linearizations", t, qname(q), st.phase, qname(st.given), st.lins)
		}
	}
	st.phase = k
}

func (w *world) endCall(t int, ok bool) {
	w.begin(t) // a call that took no step at all would still end here
	st := &w.th[t]
	c := w.cur(t)
	if w.trace != nil {
		w.tracef("  T%d  TrySwap(victim %d, mine %d) returns %v", t, c.victim, c.mine, ok)
	}
	if ok && (st.lins != 1 || st.phase != hookTaking) {
		w.failf("thief %d returned true with %d linearizations, last hook %s", t, st.lins, st.phase)
	}
	if !ok && (st.lins != 0 || (st.phase != hookNone && st.phase != hookUngiving)) {
		w.failf("thief %d returned false with %d linearizations, last hook %s", t, st.lins, st.phase)
	}
	if !ok && !st.interfered {
		w.failf("thief %d's swap failed although no other thief touched slots %d and %d during it", t, c.victim, c.mine)
	}
	for i, nb := range w.nilBy {
		if int(nb) == t {
			w.failf("thief %d returned leaving nil in slot %d", t, i)
		}
	}
	for i, h := range w.held {
		if int(h) == t {
			w.failf("thief %d returned still holding q%d (lost)", t, i)
		}
	}
	st.results = append(st.results, ok)
	st.obs = append(st.obs, 'R')
	st.steps = nil
	st.active = false
	st.call++
}

// final checks a complete schedule.
func (w *world) final() {
	count := make([]int, len(w.queues))
	for i, q := range w.slots {
		if q == nil {
			w.failf("slot %d is nil at the end", i)
			continue
		}
		count[q.id]++
		if q.id != int(w.abs[i]) {
			w.failf("slot %d holds %s at the end but the successful swaps, composed in linearization order, give q%d", i, qname(q), w.abs[i])
		}
	}
	for id, n := range count {
		if n != 1 {
			w.failf("q%d is in %d slots at the end", id, n)
		}
	}
}

func (w *world) successes() int {
	n := 0
	for _, st := range w.th {
		for _, ok := range st.results {
			if ok {
				n++
			}
		}
	}
	return n
}

// key encodes everything that determines the future of the run and the
// verdicts of the checks.
func (w *world) key() string {
	b := make([]byte, 0, 128)
	for i := range w.slots {
		b = append(b, byte(qid(w.slots[i])), byte(w.abs[i]), byte(w.nilBy[i]), byte(w.held[i]))
	}
	for _, st := range w.th {
		var flags byte
		if st.active {
			flags |= 1
		}
		if st.interfered {
			flags |= 2
		}
		if st.done {
			flags |= 4
		}
		b = append(b, '|', byte(st.call), flags, st.dirty, byte(st.lins), byte(st.phase), byte(qid(st.given)))
		b = append(b, st.obs...)
		for _, ok := range st.results {
			b = append(b, 'f'+b2byte(ok)*('t'-'f'))
		}
	}
	return string(b)
}

// A runner is one run in progress: the world and the thieves, each paused
// just before its next step.
type runner interface {
	world() *world
	// step lets thief t perform its next step and run on (locally) up to
	// the request after it, or to its end.
	step(t int)
	// fork returns an independent copy of the run; prefix is the schedule
	// that led to it from the initial state.
	fork(prefix []int) runner
	close()
}

func newRunner(sc *scenario, algo swapAlgo, coroutines, trace bool) runner {
	w := newWorld(sc)
	if trace {
		w.trace = &strings.Builder{}
	}
	if coroutines {
		return newCoroRun(w, algo)
	}
	return &reRun{w: w, algo: algo}
}

// coroRun runs each thief in a coroutine (iter.Pull) suspended at each
// request: the algorithm is literally single-stepped. A coroutine cannot be
// copied, so fork replays the prefix from the initial state.
type coroRun struct {
	w       *world
	algo    swapAlgo
	slots   []*modelSlots
	pending []request // each live thief's next request
	next    []func() (request, bool)
	stop    []func()
}

func newCoroRun(w *world, algo swapAlgo) *coroRun {
	n := len(w.sc.thieves)
	r := &coroRun{w: w, algo: algo, slots: make([]*modelSlots, n), pending: make([]request, n)}
	for t, th := range w.sc.thieves {
		s := &modelSlots{}
		seq := func(yield func(request) bool) {
			defer func() {
				if p := recover(); p != nil && p != errAborted {
					panic(p)
				}
			}()
			s.do = func(q request) {
				if !yield(q) {
					panic(errAborted) // the run was dropped; unwind the coroutine
				}
			}
			for _, c := range th.calls {
				ok := algo(s, c.victim, c.mine, modelHooks{s})
				s.returned, s.ret = true, ok
			}
		}
		next, stop := iter.Pull(seq)
		r.slots[t] = s
		r.next = append(r.next, next)
		r.stop = append(r.stop, stop)
		r.resume(t) // run up to the first request
	}
	return r
}

func (r *coroRun) world() *world { return r.w }

func (r *coroRun) step(t int) {
	r.w.perform(t, r.pending[t], r.slots[t])
	r.resume(t)
}

func (r *coroRun) resume(t int) {
	q, ok := r.next[t]()
	if s := r.slots[t]; s.returned {
		s.returned = false
		r.w.endCall(t, s.ret)
	}
	r.pending[t] = q
	if !ok {
		r.w.th[t].done = true
	}
}

func (r *coroRun) fork(prefix []int) runner {
	c := newCoroRun(newWorld(r.w.sc), r.algo)
	for _, t := range prefix {
		c.step(t)
	}
	return c
}

func (r *coroRun) close() {
	for _, stop := range r.stop {
		stop()
	}
}

// reRun holds no coroutines: a thief's state is the list of its current
// call's requests and their results (thState.steps), and each step re-runs
// the call from the start, answering the recorded requests from that list
// (and checking that the algorithm asks for exactly the same ones), performing
// the next request on the world, and abandoning the call (by panicking with
// errPaused) when it issues the request after that. The algorithm being
// deterministic, this visits the same states as coroRun (TestModelEnginesAgree
// compares them), and a run is copied by copying the world.
type reRun struct {
	w    *world
	algo swapAlgo
}

var errPaused = errors.New("paused before the next request")

func (r *reRun) world() *world { return r.w }

func (r *reRun) fork([]int) runner { return &reRun{w: r.w.clone(), algo: r.algo} }

func (r *reRun) close() {}

func (r *reRun) step(t int) {
	w := r.w
	c := w.cur(t)
	recorded := w.th[t].steps
	pos, live := 0, false
	s := &modelSlots{}
	s.do = func(q request) {
		if pos < len(recorded) {
			rec := recorded[pos]
			pos++
			if rec.req != q {
				panic(fmt.Sprintf("thief %d is not deterministic: request %+v replayed as %+v", t, rec.req, q))
			}
			s.res, s.ok = rec.res, rec.ok
			return
		}
		if live {
			panic(errPaused)
		}
		live = true
		w.perform(t, q, s)
		w.th[t].steps = append(w.th[t].steps, stepRec{req: q, res: s.res, ok: s.ok})
	}
	returned, ok := false, false
	func() {
		defer func() {
			if p := recover(); p != nil && p != errPaused {
				panic(p)
			}
		}()
		ok = r.algo(s, c.victim, c.mine, modelHooks{s})
		returned = true
	}()
	if !live {
		panic(fmt.Sprintf("thief %d: a call that performs no operation", t))
	}
	if returned {
		w.endCall(t, ok)
		if w.th[t].call == len(w.sc.thieves[t].calls) {
			w.th[t].done = true
		}
	}
}

// stepRec is a request a thief made during its current call and its result.
type stepRec struct {
	req request
	res *mq
	ok  bool
}

func (w *world) clone() *world {
	c := *w
	c.slots = slices.Clone(w.slots)
	c.abs = slices.Clone(w.abs)
	c.nilBy = slices.Clone(w.nilBy)
	c.held = slices.Clone(w.held)
	c.th = slices.Clone(w.th)
	for i := range c.th {
		c.th[i].obs = slices.Clone(c.th[i].obs)
		c.th[i].results = slices.Clone(c.th[i].results)
		c.th[i].steps = slices.Clone(c.th[i].steps)
	}
	return &c
}

func (w *world) enabled() []int {
	var en []int
	for t, st := range w.th {
		if !st.done {
			en = append(en, t)
		}
	}
	return en
}

// outcome summarises the exploration of one scenario.
type outcome struct {
	interleavings uint64 // complete schedules, all checked
	allFail       uint64 // complete schedules in which no call succeeded
	states        int    // states expanded
	minOK, maxOK  int    // fewest and most successful calls in a schedule
	allFailSched  []int  // a schedule in which no call succeeded, if any
	finals        map[string]bool
	aba           uint8 // world.aba of any step
	err           error // first violation, with the schedule that shows it
}

type counts struct{ all, allFail uint64 }

type checker struct {
	sc   *scenario
	algo swapAlgo
	opts opts
	memo map[string]counts
	out  outcome
}

// opts chooses how explore works: by default memoised, on reRun.
type opts struct {
	stateless  bool // enumerate every schedule one by one, without memoisation
	coroutines bool // single-step the thieves as coroutines (coroRun)
}

// explore checks every interleaving of the scenario.
func explore(sc *scenario, algo swapAlgo, o opts) outcome {
	if err := sc.validate(); err != nil {
		panic(sc.name + ": " + err.Error())
	}
	c := &checker{sc: sc, algo: algo, opts: o, memo: map[string]counts{},
		out: outcome{minOK: 1 << 30, maxOK: -1, finals: map[string]bool{}}}
	n := c.dfs(newRunner(sc, algo, o.coroutines, false), nil)
	c.out.interleavings, c.out.allFail = n.all, n.allFail
	return c.out
}

func add(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		panic("interleaving count overflows uint64")
	}
	return s
}

func (c *checker) dfs(r runner, prefix []int) counts {
	if c.out.err != nil {
		r.close()
		return counts{}
	}
	w := r.world()
	var key string
	if !c.opts.stateless {
		key = w.key()
		if n, ok := c.memo[key]; ok {
			r.close()
			return n
		}
	}
	c.out.states++
	en := w.enabled()
	if len(en) == 0 {
		w.final()
		r.close()
		if w.err != nil {
			c.violation(w.err, prefix)
			return counts{}
		}
		ok := w.successes()
		c.out.minOK, c.out.maxOK = min(c.out.minOK, ok), max(c.out.maxOK, ok)
		c.out.finals[fmt.Sprint(w.abs)] = true
		n := counts{all: 1}
		if ok == 0 {
			n.allFail = 1
			if c.out.allFailSched == nil {
				c.out.allFailSched = slices.Clone(prefix)
			}
		}
		if !c.opts.stateless {
			c.memo[key] = n
		}
		return n
	}
	var total counts
	for k, t := range en {
		child := r // the last successor continues this run, the others fork it
		if k < len(en)-1 {
			child = r.fork(prefix)
		}
		p := append(prefix[:len(prefix):len(prefix)], t)
		child.step(t)
		c.out.aba |= child.world().aba
		if err := child.world().err; err != nil {
			child.close()
			if k < len(en)-1 {
				r.close()
			}
			c.violation(err, p)
			return counts{}
		}
		n := c.dfs(child, p)
		total.all, total.allFail = add(total.all, n.all), add(total.allFail, n.allFail)
	}
	if !c.opts.stateless {
		c.memo[key] = total
	}
	return total
}

func (c *checker) violation(err error, sched []int) {
	if c.out.err == nil {
		c.out.err = fmt.Errorf("%s: %w\nschedule %v:\n%s", c.sc.name, err, sched, traceOf(c.sc, c.algo, sched))
	}
}

// traceOf replays a schedule and returns its step-by-step trace.
func traceOf(sc *scenario, algo swapAlgo, sched []int) string {
	r := newRunner(sc, algo, true, true)
	defer r.close()
	for _, t := range sched {
		r.step(t)
	}
	return r.world().trace.String()
}

// ---------------------------------------------------------------------------
// Scenarios

// layout returns the owner array for workers owning the given numbers of
// contiguous slots.
func layout(sizes ...int) []int {
	var owner []int
	for w, n := range sizes {
		for range n {
			owner = append(owner, w)
		}
	}
	return owner
}

func single(worker int, calls ...swapCall) modelThief {
	return modelThief{worker: worker, calls: calls}
}

func nameOf(owner []int, thieves []modelThief) string {
	var b strings.Builder
	fmt.Fprintf(&b, "owners%v", owner)
	for _, th := range thieves {
		fmt.Fprintf(&b, " w%d:", th.worker)
		for k, c := range th.calls {
			if k > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "%d<-%d", c.mine, c.victim)
		}
	}
	return b.String()
}

// combos returns every scenario in which the given workers each make one
// call: mine from mines(worker), victim from any slot the worker does not own.
func combos(owner []int, workers []int, mines func(w int) []int) []*scenario {
	choices := make([][]swapCall, len(workers))
	for k, w := range workers {
		for _, m := range mines(w) {
			for v := range owner {
				if owner[v] != w {
					choices[k] = append(choices[k], swapCall{victim: v, mine: m})
				}
			}
		}
	}
	var out []*scenario
	var rec func(k int, acc []modelThief)
	rec = func(k int, acc []modelThief) {
		if k == len(workers) {
			ths := slices.Clone(acc)
			out = append(out, &scenario{name: nameOf(owner, ths), owner: owner, thieves: ths})
			return
		}
		for _, c := range choices[k] {
			rec(k+1, append(acc, single(workers[k], c)))
		}
	}
	rec(0, nil)
	return out
}

func ownSlots(owner []int) func(w int) []int {
	return func(w int) []int {
		var s []int
		for i, o := range owner {
			if o == w {
				s = append(s, i)
			}
		}
		return s
	}
}

// firstOwnSlot: relabelling the slots inside one worker's range maps a
// scenario onto an equivalent one, so each thief's own slot can be taken to
// be the first of its range without losing any behaviour up to renaming.
func firstOwnSlot(owner []int) func(w int) []int {
	return func(w int) []int { return ownSlots(owner)(w)[:1] }
}

// allFailPredicted is the third theorem of the C∀ Actors chapter (see
// docs/design.md) applied to a scenario of one-call thieves: vertices are
// slots (queues), each call is an edge from the thief's slot to its victim's,
// and an interleaving in which every swap fails exists iff every connected
// component with an edge contains a cycle. (A component without a cycle always
// has a successful swap, and components share no slots.) Out-degree is at most
// one, so a component has a cycle iff it has as many edges as vertices.
func allFailPredicted(sc *scenario) bool {
	parent := make([]int, len(sc.owner))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		if parent[i] != i {
			parent[i] = find(parent[i])
		}
		return parent[i]
	}
	for _, th := range sc.thieves {
		c := th.calls[0]
		parent[find(c.mine)] = find(c.victim)
	}
	verts, edges := map[int]int{}, map[int]int{}
	for i := range parent {
		verts[find(i)]++
	}
	for _, th := range sc.thieves {
		edges[find(th.calls[0].mine)]++
	}
	for r, e := range edges {
		if e < verts[r] {
			return false
		}
	}
	return true
}

// checkAll explores each scenario, requires no violation and (for one-call
// thieves) agreement with the third theorem, and logs the totals.
func checkAll(t *testing.T, label string, scs []*scenario, theorem3 bool) {
	t.Helper()
	start := time.Now()
	var total, allFail uint64
	states, cyclic, aba3, aba2 := 0, 0, 0, 0
	for _, sc := range scs {
		o := explore(sc, realSwap, opts{})
		require.NoError(t, o.err)
		require.Positive(t, o.interleavings, sc.name)
		if theorem3 {
			pred := allFailPredicted(sc)
			require.Equal(t, pred, o.allFail > 0,
				"%s: third theorem predicts all-fail interleaving possible=%v, found %d of %d", sc.name, pred, o.allFail, o.interleavings)
			if pred {
				cyclic++
			}
		}
		t.Logf("  %s: %d interleavings, %d states, %d..%d successful swaps, %d interleavings with none",
			sc.name, o.interleavings, o.states, o.minOK, o.maxOK, o.allFail)
		total, allFail, states = add(total, o.interleavings), add(allFail, o.allFail), states+o.states
		if o.aba&1 != 0 {
			aba3++
		}
		if o.aba&2 != 0 {
			aba2++
		}
	}
	t.Logf("%s: %d scenarios (%d with only cyclic components), %d interleavings in all (%d with no successful swap), %d states, %v",
		label, len(scs), cyclic, total, allFail, states, time.Since(start).Round(time.Millisecond))
	t.Logf("%s: benign ABA (a CAS succeeding on a slot rewritten since it was read) at step 3 in %d scenarios, at step 2 in %d",
		label, aba3, aba2)
}

// ---------------------------------------------------------------------------
// Exhaustive scenarios

// Two thieves (workers 0 and 1, two slots each) and an idle worker 2 with
// one slot: every own slot and every victim slot, so the 36 scenarios include
// both thieves on one victim slot, each stealing the other's spare or
// active slot (a cycle), chains, and disjoint swaps.
func TestModelTwoThieves(t *testing.T) {
	owner := layout(2, 2, 1)
	checkAll(t, "2 thieves, 5 slots", combos(owner, []int{0, 1}, ownSlots(owner)), true)
}

// Three thieves owning two slots each: every victim slot for each thief, and
// (up to relabelling within each range) every own slot: 64 scenarios covering
// M-to-one, chains, 2- and 3-cycles, cycles with tails, and mixtures.
func TestModelThreeThieves(t *testing.T) {
	owner := layout(2, 2, 2)
	scs := combos(owner, []int{0, 1, 2}, firstOwnSlot(owner))
	checkAll(t, "3 thieves, 6 slots (2 each)", scs, true)
}

// Three thieves owning one slot each plus an idle worker's slot: every
// victim choice (27 scenarios).
func TestModelThreeThievesIdleVictim(t *testing.T) {
	owner := layout(1, 1, 1, 1)
	checkAll(t, "3 thieves + idle worker, 4 slots", combos(owner, []int{0, 1, 2}, ownSlots(owner)), true)
}

// Thieves that make two calls in a row (so queues come back to slots they
// left, and a thief swaps a queue it just took): 2 thieves, one slot each,
// and an idle worker; every sequence of victims.
func TestModelRepeatedCalls(t *testing.T) {
	owner := layout(1, 1, 1)
	var scs []*scenario
	victims := func(w int) []int {
		var v []int
		for i, o := range owner {
			if o != w {
				v = append(v, i)
			}
		}
		return v
	}
	for _, a1 := range victims(0) {
		for _, a2 := range victims(0) {
			for _, b1 := range victims(1) {
				for _, b2 := range victims(1) {
					ths := []modelThief{
						single(0, swapCall{a1, 0}, swapCall{a2, 0}),
						single(1, swapCall{b1, 1}, swapCall{b2, 1}),
					}
					scs = append(scs, &scenario{name: nameOf(owner, ths), owner: owner, thieves: ths})
				}
			}
		}
	}
	// And, on 6 slots, worker 0 taking two queues from worker 2 in turn
	// while worker 1 steals from worker 0 and worker 2 from worker 1.
	owner2 := layout(2, 2, 2)
	ths := []modelThief{
		single(0, swapCall{4, 0}, swapCall{5, 1}),
		single(1, swapCall{0, 2}),
		single(2, swapCall{2, 4}),
	}
	scs = append(scs, &scenario{name: nameOf(owner2, ths), owner: owner2, thieves: ths})
	checkAll(t, "repeated calls", scs, false)
}

// The default search (memoised, on reRun) must agree with single-stepping
// coroutines through every schedule one by one, without memoisation, on the
// two-thief scenarios, and with memoised coroutines state for state on some
// three-thief ones.
func TestModelEnginesAgree(t *testing.T) {
	same := func(a, b outcome, name string) {
		require.NoError(t, a.err)
		require.NoError(t, b.err)
		require.Equal(t, b.interleavings, a.interleavings, name)
		require.Equal(t, b.allFail, a.allFail, name)
		require.Equal(t, b.finals, a.finals, name)
		require.Equal(t, [2]int{b.minOK, b.maxOK}, [2]int{a.minOK, a.maxOK}, name)
		require.Equal(t, b.allFailSched, a.allFailSched, name)
	}
	owner := layout(2, 2, 1)
	var total uint64
	scs := combos(owner, []int{0, 1}, ownSlots(owner))
	if raceEnabled {
		// Coroutine switches are slow under the race detector, and this
		// test checks the checker, not the code for races: up to
		// relabelling within ranges, thief 0 uses slot 0 and thief 1 slot 2.
		scs = combos(owner, []int{0, 1}, firstOwnSlot(owner))
	}
	for _, sc := range scs {
		a := explore(sc, realSwap, opts{})
		b := explore(sc, realSwap, opts{stateless: true, coroutines: true})
		same(a, b, sc.name)
		require.Equal(t, a.states, explore(sc, realSwap, opts{coroutines: true}).states, sc.name)
		total += b.interleavings
	}
	t.Logf("2 thieves, %d scenarios: %d interleavings single-stepped one by one as coroutines: same outcomes as the memoised search", len(scs), total)

	owner = layout(1, 1, 1, 1)
	cases := [][3]int{{3, 3, 3}, {3, 0, 1}, {1, 2, 0}, {1, 0, 0}}
	if raceEnabled {
		cases = cases[1:3]
	}
	for _, victims := range cases {
		var ths []modelThief
		for w, v := range victims {
			ths = append(ths, single(w, swapCall{victim: v, mine: w}))
		}
		sc := &scenario{name: nameOf(owner, ths), owner: owner, thieves: ths}
		a := explore(sc, realSwap, opts{})
		b := explore(sc, realSwap, opts{coroutines: true})
		same(a, b, sc.name)
		require.Equal(t, a.states, b.states, sc.name)
		t.Logf("%s: %d states, %d interleavings, with and without coroutines", sc.name, a.states, a.interleavings)
	}
}

// ---------------------------------------------------------------------------
// The chapter's theorems

// Theorem 1: M thieves all swapping with one victim slot whose owner does not
// steal: in every interleaving at least one swap succeeds.
func TestTheoremOneVictim(t *testing.T) {
	for m := 1; m <= 4; m++ {
		if m == 4 && !bigModels() {
			t.Logf("M=4 thieves on one victim: skipped (-short or -race)")
			continue
		}
		owner := layout(slices.Repeat([]int{1}, m+1)...) // slot 0: the victim
		var ths []modelThief
		for i := 1; i <= m; i++ {
			ths = append(ths, single(i, swapCall{victim: 0, mine: i}))
		}
		sc := &scenario{name: fmt.Sprintf("M=%d thieves on one victim", m), owner: owner, thieves: ths}
		o := explore(sc, realSwap, opts{})
		require.NoError(t, o.err)
		require.GreaterOrEqual(t, o.minOK, 1, sc.name)
		require.Zero(t, o.allFail, sc.name)
		t.Logf("%s: %d interleavings (%d states), successful swaps per interleaving %d..%d",
			sc.name, o.interleavings, o.states, o.minOK, o.maxOK)
	}
}

// Theorem 2: a chain, thief i swapping with the slot of thief i-1 and worker 0
// only a victim: in every interleaving at least one swap succeeds.
func TestTheoremChain(t *testing.T) {
	for m := 2; m <= 4; m++ { // m queues, m-1 thieves
		owner := layout(slices.Repeat([]int{1}, m)...)
		var ths []modelThief
		for i := 1; i < m; i++ {
			ths = append(ths, single(i, swapCall{victim: i - 1, mine: i}))
		}
		sc := &scenario{name: fmt.Sprintf("chain of %d queues", m), owner: owner, thieves: ths}
		o := explore(sc, realSwap, opts{})
		require.NoError(t, o.err)
		require.GreaterOrEqual(t, o.minOK, 1, sc.name)
		t.Logf("%s: %d interleavings (%d states), successful swaps per interleaving %d..%d",
			sc.name, o.interleavings, o.states, o.minOK, o.maxOK)
	}
}

// Theorem 3: a cycle (the owner of each queue steals the next one): there is
// an interleaving in which every swap fails, and every interleaving still
// leaves a permutation. Also a cycle with a tail (every vertex has an
// outgoing edge), and the acyclic trees, for which a success is guaranteed.
func TestTheoremCycle(t *testing.T) {
	for m := 2; m <= 4; m++ {
		if m == 4 && !bigModels() {
			t.Logf("cycle of 4: skipped (-short or -race)")
			continue
		}
		owner := layout(slices.Repeat([]int{1}, m)...)
		var ths []modelThief
		for i := range m {
			ths = append(ths, single(i, swapCall{victim: (i + 1) % m, mine: i}))
		}
		sc := &scenario{name: fmt.Sprintf("cycle of %d", m), owner: owner, thieves: ths}
		o := explore(sc, realSwap, opts{})
		require.NoError(t, o.err)
		require.Positive(t, o.allFail, "%s: no interleaving in which every swap fails", sc.name)
		require.NotNil(t, o.allFailSched)
		t.Logf("%s: %d interleavings (%d states), %d with no successful swap, successful swaps %d..%d",
			sc.name, o.interleavings, o.states, o.allFail, o.minOK, o.maxOK)
		if m == 2 {
			t.Logf("an interleaving of %s in which both swaps fail:\n%s", sc.name, traceOf(sc, realSwap, o.allFailSched))
		}
	}

	owner := layout(1, 1, 1, 1)
	for _, c := range []struct {
		name    string
		victims []int // victims[w] is worker w's victim, -1 if it does not steal
		allFail bool
		big     bool
	}{
		{"cycle 0<->1 with tail 2->0", []int{1, 0, 0, -1}, true, false},
		{"cycle 0->1->2->0 with tail 3->1", []int{1, 2, 0, 1}, true, true},
		{"tree 1->0, 2->0, 3->1", []int{-1, 0, 0, 1}, false, false},
		{"two 2-cycles", []int{1, 0, 3, 2}, true, true},
		{"2-cycle and a lone swap", []int{1, 0, 3, -1}, false, false},
	} {
		if c.big && !bigModels() {
			t.Logf("%s: skipped (-short or -race)", c.name)
			continue
		}
		var ths []modelThief
		for w, v := range c.victims {
			if v >= 0 {
				ths = append(ths, single(w, swapCall{victim: v, mine: w}))
			}
		}
		sc := &scenario{name: c.name, owner: owner, thieves: ths}
		o := explore(sc, realSwap, opts{})
		require.NoError(t, o.err)
		require.Equal(t, c.allFail, o.allFail > 0, sc.name)
		require.Equal(t, c.allFail, allFailPredicted(sc), sc.name)
		t.Logf("%s: %d interleavings (%d states), %d with no successful swap", sc.name, o.interleavings, o.states, o.allFail)
	}
}

// ---------------------------------------------------------------------------
// The checker can fail: broken copies of the algorithm must be caught.

// noNilCheck skips step 1: it may CAS a victim slot that holds another
// thief's nil, overwriting its claim.
func noNilCheck[S slotArray[mq], H Hooks[mq]](slots S, victim, mine int, h H) bool {
	myQueue := slots.Load(mine)
	vicQueue := slots.Load(victim)
	if !slots.CompareAndSwap(mine, myQueue, nil) {
		return false
	}
	h.Giving(myQueue)
	if !slots.CompareAndSwap(victim, vicQueue, myQueue) {
		h.Ungiving(myQueue)
		slots.Store(mine, myQueue)
		return false
	}
	h.Taking(vicQueue)
	slots.Store(mine, vicQueue)
	return true
}

// publishFirst does step 4 before step 3.
func publishFirst[S slotArray[mq], H Hooks[mq]](slots S, victim, mine int, h H) bool {
	myQueue := slots.Load(mine)
	vicQueue := slots.Load(victim)
	if vicQueue == nil || myQueue == nil {
		return false
	}
	if !slots.CompareAndSwap(mine, myQueue, nil) {
		return false
	}
	h.Giving(myQueue)
	slots.Store(mine, vicQueue)
	if !slots.CompareAndSwap(victim, vicQueue, myQueue) {
		h.Ungiving(myQueue)
		slots.Store(mine, myQueue)
		return false
	}
	h.Taking(vicQueue)
	return true
}

// claimByStore does step 2 with a plain store after re-checking the slot.
func claimByStore[S slotArray[mq], H Hooks[mq]](slots S, victim, mine int, h H) bool {
	myQueue := slots.Load(mine)
	vicQueue := slots.Load(victim)
	if vicQueue == nil || myQueue == nil {
		return false
	}
	if slots.Load(mine) != myQueue {
		return false
	}
	slots.Store(mine, nil)
	h.Giving(myQueue)
	if !slots.CompareAndSwap(victim, vicQueue, myQueue) {
		h.Ungiving(myQueue)
		slots.Store(mine, myQueue)
		return false
	}
	h.Taking(vicQueue)
	slots.Store(mine, vicQueue)
	return true
}

// installByStore does step 3 with a plain store after re-checking the slot.
func installByStore[S slotArray[mq], H Hooks[mq]](slots S, victim, mine int, h H) bool {
	myQueue := slots.Load(mine)
	vicQueue := slots.Load(victim)
	if vicQueue == nil || myQueue == nil {
		return false
	}
	if !slots.CompareAndSwap(mine, myQueue, nil) {
		return false
	}
	h.Giving(myQueue)
	if slots.Load(victim) != vicQueue {
		h.Ungiving(myQueue)
		slots.Store(mine, myQueue)
		return false
	}
	slots.Store(victim, myQueue)
	h.Taking(vicQueue)
	slots.Store(mine, vicQueue)
	return true
}

// noRestore forgets to restore its slot when step 3 fails.
func noRestore[S slotArray[mq], H Hooks[mq]](slots S, victim, mine int, h H) bool {
	myQueue := slots.Load(mine)
	vicQueue := slots.Load(victim)
	if vicQueue == nil || myQueue == nil {
		return false
	}
	if !slots.CompareAndSwap(mine, myQueue, nil) {
		return false
	}
	h.Giving(myQueue)
	if !slots.CompareAndSwap(victim, vicQueue, myQueue) {
		h.Ungiving(myQueue)
		return false
	}
	h.Taking(vicQueue)
	slots.Store(mine, vicQueue)
	return true
}

// takeEarly calls Taking before step 3, while the victim's queue is still
// reachable: harmless to the slots, fatal to the executor's bookkeeping.
func takeEarly[S slotArray[mq], H Hooks[mq]](slots S, victim, mine int, h H) bool {
	myQueue := slots.Load(mine)
	vicQueue := slots.Load(victim)
	if vicQueue == nil || myQueue == nil {
		return false
	}
	if !slots.CompareAndSwap(mine, myQueue, nil) {
		return false
	}
	h.Giving(myQueue)
	h.Taking(vicQueue)
	if !slots.CompareAndSwap(victim, vicQueue, myQueue) {
		h.Ungiving(myQueue)
		slots.Store(mine, myQueue)
		return false
	}
	slots.Store(mine, vicQueue)
	return true
}

func TestModelCatchesBrokenSwaps(t *testing.T) {
	owner := layout(2, 2, 1)
	scs := combos(owner, []int{0, 1}, ownSlots(owner))
	for _, b := range []struct {
		name string
		algo swapAlgo
		want string // part of the violation's message
	}{
		{"no step-1 nil check", noNilCheck[*modelSlots, modelHooks], "nil invariant broken"},
		{"step 4 before step 3", publishFirst[*modelSlots, modelHooks], "duplicated or stolen"},
		{"step 2 by load+store", claimByStore[*modelSlots, modelHooks], ""},
		{"step 3 by load+store", installByStore[*modelSlots, modelHooks], ""},
		{"no restore after step 3 fails", noRestore[*modelSlots, modelHooks], "leaving nil"},
		{"Taking before step 3", takeEarly[*modelSlots, modelHooks], "called Taking"},
	} {
		t.Run(b.name, func(t *testing.T) {
			caught := 0
			var first error
			for _, sc := range scs {
				o := explore(sc, b.algo, opts{})
				if o.err != nil {
					caught++
					if first == nil {
						first = o.err
					}
				}
				// Single-stepped coroutines find the same first violation.
				require.Equal(t, o.err, explore(sc, b.algo, opts{coroutines: true}).err, sc.name)
			}
			require.Error(t, first, "the checker accepted a broken swap")
			require.Contains(t, first.Error(), b.want)
			msg, _, _ := strings.Cut(first.Error(), "\n")
			t.Logf("caught in %d of %d scenarios; first: %s", caught, len(scs), msg)
		})
	}
}

// The real algorithm passes, and the trace of a violation shows the steps.
func TestModelTraceOfViolation(t *testing.T) {
	owner := layout(1, 1)
	sc := &scenario{name: "mutual steal", owner: owner, thieves: []modelThief{
		single(0, swapCall{victim: 1, mine: 0}), single(1, swapCall{victim: 0, mine: 1}),
	}}
	require.NoError(t, explore(sc, realSwap, opts{}).err)
	o := explore(sc, noNilCheck[*modelSlots, modelHooks], opts{})
	require.Error(t, o.err)
	require.Contains(t, o.err.Error(), "CAS(")
	t.Logf("%v", o.err)
}

// raceEnabled is set by race_on_test.go when the race detector is on.
var raceEnabled = false

// bigModels enables the four-thief scenarios (up to 240k states each, a few
// seconds in all): not with -short, and not under the race detector, which
// slows the (single-goroutine) search about tenfold and has nothing to find in it.
func bigModels() bool { return !raceEnabled && !testing.Short() }

// ---------------------------------------------------------------------------
// Stress: the real atomicSlots under real concurrency.

// stressQ is a queue whose bookkeeping fields are plain (non-atomic) and
// written only in the hooks, like the executor's mailbox owner: the race
// detector then checks that the slots' atomics order every hook on a queue
// after the previous one, i.e. that hooks really run only while the calling
// thief has the queue to itself.
type stressQ struct {
	id    int
	owner int // worker whose range holds the queue
	moves int // +1 per Giving or Taking, -1 per Ungiving
}

type stressHooks struct{ thief, victim int }

func (h stressHooks) Giving(q *stressQ)   { q.owner = h.victim; q.moves++ }
func (h stressHooks) Ungiving(q *stressQ) { q.owner = h.thief; q.moves-- }
func (h stressHooks) Taking(q *stressQ)   { q.owner = h.thief; q.moves++ }

func TestSwapStress(t *testing.T) {
	attempts, budget := 100_000, 5*time.Second
	if testing.Short() {
		attempts = 20_000
	}
	for _, c := range []struct {
		name           string
		workers, slots int // slots per worker
	}{
		{"8 workers x 8 slots", 8, 8},
		{"8 workers x 1 slot", 8, 1},
		{"4 workers x 2 slots, all stealing from worker 0", 4, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			hot := strings.Contains(c.name, "worker 0")
			n := c.workers * c.slots
			slots := make([]atomic.Pointer[stressQ], n)
			queues := make([]*stressQ, n)
			for i := range n {
				queues[i] = &stressQ{id: i, owner: i / c.slots}
				slots[i].Store(queues[i])
			}
			deadline := time.Now().Add(budget)
			var ok, failed, ownNil, tries atomic.Int64
			var wg sync.WaitGroup
			for w := range c.workers {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(w), 0x5eed))
					lo := w * c.slots
					k := 0
					for ; k < attempts; k++ {
						if k%1024 == 0 && time.Now().After(deadline) {
							break
						}
						mine := lo + rng.IntN(c.slots)
						if slots[mine].Load() == nil {
							ownNil.Add(1) // only this worker nils its own slots
						}
						vw := rng.IntN(c.workers - 1)
						if vw >= w {
							vw++
						}
						if hot && w != 0 && rng.IntN(4) != 0 {
							vw = 0
						}
						victim := vw*c.slots + rng.IntN(c.slots)
						if TrySwapHooked(slots, victim, mine, stressHooks{thief: w, victim: vw}) {
							ok.Add(1)
						} else {
							failed.Add(1)
						}
						if k%64 == 0 {
							runtime.Gosched()
						}
					}
					tries.Add(int64(k))
				})
			}
			wg.Wait()

			require.Zero(t, ownNil.Load(), "a worker found nil in its own slot outside its own swap")
			seen := make([]bool, n)
			moves := 0
			for i := range slots {
				q := slots[i].Load()
				require.NotNil(t, q, "slot %d is nil", i)
				require.False(t, seen[q.id], "queue %d is in two slots", q.id)
				seen[q.id] = true
				require.Equal(t, i/c.slots, q.owner, "queue %d is in slot %d of worker %d but its owner says %d", q.id, i, i/c.slots, q.owner)
			}
			for _, q := range queues {
				moves += q.moves
			}
			require.Equal(t, 2*ok.Load(), int64(moves), "each successful swap moves two queues")
			require.Positive(t, ok.Load())
			t.Logf("%d attempts: %d swaps, %d failed (%.1f%%)", tries.Load(), ok.Load(), failed.Load(),
				100*float64(failed.Load())/float64(tries.Load()))
		})
	}
}
