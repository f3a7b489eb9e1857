package promreg

import (
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
)

// TestRegisterSharesTheSeries: a second collector of the same name gets
// the first one back; a collector that conflicts in another way is
// returned as it is, unregistered.
func TestRegisterSharesTheSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	log := hclog.NewNullLogger()
	first := Register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "x"}), log)
	second := Register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "x"}), log)
	if first != second {
		t.Fatal("the second collector of a name was not the first")
	}
	second.Inc()
	clash := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x_total", Help: "another help"})
	if got := Register(reg, clash, log); got != clash {
		t.Fatal("a conflicting collector was not returned as it is")
	}
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || mfs[0].GetMetric()[0].GetCounter().GetValue() != 1 {
		t.Fatalf("gathered %v, %v; want x_total at 1", mfs, err)
	}
}
