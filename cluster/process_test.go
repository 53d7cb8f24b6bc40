package cluster_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/cluster"
	"github.com/actord/actord/remote"
	"github.com/nats-io/nats.go"
)

// The members of TestProcessesKill are this test binary run again with
// testNodeEnv set to the member's name: TestMain then runs testNodeMain,
// which joins the cluster, asks entities, and reports on its stdout, one
// event a line: "<event> <fields...> <unix nanoseconds>".
const (
	testNodeEnv  = "ACTORD_CLUSTER_TESTNODE"
	testNodeURL  = "ACTORD_CLUSTER_TESTNODE_URL"
	testNodeTTL  = "ACTORD_CLUSTER_TESTNODE_TTL"
	testNodeIDs  = "ACTORD_CLUSTER_TESTNODE_IDS"
	testNodeSize = "ACTORD_CLUSTER_TESTNODE_MEMBERS"
)

// stdoutLines writes whole lines to stdout, one write each.
var stdoutLines sync.Mutex

func emit(event string, fields ...any) {
	var b strings.Builder
	b.WriteString(event)
	for _, f := range fields {
		fmt.Fprintf(&b, " %v", f)
	}
	fmt.Fprintf(&b, " %d\n", time.Now().UnixNano())
	stdoutLines.Lock()
	_, _ = os.Stdout.WriteString(b.String())
	stdoutLines.Unlock()
}

// procCounter is the entity of the member processes: it reports its
// activations (START, STOP) and the requests it keeps (KEPT).
type procCounter struct {
	actor.Actor
	id, node string
	hits     int
	held     []*Hit
}

func (c *procCounter) Started()             { emit("START", c.id, c.node) }
func (c *procCounter) Stopped(actor.Reason) { emit("STOP", c.id, c.node) }

func (c *procCounter) OnHit(m *Hit) actor.Allocation {
	if m.N < 0 {
		c.held = append(c.held, m) // never answered: an ask left in flight
		emit("KEPT", c.id, c.node)
		return actor.Nodelete
	}
	c.hits++
	m.Reply(Reply{Node: c.node, ID: c.id, Hits: c.hits})
	return actor.Nodelete
}

// testNodeMain is a member process: it joins, waits for the others, asks
// random entities from three goroutines until told to stop on stdin
// ("STOP"), and keeps a request in flight on an entity when told
// ("HOLD <id>"). Its events: READY; START, STOP, KEPT (its entities); OK
// <id> <node> (an ask answered); LOST <id> (an ask failed with
// ErrOwnerLost, then asked again until answered: RETRIED <id> <node>);
// HOLDLOST <id>, HOLDRETRIED <id> <node> (a kept request failed with
// ErrOwnerLost, then asked again); ERR <id> <error> (anything else).
func testNodeMain(name string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, name+":", err)
		return 2
	}
	ttl, err := time.ParseDuration(os.Getenv(testNodeTTL))
	if err != nil {
		return fail(err)
	}
	nids, _ := strconv.Atoi(os.Getenv(testNodeIDs))
	size, _ := strconv.Atoi(os.Getenv(testNodeSize))
	sys, err := actor.Start(actor.WithWorkers(1), actor.WithQueues(16))
	if err != nil {
		return fail(err)
	}
	node, err := remote.Connect(sys, os.Getenv(testNodeURL), name, remote.WithLogger(quiet),
		remote.WithNATS(nats.ReconnectWait(50*time.Millisecond), nats.MaxReconnects(-1)))
	if err != nil {
		return fail(err)
	}
	c, err := cluster.New(sys, node, cluster.WithTTL(ttl), cluster.WithLogger(quiet),
		cluster.WithRebalance(cluster.Rebalance{Off: true}))
	if err != nil {
		return fail(err)
	}
	k, err := cluster.NewKind(c, "counter", remote.CBOR[*Hit](), remote.CBOR[Reply]())
	if err != nil {
		return fail(err)
	}
	if err := cluster.Host(k, func(id string) *procCounter { return &procCounter{id: id, node: name} }, (*procCounter).OnHit); err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Join(ctx); err != nil {
		return fail(err)
	}
	for len(c.Members()) < size {
		if ctx.Err() != nil {
			return fail(fmt.Errorf("%d members in view", len(c.Members())))
		}
		time.Sleep(10 * time.Millisecond)
	}
	emit("READY", name)

	var stop atomic.Bool
	var wg sync.WaitGroup
	// ask asks id until answered (or 10 TTLs pass), reporting each try.
	ask := func(id string, n int, okEvent, lostEvent, retryEvent string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*ttl)
		defer cancel()
		r, err := k.Ask(ctx, id, &Hit{N: n})
		if err == nil {
			emit(okEvent, id, r.Node)
			return
		}
		if !errors.Is(err, cluster.ErrOwnerLost) {
			emit("ERR", id, strings.ReplaceAll(err.Error(), " ", "_"))
			return
		}
		emit(lostEvent, id)
		for {
			r, err := k.Ask(ctx, id, &Hit{N: 1})
			if err == nil {
				emit(retryEvent, id, r.Node)
				return
			}
			if !errors.Is(err, cluster.ErrOwnerLost) {
				emit("ERR", id, strings.ReplaceAll(err.Error(), " ", "_"))
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	for range 3 {
		wg.Go(func() {
			for !stop.Load() {
				ask("p"+strconv.Itoa(rand.IntN(nids)), 1, "OK", "LOST", "RETRIED")
				time.Sleep(time.Duration(rand.IntN(4)) * time.Millisecond)
			}
		})
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) == 2 && f[0] == "HOLD" {
			wg.Go(func() { ask(f[1], -1, "HOLDANSWERED", "HOLDLOST", "HOLDRETRIED") })
		}
		if len(f) == 1 && f[0] == "STOP" {
			break
		}
	}
	stop.Store(true)
	wg.Wait()
	lctx, lcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer lcancel()
	if err := c.Leave(lctx); err != nil {
		return fail(err)
	}
	node.Close()
	if err := sys.Shutdown(lctx); err != nil && !errors.Is(err, actor.ErrUndelivered) {
		return fail(err)
	}
	emit("BYE", name)
	return 0
}

// procEvent is one line of a member process.
type procEvent struct {
	proc string
	kind string
	args []string
	at   time.Time // the member's clock (the same machine's)
}

// memberProc is a member process of TestProcessesKill.
type memberProc struct {
	name   string
	cmd    *exec.Cmd
	stdin  *bufio.Writer
	stderr strings.Builder
	done   chan struct{} // closed when its stdout is read to the end
}

func (p *memberProc) send(t testing.TB, line string) {
	t.Helper()
	if _, err := p.stdin.WriteString(line + "\n"); err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	if err := p.stdin.Flush(); err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
}

// procLog gathers the events of every member process.
type procLog struct {
	mu     sync.Mutex
	events []procEvent
}

func (l *procLog) add(e procEvent) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

func (l *procLog) snapshot() []procEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

func startMemberProc(t *testing.T, log *procLog, url, name string, ttl time.Duration, ids, size int) *memberProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), testNodeEnv+"="+name, testNodeURL+"="+url, testNodeTTL+"="+ttl.String(),
		testNodeIDs+"="+strconv.Itoa(ids), testNodeSize+"="+strconv.Itoa(size))
	p := &memberProc{name: name, cmd: cmd, done: make(chan struct{})}
	cmd.Stderr = &p.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.stdin = bufio.NewWriter(stdin)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 2 {
				continue
			}
			ns, err := strconv.ParseInt(f[len(f)-1], 10, 64)
			if err != nil {
				continue
			}
			log.add(procEvent{proc: name, kind: f[0], args: f[1 : len(f)-1], at: time.Unix(0, ns)})
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		_ = cmd.Wait()
	})
	return p
}

// Three members as separate OS processes, against one nats-server in the
// test process, asking random entities from all three. One is killed
// (SIGKILL) mid-traffic while two requests are kept in flight on its
// entities: those fail with ErrOwnerLost and succeed when asked again,
// asks in flight fail with ErrOwnerLost only, every entity of the dead
// member is answered elsewhere within about one TTL plus an activation,
// and the activations that the processes report never overlap for an id:
// the others are activated once.
func TestProcessesKill(t *testing.T) {
	ns := startNATS(t)
	const (
		ttl     = 2 * time.Second
		members = 3
		nids    = 60
	)
	log := &procLog{}
	var procs []*memberProc
	for i := range members {
		procs = append(procs, startMemberProc(t, log, ns.url(), "w"+strconv.Itoa(i), ttl, nids, members))
	}
	count := func(kind string, f func(procEvent) bool) int {
		n := 0
		for _, e := range log.snapshot() {
			if e.kind == kind && (f == nil || f(e)) {
				n++
			}
		}
		return n
	}
	waitFor(t, 30*time.Second, "every member ready", func() bool { return count("READY", nil) == members })
	waitFor(t, 20*time.Second, "every entity activated and asks from every member", func() bool {
		ids := map[string]bool{}
		per := map[string]int{}
		for _, e := range log.snapshot() {
			switch e.kind {
			case "START":
				ids[e.args[0]] = true
			case "OK":
				per[e.proc]++
			}
		}
		return len(ids) == nids && per["w0"] >= 50 && per["w1"] >= 50 && per["w2"] >= 50
	})
	victim := procs[2]
	var theirs []string
	for _, e := range log.snapshot() {
		if e.kind == "START" && e.proc == victim.name {
			theirs = append(theirs, e.args[0])
		}
	}
	if len(theirs) < 2 {
		t.Fatalf("%d entities on %s", len(theirs), victim.name)
	}
	// Two requests kept in flight on the victim's entities, from each
	// survivor one.
	procs[0].send(t, "HOLD "+theirs[0])
	procs[1].send(t, "HOLD "+theirs[1])
	waitFor(t, 5*time.Second, "the victim keeps both", func() bool { return count("KEPT", nil) == 2 })

	killedAt := time.Now()
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-victim.done
	_ = victim.cmd.Wait()

	// Each entity of the victim is answered elsewhere.
	back := map[string]time.Duration{}
	waitFor(t, 8*ttl, "every entity of the dead member answered elsewhere", func() bool {
		for _, e := range log.snapshot() {
			if (e.kind == "OK" || e.kind == "RETRIED" || e.kind == "HOLDRETRIED") && e.at.After(killedAt) &&
				e.args[1] != victim.name && slices.Contains(theirs, e.args[0]) {
				if _, ok := back[e.args[0]]; !ok {
					back[e.args[0]] = e.at.Sub(killedAt)
				}
			}
		}
		return len(back) == len(theirs)
	})
	waitFor(t, 5*ttl, "both kept requests fail and are asked again", func() bool { return count("HOLDRETRIED", nil) == 2 })
	time.Sleep(200 * time.Millisecond) // traffic on the new activations
	for _, p := range procs[:2] {
		p.send(t, "STOP")
	}
	for _, p := range procs[:2] {
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s does not stop", p.name)
		}
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("%s: %v: %s", p.name, err, p.stderr.String())
		}
	}

	events := log.snapshot()
	var worst time.Duration
	for _, d := range back {
		worst = max(worst, d)
	}
	lost, retried := 0, 0
	for _, e := range events {
		switch e.kind {
		case "ERR", "HOLDANSWERED":
			t.Errorf("%s: %s %v", e.proc, e.kind, e.args)
		case "LOST":
			lost++
		case "RETRIED":
			retried++
		}
	}
	if count("HOLDLOST", nil) != 2 {
		t.Errorf("%d kept requests failed with ErrOwnerLost, want 2", count("HOLDLOST", nil))
	}
	if lost != retried {
		t.Errorf("%d asks failed with ErrOwnerLost, %d of them answered when asked again", lost, retried)
	}
	t.Logf("%d entities of the killed member answered elsewhere, the last %v after the kill (TTL %v); %d asks in flight failed with ErrOwnerLost (and the 2 kept), all answered when asked again",
		len(theirs), worst, ttl, lost)
	if worst < ttl/2 {
		t.Errorf("an entity was answered elsewhere %v after the kill, before the dead member's lease could lapse", worst)
	}

	// Activations, per id, as the processes reported them: intervals from
	// START to STOP (the victim's end at the kill) that never overlap.
	type span struct {
		proc       string
		start, end time.Time
	}
	spans := map[string][]span{}
	for _, e := range events {
		id := ""
		if len(e.args) > 0 {
			id = e.args[0]
		}
		switch e.kind {
		case "START":
			spans[id] = append(spans[id], span{proc: e.proc, start: e.at})
		case "STOP":
			s := spans[id]
			for i := len(s) - 1; i >= 0; i-- {
				if s[i].proc == e.proc && s[i].end.IsZero() {
					s[i].end = e.at
					break
				}
			}
		}
	}
	for id, s := range spans {
		for i := range s {
			if s[i].end.IsZero() {
				if s[i].proc != victim.name {
					t.Errorf("%s on %s never stopped", id, s[i].proc)
				}
				s[i].end = killedAt
			}
		}
		slices.SortFunc(s, func(a, b span) int { return a.start.Compare(b.start) })
		for i := 1; i < len(s); i++ {
			if s[i].start.Before(s[i-1].end) {
				t.Errorf("%s: two activations at once, on %s and %s", id, s[i-1].proc, s[i].proc)
			}
		}
		want := 1
		if slices.Contains(theirs, id) {
			want = 2
		}
		if len(s) != want {
			t.Errorf("%s activated %d times, want %d", id, len(s), want)
		}
	}
	if len(spans) != nids {
		t.Errorf("%d entities activated, want %d", len(spans), nids)
	}
}
