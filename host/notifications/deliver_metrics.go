package notifications

import (
	"context"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stewardhq/steward/internal/promreg"
)

// deliveryMetrics are the delivery worker's Prometheus collectors. They
// exist without a Registerer too, so that recording needs no nil check.
type deliveryMetrics struct {
	results  *prometheus.CounterVec
	duration *prometheus.HistogramVec
	latency  *prometheus.HistogramVec
	outbox   *prometheus.GaugeVec
}

func newDeliveryMetrics(reg prometheus.Registerer, log hclog.Logger) deliveryMetrics {
	m := deliveryMetrics{
		results: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "steward_notification_deliveries_total",
			Help: "Notification delivery attempts this replica finished, by channel kind and result (delivered, failed, dead).",
		}, []string{"kind", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "steward_notification_send_duration_seconds",
			Help:    "Time one send took: an HTTP request or an SMTP session, by channel kind.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}, []string{"kind"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "steward_notification_delivery_latency_seconds",
			Help: "Time from when a notification was due (its event raised, or its digest's period over) to its delivery, by channel kind.",
			// From a prompt send to one retried for a day.
			Buckets: []float64{0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 24 * 3600},
		}, []string{"kind"}),
		outbox: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "steward_notification_outbox_deliveries",
			Help: "Deliveries in the outbox shared by every replica, by status: pending (due or waiting for a retry or a digest) and dead.",
		}, []string{"status"}),
	}
	if reg == nil {
		return m
	}
	m.results = promreg.Register(reg, m.results, log)
	m.duration = promreg.Register(reg, m.duration, log)
	m.latency = promreg.Register(reg, m.latency, log)
	m.outbox = promreg.Register(reg, m.outbox, log)
	return m
}

// observeOutbox sets the outbox gauges from the database.
func (m deliveryMetrics) observeOutbox(ctx context.Context, s *Store, log hclog.Logger) {
	counts, err := s.outboxCounts(ctx)
	if err != nil {
		log.Warn("outbox not counted", "error", err)
		return
	}
	for status, n := range counts {
		m.outbox.WithLabelValues(status).Set(float64(n))
	}
}
