package app

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
)

// textCollector relays plugins' metrics texts, by plugin, as
// pluginCollector does.
type textCollector map[string][]byte

func (textCollector) Describe(chan<- *prometheus.Desc) {}

func (c textCollector) Collect(ch chan<- prometheus.Metric) {
	relay := newMetricRelay()
	for plugin, text := range c {
		for _, m := range relay.parsePluginMetrics(plugin, text) {
			ch <- m
		}
	}
}

// FuzzPluginMetrics relays arbitrary metrics texts, as two plugins answer
// CollectMetrics, into a registry holding host metrics. Whatever the
// plugins send, the host's scrape gathers without error, the host's own
// metrics are there as they were, and every metric relayed carries a
// plugin's label.
func FuzzPluginMetrics(f *testing.F) {
	for _, seed := range []string{
		"# HELP demo_runs_total Runs.\n# TYPE demo_runs_total counter\ndemo_runs_total{kind=\"a\"} 3\n",
		"# TYPE latency_seconds histogram\nlatency_seconds_bucket{le=\"0.1\"} 1\nlatency_seconds_bucket{le=\"+Inf\"} 2\nlatency_seconds_sum 0.3\nlatency_seconds_count 2\n",
		"# TYPE q summary\nq{quantile=\"0.5\"} 1\nq_sum 2\nq_count 3\n",
		"go_goroutines 7\n",
		"steward_http_requests_total{method=\"GET\"} 1\n",
		"x{plugin=\"other\"} 1\n",
		"x 1\nx 2\n",
		"# HELP x one\nx 1\n",
		"{\"utf8 name\"} 1\n",
		"x NaN\ny +Inf\n",
	} {
		f.Add([]byte(seed), []byte("# HELP x another\nx{kind=\"a\"} 1\n"))
	}
	f.Fuzz(func(t *testing.T, acme, beta []byte) {
		host := prometheus.NewRegistry()
		requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "steward_http_requests_total", Help: "HTTP requests."}, []string{"method"})
		requests.WithLabelValues("GET").Add(5)
		host.MustRegister(collectors.NewGoCollector(), requests)
		own, err := host.Gather()
		if err != nil {
			t.Fatal(err)
		}
		host.MustRegister(textCollector{"acme": acme, "beta": beta})
		got, err := host.Gather()
		if err != nil {
			t.Fatalf("the host's scrape fails: %v", err)
		}
		byName := map[string]*dto.MetricFamily{}
		for _, mf := range got {
			byName[mf.GetName()] = mf
		}
		for _, mf := range own {
			if g := byName[mf.GetName()]; g == nil || len(g.Metric) != len(mf.Metric) {
				t.Fatalf("the host's %s is not as it was", mf.GetName())
			}
			delete(byName, mf.GetName())
		}
		for name, mf := range byName {
			for _, m := range mf.Metric {
				if !slices.ContainsFunc(m.Label, func(l *dto.LabelPair) bool {
					return l.GetName() == "plugin" && (l.GetValue() == "acme" || l.GetValue() == "beta")
				}) {
					t.Fatalf("%s relayed without a plugin's label: %v", name, m.Label)
				}
			}
		}
	})
}
