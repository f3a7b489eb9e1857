package ui

import (
	"html/template"
	"time"

	kit "github.com/stewardhq/steward/sdk/ui"
)

// designSystem is the design-system page's content: sdk/ui's components
// rendered from fixed sample data.
type designSystem struct {
	Badges, Stats, Cards, Table, EmptyTable, Gauges, Bars, Line, FirstDay, Empty, Error, Unavailable, Loading template.HTML
}

// healths are the states each component is shown in.
var healths = []kit.Health{kit.OK, kit.Warning, kit.Critical, kit.Unknown}

func sampleDesign() designSystem {
	var d designSystem
	var badges, gauges []template.HTML
	for i, h := range healths {
		badges = append(badges, kit.Badge(h.Label(), h))
		gauges = append(gauges, kit.Gauge([]float64{96, 78, 41, 0}[i], "MFA coverage", h))
	}
	d.Badges = kit.Join(badges...)
	d.Gauges = kit.Join(gauges...)
	d.Stats = kit.Grid(
		kit.Stat("Month-to-date cost", "€ 12,480", "4% under budget", kit.OK),
		kit.Stat("Forecast", "€ 27,900", "8% over budget", kit.Warning),
		kit.Stat("Critical findings", "3", "since yesterday", kit.Critical),
		kit.Stat("Last sync", "—", "never ran", kit.Unknown),
		kit.Stat("Subscriptions", "42", "no health: a neutral stat", ""),
	)
	d.Cards = kit.Grid(
		kit.Card("Compliance", kit.Join(kit.Badge("Compliant", kit.OK), template.HTML(" "), kit.Badge("2 exemptions", kit.Unknown))),
		kit.Card("No data yet", kit.Empty("This tenant has no policy assignments.")),
	)
	scanned := time.Date(2026, 6, 13, 7, 45, 0, 0, time.UTC)
	d.Table = kit.Table([]string{"Resource", "Region", "Status", "Last scan", "Monthly cost"}, [][]any{
		{"vm-web-01", "westeurope", kit.Badge("Running", kit.OK), kit.Time(scanned), "€ 212.40"},
		{"sql-orders", "northeurope", kit.Badge("Throttled", kit.Warning), kit.Time(scanned.Add(-3 * time.Hour)), "€ 1,034.00"},
		{"kv-secrets", "westeurope", kit.Badge("Public access", kit.Critical), kit.Time(scanned.Add(-26 * time.Hour)), "€ 3.10"},
		{"st-archive", "swedencentral", kit.Badge("Not scanned", kit.Unknown), "never", "€ 48.75"},
	}, "Resources")
	d.EmptyTable = kit.Table([]string{"Finding", "Severity", "Resource"}, nil, "Findings")
	d.Bars = kit.BarChart("Compute quotas, westeurope", []kit.Bar{
		{Label: "Total regional vCPUs", Used: 48, Limit: 100},
		{Label: "Standard DSv5 family vCPUs", Used: 40, Limit: 50},
		{Label: "Public IP addresses", Used: 19, Limit: 20},
		{Label: "Snapshots", Used: 7, Unit: "snapshots"},
	})
	labels := []string{"1 Jun", "2 Jun", "3 Jun", "4 Jun", "5 Jun", "6 Jun", "7 Jun", "8 Jun", "9 Jun", "10 Jun", "11 Jun", "12 Jun", "13 Jun"}
	d.Line = kit.LineChart("Daily cost (EUR)", labels, []kit.Series{
		{Name: "Actual", Values: []float64{410, 432, 398, 455, 470, 380, 362, 448, 466}},
		{Name: "Forecast", Values: []float64{466, 472, 478, 484, 490}, Offset: 8, Forecast: true},
	}, &kit.Band{Name: "Forecast range", Low: []float64{466, 440, 430, 420, 410}, High: []float64{466, 505, 526, 548, 570}, Offset: 8})
	d.FirstDay = kit.LineChart("Daily cost (EUR)", labels[:1], []kit.Series{{Name: "Actual", Values: []float64{410}}}, nil)
	d.Empty = kit.Empty("No budgets are set for this tenant.")
	d.Error = kit.ErrorState("Costs could not be loaded.")
	d.Unavailable = kit.Unavailable("Costs is unavailable.")
	d.Loading = kit.Loading("Loading costs")
	return d
}
