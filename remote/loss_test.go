package remote_test

// Loss that core NATS does not report (at most once) is counted: the
// receiving node finds the gaps in each sending node's sequence numbers.

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/remote"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// restartableNATS is an embedded NATS server that can be restarted on its
// port.
type restartableNATS struct {
	opts *server.Options
	s    *server.Server
}

func startRestartable(t testing.TB, opts *server.Options) *restartableNATS {
	t.Helper()
	r := &restartableNATS{opts: opts}
	r.start(t)
	r.opts.Port = r.s.Addr().(*net.TCPAddr).Port
	t.Cleanup(r.stop)
	return r
}

func (r *restartableNATS) start(t testing.TB) {
	t.Helper()
	s, err := server.NewServer(r.opts)
	must(t, err)
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	r.s = s
}

func (r *restartableNATS) stop() {
	r.s.Shutdown()
	r.s.WaitForShutdown()
}

func reconnecting(wait time.Duration) remote.Option {
	return remote.WithNATS(nats.MaxReconnects(-1), nats.ReconnectWait(wait), nats.ReconnectJitter(0, 0))
}

// counted sends through c.add until stop, and returns how many Sends
// returned nil.
func sendUntil(t *testing.T, add *remote.Port[*Add], stop <-chan struct{}) <-chan int {
	res := make(chan int, 1)
	go func() {
		ok := 0
		for i := 0; ; i++ {
			select {
			case <-stop:
				res <- ok
				return
			default:
			}
			err := add.Send(&Add{N: i})
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, remote.ErrNoResponders):
				t.Errorf("send %d: %v", i, err)
			}
			if i%64 == 0 {
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	return res
}

// settle asks b until an ask succeeds: every message sent before it has
// arrived or is lost for good, and the gap before it is counted.
func settle(t *testing.T, c client) {
	t.Helper()
	waitFor(t, 20*time.Second, "an answer", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_, err := c.get.Ask(ctx, &Get{})
		return err == nil
	})
}

// A NATS server restart while a node sends: the sender reconnects (and
// flushes what it buffered meanwhile) before the receiver has subscribed
// again, and those messages, whose Send returned nil, are lost. Every
// message sent is either received or counted as lost by the receiver
// (Stats.LostMessages); the disconnections are counted. The loss used to be
// counted nowhere.
func TestServerRestartLossCounted(t *testing.T) {
	srv := startRestartable(t, &server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	url := srv.s.ClientURL()
	sysA, sysB := startSystem(t), startSystem(t)
	a := connect(t, sysA, url, "a", reconnecting(10*time.Millisecond))
	b := connect(t, sysB, url, "b", reconnecting(300*time.Millisecond)) // back later than a
	store := serveStore(t, sysB, b)
	c := importStore(t, a, "b")

	stop := make(chan struct{})
	sent := sendUntil(t, c.add, stop)
	waitFor(t, 10*time.Second, "traffic", func() bool { return b.Stats().Received > 1000 })
	srv.stop()
	time.Sleep(200 * time.Millisecond) // a buffers its sends
	srv.start(t)
	waitFor(t, 10*time.Second, "b reconnected", func() bool { return b.Conn().IsConnected() })
	time.Sleep(300 * time.Millisecond)
	close(stop)
	n := <-sent
	settle(t, c)
	sa, sb := a.Stats(), b.Stats()
	t.Logf("sent %d (%d with asks), received %d, lost %d; disconnects a %d b %d", n, sa.Sent, sb.Received, sb.LostMessages, sa.Disconnects, sb.Disconnects)
	if sb.Received+sb.LostMessages != sa.Sent {
		t.Errorf("received %d + lost %d != sent %d", sb.Received, sb.LostMessages, sa.Sent)
	}
	if sa.Disconnects == 0 || sb.Disconnects == 0 {
		t.Errorf("disconnects a %d, b %d; want both > 0", sa.Disconnects, sb.Disconnects)
	}
	must(t, actor.SendPill(store, actor.FinishedMsg))
	closeAndStop(t, sysA, sysB, a, b)
}

// stallProxy forwards TCP between clients and a NATS server, and can stop
// forwarding what the server sends, so that the server finds the client a
// slow consumer and cuts it off.
type stallProxy struct {
	ln      net.Listener
	target  string
	stalled atomic.Bool
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn
}

func newStallProxy(t testing.TB, target string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	p := &stallProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *stallProxy) url() string { return "nats://" + p.ln.Addr().String() }

func (p *stallProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { defer p.wg.Done(); io.Copy(s, c); s.Close(); c.Close() }()
		go func() {
			defer p.wg.Done()
			buf := make([]byte, 32<<10)
			for {
				for p.stalled.Load() {
					time.Sleep(time.Millisecond)
				}
				k, err := s.Read(buf)
				if k > 0 {
					if _, werr := c.Write(buf[:k]); werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			s.Close()
			c.Close()
		}()
	}
}

func (p *stallProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.stalled.Store(false)
	p.wg.Wait()
}

// A node that stops reading while frames arrive is cut off by the NATS
// server (a server-side slow consumer): what the server dropped is lost.
// The node counts the disconnection, logs it, and counts the lost
// messages once frames from the sender arrive again. It used to count and
// log nothing.
func TestServerSlowConsumerLossCounted(t *testing.T) {
	srv := startRestartable(t, &server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		MaxPayload: 64 << 10, MaxPending: 256 << 10, WriteDeadline: 200 * time.Millisecond})
	proxy := newStallProxy(t, srv.s.Addr().String())
	sysA, sysB := startSystem(t), startSystem(t)
	a := connect(t, sysA, srv.s.ClientURL(), "a", reconnecting(10*time.Millisecond))
	b := connect(t, sysB, proxy.url(), "b", reconnecting(10*time.Millisecond))
	store := serveStore(t, sysB, b)
	c := importStore(t, a, "b")

	stop := make(chan struct{})
	sent := sendUntil(t, c.add, stop)
	waitFor(t, 10*time.Second, "traffic", func() bool { return b.Stats().Received > 1000 })
	proxy.stalled.Store(true)
	waitFor(t, 20*time.Second, "the server to cut b off", func() bool {
		return srv.s.NumSlowConsumers() > 0
	})
	proxy.stalled.Store(false)
	waitFor(t, 10*time.Second, "b reconnected", func() bool { return b.Stats().Disconnects > 0 && b.Conn().IsConnected() })
	time.Sleep(100 * time.Millisecond)
	close(stop)
	<-sent
	settle(t, c)
	sa, sb := a.Stats(), b.Stats()
	t.Logf("sent %d, received %d, lost %d, disconnects %d", sa.Sent, sb.Received, sb.LostMessages, sb.Disconnects)
	if sb.LostMessages == 0 || sb.Received+sb.LostMessages != sa.Sent {
		t.Errorf("received %d + lost %d, want sent %d with some lost", sb.Received, sb.LostMessages, sa.Sent)
	}
	must(t, actor.SendPill(store, actor.FinishedMsg))
	closeAndStop(t, sysA, sysB, a, b)
}
