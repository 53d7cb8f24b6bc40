package actor

import (
	"context"
	"time"

	"github.com/actord/actord/executor"
)

// Port is a reference to one behaviour of one actor, typed by the message
// it accepts: a Port[*M] accepts only *M, and its holder needs to know
// nothing else about the actor. Ports are what code that routes, mocks,
// names or requests passes around instead of actor pointers. A Port is a
// small comparable value; copy it freely. Sends through it make the same
// promises as Send, for the incarnation of the actor it was bound to: once
// that actor has terminated, they return ErrTerminated, even if the actor
// has been spawned again. The zero Port is bound to nothing (ErrNotSpawned).
type Port[M any] = executor.Port[M]

// Bind returns a port for one behaviour of a live actor:
//
//	p, err := actor.Bind(counter, (*Counter).Add) // p is a Port[*Add]
//	p.Send(&Add{N: 1})
//
// Errors: ErrNotSpawned (a was never spawned), ErrTerminated (a has
// terminated).
func Bind[TA, TM any, A Ref[TA], M Msg[TM]](a A, behaviour func(A, M) Allocation) (Port[M], error) {
	if a == nil || behaviour == nil {
		panic("actor: Bind with a nil actor or behaviour")
	}
	checkEmbedded("Bind", a)
	return executor.Bind(a.actorCell(), a, behaviour)
}

// Request is embedded, by value, in every request message type; R is the
// type of the reply:
//
//	type GetBalance struct {
//		actor.Request[int]
//		Account string
//	}
//
//	func (a *Account) OnGet(m *GetBalance) actor.Allocation {
//		m.Reply(a.balance)
//		return actor.Nodelete
//	}
//
// A request is a message (Request embeds Message). The behaviour receiving
// it answers exactly once, with one of the two methods it promotes:
//
//	func (r *Request[R]) Reply(v R) error     // answer with a value
//	func (r *Request[R]) Fail(err error) error // answer with an error
//
// Reply accepts only an R; Fail answers with err instead (it panics for a
// nil err), and the requester gets err itself, for errors.Is and
// errors.As: a handler can map its own error values without wrapping them
// in R. Ask waits for the answer, AskAsync has it delivered as a *Reply[R]
// message (value or Err), AskFunc passes it to its function. Both methods
// return ErrNoRequester for a request sent with a plain Send, and
// ErrReplied when the request was answered already, its requester gave
// up, or it was failed when the actor that kept it ended or restarted (the
// answer is then dropped and counted in Stats.LateReplies). They
// never block.
type Request[R any] = executor.Request[R]

// RequestPtr is satisfied by a pointer to a request type: a struct that
// embeds Request[R], R being its reply type. Generic code that asks uses it
// as the constraint, as Ask does:
//
//	func askAll[T, R any, Req actor.RequestPtr[T, R]](ctx context.Context, ps []actor.Port[Req], mk func() Req) ([]R, error)
type RequestPtr[T, R any] = executor.RequestPtr[T, R]

// Reply is the message that delivers the answer to an AskAsync: the reply
// value, or the error that ended the request (the error given to
// Request.Fail, or one of Ask's errors, context.DeadlineExceeded after its
// timeout).
type Reply[R any] = executor.Reply[R]

// Ask sends the request req through the port to and waits for the reply, or
// for ctx to end:
//
//	balance, err := actor.Ask(ctx, accountPort, &GetBalance{Account: "a"})
//
// It must not be called from a behaviour, where it would block a worker:
// there it returns ErrAskInBehaviour at once (use AskAsync). No goroutine is
// created per request.
//
// Its errors, and the HTTP-style outcome each means to a service that maps
// them (test them in this order; each is an errors.Is test):
//
//   - the error the behaviour answered with Request.Fail: the handler's
//     own outcome, mapped as the service defines it.
//   - ErrPanic, failed (500): the behaviour that received the request
//     panicked; the error is the *PanicError (errors.As), and reads as the
//     panic. The actor may live on (WithRestart, WithResume, a supervisor's
//     decision) or have terminated: a later send says which.
//   - ErrMailboxFull, busy (429 or 503): the actor's bounded mailbox
//     refused the request (Reject) or dropped it (DropNewest, DropOldest).
//   - context.DeadlineExceeded or context.Canceled (ctx.Err()), timeout
//     (504), or the client left: ctx ended first; a reply after that is
//     counted (Stats.LateReplies) and dropped.
//   - ErrTerminated, gone (404, or 503 while an entity is spawned again):
//     the port's actor had terminated, or terminated before the request
//     was delivered, or in the behaviour that received it without
//     answering or forwarding it through a port (see "Message lifetime"),
//     or the actor kept the request and ended, or restarted, before
//     answering it (the error says which).
//     An actor that answers every request before it ends or fails
//     has never received a request that fails with ErrTerminated: asking
//     again (through Entities.Get for an entity) is then safe.
//   - ErrStopped, unavailable (503): the system has stopped, or stopped
//     before the request was delivered or answered.
//   - ErrNotSpawned, ErrAskInBehaviour: a programming error (500).
//
// A behaviour may keep a request and reply from a later behaviour; such a
// request is ended by its answer, by ctx, by the end of its system
// (ErrStopped), or by the end of the actor that keeps it (ErrTerminated,
// after its Stopped hook, which may still answer), whichever comes first.
// The last needs an actor with a Started or Stopped hook, spawned with an
// option, or watched (every entity is one): the deliveries of an actor with
// none of these are not recorded, which keeps them cheapest, and what it
// keeps waits for ctx or the system's end. A restart ends the requests the
// actor had received (ErrTerminated). An answer after that returns
// ErrReplied. A request still queued when its actor ends is failed when it
// is dropped, so that once Ask has returned ErrTerminated for it nothing in
// the system holds it: a request the actor never received may be asked
// again; one the actor kept may still be answered (ErrReplied) by a holder
// that has it, so do not reuse that one.
//
// Callers that help: if the worker that serves the actor is parked when
// Ask sends (or parks while Ask waits, the request still queued), the
// calling goroutine delivers the request itself instead of waking the
// worker (a thread wake-up saved per request): the behaviour
// runs on the caller's goroutine, as on a worker in every respect a
// behaviour can observe (InBehaviour, ErrAskInBehaviour, panics and
// supervision, statistics, per-sender order), with the messages queued
// before the request delivered first. The caller stops once its request
// is answered, or ctx ends, or after a bounded number of deliveries, and
// leaves the rest (including every termination and its hooks) to the
// worker. What the caller sees: ctx is noticed between behaviours, so a
// behaviour the caller runs delays Ask's return by its own length even if
// ctx ends meanwhile; a runtime.Goexit in that behaviour ends the calling
// goroutine (the actor is supervised as on a worker); the goroutine is not
// locked to an OS thread (a behaviour that needs its worker's thread
// cannot count on it); and a behaviour that blocks until the asker has
// gone on never returns (a behaviour must not block: it holds a worker
// too). WithoutCallerHelp turns helping off.
func Ask[TR, R any, Req RequestPtr[TR, R]](ctx context.Context, to Port[Req], req Req) (R, error) {
	if req == nil {
		panic("actor: Ask with a nil request")
	}
	return executor.Ask(ctx, to, req)
}

// AskAsync sends the request req through the port to and returns at once;
// the answer arrives later as a *Reply[R] message through replyTo, usually a
// port of the requesting actor's own reply behaviour. With timeout > 0, a
// request not answered in time ends with a Reply whose Err is
// context.DeadlineExceeded. A worker never blocks: this is how behaviours
// ask. The Reply is a message like any other: if replyTo's actor has a
// bounded mailbox, its overflow policy applies to the Reply too (under
// Reject or DropNewest, a Reply that finds the mailbox full is lost), so a
// bounded asker should use DropOldest or leave room for its replies.
// Errors: ErrNotSpawned for the zero replyTo port (req is not sent: its
// reply would have nowhere to go); the send's errors. Then nothing arrives
// at replyTo.
func AskAsync[TR, R any, Req RequestPtr[TR, R]](to Port[Req], req Req, replyTo Port[*Reply[R]], timeout time.Duration) error {
	if req == nil {
		panic("actor: AskAsync with a nil request")
	}
	return executor.AskAsync(to, req, replyTo, timeout)
}

// Go runs f on a new goroutine, off the workers, and delivers its result as
// a *Reply[R] message through replyTo. Behaviours use it for blocking work:
// a behaviour that blocks holds its worker's OS thread until it returns
// (the other queues of that worker are stolen by other workers meanwhile,
// but the actors sharing its queue wait), whereas Go returns at once and
// the actor receives the result as a message, in order with its other
// messages, never concurrently with its own behaviours:
//
//	func (s *Session) OnLoad(m *Load) actor.Allocation {
//		actor.Go(s.loaded, func() ([]byte, error) { return os.ReadFile(m.Path) })
//		return actor.Nodelete
//	}
//
//	func (s *Session) OnLoaded(r *actor.Reply[[]byte]) actor.Allocation { ... }
//
// A panic in f is recovered and delivered as the Reply's Err (a
// *PanicError), and so is a call of runtime.Goexit in f (t.FailNow in a
// test): a Reply always comes. If the actor has terminated when f returns, the result is dropped and counted
// (Stats.LateReplies). When f has returned and the actor's worker is
// parked, the goroutine that ran f delivers the Reply itself, as that
// worker, as a caller that helps does (see "Callers that help" in the
// package documentation; WithoutCallerHelp turns it off): the Reply's
// behaviour, and those queued before it, may then run on that goroutine.
// Error: ErrNotSpawned for a zero port.
func Go[R any](replyTo Port[*Reply[R]], f func() (R, error)) error {
	if f == nil {
		panic("actor: Go with a nil function")
	}
	return executor.Go(replyTo, f)
}

// AskFunc sends the request req through to without waiting; f is called
// exactly once with the typed reply, or with the error that ended the
// request (ErrTerminated, ErrStopped, or context.DeadlineExceeded after
// timeout > 0). f runs on the goroutine that completes the request, often
// a worker inside the replying behaviour's Reply call, so it must be quick
// and never block (write to a buffered channel, a port or a network
// connection). It serves bridges between actors and the outside world,
// such as a server answering requests from the network; behaviours use
// AskAsync, goroutines that can wait use Ask. A panic in f is recovered
// and recorded like a behaviour's (an error of Stop, passed to
// WithErrorHandler's function). A request that a behaviour keeps, to reply
// later, is ended only by its reply or the timeout: with timeout 0, f is
// never called if the actor terminates, or the system stops, without
// replying to it. Errors: the send's; then f is not called.
func AskFunc[TR, R any, Req RequestPtr[TR, R]](to Port[Req], req Req, timeout time.Duration, f func(R, error)) error {
	if req == nil || f == nil {
		panic("actor: AskFunc with a nil request or function")
	}
	return executor.AskFunc(to, req, timeout, f)
}

// InBehaviour reports whether the calling goroutine is running a
// behaviour (of any system). Libraries with blocking calls use it to refuse
// them inside behaviours, as Ask does with ErrAskInBehaviour.
func InBehaviour() bool { return executor.InBehaviour() }
