package plugins

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	rpc          *prometheus.HistogramVec
	rpcErrors    *prometheus.CounterVec
	timeouts     *prometheus.CounterVec
	memory       *prometheus.GaugeVec
	memoryKills  *prometheus.CounterVec
	restarts     *prometheus.CounterVec
	states       *prometheus.GaugeVec
	startSeconds *prometheus.GaugeVec
}

var allStates = []State{StateStarting, StateRunning, StateRestarting, StateFailed, StateStopped, StateDisabled}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		rpc: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "steward_plugin_rpc_duration_seconds", Help: "Latency of calls from the host to a plugin; for HTTP, until the response head (the body streams on).",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10},
		}, []string{"plugin", "method"}),
		rpcErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "steward_plugin_rpc_errors_total", Help: "Failed calls from the host to a plugin.",
		}, []string{"plugin", "method"}),
		timeouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "steward_plugin_request_timeouts_total", Help: "Requests a plugin did not answer within its request_timeout (answered 504).",
		}, []string{"plugin"}),
		memory: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "steward_plugin_memory_bytes", Help: "A plugin process's resident memory, as last read against its memory_limit.",
		}, []string{"plugin"}),
		memoryKills: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "steward_plugin_memory_limit_kills_total", Help: "Times a plugin was killed and restarted for holding more memory than its memory_limit.",
		}, []string{"plugin"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "steward_plugin_restarts_total", Help: "Restarts of a plugin after a crash or failed start.",
		}, []string{"plugin"}),
		states: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "steward_plugin_state", Help: "1 for the state a plugin is in, 0 for the others.",
		}, []string{"plugin", "state"}),
		startSeconds: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "steward_plugin_start_seconds", Help: "How long the plugin's last start took.",
		}, []string{"plugin"}),
	}
	if reg != nil {
		reg.MustRegister(m.rpc, m.rpcErrors, m.timeouts, m.memory, m.memoryKills, m.restarts, m.states, m.startSeconds)
	}
	return m
}

func (m *metrics) state(plugin string, st State) {
	for _, s := range allStates {
		v := 0.0
		if s == st {
			v = 1
		}
		m.states.WithLabelValues(plugin, string(s)).Set(v)
	}
}
