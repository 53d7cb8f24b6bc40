package cluster

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the cluster's Prometheus metrics, registered by
// WithRegisterer (one Cluster per registry). Prometheus types are safe
// for concurrent use; no lock pairs with them.
type metrics struct {
	members           prometheus.Gauge
	activations       prometheus.Gauge
	takeovers         prometheus.Counter
	moves             prometheus.Counter
	movedRefusals     prometheus.Counter
	fenced            prometheus.Counter
	activationSeconds prometheus.Histogram
	kvErrors          prometheus.Counter
	refreshFailures   prometheus.Counter
	leaseLapses       prometheus.Counter
	singletons        prometheus.Gauge
	malformed         prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		members: prometheus.NewGauge(prometheus.GaugeOpts{Name: "actord_cluster_members",
			Help: "Live members in this node's view of the cluster."}),
		activations: prometheus.NewGauge(prometheus.GaugeOpts{Name: "actord_cluster_activations",
			Help: "Entity activations running on this node."}),
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{Name: "actord_cluster_takeovers_total",
			Help: "Activation keys this node took over from a member that was no longer live (placement moves after a failure)."}),
		moves: prometheus.NewCounter(prometheus.CounterOpts{Name: "actord_cluster_moves_total",
			Help: "Idle local activations this node ended to move them to the member that placement now chooses (rebalancing)."}),
		movedRefusals: prometheus.NewCounter(prometheus.CounterOpts{Name: "actord_cluster_moved_refusals_total",
			Help: "Requests refused undelivered (ErrMoved) by a local activation that was moving; Kind.Ask asks them again."}),
		fenced: prometheus.NewCounter(prometheus.CounterOpts{Name: "actord_cluster_fenced_activations_total",
			Help: "Local activations stopped by the fence: lease lapsed or key taken over."}),
		activationSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "actord_cluster_activation_duration_seconds",
			Help:    "Time from the start of a claim on this node to its activation being reachable.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18)}),
		kvErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "actord_cluster_kv_errors_total",
			Help: "JetStream key-value operations that failed (not counting lost compare-and-set races)."}),
		refreshFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "actord_cluster_lease_refresh_failures_total",
			Help: "Membership lease refreshes that failed."}),
		leaseLapses: prometheus.NewCounter(prometheus.CounterOpts{Name: "actord_cluster_lease_lapses_total",
			Help: "Times this node lost its membership lease and fenced its activations."}),
		singletons: prometheus.NewGauge(prometheus.GaugeOpts{Name: "actord_cluster_singletons_held",
			Help: "Singletons whose leader key this node holds."}),
		malformed: prometheus.NewCounter(prometheus.CounterOpts{Name: "actord_cluster_malformed_total",
			Help: "Activation requests and activation records this node refused or overrode because they were malformed (bad kind or id, undecodable)."}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.members, m.activations, m.takeovers, m.moves, m.movedRefusals, m.fenced, m.activationSeconds,
		m.kvErrors, m.refreshFailures, m.leaseLapses, m.singletons, m.malformed}
}

func (m *metrics) register(r prometheus.Registerer) error {
	var errs []error
	for _, c := range m.collectors() {
		errs = append(errs, r.Register(c))
	}
	return errors.Join(errs...)
}

func (m *metrics) unregister(r prometheus.Registerer) {
	for _, c := range m.collectors() {
		r.Unregister(c)
	}
}
