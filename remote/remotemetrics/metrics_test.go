package remotemetrics_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/remote"
	"github.com/actord/actord/remote/remotemetrics"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type Ping struct {
	actor.Request[int]
	N int
}

type Pinger struct{ actor.Actor }

func (*Pinger) OnPing(m *Ping) actor.Allocation { m.Reply(m.N + 1); return actor.Nodelete }

// node runs two nodes on an embedded server, makes some traffic, and
// returns a registry with both collectors.
func gather(t *testing.T) *prometheus.Registry {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats not ready")
	}
	sys, err := actor.Start(actor.WithWorkers(1), actor.WithQueues(2))
	if err != nil {
		t.Fatal(err)
	}
	a, err := remote.Connect(sys, s.ClientURL(), "a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := remote.Connect(sys, s.ClientURL(), "b")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := actor.Spawn(sys, &Pinger{})
	port, _ := actor.Bind(p, (*Pinger).OnPing)
	if err := remote.ExportRequest(b, "ping", port, remote.CBOR[*Ping](), remote.CBOR[int]()); err != nil {
		t.Fatal(err)
	}
	rp, _ := remote.ImportRequest(a, "b", "ping", remote.CBOR[*Ping](), remote.CBOR[int]())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if v, err := rp.Ask(ctx, &Ping{N: 1}); err != nil || v != 2 {
		t.Fatal(v, err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(remotemetrics.New(a), remotemetrics.New(b))
	t.Cleanup(func() {
		a.Close()
		b.Close()
		actor.SendPill(p, actor.FinishedMsg)
		sys.Stop(context.Background())
	})
	return reg
}

func TestPromlint(t *testing.T) {
	reg := gather(t)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	var got []string
	for _, mf := range mfs {
		got = append(got, mf.GetName())
		if mf.GetName() == remotemetrics.AskDuration {
			var n uint64
			for _, m := range mf.GetMetric() {
				n += m.GetHistogram().GetSampleCount()
			}
			if n != 1 {
				t.Errorf("%d asks observed, want 1", n)
			}
		}
	}
	if len(got) != 20 {
		t.Errorf("%d metric families: %v", len(got), got)
	}
}

// TestDashboardNamesExportedMetrics checks that every expression of the
// dashboard names only metrics this package exports.
func TestDashboardNamesExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile("../dashboards/remote.json")
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
	names := remotemetrics.Names()
	metric := regexp.MustCompile(`\bactord_[a-z_]+`)
	exprs := 0
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no expression", p.Title)
		}
		for _, tg := range p.Targets {
			exprs++
			found := metric.FindAllString(tg.Expr, -1)
			if len(found) == 0 {
				t.Errorf("panel %q: %q names no metric", p.Title, tg.Expr)
			}
			for _, m := range found {
				if !slices.Contains(names, m) {
					t.Errorf("panel %q names %s, which remotemetrics does not export", p.Title, m)
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
