package dashboards_test

import (
	"errors"
	"fmt"

	"github.com/actord/actord/dashboards"
)

// Every query of actord's dashboard, as Grafana would send it to Prometheus
// with the dashboard's variables given values.
func ExampleParse() {
	d, err := dashboards.Parse(dashboards.Actord)
	if err != nil {
		panic(err)
	}
	fmt.Println(d.Title)
	for _, v := range d.Templating.List {
		fmt.Println("variable:", v.Name, v.Type)
	}
	vars := map[string]string{"instance": "localhost:9090", "__rate_interval": "1m"}
	for _, q := range d.Queries() {
		if _, err := dashboards.Expand(q.Expr, vars); err != nil {
			fmt.Println(q.PanelTitle, err)
		}
	}
	// Output:
	// actord
	// variable: datasource datasource
	// variable: instance query
}

// Expand substitutes Grafana's variable references; one without a value is
// an error naming it.
func ExampleExpand() {
	q, err := dashboards.Expand(`rate(actord_gulps_total{job="$job"}[${__rate_interval}])`, map[string]string{"job": "actord", "__rate_interval": "1m"})
	fmt.Println(q, err)
	_, err = dashboards.Expand(`actord_live_actors{instance="$instance"}`, nil)
	fmt.Println(errors.Is(err, dashboards.ErrMissingVariable))
	// Output:
	// rate(actord_gulps_total{job="actord"}[1m]) <nil>
	// true
}

// Selectors finds the metrics an expression reads, with the function that
// reads each and its range.
func ExampleSelectors() {
	sels, err := dashboards.Selectors(`sum by (worker) (rate(actord_gulps_total[5m])) / ignoring(le) actord_live_actors`)
	if err != nil {
		panic(err)
	}
	for _, s := range sels {
		fmt.Printf("%s in %q over %q\n", s.Metric, s.Func, s.Range)
	}
	// Output:
	// actord_gulps_total in "rate" over "5m"
	// actord_live_actors in "" over ""
}
