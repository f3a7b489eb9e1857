package quotas

import "testing"

func TestHealthBoundaries(t *testing.T) {
	cases := []struct {
		current, limit float64
		percent        float64
		health         string
	}{
		{7499, 10000, 74.99, HealthOK},
		{75, 100, 75, HealthWarning},
		{8999, 10000, 89.99, HealthWarning},
		{90, 100, 90, HealthCritical},
		{120, 100, 120, HealthCritical},
		{0, 100, 0, HealthOK},
		{0, 0, 0, HealthOK},
		{3, 0, 100, HealthCritical},
		{1, 3, 33.33, HealthOK},
	}
	for _, c := range cases {
		p := UsagePercent(c.current, c.limit)
		if p != c.percent || Health(p) != c.health {
			t.Errorf("%g/%g: %g%% %s, want %g%% %s", c.current, c.limit, p, Health(p), c.percent, c.health)
		}
	}
}
