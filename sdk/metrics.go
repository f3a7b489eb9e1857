package sdk

import (
	"bytes"
	"context"

	"github.com/prometheus/common/expfmt"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

func (s *server) CollectMetrics(context.Context, *pluginv1.CollectMetricsRequest) (*pluginv1.CollectMetricsResponse, error) {
	families, err := s.metrics.Gather()
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
