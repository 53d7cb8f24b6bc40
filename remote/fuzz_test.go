package remote

import (
	"context"
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/nats-io/nats.go"
)

type fzAdd struct {
	actor.Message
	N int
}

type fzEcho struct {
	actor.Request[string]
	S string
}

// fzActor's behaviours use their messages as ordinary behaviours do: a nil
// message delivered would make them panic and terminate the actor.
type fzActor struct {
	actor.Actor
	sum int
}

func (a *fzActor) add(m *fzAdd) actor.Allocation   { a.sum += m.N; return actor.Nodelete }
func (a *fzActor) echo(m *fzEcho) actor.Allocation { m.Reply(m.S); return actor.Nodelete }

// FuzzOnMsg feeds arbitrary frames to a node, as any NATS client may publish
// them to its subject. Whatever they hold, the node must not panic, and the
// actor it exports must survive: after each frame, a local ask of it must
// be answered.
func FuzzOnMsg(f *testing.F) {
	n := testNode(f, "b", WithProbeInterval(time.Hour))
	// The fuzzer is the only one to call onMsg.
	if err := n.sub.Unsubscribe(); err != nil {
		f.Fatal(err)
	}
	a, err := actor.Spawn(n.sys, &fzActor{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = actor.SendPill(a, actor.FinishedMsg) })
	add, _ := actor.Bind(a, (*fzActor).add)
	echo, _ := actor.Bind(a, (*fzActor).echo)
	if err := Export(n, "add", add, JSON[*fzAdd]()); err != nil {
		f.Fatal(err)
	}
	if err := ExportRequest(n, "echo", echo, CBOR[*fzEcho](), CBOR[string]()); err != nil {
		f.Fatal(err)
	}

	x, _ := n.peer([]byte("x"), false)
	addHash, echoHash := typeHash(JSON[*fzAdd]()), typeHash(CBOR[*fzEcho]())
	frame := func(sender string) []byte { return append(appendString([]byte{wireVersion}, []byte(sender)), 0) }
	send := func(b []byte, payload string) []byte {
		b = appendString(append(b, kindSend), []byte("add"))
		b = binary.LittleEndian.AppendUint32(b, addHash)
		return appendString(b, []byte(payload))
	}
	request := func(b []byte, id, tmo uint64, payload string) []byte {
		b = appendString(append(b, kindRequest), []byte("echo"))
		b = binary.LittleEndian.AppendUint32(b, echoHash)
		b = binary.AppendUvarint(binary.AppendUvarint(b, id), tmo)
		return appendString(b, []byte(payload))
	}
	f.Add(send(frame("x"), `{"N":1}`))
	f.Add(send(frame("x"), `null`))
	f.Add(request(frame("x"), 1, 0, "\xa1\x61S\x62hi"))
	f.Add(request(frame("x"), 2, 1, "\xf6"))
	f.Add(request(frame("x"), 3, math.MaxUint64, "\xa1\x61S\x62hi"))
	f.Add(request(send(frame("y"), `{"N":2}`), 4, 1000, "\xa0"))
	f.Add(append(frame("x"), kindPing, kindPong))
	f.Add(binary.AppendUvarint(append(frame("x"), kindReply), 1))
	f.Add(append(binary.AppendUvarint(append(frame("x"), kindFailure), 1), codeDecode, 0))

	f.Fuzz(func(t *testing.T, data []byte) {
		// As data from x, and as an answer from x on its reply subject.
		n.onMsg(&nats.Msg{Subject: n.subjectDot + "x", Reply: "actord.x.b.t", Data: data})
		n.onMsg(&nats.Msg{Subject: x.inbox, Data: data})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if s, err := actor.Ask(ctx, echo, &fzEcho{S: "alive"}); err != nil || s != "alive" {
			t.Fatalf("exported actor after frame %x: %q, %v", data, s, err)
		}
	})
}
