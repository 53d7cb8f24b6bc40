// Package executor is actord's engine: the inverted (message-centric)
// executor of the C∀ actor system, with queue gulping, copy queues, queue
// stealing and a spin-then-park idle protocol. Most programs use it through
// package actor; this package exposes the configuration (Config), the
// statistics (Stats) and the low-level Cell/MsgCell/Send API the actor
// package is built on.
//
// # Architecture
//
// An Executor has Workers worker goroutines, each locked to an OS thread, and
// Queues mailboxes (Workers*16 by default). Each actor is placed on one
// mailbox when it is spawned and keeps it. Two arrays point at the
// mailboxes: the actors' array, which never changes (senders use it through
// their actor's Cell), and the workers' slot array, in which worker i owns a
// contiguous range of slots and which thieves permute (stealing.TrySwap).
//
// A send builds an envelope (actor, behaviour function pointer, message) in
// place at the end of the destination mailbox's copy queue, under the
// mailbox's spin lock. The lock word also carries the queue length, a
// "being processed" flag, a "closed" flag and a gulp sequence, so that the
// checks other parties make without the lock are single atomic loads.
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
// A worker that finds no work for two passes becomes a thief (see steal in
// worker.go and package stealing); after Config.SpinPasses idle passes it
// parks on a futex until a sender, a thief or Stop wakes it, or its park
// timeout passes. A busy worker that sees a backlog wakes a parked one to
// steal from it.
//
// Every atomic variable documents, where it is declared, who writes it, who
// reads it and what it pairs with; the lost-wake-up argument is on
// worker.park.
package executor
