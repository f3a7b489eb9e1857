package forecast

import "testing"

// BenchmarkProject is one currency's forecast as the route makes it: 90
// days of the demo world's total, 30 days ahead.
func BenchmarkProject(b *testing.B) {
	first, series := demoSeries()
	y := series["all tenants"][365-90:]
	for b.Loop() {
		Project(y, first+275, 30, HoltWinters)
	}
}
