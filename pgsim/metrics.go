package pgsim

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Endpoint labels.
const (
	EndpointCreate  = "create"  // POST /api/v1/payments
	EndpointGet     = "get"     // GET /api/v1/payments/{transactionKey}
	EndpointList    = "list"    // GET /api/v1/payments?orderId=
	EndpointControl = "control" // /__pgsim/...
	EndpointOther   = "other"   // anything else
)

func endpoints() []string {
	return []string{EndpointCreate, EndpointGet, EndpointList, EndpointControl, EndpointOther}
}

func outcomes() []string {
	return []string{OutcomeSuccess, OutcomeError, OutcomeHang, OutcomeReset, OutcomeRejected}
}

// metrics holds pgsim's collectors, registered on a private registry.
type metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	counters  map[[2]string]prometheus.Counter // pre-resolved endpoint×outcome
	injected  prometheus.Histogram
	inFlight  prometheus.Gauge
	cbSent    prometheus.Counter
	cbFailed  prometheus.Counter
	cbQueued  prometheus.Gauge
	cbDropped *prometheus.CounterVec
	cbLag     prometheus.Histogram
	settled   *prometheus.CounterVec
	behaviour *prometheus.GaugeVec
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pgsim_requests_total",
		Help: "Requests answered (or cut) by pgsim, by endpoint and outcome.",
	}, []string{"endpoint", "outcome"})
	m.injected = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "pgsim_injected_latency_seconds",
		Help:    "Latency pgsim added on purpose to payment calls, in seconds (after --speed).",
		Buckets: []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.8, 1, 2, 5, 10, 30},
	})
	m.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "pgsim_in_flight_requests",
		Help: "Payment API requests being served right now.",
	})
	m.cbSent = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "pgsim_callbacks_sent_total",
		Help: "Settlement callbacks answered with a 2xx status.",
	})
	m.cbFailed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "pgsim_callbacks_failed_total",
		Help: "Settlement callbacks that failed (transport error, timeout, non-2xx or dropped at shutdown).",
	})
	m.cbQueued = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "pgsim_callbacks_queued",
		Help: "Settlement callbacks waiting for a free callback worker.",
	})
	m.cbDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pgsim_callbacks_dropped_total",
		Help: "Settlement callbacks never posted (also counted in pgsim_callbacks_failed_total), by reason: queue-full (the backlog was at its bound) or shutdown.",
	}, []string{"reason"})
	m.cbLag = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "pgsim_callback_lag_seconds",
		Help:    "Time from a transaction's settlement (1-5 s after acceptance, after --speed) to its callback answered with a 2xx status, in seconds.",
		Buckets: []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30},
	})
	m.settled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pgsim_settlements_total",
		Help: "Transactions settled, by final status and reason (limit, invalid-card, approved).",
	}, []string{"status", "reason"})
	m.behaviour = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pgsim_behavior",
		Help: "Current behaviour settings: error_rate, hang_rate, reset_rate (probabilities) and slow (0 or 1).",
	}, []string{"setting"})
	m.reg.MustRegister(m.requests, m.injected, m.inFlight, m.cbSent, m.cbFailed, m.cbQueued, m.cbDropped, m.cbLag, m.settled, m.behaviour,
		collectors.NewGoCollector())
	for _, r := range []string{dropQueueFull, dropShutdown} {
		m.cbDropped.WithLabelValues(r) // exported at 0 from the start
	}
	m.counters = make(map[[2]string]prometheus.Counter)
	for _, e := range endpoints() {
		for _, o := range outcomes() {
			// Only payment creation can error, hang or reset.
			if e == EndpointCreate || o == OutcomeSuccess || o == OutcomeRejected {
				m.counters[[2]string{e, o}] = m.requests.WithLabelValues(e, o)
			}
		}
	}
	return m
}

func (m *metrics) request(endpoint, outcome string) {
	if c, ok := m.counters[[2]string{endpoint, outcome}]; ok {
		c.Inc()
		return
	}
	m.requests.WithLabelValues(endpoint, outcome).Inc()
}
