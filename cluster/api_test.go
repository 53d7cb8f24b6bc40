package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/cluster"
	"github.com/actord/actord/remote"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// An ask waiting on an activation whose node dies fails with ErrOwnerLost
// once the node is out of the view (about one TTL), not at its deadline;
// the retry through Ask reaches a new activation.
func TestAskInFlightToDeadNode(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	const ttl = 2 * time.Second
	nodes := startNodes(t, ns.url(), reg, 2, nodeConfig{ttl: ttl, host: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// An id placed on n1, asked from n0.
	var id string
	for i := 0; ; i++ {
		id = "d" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		r, err := nodes[0].k.Ask(ctx, id, &Hit{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Node == "n1" {
			break
		}
	}
	errc := make(chan error, 1)
	go func() {
		_, err := nodes[0].k.Ask(ctx, id, &Hit{N: -1}) // never answered
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	nodes[1].kill()
	err := <-errc
	took := time.Since(start)
	t.Logf("in-flight ask failed after %v: %v", took, err)
	if !errors.Is(err, cluster.ErrOwnerLost) {
		t.Fatalf("in-flight ask: %v, want ErrOwnerLost", err)
	}
	if took > 4*ttl {
		t.Errorf("in-flight ask failed after %v", took)
	}
	waitFor(t, 4*ttl, "a retry reaches a new activation", func() bool {
		r, err := nodes[0].k.Ask(ctx, id, &Hit{})
		return err == nil && r.Node == "n0"
	})
	reg.check(t)
}

// Bad use gets clear errors.
func TestErrors(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	a := startNode(t, ns.url(), "a", reg, nodeConfig{ttl: 2 * time.Second}) // hosts nothing
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := a.k.Get(ctx, "x"); !errors.Is(err, cluster.ErrNoHost) {
		t.Errorf("Get with no host: %v", err)
	}
	if _, err := a.k.Get(ctx, ""); !errors.Is(err, cluster.ErrBadName) {
		t.Errorf("Get of an empty id: %v", err)
	}
	if _, err := cluster.NewKind(a.c, "late", remote.CBOR[*Hit](), remote.CBOR[Reply]()); !errors.Is(err, cluster.ErrJoined) {
		t.Errorf("NewKind after Join: %v", err)
	}
	if err := a.c.Join(ctx); !errors.Is(err, cluster.ErrJoined) {
		t.Errorf("second Join: %v", err)
	}

	// A second member under a live name is refused.
	sys, err := actor.Start(actor.WithWorkers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Stop(ctx)
	node, err := remote.Connect(sys, ns.url(), "a2", remote.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	if _, err := cluster.New(sys, node, cluster.WithName("bad.name")); !errors.Is(err, cluster.ErrBadName) {
		t.Errorf("bad cluster name: %v", err)
	}
	kv := kvOf(t, a, "actord_members")
	if _, err := kv.Create(ctx, "a2", []byte(`{"node":"a2","inc":"1","kinds":[]}`)); err != nil {
		t.Fatal(err)
	}
	c2, err := cluster.New(sys, node, cluster.WithTTL(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := c2.Join(ctx); !errors.Is(err, cluster.ErrNameInUse) {
		t.Errorf("Join under a live name: %v", err)
	}
}

// The metrics pass promlint and count what happened.
func TestMetrics(t *testing.T) {
	ns := startNATS(t)
	reg := newRegistry()
	pr := prometheus.NewPedanticRegistry()
	a := startNode(t, ns.url(), "a", reg, nodeConfig{ttl: 2 * time.Second, host: true, opts: []cluster.Option{cluster.WithRegisterer(pr)}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, id := range []string{"m1", "m2", "m3"} {
		if _, err := a.k.Ask(ctx, id, &Hit{}); err != nil {
			t.Fatal(err)
		}
	}
	problems, err := testutil.GatherAndLint(pr)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	if n, err := testutil.GatherAndCount(pr); err != nil || n < 9 {
		t.Errorf("%d metrics (%v)", n, err)
	}
	want := `
# HELP actord_cluster_activations Entity activations running on this node.
# TYPE actord_cluster_activations gauge
actord_cluster_activations 3
# HELP actord_cluster_members Live members in this node's view of the cluster.
# TYPE actord_cluster_members gauge
actord_cluster_members 1
`
	if err := testutil.GatherAndCompare(pr, strings.NewReader(want), "actord_cluster_activations", "actord_cluster_members"); err != nil {
		t.Error(err)
	}
}

// The dashboard's expressions name only metrics the cluster exports.
func TestDashboardNamesExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile("dashboards/cluster.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	ns := startNATS(t)
	pr := prometheus.NewRegistry()
	startNode(t, ns.url(), "a", newRegistry(), nodeConfig{ttl: 2 * time.Second, opts: []cluster.Option{cluster.WithRegisterer(pr)}})
	mfs, err := pr.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, mf := range mfs {
		exported[mf.GetName()] = true
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				exported[mf.GetName()+s] = true
			}
		}
	}
	metric := regexp.MustCompile(`\bactord_[a-z_]+`)
	exprs := 0
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		for _, tg := range p.Targets {
			exprs++
			found := metric.FindAllString(tg.Expr, -1)
			if len(found) == 0 {
				t.Errorf("panel %q: %q names no metric", p.Title, tg.Expr)
			}
			for _, m := range found {
				if !exported[m] {
					t.Errorf("panel %q names %s, which the cluster does not export", p.Title, m)
				}
			}
			if strings.Count(tg.Expr, "(") != strings.Count(tg.Expr, ")") {
				t.Errorf("panel %q: unbalanced %q", p.Title, tg.Expr)
			}
		}
	}
	if exprs == 0 {
		t.Fatal("no expressions")
	}
}

// A Cluster is used once (Join after Leave: ErrJoined), and a new Cluster
// on the same node and registerer joins after Leave: Leave unregisters the
// metrics.
func TestNewClusterAfterLeaveSameRegistry(t *testing.T) {
	ns := startNATS(t)
	sys, err := actor.Start(actor.WithWorkers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Shutdown(context.Background())
	node, err := remote.Connect(sys, ns.url(), "m", remote.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	pr := prometheus.NewRegistry()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := cluster.New(sys, node, cluster.WithTTL(time.Second), cluster.WithRegisterer(pr))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Join(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Join(ctx); !errors.Is(err, cluster.ErrJoined) {
		t.Errorf("Join after Leave: %v, want ErrJoined", err)
	}
	c2, err := cluster.New(sys, node, cluster.WithTTL(time.Second), cluster.WithRegisterer(pr))
	if err != nil {
		t.Fatalf("a new Cluster after Leave, same registry: %v", err)
	}
	if err := c2.Join(ctx); err != nil {
		t.Fatal(err)
	}
	_ = c2.Leave(ctx)
}
