package remote_test

// Tests of what a hostile NATS client can do to the asks of nodes it can
// publish to, with subject permissions configured on the server as the
// package documentation's "Security" section recommends: it must not answer
// another node's asks (forged answers), nor have a node answer a third
// node's ask on its behalf (a confused deputy), nor fail asks and mark a
// live node down with a made-up "no responders" status.

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/remote"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// startNATSUsers starts an embedded NATS server on 127.0.0.1 with the
// given users (password "pw") and returns its URL.
func startNATSUsers(t testing.TB, users ...*server.User) string {
	t.Helper()
	opts := &server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, Users: users}
	s, err := server.NewServer(opts)
	must(t, err)
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s.ClientURL()
}

// user is a user "name" with password "pw" allowed to publish to pub and
// subscribe to sub (nil: anything).
func user(name string, pub, sub []string) *server.User {
	u := &server.User{Username: name, Password: "pw"}
	if pub != nil || sub != nil {
		u.Permissions = &server.Permissions{}
		if pub != nil {
			u.Permissions.Publish = &server.SubjectPermission{Allow: pub}
		}
		if sub != nil {
			u.Permissions.Subscribe = &server.SubjectPermission{Allow: sub}
		}
	}
	return u
}

// nodeUser is the permissions the package documentation recommends for
// node name: publish as itself (to "actord.<any>.<name>", and answers to
// "actord.<any>.<name>.<token>"), subscribe to its own subjects.
func nodeUser(name string) *server.User {
	return user(name,
		[]string{"actord.*." + name, "actord.*." + name + ".*"},
		[]string{"actord." + name + ".>"})
}

// Holder answers Echo requests only when released, without blocking its
// worker, so that other actors (the forgeries' target) answer meanwhile.
type Holder struct {
	actor.Actor
	held []*Echo
}

type Release struct{ actor.Message }

func (h *Holder) OnEcho(m *Echo) actor.Allocation { h.held = append(h.held, m); return actor.Nodelete }

func (h *Holder) OnRelease(*Release) actor.Allocation {
	for _, m := range h.held {
		m.Reply(m.S)
	}
	h.held = nil
	return actor.Nodelete
}

// heldEcho spawns, in sys, an actor whose "echo" export answers only when
// release is called, and an echo exported as "echo2" that answers at once.
func heldEcho(t testing.TB, sys *actor.System, n *remote.Node) (release, stop func()) {
	t.Helper()
	h, err := actor.Spawn(sys, &Holder{})
	must(t, err)
	echo, _ := actor.Bind(h, (*Holder).OnEcho)
	rel, _ := actor.Bind(h, (*Holder).OnRelease)
	must(t, remote.ExportRequest(n, "echo", echo, remote.CBOR[*Echo](), remote.CBOR[string]()))
	s, err := actor.Spawn(sys, &Store{})
	must(t, err)
	echo2, _ := actor.Bind(s, (*Store).OnEcho)
	must(t, remote.ExportRequest(n, "echo2", echo2, remote.CBOR[*Echo](), remote.CBOR[string]()))
	return func() { must(t, rel.Send(&Release{})) }, func() {
		must(t, actor.SendPill(h, actor.FinishedMsg))
		must(t, actor.SendPill(s, actor.FinishedMsg))
	}
}

// cborText is the CBOR encoding of a text string of fewer than 24 bytes.
func cborText(s string) string { return string([]byte{0x60 + byte(len(s))}) + s }

type askResult struct {
	v   string
	err error
}

func askAsync(p *remote.RequestPort[*Echo, string], s string, d time.Duration) chan askResult {
	done := make(chan askResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		v, err := p.Ask(ctx, &Echo{S: s})
		done <- askResult{v, err}
	}()
	return done
}

// learnAsk has node a ask the hostile client "evil" once, and returns what
// evil learns from it: the request's id and its reply subject.
func learnAsk(t testing.TB, a *remote.Node, msgs <-chan *nats.Msg) (id uint64, reply string) {
	t.Helper()
	e, err := remote.ImportRequest(a, "evil", "echo", remote.CBOR[*Echo](), remote.CBOR[string]())
	must(t, err)
	done := askAsync(e, "probe", 200*time.Millisecond)
	select {
	case m := <-msgs:
		id, reply = requestID(t, m.Data), m.Reply
	case <-time.After(10 * time.Second):
		t.Fatal("no request from a")
	}
	<-done
	return id, reply
}

// replyFrame is a frame from sender answering the ask id with s.
func replyFrame(sender string, id uint64, s string) []byte {
	f := append(rawAnswer(sender), rawKindReply)
	f = binary.AppendUvarint(f, id)
	return appendStr(f, cborText(s))
}

// A client that may publish to any node's subject, but subscribe only to
// its own, cannot answer node a's ask of node b: it learns how a numbers
// its asks from an ask of its own and answers, as b, the next ids, on
// every subject it can name. Ask ids used to count up by one per node and
// the sender was a frame field: the forged answer was taken.
func TestForgedAnswersRefused(t *testing.T) {
	url := startNATSUsers(t, nodeUser("a"), nodeUser("b"),
		user("evil", []string{"actord.>"}, []string{"actord.evil", "actord.evil.>"}))
	sysA, sysB := startSystem(t), startSystem(t)
	a := connect(t, sysA, url, "a", remote.WithNATS(nats.UserInfo("a", "pw")))
	b := connect(t, sysB, url, "b", remote.WithNATS(nats.UserInfo("b", "pw")))
	release, stop := heldEcho(t, sysB, b)
	evil, msgs := hostileChan(t, url, "evil")

	id, reply := learnAsk(t, a, msgs)
	e, err := remote.ImportRequest(a, "b", "echo", remote.CBOR[*Echo](), remote.CBOR[string]())
	must(t, err)
	done := askAsync(e, "real", 10*time.Second)
	waitFor(t, 10*time.Second, "b received the ask", func() bool { return b.Stats().Received == 1 })
	for i := range uint64(4) {
		for _, subj := range []string{"actord.a", "actord.a.b", "actord.a.evil", reply} {
			must(t, evil.Publish(subj, replyFrame("b", id+i, "forged")))
		}
	}
	must(t, evil.Flush())
	time.Sleep(50 * time.Millisecond) // the forgeries arrive first
	release()
	if r := <-done; r.err != nil || r.v != "real" {
		t.Errorf("a's ask of b = %q, %v; want b's answer \"real\"", r.v, r.err)
	}
	stop()
	closeAndStop(t, sysA, sysB, a, b)
}

// With subject permissions that let a client publish only to node b (as
// itself), it cannot have b answer node a's ask in a's place: it learns
// a's next ask id from an ask of its own and sends b, on every subject it
// may publish to, a request that claims to come from a with that id, to
// an echo b answers at once. The sender used to be a frame field, so b
// answered a, and a's pending ask of b returned the attacker's text.
func TestConfusedDeputyRefused(t *testing.T) {
	url := startNATSUsers(t, nodeUser("a"), nodeUser("b"),
		user("evil", []string{"actord.b", "actord.b.evil"}, []string{"actord.evil", "actord.evil.>"}))
	sysA, sysB := startSystem(t), startSystem(t)
	a := connect(t, sysA, url, "a", remote.WithNATS(nats.UserInfo("a", "pw")))
	b := connect(t, sysB, url, "b", remote.WithNATS(nats.UserInfo("b", "pw")))
	release, stop := heldEcho(t, sysB, b)
	evil, msgs := hostileChan(t, url, "evil")

	id, _ := learnAsk(t, a, msgs)
	e, err := remote.ImportRequest(a, "b", "echo", remote.CBOR[*Echo](), remote.CBOR[string]())
	must(t, err)
	done := askAsync(e, "real", 10*time.Second)
	waitFor(t, 10*time.Second, "b received the ask", func() bool { return b.Stats().Received == 1 })
	for i := range uint64(4) {
		f := appendRequest(rawFrame("a"), "echo2", "Echo", id+1+i, 0, "\xa1\x61S"+cborText("forged"))
		for _, subj := range []string{"actord.b", "actord.b.a", "actord.b.evil"} {
			for _, rep := range []string{"actord.a", "actord.a.b", "actord.a.b.x", "actord.evil.b.x"} {
				must(t, evil.PublishRequest(subj, rep, f))
			}
		}
	}
	must(t, evil.Flush())
	time.Sleep(100 * time.Millisecond) // b answered the forgeries it took
	release()
	if r := <-done; r.err != nil || r.v != "real" {
		t.Errorf("a's ask of b = %q, %v; want b's answer \"real\"", r.v, r.err)
	}
	stop()
	closeAndStop(t, sysA, sysB, a, b)
}

// A header-only "no responders" status (Status: 503) made up by a client
// that may publish to node a's subjects (but not subscribe to b's) neither
// fails a's pending ask of the live node b nor marks b down; it is counted
// as malformed. It used to do both, for whatever Nats-Subject it named.
func TestForgedNoRespondersRefused(t *testing.T) {
	url := startNATSUsers(t, nodeUser("a"), nodeUser("b"),
		user("evil", []string{"actord.>"}, []string{"actord.evil", "actord.evil.>"}))
	sysA, sysB := startSystem(t), startSystem(t)
	a := connect(t, sysA, url, "a", remote.WithNATS(nats.UserInfo("a", "pw")))
	b := connect(t, sysB, url, "b", remote.WithNATS(nats.UserInfo("b", "pw")))
	release, stop := heldEcho(t, sysB, b)
	evil, msgs := hostileChan(t, url, "evil")

	_, reply := learnAsk(t, a, msgs)
	e, err := remote.ImportRequest(a, "b", "echo", remote.CBOR[*Echo](), remote.CBOR[string]())
	must(t, err)
	done := askAsync(e, "real", 10*time.Second)
	waitFor(t, 10*time.Second, "b received the ask", func() bool { return b.Stats().Received == 1 })
	before := a.Stats().DecodeErrors
	subjects := []string{"actord.a", "actord.a.b", "actord.a.evil", "actord.a.b.x", reply}
	for _, subj := range subjects {
		for _, named := range []string{"actord.b", "actord.b.a"} {
			m := &nats.Msg{Subject: subj, Header: nats.Header{}}
			m.Header.Set("Status", "503")
			m.Header.Set("Nats-Subject", named)
			must(t, evil.PublishMsg(m))
		}
	}
	must(t, evil.Flush())
	time.Sleep(100 * time.Millisecond)
	// (evil may declare itself down, on the reply subject it was given.)
	toB, err := remote.Import(a, "b", "nope", remote.CBOR[*Add]())
	must(t, err)
	if err := toB.Send(&Add{}); err != nil {
		t.Errorf("send to b after forged statuses: %v, want nil (b is up)", err)
	}
	if got := a.Stats().DecodeErrors - before; got == 0 {
		t.Errorf("forged statuses not counted as malformed")
	}
	release()
	if r := <-done; r.err != nil || r.v != "real" {
		t.Errorf("a's ask of b = %q, %v; want b's answer \"real\"", r.v, r.err)
	}
	stop()
	closeAndStop(t, sysA, sysB, a, b)
}

// hostileChan connects a bare NATS client as user name, subscribed to what
// a node of that name receives; msgs gets those messages.
func hostileChan(t testing.TB, url, name string) (*nats.Conn, <-chan *nats.Msg) {
	t.Helper()
	nc, err := nats.Connect(url, nats.UserInfo(name, "pw"),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})) // permission violations
	must(t, err)
	t.Cleanup(nc.Close)
	ch := make(chan *nats.Msg, 1024)
	for _, s := range []string{"actord." + name, "actord." + name + ".>"} {
		sub, err := nc.ChanSubscribe(s, ch)
		must(t, err)
		t.Cleanup(func() { sub.Unsubscribe() })
	}
	must(t, nc.Flush())
	return nc, ch
}
