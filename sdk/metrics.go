package sdk

import (
	"bytes"
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

// Metrics is the plugin's own registry. Register collectors on it; the host
// scrapes it through CollectMetrics and serves it on /metrics with a
// plugin label.
var Metrics = prometheus.NewRegistry()

func (s *server) CollectMetrics(context.Context, *pluginv1.CollectMetricsRequest) (*pluginv1.CollectMetricsResponse, error) {
	families, err := Metrics.Gather()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			return nil, err
		}
	}
	return &pluginv1.CollectMetricsResponse{PrometheusText: buf.Bytes()}, nil
}
