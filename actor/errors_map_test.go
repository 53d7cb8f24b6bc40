package actor_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actord/actord/actor"
)

var errNoAccount = errors.New("no such account")

// lookupAcct answers with an error through Fail, or panics.
type lookupAcct struct {
	actor.Request[int]
	name  string
	panic bool
}

type ledger struct {
	actor.Actor
	accounts map[string]int
}

func (l *ledger) onLookup(m *lookupAcct) actor.Allocation {
	if m.panic {
		panic("ledger corrupted")
	}
	n, ok := l.accounts[m.name]
	if !ok {
		_ = m.Fail(errNoAccount)
		return actor.Nodelete
	}
	_ = m.Reply(n)
	return actor.Nodelete
}

// TestRequestFail: Fail answers a request with an error that Ask,
// AskAsync and AskFunc deliver as it is; a second answer is ErrReplied; a
// request sent with a plain Send has no requester; Fail(nil) panics.
func TestRequestFail(t *testing.T) {
	sys := start(t, actor.WithWorkers(2))
	defer stop(t, sys)
	l := must(actor.Spawn(sys, &ledger{accounts: map[string]int{"a": 7}}))
	p := must(actor.Bind(l, (*ledger).onLookup))
	ctx := context.Background()
	n, err := actor.Ask(ctx, p, &lookupAcct{name: "a"})
	require.NoError(t, err)
	assert.Equal(t, 7, n)
	_, err = actor.Ask(ctx, p, &lookupAcct{name: "b"})
	assert.Same(t, errNoAccount, err, "the error itself, not wrapped")

	got := make(chan error, 1)
	require.NoError(t, actor.AskFunc(p, &lookupAcct{name: "b"}, 0, func(_ int, err error) { got <- err }))
	assert.Same(t, errNoAccount, <-got)

	var r lookupAcct
	assert.ErrorIs(t, r.Fail(errNoAccount), actor.ErrNoRequester)
	assert.Panics(t, func() { _ = r.Fail(nil) })
	require.NoError(t, actor.SendPill(l, actor.FinishedMsg))
}

// failer answers a kept request twice, the second time with Fail.
type failer struct {
	actor.Actor
	errs chan error
}

func (f *failer) onLookup(m *lookupAcct) actor.Allocation {
	_ = m.Reply(1)
	f.errs <- m.Fail(errNoAccount)
	return actor.Nodelete
}

func TestRequestFailAfterReply(t *testing.T) {
	sys := start(t, actor.WithWorkers(1))
	defer stop(t, sys)
	f := must(actor.Spawn(sys, &failer{errs: make(chan error, 1)}))
	n, err := actor.Ask(context.Background(), must(actor.Bind(f, (*failer).onLookup)), &lookupAcct{})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.ErrorIs(t, <-f.errs, actor.ErrReplied)
	require.NoError(t, actor.SendPill(f, actor.FinishedMsg))
}

// TestAskPanicSaysSo: an ask whose behaviour panicked fails with the
// *PanicError (ErrPanic), whose message reads as the panic, not with
// ErrTerminated, when the actor was restarted and lives on; without
// supervision too (the actor then has terminated: the next ask says so).
func TestAskPanicSaysSo(t *testing.T) {
	sys, err := actor.Start(actor.WithWorkers(2), actor.WithErrorHandler(func(error) {}))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	restarted := must(actor.Spawn(sys, &ledger{accounts: map[string]int{"a": 7}}, actor.WithRestart(nil, actor.Budget{})))
	p := must(actor.Bind(restarted, (*ledger).onLookup))
	_, err = actor.Ask(ctx, p, &lookupAcct{panic: true})
	require.ErrorIs(t, err, actor.ErrPanic)
	assert.NotErrorIs(t, err, actor.ErrTerminated, "the actor lives: it was restarted")
	var pe *actor.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "ledger corrupted", pe.Value)
	assert.True(t, strings.Contains(err.Error(), "panicked"), "%q", err)
	assert.NotContains(t, err.Error(), "terminated")
	n, err := actor.Ask(ctx, p, &lookupAcct{name: "a"})
	require.NoError(t, err, "the restarted actor answers")
	assert.Equal(t, 7, n)

	plain := must(actor.Spawn(sys, &ledger{}))
	q := must(actor.Bind(plain, (*ledger).onLookup))
	_, err = actor.Ask(ctx, q, &lookupAcct{panic: true})
	require.ErrorIs(t, err, actor.ErrPanic)
	assert.NotErrorIs(t, err, actor.ErrTerminated)
	_, err = actor.Ask(ctx, q, &lookupAcct{})
	assert.ErrorIs(t, err, actor.ErrTerminated, "without supervision, the panic ended the actor")

	require.NoError(t, actor.SendPill(restarted, actor.FinishedMsg))
	err = sys.Stop(ctx)
	assert.ErrorIs(t, err, actor.ErrPanic, "the unsupervised panic is an error of Stop")
}

// status maps an Ask's error to an HTTP status, in the order Ask documents.
func status(err error) int {
	switch {
	case err == nil:
		return 200
	case errors.Is(err, errNoAccount): // the handler's own error, from Fail
		return 404
	case errors.Is(err, actor.ErrPanic): // failed
		return 500
	case errors.Is(err, actor.ErrMailboxFull): // busy
		return 429
	case errors.Is(err, context.DeadlineExceeded): // timeout
		return 504
	case errors.Is(err, actor.ErrTerminated), errors.Is(err, actor.ErrStopped): // gone
		return 503
	}
	return 500
}
