// Package executor is actord's engine: an inverted (message-centric) actor
// executor after the C∀ actor system, with queue gulping, copy queues, queue
// stealing and a spin-then-park idle protocol (docs/design.md cites the
// source and says where this implementation departs from it). Most programs
// use it through package actor; this package exposes the configuration
// (Config), the statistics (Stats), and the typed entry points the actor
// package is built on (Spawn, Send, Bind, Ask, Cell, Message). None of them lets a
// caller break memory safety: the erased calling contract behind them is
// internal.
//
// # Architecture
//
// An Executor has Workers worker goroutines, each locked to an OS thread
// while it runs (see below for long sleeps), and Queues mailboxes
// (Workers*16 by default). Each actor is placed on one mailbox when it is
// spawned and keeps it. Two arrays point at the
// mailboxes: the actors' array, which never changes (senders use it through
// their actor's Cell), and the workers' slot array, in which worker i owns a
// contiguous range of slots and which thieves permute (stealing.TrySwapHooked).
//
// A send builds an envelope (actor, behaviour function pointer, message) in
// place at the end of the destination mailbox's copy queue, under the
// mailbox's spin lock, taken with a CAS and released with a release store
// (on amd64 a plain MOV, see internal/storerel: one locked instruction per
// send). The lock word also carries the queue length, a "being processed"
// flag, a "closed" flag and a gulp sequence, so that the checks other
// parties make without the lock are single atomic loads.
//
// A worker cycles over its slots. For each non-empty mailbox that is not
// being processed it gulps: under the lock it swaps the mailbox's buffer
// with its own empty one and marks the mailbox being processed. It then runs
// the whole batch with no atomic instruction, applying each behaviour's
// allocation status, releases the mailbox (re-taking it at once if it
// refilled, a few times) and moves on. A behaviour that sends to an actor of
// the mailbox its worker is draining appends to the batch directly (bounded
// per batch), with no lock.
//
// A worker that finds no work spins for a while (at most half the workers at
// once), trying to steal every other pass and always before it parks (see
// steal.go and package stealing; a mailbox is stolen once it has waited
// Config.StealAge unserved; when its owner is awake but serves nothing, its
// thread off the CPU, it is served in place after a sixteenth of that, and
// stolen if the owner keeps stalling), and longer while a worker it woke is
// not yet running or another worker has mailboxes waiting, if a processor is
// free for it; then it parks (by default up to 50 µs in a futex, if fewer
// than GOMAXPROCS-1 workers are there and its recent sleeps did not all
// outlast that phase, then on a channel; see Config.Park) until a sender,
// a thief, the watcher (when another worker is stuck in one long mailbox
// visit, see Config.ParkTimeout) or Stop wakes it. A worker that is
// not pinned and sleeps at a low rate (its previous sleep lasted 2 ms or
// more, or its sleeps average 0.5 ms or more between single messages), or
// that runs with a single processor (GOMAXPROCS 1), lets its OS thread go
// while it sleeps on the channel and locks the thread it wakes on: a
// goroutine that wakes it and then blocks (a producer between two messages)
// hands it its processor, as Go does for goroutines, instead of waking two
// threads. With more than one processor, a goroutine outside the system
// whose send wakes such a worker yields its processor to it at once
// (runtime.Gosched) rather than when it next blocks, and goes on on another
// processor if one is idle: the message does not wait for the rest of the
// sender's work. After sleeps that average 0.5 ms or more it spins only
// briefly.
// Behaviours always run on a thread locked to their worker. A busy worker
// that sees a backlog wakes a parked one to steal from it, if a processor
// is idle.
//
// A goroutine outside the system that floods actors pushes one envelope at
// a time; a worker that drains faster than it pushes would come back for a
// few envelopes at a time, the two cores passing the mailbox's cache lines
// back and forth. So, with more than one processor, a worker whose mailbox
// was refilled a little during its drain by such a goroutine (pushes record
// their goroutine) waits at the end of its pass, up to 20 µs, for a batch
// to gather (WorkerStats.BatchWaits; see batchwait.go). Refills by
// behaviours never cause a wait.
//
// Such a goroutine also yields its processor at flood points, until a
// worker has gulped the mailbox it pushed (at most 1 ms each time): every
// 4,096 envelopes in one mailbox, and sooner when several mailboxes hold
// 512 or more at once, so that their backlog together stays near 4,096
// (see flood.go). A bounded or supervised actor's own queue has flood
// points too, every 4,096 messages queued: there the goroutine yields
// until the actor's worker has taken the queue down to 2,048 (at most
// 1 ms each time).
//
// Such a goroutine's send to an actor whose worker is parked wakes that
// worker, unless no processor is free for it: when GOMAXPROCS (at Start)
// is less than the awake workers plus two (the sender's processor and one
// for the woken worker), the woken worker would wait in the sender's run
// queue and then take the sender's processor, stalling the producer. The
// send then leaves the wake-up to the awake workers: the next one to end a
// pass, or a mailbox visit at least 100 µs after its last look, serves the
// parked worker's mailboxes itself
// (WorkerStats.DeferredServes; see defer.go), and wakes the parked worker
// after all if one of them holds a backlog of 1,024 envelopes, or if it
// has work of its own while a processor is idle (the producer stopped).
// Without a
// watcher (stealing off, or a negative ParkTimeout), which rescues a
// mailbox left to a worker stuck in a long behaviour, the owner is always
// woken.
//
// # Message lifetime
//
// The executor reads nothing of a message after its behaviour returns,
// except a request that behaviour neither answered nor forwarded through
// a port, when it terminated its actor or panicked (see deliver.go). A
// message's allocation status is set by the behaviour receiving it
// (Message.SetAllocation, actor.Message.SetAllocation) and recorded for that delivery
// on the worker, not in the message, so a behaviour that sends its message
// on (forwards it) hands it over whole: see deliver.go.
//
// # Source layout
//
// One file per mechanism: send.go (Spawn, Send, the local path),
// mailbox.go (the locked queues and the batch a worker drains), worker.go
// (a worker's life and loop), scan.go (passes and gulps), deliver.go
// (behaviours, statuses, termination, panics), park.go (spinning, parking
// and the wake-up protocol, stated once there), steal.go (the stealing
// policy), handoff.go (keeping a chain on the awake worker), batchwait.go
// (waiting for batches from outside), defer.go (wake-ups from outside left
// to the awake workers), flood.go (outside producers' flood points), identity.go (which goroutine is which worker), port.go and
// ask.go (ports, request/reply), timer.go (timers), async.go (Go), stop.go
// and stats.go. Every atomic variable documents, where it is declared, who
// writes it, who reads it and what it pairs with.
package executor
