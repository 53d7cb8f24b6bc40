package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Workload holds the actord server's workload metrics, all labelled with the
// workload's name. Its counters and histogram are ordinary client_golang
// metrics, updated by the workload's generator and its actors' behaviours
// (never by the executor). Register it like any prometheus.Collector.
type Workload struct {
	// Runs counts completed runs of a benchmark program (each on a fresh
	// system); the mixed workload's single long run is not counted.
	Runs prometheus.Counter
	// Requests counts units of work the workload's generator issued:
	// requests (mixed) or messages injected into the pipeline (pipeline).
	Requests prometheus.Counter
	// Latency observes, per completed request or pipeline message, the time
	// from just before the generator's send to its completion.
	Latency prometheus.Histogram
	// info is 1, labelled with the workload's name.
	info prometheus.Gauge
}

// LatencyBuckets are the bounds of Workload.Latency: 16 exponential buckets
// from 10µs to 10s.
var LatencyBuckets = prometheus.ExponentialBucketsRange(10e-6, 10, 16)

// NewWorkload returns the metrics of the named workload.
func NewWorkload(name string) *Workload {
	l := prometheus.Labels{"workload": name}
	w := &Workload{
		Runs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "actord_workload_runs_total", ConstLabels: l,
			Help: "Completed runs of the benchmark program, each on a fresh actor system.",
		}),
		Requests: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "actord_workload_requests_total", ConstLabels: l,
			Help: "Requests (mixed) or messages (pipeline) the workload generator sent into the actor system.",
		}),
		Latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "actord_workload_latency_seconds", ConstLabels: l, Buckets: LatencyBuckets,
			Help: "Time from the generator's send to the completion of a request (mixed) or to a message's arrival at the pipeline's end (pipeline).",
		}),
		info: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "actord_workload_info", ConstLabels: l,
			Help: "Always 1; its workload label names the workload this actord runs.",
		}),
	}
	w.info.Set(1)
	return w
}

// Describe implements prometheus.Collector.
func (w *Workload) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range w.metrics() {
		m.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (w *Workload) Collect(ch chan<- prometheus.Metric) {
	for _, m := range w.metrics() {
		m.Collect(ch)
	}
}

func (w *Workload) metrics() []prometheus.Collector {
	return []prometheus.Collector{w.Runs, w.Requests, w.Latency, w.info}
}
