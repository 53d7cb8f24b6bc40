// Package actor is the user-facing API of actord: statically typed actors on
// an inverted (message-centric) executor, after the C∀ actor system.
//
// # Actors, messages, behaviours
//
// An actor type is a struct that embeds Actor; a message type is a struct
// that embeds Message; a behaviour is any function of an actor pointer and a
// message pointer that returns an Allocation, usually a method:
//
//	type Counter struct {
//		actor.Actor
//		n int
//	}
//
//	type Add struct {
//		actor.Message
//		N int
//	}
//
//	func (c *Counter) Add(m *Add) actor.Allocation {
//		c.n += m.N
//		return actor.Nodelete // keep receiving
//	}
//
// Send names the behaviour that will receive the message:
//
//	actor.Send(counter, &Add{N: 1}, (*Counter).Add)
//
// The compiler checks that the behaviour takes exactly this actor type and
// this message type, so a message type for which an actor has no behaviour
// cannot be sent to it: it does not compile. An actor can have any number of
// behaviours, one per message type it accepts. Nothing is looked up at run
// time: the behaviour travels with the message as a function pointer.
//
// An actor's behaviours never run concurrently with each other, so an actor's
// fields need no locking; different actors run in parallel on the workers.
// Messages sent by one sender to one actor are received in the order they
// were sent. Send never waits for another actor and, once the queues have
// grown to their working size, never allocates. Sends work from any
// goroutine: from behaviours and from outside the system. A goroutine
// outside the system that floods queues faster than the workers drain
// them yields its processor until a worker has taken its queue's messages
// (at most a millisecond each time): at every 4096 messages queued in one
// queue, and sooner when several queues are backed up at once (about 4096
// messages in all, at least 512 in its own). This keeps such queues, and
// memory, from growing without limit; behaviours never yield there.
//
// # Systems
//
// Start starts a System: worker goroutines, each locked to an OS thread
// (one per GOMAXPROCS by default), cycling over sharded message queues (16
// per worker by default). Spawn enrols an actor; each actor keeps the queue
// it was placed on for its whole life. Stop blocks until every actor has
// terminated, then stops the workers; a program may start and stop systems
// as often as it likes, or run several at once.
//
//	sys, err := actor.Start()
//	...
//	c, err := actor.Spawn(sys, &Counter{})
//	actor.Send(c, &Add{N: 2}, (*Counter).Add)
//	actor.SendPill(c, actor.FinishedMsg)
//	err = sys.Stop(ctx)
//
// Stop waits for the actors to end by themselves: one that never does
// keeps it waiting until its context ends. A service that exits calls
// Shutdown instead: it asks every live actor to stop, with a pill queued
// after the messages already queued for it (which it still receives),
// supervised actors (WithEscalate) before their supervisors, each actor's
// Stopped hook run and its watchers told ReasonStopped; messages sent to
// it after that pill are dead letters. Then it stops the system as Stop
// does. Both are bounded by their context; when it ends with actors
// alive, the error (ErrActorsAlive) names them by type, with counts.
//
// Idle workers spin briefly, then sleep until a sender wakes them: an idle
// system uses no CPU. Behaviours always run on a thread locked to their
// worker; a worker that is not pinned (WithCPUPinning) lets its thread go
// during long sleeps (and during every sleep with a single processor) and
// wakes on another, as a goroutine would. Workers
// with nothing to do steal whole queues from busy ones (see package
// stealing), so a long-running behaviour does not hold up the actors on its
// worker's other queues.
//
// # Ports and requests
//
// A Port is a reference to one behaviour of one actor, typed by the message
// it accepts (Bind makes one): code that routes to, mocks, names, times or
// asks an actor holds a Port[*M] and needs nothing else. A request type
// embeds Request[R], R being its reply type; the receiving behaviour
// answers with Reply, which accepts only an R. Goroutines outside the
// system use Ask, which waits for the reply or for its context to end;
// behaviours use AskAsync, whose reply (or error, or timeout) arrives later
// as a *Reply[R] message, so that no worker ever blocks waiting for another
// actor. Ask from a behaviour returns ErrAskInBehaviour at once. A
// behaviour may answer with an error instead of an R (Request.Fail): the
// asker gets that error as it is. A request whose behaviour panicked ends
// with the *PanicError (ErrPanic); one that its actor terminates on without
// replying, or that is never delivered, with ErrTerminated, ErrStopped or
// ErrMailboxFull (Ask lists what each means to a service: busy, gone,
// timeout, failed).
// A behaviour may also keep a request and reply from a later behaviour (or
// from a goroutine). If its actor ends first (a status, a pill, a panic,
// Shutdown, an entity's passivation) and has a Started or Stopped hook, a
// Spawn option or a watch (every entity has), the request is failed at once
// with an error wrapping ErrTerminated, after the actor's Stopped hook
// (which may still answer it); an actor with none of these is not
// recorded, and what it kept waits for the asker's context or the
// system's end. If the actor restarts (WithRestart, a supervisor's
// Restart), the requests it had received and not answered are failed so,
// and the restarted actor receives those still queued; if the system
// stops, ErrStopped. An answer after that returns ErrReplied and is
// dropped: a request is answered once.
//
// Register gives a port a name in its system, and Lookup finds it again,
// typed: a lookup with the wrong message type is an error, and a name is
// released when its actor terminates. SendAfter and SendEvery deliver a
// message to a port later, or periodically, until stopped. Package
// actortest runs actors deterministically in unit tests, with probes that
// assert on what they receive.
//
// Callers that help: a goroutine that waits in Ask for an actor whose
// worker is parked delivers the request itself, as that worker, instead of
// waking it (Go's channels do the same: the woken side runs where its
// waker runs). The behaviour cannot tell: it is in a behaviour, its panics
// are supervised, its statistics counted, its messages kept in order, and
// the actor never runs in two places. The asker stops once its request is
// answered, its context has ended (noticed when the behaviour it runs
// returns), or after a bounded number of deliveries, and leaves the rest,
// terminations and their hooks included, to the worker. Three things
// differ for the asking goroutine: it is not locked to an OS thread (a
// behaviour that calls runtime.LockOSThread must unlock it before it
// returns, as on a worker, or the asker stays locked); a runtime.Goexit in
// the behaviour ends the asker; and a behaviour that blocks until the
// asker has gone on never returns, which is one more reason for a
// behaviour not to block. The goroutine of an actor.Go function helps in
// the same way when it hands its Reply back. WithoutCallerHelp turns
// helping off. WorkerStats.CallerVisits counts the visits callers made as
// each worker (actord_caller_visits_total in package metrics).
//
// # Entities
//
// An entity is an actor per key (an account, a session, a device) made on
// first use and found by its name. NewEntities gives a set of them, of one
// actor type, with a factory and spawn options; Entities.Get returns the
// live actor of a name or spawns it, atomically: concurrent Gets of a name
// get one actor, and a name has at most one live incarnation at any time.
// EntityPort is Get and Bind: every behaviour of an entity is reachable
// from its name. An entity ends as any actor does; its name is free again
// once its end is over (its Stopped hook has returned), and a Get that
// finds it ending waits for that, bounded by its context, then spawns the
// next incarnation. EntitySend is Get and Send, again while the Send
// reports ErrTerminated (the incarnation ended in between, refusing the
// message, which was not queued): the message reaches a live incarnation
// exactly once.
//
// WithPassivation(d) ends an actor that has received no message for d
// (between d and 1.25·d): idle passivation, for entities above all. Its
// Stopped hook runs with ReasonPassivated (Destroy and Release do not, as
// for Finished), its watchers are told, and an entity's name is released.
// Nothing runs per message but a plain store by the worker, and no
// behaviour has to do anything: a timer per actor on the system's timer
// goroutine sends it a check every d/4, which runs in the actor's own
// turn. The actor is ended only in that turn, after every message it had
// accepted (Send returned nil) is delivered to it; a send after the
// decision fails with ErrTerminated and queues nothing, as for any ended
// actor, so a message sent to a stale port or pointer of a passivated
// incarnation is refused, never lost, and EntitySend (or Get again) takes
// it to the next incarnation. Actors spawned without the option pay
// nothing for it.
//
// # Blocking work
//
// A behaviour runs on a worker, that is an OS thread. A behaviour that
// blocks (I/O, a lock, a sleep) holds that thread until it returns: the
// actors on the same queue wait, the worker's other queues are stolen by
// idle workers after a while, and with every worker blocked nothing runs.
// For blocking work, use Go: it runs a function on its own goroutine and
// delivers the result to the actor as a *Reply[R] message.
//
// # Termination and allocation statuses
//
// A behaviour's result says what happens to its actor: Nodelete (it goes on),
// Delete (its Destroy hook runs if it has one, then its Release hook, such as
// returning it to a sync.Pool; otherwise the garbage collector frees it),
// Destroy (its Destroy hook runs and the storage is kept; the actor may be
// spawned again) or Finished (nothing runs). Any status but Nodelete
// terminates the actor: later sends to it return ErrTerminated. The built-in
// poison pills DeleteMsg, DestroyMsg and FinishedMsg, sent with SendPill,
// terminate any actor with that status once the messages sent before them by
// the same sender have been received.
//
// The order, on the actor's worker, after the behaviour returns: the actor's
// status is applied (its Destroy hook runs; the actor becomes terminated:
// Alive reports false and sends fail; its Release hook runs; Stop counts it
// gone), then the message's status (its Destroy hook, then its Release hook).
// Who may spawn a terminated actor again: after Destroy or Finished, the
// program, once Alive reports false; after Delete, whoever the Release hook
// handed it to, at once. Each spawn is a new incarnation, which no port,
// timer or watch of an earlier one reaches; incarnations are never reused,
// so one actor value can be spawned MaxIncarnations times, after which
// Spawn returns ErrIncarnationsExhausted (spawn a new value instead, or
// let the pool drop it). The incarnation lives in the embedded Actor:
// reset a pooled actor's own fields, never the whole value (*a = T{} also
// zeroes its Actor, which makes it new again, so that ports, timers and
// watches of its earlier incarnations may reach the next one). A panic in a behaviour terminates its actor as if
// with Finished: its Destroy and Release hooks do not run (its Stopped hook,
// below, does); a panic in an actor's hook completes that termination; a
// panic in a message's hook is reported and the actor, whose behaviour
// completed, goes on. Every panic is reported to WithErrorHandler's
// function, and to Stop unless supervision handled it (below).
//
// # Failures, watches and lifecycle hooks
//
// By default a panic in a behaviour terminates its actor. Spawn options
// choose otherwise, per actor: WithRestart (reset the state, go on with the
// queued messages, within a budget of restarts, with exponential backoff),
// WithResume (drop the failing message, keep the state) or WithEscalate
// (suspend the actor and send a *Failure to a supervisor port, which
// decides with Failure.Resume, Restart or Stop). The failing message is
// dropped in every case (a request's requester gets the *PanicError,
// ErrPanic, whether the actor lives on or not); the panic is reported to WithErrorHandler, and to Stop
// only when it terminated the actor. These options apply to behaviours: a
// panic in the Started hook (below) terminates its actor (ReasonPanic)
// under every option, since a start that failed is not retried. No
// goroutine or timer exists per supervised actor while nothing fails; a
// backoff sets one timer.
//
// Watch (from an actor, through a Port[*Terminated]) and WatchChan (from a
// goroutine) deliver exactly one *Terminated per watch when the watched
// actor terminates, saying why (ReasonNormal, ReasonPanic, ReasonBudget,
// ReasonStopped, ReasonPassivated), also when the watch begins after the
// end.
//
// An actor type may have a Started hook (Starter), run on its worker before
// its first message and after each restart, and a Stopped hook (Stopper).
// The order of everything that runs at a termination, on the actor's
// worker: the behaviour returns (or panics); the actor becomes terminated
// for senders (sends return ErrTerminated); Stopped runs; Destroy runs (for
// Delete and Destroy); messages still queued in a bounded or supervised
// actor's mailbox become dead letters; Alive reports false; watchers are
// notified; Release runs (for Delete); Stop counts the actor gone; then
// the message's own hooks run. Plain actors (no option, hook or watcher)
// skip what they lack. After a forced Stop, actors still alive run Stopped
// (one after another, on a goroutine that Stop starts and waits for, one
// second in all); the watchers of an actor whose hook returned in time get
// ReasonStopped as it returns, the actor reports Alive false once Stop has
// returned, and sends to it report ErrStopped, whatever a watch through a
// port of an earlier incarnation did meanwhile. A hook still running when
// Stop returns goes on: its actor reports Alive until the hook returns,
// then false, then its watchers are told; sends to it report ErrTerminated,
// and Stop's error says how many hooks were still running. When a worker
// stays inside a behaviour past Stop's one-second wait, the actor whose
// behaviour or hook that worker is running is left to it: once that code
// returns, if the actor is still alive, the worker runs its Stopped hook
// (ReasonStopped), then Alive reports false, then its watchers get
// ReasonStopped, after Stop returned; its Destroy and Release hooks do not
// run.
//
// # Bounded mailboxes
//
// An actor's mailbox is unbounded by default: a producer faster than its
// consumer grows memory without limit. WithMailbox(n, policy) bounds the
// messages queued for one actor to n; a send past the bound is refused
// (Reject: ErrMailboxFull) or succeeds by dropping the newest or the oldest
// message (DropNewest, DropOldest: counted in Stats, never silent; a
// dropped request's requester gets ErrMailboxFull). Poison pills are
// queued past the bound and never dropped, so a termination is never lost;
// while one that terminates the actor is queued, DropOldest drops the new
// message rather than one sent before the pill.
// Sends never block, and must not from a behaviour: a blocked
// worker holds up every actor on its queues and can deadlock with the
// actor it waits for. Goroutines outside the system that can wait use
// SendContext (or Port.SendContext), which waits for room until its
// context ends.
//
// # Message lifetime
//
// Send passes a message on: from the Send until the receiving behaviour
// returns, the message belongs to that behaviour, and the sender must not
// touch it. The receiving behaviour may keep it, reuse it, or send it on;
// sending it on (forwarding) hands it over again, to the next receiver,
// which may be running on another worker at once: after forwarding, neither
// the behaviour nor the executor touches it. So a message can travel a
// pipeline of actors with no copy and no lock. A request is the one message
// the executor completes by itself: when the behaviour receiving it ends
// its actor or panics without answering it, or the actor that kept it ends
// (an actor with a hook, an option or a watch: see Ask), the requester
// gets ErrTerminated (see Ports and requests). A request forwarded through
// a Port (Send, SendContext) is the next receiver's to answer, whatever
// the forwarding behaviour does next; one forwarded with the function Send
// is not seen as forwarded, and is failed so if its forwarding behaviour
// then ends its actor or panics: forward requests through a port.
//
// SetAllocation, called by the behaviour receiving the message (and only
// there: elsewhere it panics), says what the executor does with the message
// once that behaviour returns: Delete runs its Destroy and Release hooks
// (typically back to a sync.Pool), Destroy its Destroy hook, Finished and
// Nodelete nothing. The status belongs to that one delivery; it is not
// stored in the message, so the next delivery starts at Nodelete. The
// executor reads nothing of the message after its behaviour returns unless
// that behaviour set Delete or Destroy, or the message is a request failed
// as above. Hence: only the last receiver of a forwarded message may set
// Delete or Destroy, and a message sent to several actors at once (shared,
// read-only) must never be given either.
//
// A behaviour receives exactly the actor pointer its sender named. An actor
// type may embed another actor type; the spawned object is the outer one,
// and sending to the embedded actor with one of its behaviours delivers to
// the embedded actor, on the same queue, never concurrently with the outer
// type's behaviours.
//
// # Errors
//
// Mistakes are reported, never silent: sends to terminated actors fail with
// ErrTerminated, and messages that were queued for an actor that terminated
// before receiving them are counted and reported by Stop (ErrUndelivered). A
// behaviour that panics is recovered: its actor is terminated, the worker and
// all other actors go on, and the panic value with its stack is passed to
// the WithErrorHandler function and reported by Stop (a *PanicError,
// errors.Is(err, ErrPanic)). Start rejects invalid configurations (ErrConfig),
// such as fewer queues than workers. Stop or Shutdown with a context that
// ends reports how many actors were still alive, and of which types
// (ErrActorsAlive); those actors count as
// terminated afterwards and may be spawned into another system. Several
// goroutines may call Stop: they all wait for the same stop and get its
// result. Programmer errors such as a nil actor or message, an actor type
// that embeds *Actor, or SetAllocation outside the receiving behaviour,
// panic with a message starting with "actor:" (from the methods of Port,
// a type shared with package executor, "executor:"). Port.Send alone does
// not check for a nil message, which would cost every send: its behaviour
// receives nil.
//
// # Statistics
//
// System.Stats returns a Stats: per-worker counters (gulps and gulp sizes,
// missed gulps, steal attempts and outcomes, messages stolen, parks and
// wake-ups, actors created and terminated, messages processed) and
// system-wide ones (messages sent, live actors, queued messages), collected
// without atomic instructions on the hot path. Package metrics exports them
// to Prometheus. A periodic timer's firing still queued when its Timer is
// stopped is discarded at its turn: counted in WorkerStats.TimersDiscarded,
// not processed, and in neither TimersFired nor TimersDead.
//
// The types this package shares with the engine (Stats, WorkerStats,
// Terminated, Failure, PanicError, Timer, Request, RequestPtr) are aliases:
// their documentation here lists the fields and methods a user needs, so
// that go doc on this package is the one place to read.
//
// # Performance notes
//
// An actor's embedded Actor holds the fields senders read (its state and
// queue); behaviours write the user's fields around it. When an actor
// receives many messages from other workers while its behaviour writes its
// fields, the two share a cache line; padding after the embedded Actor
// (a field `_ cpu.CacheLinePad` from golang.org/x/sys/cpu) keeps them apart,
// at 64 bytes per actor.
package actor
