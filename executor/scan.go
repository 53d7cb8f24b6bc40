package executor

import "time"

// pass visits each owned slot once, gulping and processing every non-empty
// mailbox that is not being processed elsewhere. It reports whether it found
// work. Its parts, each with one job: for each slot, the unlocked tests
// (choosing it), mailbox.gulp, processGulped (the visit) and,
// between visits, lookDeferred; after the slots, resolveHandoff, a batch
// wait (waitForBatch) and checkBacklog. What glues them stays here, so
// that the loop inlines what it did as one function.
func (w *worker) pass() bool {
	e := w.e
	// Pairs with Stats' Add (stats.go), which asks for a publication.
	if ep := e.statsEpoch.Load(); ep != w.seenEpoch {
		w.publish(ep) // between batches: the counters are consistent
	}
	w.st.passes++
	w.next, w.follows = nil, 0 // a new pass: the chain is followed afresh (see afterVisit)
	busy := 0
	for i := w.lo; i < w.hi; i++ {
		// Choosing the slot: the unlocked tests. (They stay in the loop:
		// as a helper, even an inlined one, they cost 3 to 5 more
		// instructions per empty slot, where the compiler does not thread
		// the helper's result into the loop's branch.)
		// Pairs with the swap's stores (stealing.TrySwapHooked): nil only
		// while this worker swaps the slot, never here.
		mb := e.slots[i].Load()
		if mb == nil {
			continue
		}
		// Pairs with the unlocking stores of pushers, gulpers and
		// releasers (mailbox.unlock).
		word := mb.word.Load()
		if wordLen(word) == 0 {
			continue
		}
		if word&wordProcessing != 0 {
			w.missedGulp() // being processed elsewhere
			continue
		}
		n, missed := mb.gulp(&w.buf)
		if missed {
			w.missedGulp()
			continue
		}
		if n == 0 {
			continue // emptied since the unlocked test
		}
		// Work of our own besides a handed-off mailbox: its owner is
		// worth waking, so that both run (see handoff.go).
		if w.handoff != nil {
			w.flushHandoff()
		}
		busy++
		if w.spinner {
			w.stopSpinning() // found work: no longer spinning (and the watcher may see it stuck)
		}
		w.processGulped(mb, n)
		// Pairs with Stop's store (Executor.shutdown): a forced stop ends
		// the pass after the visit under way.
		if e.shutdown.Load() {
			w.flushHandoff()
			return true
		}
		// Pairs with deferWake's and takeDeferred's Adds (defer.go): the
		// clock is read only while wake-ups are deferred.
		if e.deferred.Load() != 0 {
			busy += w.lookDeferred(time.Since(e.epoch))
		}
	}
	served := 0
	// Pairs with deferWake's and takeDeferred's Adds (defer.go).
	if e.deferred.Load() != 0 {
		served = w.serveDeferred() // wake-ups left to the awake workers (see defer.go)
	}
	if w.handoff != nil {
		w.resolveHandoff(busy, served)
	}
	busy += served
	if mb := w.batchFrom; mb != nil {
		// A small refill from outside during a drain: let a batch gather
		// before the next pass (see batchwait.go).
		w.batchFrom = nil
		w.waitForBatch(mb)
	}
	// The backlog check, every 8th busy pass (see checkBacklog).
	if busy > 0 && e.sel != nil {
		if w.busyPasses++; w.busyPasses&7 == 0 {
			w.checkBacklog()
		}
	}
	return busy > 0
}

// missedGulp counts a gulp that found its mailbox being processed elsewhere.
func (w *worker) missedGulp() {
	if w.stats {
		w.st.MissedGulps++
	}
}

// lookDeferred serves the wake-ups left to the awake workers (see
// defer.go) during a pass, at most every deferLookEvery: a pass whose
// behaviours take long would leave them waiting. now is the time since the
// executor's epoch. It returns the number of mailboxes served.
func (w *worker) lookDeferred(now time.Duration) int {
	if now-w.deferLook < deferLookEvery {
		return 0
	}
	w.deferLook = now
	return w.serveDeferred()
}

// resolveHandoff resolves the handoff slot at the end of a pass that
// visited busy mailboxes and served served deferred ones: the rest of the
// pass found nothing else to do, so afterVisit serves the handed-off
// mailbox here unless an earlier mailbox has filled up again, which needs
// a look only if this pass had other work before the handoff (see
// handoff.go).
func (w *worker) resolveHandoff(busy, served int) {
	w.afterVisit(busy == 1 && served == 0)
}

// checkBacklog looks, after a busy pass, for a backlog: at least two owned
// mailboxes waiting again. (Counting busy mailboxes during the pass would
// not do: a chain of single messages hopping from one mailbox to the next,
// which one worker serves best alone, looks busy too.) If others sleep, it
// wakes one so it can steal (wakeThiefAt). pass calls it every 8th busy
// pass: a backlog that lasts is seen soon enough, and a worker making many
// short passes (a chain of single messages) does not scan its slots after
// each one. It reports whether it tried to wake a thief.
func (w *worker) checkBacklog() bool {
	e := w.e
	// sleepers pairs with park's Adds (S1 in park.go): a racy look, a
	// sleeper missed here is found at a later busy pass.
	if e.sleepers.Load() == 0 || !w.waiting(2) {
		return false
	}
	return w.wakeThiefAt(time.Since(e.epoch))
}

// wakeThiefAt wakes a thief for the backlog checkBacklog found at now (the
// time since the executor's epoch), at most once per steal age
// (ageRule.thiefDue): a thief woken sooner could not take anything yet
// (candidates must age), and each wake costs this busy worker a wake-up
// and the sleeper a spin over our mailbox words. It reports whether it
// tried to wake one.
func (w *worker) wakeThiefAt(now time.Duration) bool {
	if !w.e.ageRule().thiefDue(w.thiefWoken, now) {
		return false
	}
	w.thiefWoken = now
	w.wakeThief()
	return true
}

// processGulped processes the n envelopes just gulped from mb: it makes mb
// the current mailbox, recorded as drained by this worker's batch (for the
// local send path, see send), and calls processCurrent. (beginVisit does
// the same for a helping caller; this one stays inline: see batchDone.)
func (w *worker) processGulped(mb *mailbox, n int) {
	// drainer pairs with the local send path's load (send.go), which
	// compares the batch's goroutine with its own: stored by the drainer
	// only when it changes.
	if mb.drainer.Load() != &w.batch {
		mb.drainer.Store(&w.batch)
	}
	w.cur = mb
	w.regulps = 0
	w.gulped = n
	w.awakeGulps++
	w.awakeMsgs += n
	w.processCurrent()
}

// beginVisit is processGulped without the processing, for a helping
// caller (help.go).
func (w *worker) beginVisit(mb *mailbox, n int) {
	if mb.drainer.Load() != &w.batch { // see processGulped
		mb.drainer.Store(&w.batch)
	}
	w.cur = mb
	w.regulps = 0
	w.gulped = n
	w.awakeGulps++
	w.awakeMsgs += n
}

// processCurrent drains the batch of w.cur, re-taking the mailbox while it
// refilled meanwhile (up to Config.Regulps times), then releases it.
func (w *worker) processCurrent() {
	e, mb := w.e, w.cur
	w.seq += 2 // a new visit (see the watcher in park.go, and victimStuck)
	for {
		w.noteVisit()
		w.limit = w.gulped + e.cfg.LocalBatch
		w.drain()
		w.limit = 0
		w.st.LocalSends += uint64(w.buf.Pushed() - w.gulped) // always: Stats.MessagesSent needs it
		if w.stats {
			w.st.GulpSize.Observe(uint64(w.gulped))
		}
		// grown pairs with the watcher's Load and Swap (reclaimIdle,
		// park.go), which gives the buffers back.
		if w.buf.Cap() > e.cfg.QueueCapacity && !e.grown.Load() {
			e.grown.Store(true) // give back when idle (see reclaimIdle)
		}
		w.buf.Reset(e.cfg.QueueCapacity)
		regulp := w.regulps < e.cfg.Regulps && !e.shutdown.Load() // shutdown: Stop's store
		n, left, by := mb.release(&w.buf, regulp)
		if n+left > 0 {
			w.noteRefill(mb, n+left, by)
		}
		if n == 0 {
			w.cur = nil
			// Messages arrived while we held the mailbox, but it is not
			// ours to re-take: if its owner (a thief took it) sleeps,
			// wake it. This is the sender's half of the wake-up protocol
			// (see park.go): the release's lock and unlocking store (P1)
			// published them. sleepers pairs with park's Add (S1), owner
			// with the swap's hooks (stealHooks).
			if left > 0 && e.sleepers.Load() != 0 {
				if o := e.workers[mb.owner.Load()]; o != w {
					o.wake()
				}
			}
			return
		}
		w.regulps++
		w.gulped = n
		w.flushHandoff() // more work of our own: wake the handoff's owner (see handoff.go)
	}
}

// batchDone ends the drained batch of w.cur for a helping caller
// (help.go), as processCurrent's loop does after its drain: it counts the
// batch's local sends, resets the batch and releases the mailbox, re-taking
// it if it refilled meanwhile, mayRegulp holds, and fewer than
// Config.Regulps re-takes were made in this visit. It reports whether it
// re-took it (a new batch to drain); otherwise the visit is over and w.cur
// is nil. processCurrent keeps its copy inline (a call per visit costs the
// dynamic send about 1% more instructions): keep the two in step.
func (w *worker) batchDone(mayRegulp bool) bool {
	e, mb := w.e, w.cur
	w.limit = 0
	w.st.LocalSends += uint64(w.buf.Pushed() - w.gulped) // always: Stats.MessagesSent needs it
	if w.stats {
		w.st.GulpSize.Observe(uint64(w.gulped))
	}
	// grown pairs with the watcher's Load and Swap (reclaimIdle,
	// park.go), which gives the buffers back.
	if w.buf.Cap() > e.cfg.QueueCapacity && !e.grown.Load() {
		e.grown.Store(true) // give back when idle (see reclaimIdle)
	}
	w.buf.Reset(e.cfg.QueueCapacity)
	regulp := mayRegulp && w.regulps < e.cfg.Regulps && !e.shutdown.Load() // shutdown: Stop's store
	n, left, by := mb.release(&w.buf, regulp)
	if n+left > 0 {
		w.noteRefill(mb, n+left, by)
	}
	if n == 0 {
		w.cur = nil
		// Messages arrived while we held the mailbox, but it is not
		// ours to re-take: if its owner (a thief took it) sleeps,
		// wake it. This is the sender's half of the wake-up protocol
		// (see park.go): the release's lock and unlocking store (P1)
		// published them. sleepers pairs with park's Add (S1), owner
		// with the swap's hooks (stealHooks).
		if left > 0 && e.sleepers.Load() != 0 {
			if o := e.workers[mb.owner.Load()]; o != w {
				o.wake()
			}
		}
		return false
	}
	w.regulps++
	w.gulped = n
	w.flushHandoff() // more work of our own: wake the handoff's owner (see handoff.go)
	return true
}

// noteVisit publishes the visit that begins (its counter w.seq and the
// batch size w.gulped) in batchSeq, unless no reader has seen the value
// there now and the batch size is the same: then the store would tell
// nobody anything yet (see batchSeq). Called by the worker's goroutine.
//
// Pairs with visitSeq: a reader loads batchSeq and then makes seenSeq
// equal to it; a visit that loads seenSeq after that finds it equal to
// stored and stores. So a reader that recorded a value sees it change at
// the first visit the worker begins after the recording, as if every
// visit stored; a visit begun between the reader's load and its record
// may go unstored, which makes the reader see one visit begun just after
// its look as begun before it (a policy matter: see the watcher and
// victimStuck).
func (w *worker) noteVisit() {
	v := uint64(w.gulped)<<32 | w.seq&0xffffffff
	if uint32(w.stored) == w.seenSeq.Load() || v>>32 != w.stored>>32 {
		w.stored = v
		w.batchSeq.Store(v)
	}
}

// visitSeq loads the visit counter of w (batchSeq's low 32 bits) for a
// reader that compares it with later loads, and records in w.seenSeq that
// it was seen (see noteVisit). Called by the watcher and by thieves.
//
// A reader slower than another could record an older value over a newer
// one, which would leave the worker skipping its stores while the newer
// value's reader waits for a change: so a reader whose CAS recorded a
// value that batchSeq no longer holds records again, until it records the
// value batchSeq holds after its CAS, a few times at most: a worker that
// begins visits faster than that is not stuck, and a value left stale by
// giving up makes the other reader see no change for one look at worst,
// after which its own visitSeq records its value again.
func (w *worker) visitSeq() uint32 {
	for i := 0; ; i++ {
		s := uint32(w.batchSeq.Load())
		o := w.seenSeq.Load()
		if o == s {
			return s
		}
		if w.seenSeq.CompareAndSwap(o, s) && uint32(w.batchSeq.Load()) == s || i == visitSeqTries-1 {
			return s
		}
	}
}

// visitSeqTries bounds visitSeq's attempts.
const visitSeqTries = 4

// waiting reports whether at least n owned mailboxes hold envelopes and are
// not being processed.
func (w *worker) waiting(n int) bool {
	for i := w.lo; i < w.hi; i++ {
		// Pairs with the swap's stores (stealing.TrySwapHooked).
		if mb := w.e.slots[i].Load(); mb != nil && isCandidate(mb) {
			if n--; n == 0 {
				return true
			}
		}
	}
	return false
}

// hasWork reports whether an owned mailbox holds envelopes and is not being
// processed elsewhere (a mailbox being processed elsewhere is handed back
// with a wake-up by its releaser, see processCurrent). It is the parking
// worker's re-check (S3 in park.go): a mailbox whose lock is held is read
// once the holder has unlocked it (settled).
func (w *worker) hasWork() bool {
	for i := w.lo; i < w.hi; i++ {
		// Pairs with the swap's stores (stealing.TrySwapHooked).
		if mb := w.e.slots[i].Load(); mb != nil {
			if word := mb.settled(); wordLen(word) > 0 && word&wordProcessing == 0 {
				return true
			}
		}
	}
	return false
}

// nextLocal returns the next of w's own mailboxes, round-robin, that is not
// a spare, for PlaceLocal; nil if all of w's slots hold spares. Own slots
// are nil only during w's own swaps, and a behaviour never runs inside one.
func (w *worker) nextLocal() *mailbox {
	span := w.hi - w.lo
	for k := 0; k < span; k++ {
		mb := w.e.slots[w.lo+w.spawned%span].Load() // pairs with the swap's stores (stealing.TrySwapHooked)
		w.spawned++
		if !mb.spare {
			return mb
		}
	}
	return nil
}
