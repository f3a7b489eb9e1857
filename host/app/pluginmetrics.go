package app

import (
	"bytes"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// reservedMetricPrefixes name the host's own metrics (its collectors, Go's
// and the process's): a plugin's family of such a name is not relayed, so
// that no plugin can stand in for the host's figures or fail its scrape.
var reservedMetricPrefixes = []string{"steward_", "go_", "process_"}

// metricRelay relays the plugins' metrics of one scrape, each family in
// the type and help it first came with and each series once: the
// registry fails a whole scrape on a family that disagrees with itself or
// a series collected twice, which plugins, each with its own registry,
// cannot see from one another.
type metricRelay struct {
	families map[string]string
	series   map[string]bool
}

func newMetricRelay() *metricRelay {
	return &metricRelay{families: map[string]string{}, series: map[string]bool{}}
}

// parsePluginMetrics turns a plugin's text exposition into metrics carrying
// a plugin label. Malformed text yields nothing rather than failing the
// host's scrape, and so does a family of a reserved name, one that another
// plugin relayed with another type or help, and a series relayed before.
func (r *metricRelay) parsePluginMetrics(plugin string, text []byte) []prometheus.Metric {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return nil
	}
	var out []prometheus.Metric
	for name, f := range families {
		if slices.ContainsFunc(reservedMetricPrefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
			continue
		}
		shape := f.GetType().String() + "\x00" + f.GetHelp()
		if known, ok := r.families[name]; ok && known != shape {
			continue
		}
		r.families[name] = shape
		for _, m := range f.Metric {
			labels := []string{"plugin"}
			values := []string{plugin}
			for _, lp := range m.Label {
				labels = append(labels, lp.GetName())
				values = append(values, lp.GetValue())
			}
			key := seriesKey(name, labels, values)
			if r.series[key] {
				continue
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
				r.series[key] = true
				out = append(out, metric)
			}
		}
	}
	return out
}

// seriesKey names a series by its family and its labels, sorted by name as
// the registry compares them.
func seriesKey(name string, labels, values []string) string {
	pairs := make([]string, len(labels))
	for i := range labels {
		pairs[i] = labels[i] + "\x00" + values[i]
	}
	slices.Sort(pairs)
	return name + "\x01" + strings.Join(pairs, "\x01")
}
