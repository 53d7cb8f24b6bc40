package cluster_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/cluster"
	"github.com/prometheus/client_golang/prometheus"
)

// placeAmong is the member that rendezvous hashing chooses for id among
// names (as the cluster does over its view).
func placeAmong(names []string, id string) string {
	best, bestScore := "", uint64(0)
	for _, n := range names {
		if s := cluster.Score(n, "counter", id); best == "" || s > bestScore || s == bestScore && n < best {
			best, bestScore = n, s
		}
	}
	return best
}

// metricValue reads one counter or gauge of a registry.
func metricValue(t testing.TB, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

func rebalanceNode(t testing.TB, url, name string, reg *registry, rb cluster.Rebalance) (*cnode, *prometheus.Registry) {
	pr := prometheus.NewRegistry()
	n := startNode(t, url, name, reg, nodeConfig{ttl: 2 * time.Second, host: true,
		opts: []cluster.Option{cluster.WithRebalance(rb), cluster.WithRegisterer(pr)}})
	return n, pr
}

func localTotal(nodes ...*cnode) int {
	n := 0
	for _, nd := range nodes {
		n += nd.k.LocalCount()
	}
	return n
}

// A member joins: the entities that hash to it move there once idle,
// gradually (at most Batch move checks per look, per member), a busy one
// only once its traffic stops; the others never move, and no entity has
// two activations at once (the entities count their own activations).
func TestJoinMovesIdleEntities(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	rb := cluster.Rebalance{Idle: 300 * time.Millisecond, Batch: 6, Every: 100 * time.Millisecond}
	n0, pr0 := rebalanceNode(t, ns.url(), "n0", reg, rb)
	n1, pr1 := rebalanceNode(t, ns.url(), "n1", reg, rb)
	old := []*cnode{n0, n1}
	for _, n := range old {
		waitFor(t, 3*time.Second, n.name+" sees 2", func() bool { return len(n.c.Members()) == 2 })
	}
	ids := make([]string, 240)
	for i := range ids {
		ids[i] = "k" + strconv.Itoa(i)
	}
	before := askAll(t, old, ids, 4)
	var toMove, busy []string
	for _, id := range ids {
		if want := placeAmong([]string{"n0", "n1"}, id); before[id] != want {
			t.Fatalf("%s on %s, placement says %s", id, before[id], want)
		}
		if placeAmong([]string{"n0", "n1", "n2"}, id) == "n2" {
			toMove = append(toMove, id)
		}
	}
	busy = toMove[:4]
	idleMovers := len(toMove) - len(busy)
	t.Logf("%d of %d entities hash to the new member, %d of them kept busy", len(toMove), len(ids), len(busy))

	// Traffic on the busy ones, from both old members, every 30ms (well
	// under Idle): they must stay where they are while it lasts.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stopBusy atomic.Bool
	var wg sync.WaitGroup
	for i, id := range busy {
		wg.Go(func() {
			from := old[i%2]
			for !stopBusy.Load() {
				r, err := from.k.Ask(ctx, id, &Hit{})
				if err != nil {
					t.Errorf("busy %s: %v", id, err)
					return
				}
				if r.Node != before[id] {
					t.Errorf("busy %s answered by %s while busy, was on %s", id, r.Node, before[id])
				}
				time.Sleep(30 * time.Millisecond)
			}
		})
	}
	defer func() { // before the nodes stop, if the test fails
		stopBusy.Store(true)
		wg.Wait()
	}()
	time.Sleep(2 * rb.Idle) // the busy ones' traffic is under way

	// The old members move entities as soon as they see n2, which may be
	// before its Join returns.
	start := localTotal(n0, n1)
	joined := time.Now()
	n2, pr2 := rebalanceNode(t, ns.url(), "n2", reg, rb)
	all := []*cnode{n0, n1, n2}
	for _, n := range all {
		waitFor(t, 3*time.Second, n.name+" sees 3", func() bool { return len(n.c.Members()) == 3 })
	}
	// Gradual: every look of each old member starts at most Batch moves.
	maxMoved := func(d time.Duration) int { return len(old) * rb.Batch * (int(d/rb.Every) + 2) }
	for {
		moved := start - localTotal(n0, n1)
		el := time.Since(joined)
		if moved > maxMoved(el) {
			t.Fatalf("%d moved %v after the join: more than %d checks per look", moved, el, rb.Batch)
		}
		if moved == idleMovers {
			break
		}
		if moved > idleMovers {
			t.Fatalf("%d moved, only %d idle entities hash to n2", moved, idleMovers)
		}
		if el > 15*time.Second {
			t.Fatalf("%d of %d idle entities moved after %v", moved, idleMovers, el)
		}
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(joined)
	minLooks := (idleMovers+len(old)*rb.Batch-1)/(len(old)*rb.Batch) - 1
	t.Logf("the %d idle entities that hash to n2 left n0 and n1 %v after the join (Idle %v, Batch %d, Every %v)",
		idleMovers, took, rb.Idle, rb.Batch, rb.Every)
	if took < time.Duration(minLooks)*rb.Every {
		t.Errorf("moved in %v: faster than %d looks of %d", took, minLooks, rb.Batch)
	}
	// The busy ones are still on their member; once their traffic stops
	// they move too.
	time.Sleep(3 * rb.Every)
	if got := start - localTotal(n0, n1); got != idleMovers {
		t.Errorf("%d moved while the busy ones are busy, want %d", got, idleMovers)
	}
	stopBusy.Store(true)
	wg.Wait()
	waitFor(t, 5*time.Second, "the busy ones move once idle", func() bool { return start-localTotal(n0, n1) == len(toMove) })

	// Asked again from every member, each id answers from its placement,
	// the moved ones from a second activation, the others from their
	// first and only one.
	after := askAll(t, all, ids, 4)
	reg.mu.Lock()
	for _, id := range ids {
		want, activations := before[id], 1
		if slices.Contains(toMove, id) {
			want, activations = "n2", 2
		}
		if after[id] != want {
			t.Errorf("%s on %s, want %s", id, after[id], want)
		}
		if reg.total[id] != activations {
			t.Errorf("%s activated %d times, want %d", id, reg.total[id], activations)
		}
	}
	reg.mu.Unlock()
	reg.check(t)
	moves := metricValue(t, pr0, "actord_cluster_moves_total") + metricValue(t, pr1, "actord_cluster_moves_total")
	if int(moves) != len(toMove) || metricValue(t, pr2, "actord_cluster_moves_total") != 0 {
		t.Errorf("moves counted: %v by n0 and n1, want %d", moves, len(toMove))
	}
}

// Asks racing moves: traffic from every member on entities that move
// while it runs (Idle close to the gaps between asks). Every ask is
// answered, no request is delivered twice (each carries a sequence number
// that the entities record), and no entity has two activations at once.
func TestAsksRacingMoves(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	rb := cluster.Rebalance{Idle: 40 * time.Millisecond, Batch: 100, Every: 20 * time.Millisecond}
	n0, pr0 := rebalanceNode(t, ns.url(), "n0", reg, rb)
	n1, pr1 := rebalanceNode(t, ns.url(), "n1", reg, rb)
	ids := make([]string, 60)
	for i := range ids {
		ids[i] = "r" + strconv.Itoa(i)
	}
	for _, n := range []*cnode{n0, n1} {
		waitFor(t, 3*time.Second, n.name+" sees 2", func() bool { return len(n.c.Members()) == 2 })
	}
	askAll(t, []*cnode{n0, n1}, ids, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var (
		stop atomic.Bool
		seq  atomic.Int64
		asks atomic.Int64
		wg   sync.WaitGroup
	)
	traffic := func(n *cnode) {
		for range 3 {
			wg.Go(func() {
				for !stop.Load() {
					id := ids[rand.IntN(len(ids))]
					if _, err := n.k.Ask(ctx, id, &Hit{Seq: seq.Add(1)}); err != nil {
						t.Errorf("%s: ask %s: %v", n.name, id, err)
						return
					}
					asks.Add(1)
					time.Sleep(time.Duration(rand.IntN(60)) * time.Millisecond)
				}
			})
		}
	}
	traffic(n0)
	traffic(n1)
	time.Sleep(200 * time.Millisecond)
	n2, pr2 := rebalanceNode(t, ns.url(), "n2", reg, rb)
	traffic(n2)
	time.Sleep(1500 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	var moves, refused float64
	for _, pr := range []*prometheus.Registry{pr0, pr1, pr2} {
		moves += metricValue(t, pr, "actord_cluster_moves_total")
		refused += metricValue(t, pr, "actord_cluster_moved_refusals_total")
	}
	reg.mu.Lock()
	twice := 0
	for s, n := range reg.seqs {
		if n != 1 && twice < 5 {
			t.Errorf("request %d delivered %d times", s, n)
			twice++
		}
	}
	delivered := len(reg.seqs)
	reg.mu.Unlock()
	t.Logf("%d asks answered during %v moves (%d requests delivered once each; %v refused as moving, asked again)",
		asks.Load(), moves, delivered, refused)
	if int64(delivered) != asks.Load() {
		t.Errorf("%d requests delivered, %d asks answered", delivered, asks.Load())
	}
	if moves == 0 {
		t.Error("nothing moved")
	}
	reg.check(t)
}

// idsPlaced returns n ids that placement puts on from among the old
// members and on to once new has joined.
func idsPlaced(old []string, newer string, from, to string, n int, prefix string) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		id := prefix + strconv.Itoa(i)
		if placeAmong(old, id) == from && placeAmong(append(slices.Clone(old), newer), id) == to {
			out = append(out, id)
		}
	}
	return out
}

// A request queued behind the move check that decides to move its entity
// (here, behind it in the mailbox while another entity's long behaviour
// holds the member's only worker) is refused undelivered with ErrMoved,
// and Kind.Ask asks again: the answer comes from the new activation on the
// joining member, whether the first ask was remote or local; each request
// is delivered once, and no entity has two activations at once.
func TestAskQueuedBehindMoveCheck(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	rb := cluster.Rebalance{Idle: 100 * time.Millisecond, Batch: 10, Every: 20 * time.Millisecond}
	n0, pr0 := rebalanceNode(t, ns.url(), "n0", reg, rb)
	n1, _ := rebalanceNode(t, ns.url(), "n1", reg, rb)
	old := []string{"n0", "n1"}
	for _, n := range []*cnode{n0, n1} {
		waitFor(t, 3*time.Second, n.name+" sees 2", func() bool { return len(n.c.Members()) == 2 })
	}
	movers := idsPlaced(old, "n2", "n0", "n2", 2, "q")
	blocker := idsPlaced(old, "n2", "n0", "n0", 1, "b")[0]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, id := range append(slices.Clone(movers), blocker) {
		if r, err := n0.k.Ask(ctx, id, &Hit{}); err != nil || r.Node != "n0" {
			t.Fatalf("%s: %+v, %v", id, r, err)
		}
	}
	// n0's only worker sleeps in the blocker's behaviour; meanwhile n2
	// joins and n0's looks queue move checks for the movers.
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		if _, err := n1.k.Ask(ctx, blocker, &Hit{Sleep: 1500 * time.Millisecond}); err != nil {
			t.Errorf("blocker: %v", err)
		}
	})
	time.Sleep(100 * time.Millisecond)
	n2, _ := rebalanceNode(t, ns.url(), "n2", reg, rb)
	for _, n := range []*cnode{n0, n1} {
		waitFor(t, 3*time.Second, n.name+" sees n2", func() bool { return len(n.c.Members()) == 3 })
	}
	time.Sleep(5 * rb.Every) // several looks: checks queued
	// Now the asks queue behind the checks: one from n1 (remote), one
	// from n0 itself (local).
	replies := make([]Reply, 2)
	for i, from := range []*cnode{n1, n0} {
		wg.Go(func() {
			r, err := from.k.Ask(ctx, movers[i], &Hit{Seq: int64(i + 1)})
			if err != nil {
				t.Errorf("%s from %s: %v", movers[i], from.name, err)
			}
			replies[i] = r
		})
	}
	wg.Wait()
	for i, r := range replies {
		if r.Node != n2.name || r.Hits != 1 {
			t.Errorf("%s: answered %+v, want a fresh activation on n2", movers[i], r)
		}
	}
	if got := metricValue(t, pr0, "actord_cluster_moved_refusals_total"); got != 2 {
		t.Errorf("n0 refused %v requests as moving, want 2", got)
	}
	reg.mu.Lock()
	for _, id := range movers {
		if reg.total[id] != 2 {
			t.Errorf("%s activated %d times, want 2", id, reg.total[id])
		}
	}
	for s := int64(1); s <= 2; s++ {
		if reg.seqs[s] != 1 {
			t.Errorf("request %d delivered %d times", s, reg.seqs[s])
		}
	}
	reg.mu.Unlock()
	reg.check(t)
}

// With rebalancing off, a member that joins gets new entities, but the
// existing activations stay where they are.
func TestJoinKeepsActivationsWithRebalanceOff(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	off := cluster.Rebalance{Off: true, Idle: time.Millisecond, Every: 10 * time.Millisecond}
	n0, _ := rebalanceNode(t, ns.url(), "n0", reg, off)
	n1, _ := rebalanceNode(t, ns.url(), "n1", reg, off)
	nodes := []*cnode{n0, n1}
	for _, n := range nodes {
		waitFor(t, 3*time.Second, n.name+" sees 2", func() bool { return len(n.c.Members()) == 2 })
	}
	ids := make([]string, 200)
	for i := range ids {
		ids[i] = "k" + strconv.Itoa(i)
	}
	before := askAll(t, nodes, ids, 4)
	n2, _ := rebalanceNode(t, ns.url(), "n2", reg, off)
	nodes = append(nodes, n2)
	for _, n := range nodes {
		waitFor(t, 3*time.Second, n.name+" sees 3", func() bool { return len(n.c.Members()) == 3 })
	}
	time.Sleep(300 * time.Millisecond) // many would-be looks
	after := askAll(t, nodes, ids, 4)
	for id, o := range before {
		if after[id] != o {
			t.Errorf("%s moved from %s to %s", id, o, after[id])
		}
	}
	reg.mu.Lock()
	for _, id := range ids {
		if reg.total[id] != 1 {
			t.Errorf("%s activated %d times", id, reg.total[id])
		}
	}
	reg.mu.Unlock()
	fresh := make([]string, 200)
	for i := range fresh {
		fresh[i] = "f" + strconv.Itoa(i)
	}
	per := map[string]int{}
	for _, o := range askAll(t, nodes, fresh, 4) {
		per[o]++
	}
	if per["n2"] == 0 {
		t.Errorf("no new entity placed on the new member: %v", per)
	}
}

// A fenced member that waits for a long behaviour keeps its old record
// (keepFenced), marked fenced: the others' placement skips it, so their
// rebalancers do not move idle entities that run fine on them to a
// member that refuses every activation (ErrFenced) until it joins again.
// Here an entity served by n0 stays available once it idles, while n2
// waits for its fenced activation.
func TestPlacementSkipsFencedMember(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	const ttl = time.Second
	rb := cluster.WithRebalance(cluster.Rebalance{Idle: 100 * time.Millisecond, Every: 50 * time.Millisecond})
	px := startProxy(t, fmt.Sprintf("127.0.0.1:%d", ns.opts.Port))
	n0 := startSlowOpts(t, ns.url(), "n0", reg, cluster.WithTTL(ttl), rb)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	x := idPlacedOn("rf-x", "n2", "n0", "n2")    // activated on n0 alone, placed on n2 later
	long := idPlacedOn("rf-l", "n2", "n0", "n2") // n2's own, busy across the fence
	if r, err := n0.k.Ask(ctx, x, &Op{}); err != nil || r.Node != "n0" {
		t.Fatalf("%+v %v", r, err)
	}
	// Keep x busy so that it does not move when n2 joins.
	var stopTraffic atomic.Bool
	traffic := make(chan struct{})
	go func() {
		defer close(traffic)
		for !stopTraffic.Load() {
			_, _ = n0.k.Ask(ctx, x, &Op{})
			time.Sleep(20 * time.Millisecond)
		}
	}()
	n2 := startSlowOpts(t, px.url(), "n2", reg, cluster.WithTTL(ttl), rb)
	waitMembers(t, 2, n0, n2)
	if r, err := n2.k.Ask(ctx, long, &Op{}); err != nil || r.Node != "n2" {
		t.Fatalf("%+v %v", r, err)
	}
	go func() { _, _ = n2.k.Ask(ctx, long, &Op{Sleep: 6 * ttl}) }()
	time.Sleep(50 * time.Millisecond)
	px.partition() // a stall shorter than the TTL: n2 fences, its record survives
	waitFor(t, 2*ttl, "n2 fences", func() bool { return n2.k.LocalCount() == 0 })
	px.heal()
	time.Sleep(ttl / 2)
	stopTraffic.Store(true)
	<-traffic
	if r, err := n0.k.Ask(ctx, x, &Op{}); err != nil || r.Node != "n0" {
		t.Fatalf("x before it idles: %+v %v", r, err)
	}
	time.Sleep(time.Second) // x idles on n0: Idle is 100ms
	actx, acancel := context.WithTimeout(ctx, ttl)
	r, err := n0.k.Ask(actx, x, &Op{})
	acancel()
	if err != nil {
		t.Errorf("x, served by n0 until it idled, is now unavailable: %v (n2 is fenced, in n0's view %v)", err, n0.c.Members())
	} else {
		t.Logf("x answered by %s", r.Node)
	}
}

// BusyCounter is a Counter that always says it is Busy (it keeps work of
// its own), so that rebalancing leaves it where it is.
type BusyCounter struct{ Counter }

func (*BusyCounter) Busy() bool { return true }

// Idle passivation (actor.WithPassivation) ends an actor that has
// received no message for d. The rebalancer sends a move check, a
// message, to an idle activation that placement puts elsewhere, and a
// Busy entity refuses to move; it is checked again only after a new
// request, so that the checks do not reset its passivation at every look
// (here it ends about 400ms after its last request).
func TestBusyEntityPlacedElsewherePassivates(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	rb := cluster.WithRebalance(cluster.Rebalance{Idle: 100 * time.Millisecond, Every: 50 * time.Millisecond})
	host := func(name string) func(*testKind) error {
		return func(k *testKind) error {
			return cluster.Host(k, func(id string) *BusyCounter { return &BusyCounter{Counter{id: id, node: name, reg: reg}} },
				(*BusyCounter).OnHit, actor.WithPassivation(400*time.Millisecond))
		}
	}
	n0 := startCustom(t, ns.url(), "n0", []cluster.Option{rb}, host("n0"))
	id := ""
	for i := 0; id == ""; i++ {
		if x := fmt.Sprintf("busy-%d", i); placeAmong([]string{"n0", "n1"}, x) == "n1" {
			id = x
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r, err := n0.k.Ask(ctx, id, &Hit{}); err != nil || r.Node != "n0" {
		t.Fatalf("%+v %v", r, err)
	}
	// Control: without another member, it passivates.
	waitFor(t, 2*time.Second, "passivation alone", func() bool { return n0.k.LocalCount() == 0 })
	if r, err := n0.k.Ask(ctx, id, &Hit{}); err != nil || r.Node != "n0" {
		t.Fatalf("%+v %v", r, err)
	}
	startCustom(t, ns.url(), "n1", []cluster.Option{rb}, host("n1"))
	waitFor(t, 3*time.Second, "n0 sees n1", func() bool { return len(n0.c.Members()) == 2 })
	time.Sleep(3 * time.Second)
	if n := n0.k.LocalCount(); n != 0 {
		t.Errorf("the Busy entity idle for 3s with a 400ms passivation still runs on n0 (%d activations): the move checks keep it alive", n)
	}
}
