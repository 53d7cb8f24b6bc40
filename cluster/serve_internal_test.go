package cluster

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/remote"
)

type serveReq struct{ actor.Request[int] }

// A remote request's end is told to its asker as not delivered only when
// the gate did not deliver it: actor.ErrTerminated or a gate's refusal
// before delivery, never after.
func TestServeSaysUndeliveredOnlyBeforeTheGate(t *testing.T) {
	k := &Kind[serveReq, int, *serveReq]{}
	mark := func(m *serveReq) {
		f, ok := k.asks.Load(m)
		if !ok {
			t.Fatal("request not tracked")
		}
		f.(*atomic.Bool).Store(true)
	}
	for _, c := range []struct {
		name      string
		err       error
		delivered bool
		want      bool
	}{
		{"queued, dropped", actor.ErrTerminated, false, true},
		{"delivered, ended", actor.ErrTerminated, true, false},
		{"moved", ErrMoved, false, true},
		{"fenced", errGateFenced, false, true},
		{"an application's error", errors.New("no"), false, false},
		{"delivered, the application's ErrMoved", ErrMoved, true, false},
		{"answered", nil, true, false},
	} {
		m := &serveReq{}
		done := k.serve(m)
		if c.delivered {
			mark(m)
		}
		err := done(c.err)
		if !errors.Is(err, c.err) {
			t.Errorf("%s: %v does not wrap %v", c.name, err, c.err)
		}
		if got := errors.Is(err, remote.ErrNotDelivered); got != c.want {
			t.Errorf("%s: %v: remote.ErrNotDelivered %v, want %v", c.name, err, got, c.want)
		}
		if _, ok := k.asks.Load(m); ok {
			t.Errorf("%s: request still tracked", c.name)
		}
	}
}
