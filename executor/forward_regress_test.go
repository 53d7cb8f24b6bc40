package executor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fwdServer answers every request with 7, once gate (if any) is open;
// got, if set, is told of each request first.
type fwdServer struct {
	cell Cell
	got  chan struct{}
	gate chan struct{}
}

func (s *fwdServer) onReq(r *greq) Allocation {
	if s.got != nil {
		s.got <- struct{}{}
	}
	if s.gate != nil {
		<-s.gate
	}
	_ = r.Reply(7)
	return Nodelete
}

// fwdRouter forwards each request to server, then ends its actor with
// status, or panics if status is Nodelete. Its Destroy hook waits for
// hold, if set.
type fwdRouter struct {
	cell   Cell
	server Port[*greq]
	status Allocation
	held   chan struct{}
	hold   chan struct{}
}

func (r *fwdRouter) onReq(q *greq) Allocation {
	if err := r.server.Send(q); err != nil {
		panic(err)
	}
	if r.status == Nodelete {
		panic("forwarded, then failed")
	}
	return r.status
}

func (r *fwdRouter) Destroy() {
	if r.hold != nil {
		close(r.held)
		<-r.hold
	}
}

// A request that a behaviour forwards (sends on through a port) and then
// ends its actor (a terminating status, or a panic) belongs to the
// receiver it was forwarded to: the asker gets that receiver's reply. The
// forwarder's worker used to fail the request (ErrTerminated) after the
// behaviour, whether or not the receiver had replied.
func TestForwardThenTerminateDoesNotFailRequest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status Allocation
	}{
		{"Finished", Finished},
		{"Destroy", Destroy},
		{"panic", Nodelete},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Start(Config{Workers: 2, OnError: func(error) {}})
			require.NoError(t, err)
			s := &fwdServer{gate: make(chan struct{})}
			require.NoError(t, Spawn(e, &s.cell, s))
			sp, err := Bind(&s.cell, s, (*fwdServer).onReq)
			require.NoError(t, err)
			r := &fwdRouter{server: sp, status: tc.status}
			require.NoError(t, Spawn(e, &r.cell, r))
			rp, err := Bind(&r.cell, r, (*fwdRouter).onReq)
			require.NoError(t, err)

			got := make(chan error, 1)
			go func() {
				v, err := Ask(context.Background(), rp, &greq{})
				if err == nil && v != 7 {
					t.Errorf("reply %d, want 7", v)
				}
				got <- err
			}()
			// The server holds the request until the router has ended.
			waitFor(t, "the router's end", func() bool { return !rp.Alive() })
			close(s.gate)
			assert.NoError(t, <-got, "the forwarded request failed")
			require.NoError(t, SendPill(&s.cell, s, NewPill(Finished)))
			err = e.Stop(context.Background())
			if tc.status == Nodelete {
				assert.ErrorIs(t, err, ErrPanic)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

// A forwarder whose Destroy hook is slow does not touch the request it
// forwarded, which its asker reuses for the next Ask meanwhile: that Ask,
// to a live server, gets its reply, and -race sees no access to the
// request from the forwarder's worker (in "unordered", the hook returns
// while the asker reuses the request, with nothing ordering the two). It
// used to fail with ErrTerminated, the forwarder's worker failing the
// request after its hook.
func TestForwardThenSlowDestroyLeavesReusedRequestAlone(t *testing.T) {
	for _, ordered := range []bool{true, false} {
		name := "ordered"
		if !ordered {
			name = "unordered"
		}
		t.Run(name, func(t *testing.T) { forwardThenSlowDestroy(t, ordered) })
	}
}

func forwardThenSlowDestroy(t *testing.T, ordered bool) {
	e, err := Start(Config{Workers: 2})
	require.NoError(t, err)
	s := &fwdServer{}
	require.NoError(t, Spawn(e, &s.cell, s))
	sp, err := Bind(&s.cell, s, (*fwdServer).onReq)
	require.NoError(t, err)
	s2 := &fwdServer{got: make(chan struct{}, 1), gate: make(chan struct{})}
	require.NoError(t, Spawn(e, &s2.cell, s2))
	sp2, err := Bind(&s2.cell, s2, (*fwdServer).onReq)
	require.NoError(t, err)
	r := &fwdRouter{server: sp, status: Destroy, held: make(chan struct{}), hold: make(chan struct{})}
	require.NoError(t, Spawn(e, &r.cell, r))
	rp, err := Bind(&r.cell, r, (*fwdRouter).onReq)
	require.NoError(t, err)

	req := &greq{}
	v, err := Ask(context.Background(), rp, req)
	require.NoError(t, err)
	assert.Equal(t, 7, v)
	<-r.held // the router's worker is in its Destroy hook

	got := make(chan error, 1)
	go func() {
		_, err := Ask(context.Background(), sp2, req) // the same request, reused
		got <- err
	}()
	if ordered {
		<-s2.got // the second server holds the reused request
	}
	close(r.hold)
	waitFor(t, "the router's end", func() bool { return !rp.Alive() })
	close(s2.gate)
	assert.NoError(t, <-got, "the reused request failed")
	for _, a := range []*fwdServer{s, s2} {
		require.NoError(t, SendPill(&a.cell, a, NewPill(Finished)))
	}
	require.NoError(t, e.Stop(context.Background()))
}
