package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewRegistry returns a new registry (never the global default one) holding
// the Go runtime collector, the process collector and cs.
func NewRegistry(cs ...prometheus.Collector) (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	cs = append([]prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	}, cs...)
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// Handler returns the /metrics handler for reg. It also exports, on reg,
// promhttp_metric_handler_requests_total and _in_flight about the scrapes
// themselves. A failing collector is reported in the response with HTTP
// status 500 (promhttp.HTTPErrorOnError).
func Handler(reg *prometheus.Registry) http.Handler {
	return promhttp.InstrumentMetricHandler(reg, promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorHandling:     promhttp.HTTPErrorOnError,
		Registry:          reg,
		EnableOpenMetrics: true,
	}))
}
