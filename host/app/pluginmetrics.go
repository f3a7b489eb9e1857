package app

import (
	"bytes"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// parsePluginMetrics turns a plugin's text exposition into metrics carrying
// a plugin label. Malformed text yields nothing rather than failing the
// host's scrape.
func parsePluginMetrics(plugin string, text []byte) []prometheus.Metric {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return nil
	}
	var out []prometheus.Metric
	for name, f := range families {
		for _, m := range f.Metric {
			labels := []string{"plugin"}
			values := []string{plugin}
			for _, lp := range m.Label {
				labels = append(labels, lp.GetName())
				values = append(values, lp.GetValue())
			}
			desc := prometheus.NewDesc(name, f.GetHelp(), labels, nil)
			var metric prometheus.Metric
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				metric, err = prometheus.NewConstMetric(desc, prometheus.CounterValue, m.GetCounter().GetValue(), values...)
			case dto.MetricType_GAUGE:
				metric, err = prometheus.NewConstMetric(desc, prometheus.GaugeValue, m.GetGauge().GetValue(), values...)
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				buckets := make(map[float64]uint64, len(h.Bucket))
				for _, b := range h.Bucket {
					buckets[b.GetUpperBound()] = b.GetCumulativeCount()
				}
				metric, err = prometheus.NewConstHistogram(desc, h.GetSampleCount(), h.GetSampleSum(), buckets, values...)
			case dto.MetricType_SUMMARY:
				sm := m.GetSummary()
				q := make(map[float64]float64, len(sm.Quantile))
				for _, qq := range sm.Quantile {
					q[qq.GetQuantile()] = qq.GetValue()
				}
				metric, err = prometheus.NewConstSummary(desc, sm.GetSampleCount(), sm.GetSampleSum(), q, values...)
			default:
				metric, err = prometheus.NewConstMetric(desc, prometheus.UntypedValue, m.GetUntyped().GetValue(), values...)
			}
			if err == nil {
				out = append(out, metric)
			}
		}
	}
	return out
}
