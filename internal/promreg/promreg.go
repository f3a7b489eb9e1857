// Package promreg registers the Prometheus collectors of a component that
// a process may create more than once on one registry.
package promreg

import (
	"errors"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c on reg, or returns the collector registered before
// under the same name, so that a second instance of a component on one
// registry (a scheduler restarted within the process, a second delivery
// worker) shares the series instead of failing. Any other failure is
// logged and c is returned unregistered: recording into it still works,
// it is only not exported.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C, log hclog.Logger) C {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var dup prometheus.AlreadyRegisteredError
	if errors.As(err, &dup) {
		if existing, ok := dup.ExistingCollector.(C); ok {
			return existing
		}
	}
	log.Warn("registering metrics failed; they will not be exported", "error", err)
	return c
}
