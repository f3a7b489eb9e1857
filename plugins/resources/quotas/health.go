// Package quotas is the resources plugin's quota slice: compute and network
// usages synced from the cloud into the plugin's own table, and the read
// routes that report each quota's health.
package quotas

import "math"

// Health of a quota (spec: warning at 75 percent, critical at 90).
const (
	HealthOK       = "ok"
	HealthWarning  = "warning"
	HealthCritical = "critical"

	WarningPercent  = 75.0
	CriticalPercent = 90.0
)

// UsagePercent is current/limit as a percentage rounded to two decimals.
// A zero limit with nothing in use is 0 %; with something in use it is
// reported as 100 % because nothing more can be created.
func UsagePercent(current, limit float64) float64 {
	if limit <= 0 {
		if current > 0 {
			return 100
		}
		return 0
	}
	return math.Round(current/limit*100*100) / 100
}

// Health classifies a usage percentage.
func Health(percent float64) string {
	switch {
	case percent >= CriticalPercent:
		return HealthCritical
	case percent >= WarningPercent:
		return HealthWarning
	default:
		return HealthOK
	}
}
