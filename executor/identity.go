package executor

import (
	"sync"
	"sync/atomic"

	"github.com/actord/actord/internal/goid"
)

// Goroutine identity: which goroutine is which worker.
//
// Two tables answer "is the calling goroutine a worker, and which one?":
//
//   - Executor.gtab, per executor, read on the send and spawn paths
//     (Executor.current): an open-addressed table of immutable entries,
//     keyed by goid.Get. Where goroutine identity is not supported
//     (goid.Supported false), nothing is entered and every caller counts as
//     external: correct, without the local fast paths.
//   - running, process-wide, read by Message.SetAllocation (which does not know its
//     executor): a copy-on-write map from identity to worker, keyed by
//     goid.Get, or by goid.Slow where Get is not supported.

// gentry maps one goroutine identity to a worker. g == 0 marks a retired
// entry (the worker exited; its identity may be reused by another goroutine).
type gentry struct {
	g uintptr
	w *worker
}

func (e *Executor) initIdentities() {
	tab := 4
	for tab < 4*e.cfg.Workers {
		tab *= 2
	}
	e.gtab = make([]atomic.Pointer[gentry], tab)
	e.gmask = uintptr(tab - 1)
}

// hash spreads goroutine identities (8-byte aligned pointers) over gtab.
func (e *Executor) hash(g uintptr) uintptr {
	return uintptr((uint64(g) >> 3) * 0x9E3779B97F4A7C15 >> 32)
}

// register enters w's goroutine identity in both tables. Called by the
// worker goroutine when it starts (or resumes after runtime.Goexit).
func (e *Executor) register(w *worker) {
	g := goid.Get()
	w.g.Store(g)
	w.slowID.Store(goid.Slow())
	runningAdd(w.key(), w)
	if g == 0 {
		return
	}
	// Take the first free or retired entry of g's probe sequence. A retired
	// entry (a tombstone) matches no goroutine and lookups probe past it,
	// so reusing it creates no hole. The CAS pairs with other workers
	// registering at the same time.
	ent := &gentry{g: g, w: w}
	for k, i := 0, e.hash(g); k < len(e.gtab); k, i = k+1, i+1 {
		slot := &e.gtab[i&e.gmask]
		if old := slot.Load(); (old == nil || old.g == 0) && slot.CompareAndSwap(old, ent) {
			w.gslot = int(i & e.gmask)
			return
		}
	}
	panic("executor: goroutine table full") // 4x more entries than workers: cannot happen
}

// retire withdraws w's identity from both tables before its goroutine ends
// (the identity may then be reused by another goroutine).
func (e *Executor) retire(w *worker) {
	runningDel(w.key())
	if w.g.Load() != 0 {
		e.gtab[w.gslot].Store(&gentry{})
	}
	w.g.Store(0)
	w.slowID.Store(0)
}

// current returns the worker running the calling goroutine, or nil if the
// caller is not one of e's workers (or goroutine identity is unsupported).
// Cost: one identity read and usually one table load.
func (e *Executor) current() *worker {
	if !goid.Supported {
		return nil
	}
	g := goid.Unchecked()
	if w := e.workerOf(g); w != nil {
		return w
	}
	if lentCount.Load() != 0 {
		if w := lentWorker(uintptr(g)); w != nil && w.e == e {
			return w
		}
	}
	return nil
}

// workerOf returns the worker whose goroutine identity is g, or nil.
func (e *Executor) workerOf(g uintptr) *worker {
	if g == 0 {
		return nil
	}
	for k, i := 0, e.hash(g); k < len(e.gtab); k, i = k+1, i+1 {
		ent := e.gtab[i&e.gmask].Load()
		if ent == nil {
			return nil
		}
		if ent.g == g {
			return ent.w
		}
	}
	return nil
}

// inBehaviour reports whether the caller is one of e's workers (that is, a
// behaviour). Unlike current it also works where goroutine identity is not
// supported.
func (e *Executor) inBehaviour() bool {
	w := runningWorker()
	return w != nil && w.e == e
}

// running is the process-wide identity map (see above). Readers load the
// pointer and read the map, which is never modified after publication;
// writers (workers starting and exiting) copy it under runningMu and publish
// the copy with the atomic store.
var (
	running   atomic.Pointer[map[uint64]*worker]
	runningMu sync.Mutex
)

// key returns w's key in running: its goroutine identity, or its goroutine
// id where identity is not supported.
func (w *worker) key() uint64 {
	if goid.Supported {
		return uint64(w.g.Load())
	}
	return w.slowID.Load()
}

func runningAdd(k uint64, w *worker) {
	runningMu.Lock()
	defer runningMu.Unlock()
	old := running.Load()
	m := make(map[uint64]*worker, 1+lenMap(old))
	if old != nil {
		for k2, v := range *old {
			m[k2] = v
		}
	}
	m[k] = w
	running.Store(&m)
}

func runningDel(k uint64) {
	runningMu.Lock()
	defer runningMu.Unlock()
	old := running.Load()
	if old == nil {
		return
	}
	m := make(map[uint64]*worker, lenMap(old))
	for k2, v := range *old {
		if k2 != k {
			m[k2] = v
		}
	}
	running.Store(&m)
}

func lenMap(m *map[uint64]*worker) int {
	if m == nil {
		return 0
	}
	return len(*m)
}

// otherWorker reports whether the calling goroutine, which is not one of
// e's workers, is a worker of another executor. It looks the goroutine up
// only when workers of other executors exist (the registry holds more
// workers than e has), so that a process with one executor pays one load of
// the registry's size.
func otherWorker(e *Executor) bool {
	return lenMap(running.Load()) > len(e.workers) && runningWorker() != nil
}

// runningWorker returns the worker (of any executor) that the calling
// goroutine is, or nil.
func runningWorker() *worker {
	if goid.Supported {
		// Fast path: the calling goroutine is the worker that the last
		// lookup from this worker's identity found (see lastRunning).
		g := goid.Unchecked()
		if e := lastRunning[(g>>3)&uintptr(len(lastRunning)-1)].Load(); e != nil && e.g == g && e.w.g.Load() == g {
			return e.w
		}
	}
	m := running.Load()
	if m == nil {
		return nil
	}
	var k uint64
	if goid.Supported {
		k = uint64(goid.Get())
	} else {
		k = goid.Slow()
	}
	w := (*m)[k]
	if w != nil && goid.Supported {
		lastRunning[(uintptr(k)>>3)&uintptr(len(lastRunning)-1)].Store(&gentry{g: uintptr(k), w: w})
	}
	if w == nil && lentCount.Load() != 0 && goid.Supported {
		w = lentWorker(uintptr(k)) // a caller serving as a lent worker (help.go)
	}
	return w
}

// lastRunning caches runningWorker's answers by goroutine identity: a
// direct-mapped table of immutable entries, written by runningWorker after a
// map lookup and read by it first. An entry is used only if its worker's
// goroutine identity is still the caller's (w.g, which the worker clears
// before its goroutine exits), so a stale entry never answers for a
// goroutine that reused the identity.
var lastRunning [256]atomic.Pointer[gentry]

// InBehaviour reports whether the calling goroutine is a worker running a
// behaviour or hook (of any executor). Code that may block (a call over
// the network, a wait for another actor) can use it to refuse, as Ask does,
// rather than hold up a worker.
func InBehaviour() bool { return runningWorker() != nil }
