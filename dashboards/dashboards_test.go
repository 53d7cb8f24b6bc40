package dashboards

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/bench"
	"github.com/actord/actord/metrics"
)

func TestSelectors(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []Selector
	}{
		{`up`, []Selector{{Metric: "up"}}},
		{`rate(x_total{a="b",c=~"d|{e}"}[$__rate_interval])`, []Selector{{Metric: "x_total", Func: "rate", Range: "$__rate_interval"}}},
		{`sum by (worker) (rate(a_total{instance="$instance"}[5m])) / on(worker) group_left(x) sum without (le) (b)`,
			[]Selector{{Metric: "a_total", Func: "rate", Range: "5m"}, {Metric: "b", Func: "sum"}}},
		{`histogram_quantile(0.99, sum by (le) (increase(h_bucket[1h30m] offset 5m)))`,
			[]Selector{{Metric: "h_bucket", Func: "increase", Range: "1h30m"}}},
		{`1 - (g > bool 2) and on() max_over_time(g2[10m:1m])`,
			[]Selector{{Metric: "g", Func: ""}, {Metric: "g2", Func: "max_over_time", Range: "10m:1m"}}},
		{`sum(x) by (y)`, []Selector{{Metric: "x", Func: "sum"}}},
		{`{__name__=~"actord_.*"}`, nil},
	} {
		got, err := Selectors(tc.expr)
		require.NoError(t, err, tc.expr)
		require.Equal(t, tc.want, got, tc.expr)
	}
	for _, bad := range []string{`rate(x[5m]`, `x{a="b}`, `sum(x))`, `x[5m`, `$`} {
		_, err := Selectors(bad)
		require.ErrorIs(t, err, ErrSyntax, bad)
	}
}

func TestExpand(t *testing.T) {
	got, err := Expand(`rate(x{instance="$instance",job="${job}"}[$__rate_interval]) ${instance:raw}`,
		map[string]string{"instance": "h:1", "job": "j", "__rate_interval": "15s"})
	require.NoError(t, err)
	require.Equal(t, `rate(x{instance="h:1",job="j"}[15s]) h:1`, got)
	_, err = Expand(`x{a="$nope"}`, nil)
	require.ErrorIs(t, err, ErrMissingVariable)
	require.ErrorContains(t, err, "nope")
}

// exported returns the series names actord exports, from the registry the
// server builds (run on a small real system so that every family is
// present), and the set of those that are counters (a counter's name, a
// histogram's _bucket, _sum and _count, a summary's _sum and _count).
func exported(t *testing.T) (all, counters map[string]bool, families []string) {
	t.Helper()
	coll := metrics.NewCollector()
	reg, err := metrics.NewRegistry(coll, metrics.NewWorkload("mixed"))
	require.NoError(t, err)
	sys, err := actor.Start(actor.WithWorkers(2))
	require.NoError(t, err)
	coll.Attach(sys)
	require.NoError(t, bench.Executor(sys, bench.ExecutorSize{Actors: 20, Set: 10, Rounds: 2}))
	fams, err := reg.Gather()
	require.NoError(t, err)
	all, counters = map[string]bool{}, map[string]bool{}
	for _, f := range fams {
		n := f.GetName()
		families = append(families, n)
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			all[n], counters[n] = true, true
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				all[n+s], counters[n+s] = true, true
			}
		case dto.MetricType_SUMMARY:
			all[n] = true
			for _, s := range []string{"_sum", "_count"} {
				all[n+s], counters[n+s] = true, true
			}
		default:
			all[n] = true
		}
	}
	return all, counters, families
}

// TestDashboardLint checks the dashboard the way a reviewer would (see
// lint), and that lint catches each kind of mistake.
func TestDashboardLint(t *testing.T) {
	all, counters, families := exported(t)
	require.Empty(t, lint(Actord, all, counters, families))

	// Mutations of the JSON text; in expressions, quotes are escaped (js).
	js := func(s string) string { return strings.ReplaceAll(s, `"`, `\"`) }
	for _, tc := range []struct{ name, from, to, want string }{
		{"duplicate id", `"id": 3,`, `"id": 2,`, "panel id 2"},
		{"no description", `"description": "Messages sent per second, all workers (pills included).",`, `"description": "",`, "no description"},
		{"no unit", `"unit": "percentunit"`, `"unit": ""`, "no unit"},
		{"bare counter", js(`sum(rate(actord_messages_sent_total{instance="$instance"}[$__rate_interval]))`), js(`sum(actord_messages_sent_total{instance="$instance"})`), "inside rate() or increase()"},
		{"fixed range", js(`rate(actord_parks_total{instance="$instance"}[$__rate_interval])`), js(`rate(actord_parks_total{instance="$instance"}[5m])`), "use $__rate_interval"},
		{"unknown metric", js(`actord_live_actors{instance="$instance"}`), js(`actord_alive_actors{instance="$instance"}`), "does not export"},
		{"rate of a gauge", js(`actord_queued_messages{instance="$instance"}`), js(`rate(actord_queued_messages{instance="$instance"}[$__rate_interval])`), "rate of a gauge"},
		{"no instance", js(`go_threads{instance="$instance"}`), `go_threads`, "not filtered by instance"},
		{"bad json", `"panels": [`, `"panels": [[`, "dashboards:"},
	} {
		bad := strings.Replace(string(Actord), tc.from, tc.to, 1)
		require.True(t, bad != string(Actord), "%s: mutation did not apply", tc.name)
		problems := lint([]byte(bad), all, counters, families)
		require.NotEmpty(t, problems, tc.name)
		require.Contains(t, strings.Join(problems, "\n"), tc.want, tc.name)
	}
	// A family no panel shows.
	problems := lint(Actord, all, counters, append(families, "actord_unshown_total"))
	require.Equal(t, []string{"no panel shows actord_unshown_total"}, problems)
}

// lint returns the dashboard's problems: it must load; panel ids must be
// unique; every panel needs a title, a description, a unit, a grid position
// and queries on the datasource variable, filtered by the instance
// variable; every metric a query uses must be one actord exports (all);
// counters may appear only inside rate() or increase() over
// $__rate_interval, gauges never there; and every actord_ family must be on
// some panel.
func lint(b []byte, all, counters map[string]bool, families []string) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	d, err := Parse(b)
	if err != nil {
		return []string{err.Error()}
	}
	if d.UID == "" || d.Title == "" {
		bad("the dashboard needs a uid and a title")
	}
	vars := map[string]Variable{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	if vars["datasource"].Type != "datasource" {
		bad("no datasource variable")
	}
	if inst := vars["instance"]; inst.Type != "query" || inst.Datasource == nil || inst.Datasource.UID != "${datasource}" ||
		!strings.Contains(inst.Query(), "label_values(actord_") {
		bad("the instance variable must be a label_values query on an actord metric through ${datasource}")
	}

	used := map[string]bool{}
	ids := map[int]string{}
	panels := 0
	for _, p := range d.AllPanels() {
		if _, dup := ids[p.ID]; dup || p.ID == 0 {
			bad("panel id %d of %q is missing or also %q", p.ID, p.Title, ids[p.ID])
		}
		ids[p.ID] = p.Title
		if p.Title == "" {
			bad("panel %d has no title", p.ID)
		}
		if p.GridPos == nil || p.GridPos.W <= 0 || p.GridPos.H <= 0 {
			bad("panel %q has no position", p.Title)
		}
		if p.Type == "row" {
			continue
		}
		panels++
		if p.Description == "" {
			bad("panel %q has no description", p.Title)
		}
		if p.Unit() == "" {
			bad("panel %q has no unit", p.Title)
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			bad("panel %q does not use the datasource variable", p.Title)
		}
		if len(p.Targets) == 0 {
			bad("panel %q has no query", p.Title)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.RefID == "" || refs[tg.RefID] {
				bad("panel %q: missing or duplicate refId %q", p.Title, tg.RefID)
			}
			refs[tg.RefID] = true
			where := p.Title + " " + tg.RefID
			if !strings.Contains(tg.Expr, `instance="$instance"`) {
				bad("%s: not filtered by instance", where)
			}
			sels, err := Selectors(tg.Expr)
			if err != nil {
				bad("%s: %v", where, err)
			}
			if err == nil && len(sels) == 0 {
				bad("%s uses no metric", where)
			}
			for _, s := range sels {
				where := where + ": " + s.Metric
				if !all[s.Metric] {
					bad("%s: actord does not export this metric", where)
				}
				used[s.Metric] = true
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					used[strings.TrimSuffix(s.Metric, suffix)] = true
				}
				switch {
				case counters[s.Metric] && s.Func != "rate" && s.Func != "increase":
					bad("%s: a counter must be inside rate() or increase()", where)
				case counters[s.Metric] && s.Range != "$__rate_interval":
					bad("%s: use $__rate_interval, not %q", where, s.Range)
				case !counters[s.Metric] && (s.Func == "rate" || s.Func == "increase" || s.Func == "irate" || s.Range != ""):
					bad("%s: rate of a gauge", where)
				}
			}
		}
	}
	if panels < 20 {
		bad("only %d panels", panels)
	}
	for _, f := range families {
		if strings.HasPrefix(f, "actord_") && !used[f] {
			bad("no panel shows %s", f)
		}
	}
	return problems
}

// TestProvisioning checks that the Prometheus and Grafana files beside the
// dashboard parse and point at each other: Prometheus scrapes actord's
// default address, Grafana's datasource is that Prometheus, and the
// dashboard provider loads this folder.
func TestProvisioning(t *testing.T) {
	var prom struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, "prometheus.yml", &prom)
	require.Len(t, prom.ScrapeConfigs, 1)
	require.Equal(t, "actord", prom.ScrapeConfigs[0].JobName)
	require.Equal(t, []string{"127.0.0.1:9464"}, prom.ScrapeConfigs[0].StaticConfigs[0].Targets)

	var ds struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Name, Type, URL string
			UID             string `yaml:"uid"`
		} `yaml:"datasources"`
	}
	readYAML(t, "grafana/provisioning/datasources/actord.yml", &ds)
	require.Equal(t, 1, ds.APIVersion)
	require.Len(t, ds.Datasources, 1)
	require.Equal(t, "prometheus", ds.Datasources[0].Type)
	require.Equal(t, "http://127.0.0.1:9090", ds.Datasources[0].URL)

	var dp struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Name, Type string
			Options    struct{ Path string } `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, "grafana/provisioning/dashboards/actord.yml", &dp)
	require.Equal(t, 1, dp.APIVersion)
	require.Len(t, dp.Providers, 1)
	require.Equal(t, "file", dp.Providers[0].Type)
	require.Equal(t, "$ACTORD_DASHBOARDS", dp.Providers[0].Options.Path)

	b, err := os.ReadFile("actord.json")
	require.NoError(t, err)
	require.Equal(t, Actord, b)
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.FromSlash(path))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, v), path)
}
