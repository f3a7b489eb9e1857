package ui_test

import (
	"errors"
	"html/template"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/ui"
)

const evil = `<script>alert("x")</script>`

func TestTextIsEscaped(t *testing.T) {
	outputs := map[string]template.HTML{
		"Card":        ui.Card(evil, "<p>body</p>"),
		"Stat":        ui.Stat(evil, evil, evil, ui.OK),
		"Badge":       ui.Badge(evil, ui.Warning),
		"Table":       ui.Table([]string{evil}, [][]any{{evil}}, evil),
		"Empty":       ui.Empty(evil),
		"ErrorState":  ui.ErrorState(evil),
		"Unavailable": ui.Unavailable(evil),
		"Loading":     ui.Loading(evil),
		"Gauge":       ui.Gauge(50, evil, ui.OK),
		"BarChart":    ui.BarChart(evil, []ui.Bar{{Label: evil, Used: 1, Limit: 2, Unit: evil}}),
		"LineChart": ui.LineChart(evil, []string{evil, "b"}, []ui.Series{{Name: evil, Values: []float64{1, 2}}},
			&ui.Band{Name: evil, Low: []float64{1, 1}, High: []float64{2, 3}}),
	}
	for name, out := range outputs {
		if strings.Contains(string(out), "<script") {
			t.Errorf("%s: unescaped script in %s", name, out)
		}
		if !strings.Contains(string(out), "&lt;script&gt;") {
			t.Errorf("%s: the escaped text is missing from %s", name, out)
		}
	}
}

func TestHTMLArgumentsAreInsertedAsTheyAre(t *testing.T) {
	badge := ui.Badge("ok", ui.OK)
	card := ui.Card("Quotas", badge)
	if !strings.Contains(string(card), string(badge)) {
		t.Errorf("card %s lacks its body %s", card, badge)
	}
	table := ui.Table([]string{"VM", "State"}, [][]any{{"vm-1", badge}, {"vm-2", 42}}, "VMs")
	for _, want := range []string{`<td>vm-1</td>`, `<td>` + string(badge) + `</td>`, `<td>42</td>`, `<caption>VMs</caption>`, `<th scope="col">State</th>`} {
		if !strings.Contains(string(table), want) {
			t.Errorf("table lacks %s: %s", want, table)
		}
	}
}

func TestHealthClass(t *testing.T) {
	for h, want := range map[ui.Health]string{
		ui.OK: "health-ok", ui.Warning: "health-warning", ui.Critical: "health-critical", ui.Unknown: "health-unknown",
		"": "health-unknown", "degraded": "health-unknown", `"><x`: "health-unknown",
	} {
		if got := h.Class(); got != want {
			t.Errorf("Health(%q).Class() = %q, want %q", h, got, want)
		}
		if got := ui.Badge("x", h); !strings.Contains(string(got), `class="badge `+want+`"`) {
			t.Errorf("Badge of %q = %s, want class %s", h, got, want)
		}
	}
	if got := ui.Stat("Cost", "1", "", ui.Critical); !strings.Contains(string(got), `class="stat health-critical"`) || !strings.Contains(string(got), ">Critical<") {
		t.Errorf("a critical stat should carry the class and name its state: %s", got)
	}
	if got := ui.Stat("Count", "1", "", ""); strings.Contains(string(got), "health-") {
		t.Errorf("a stat without health should be neutral: %s", got)
	}
}

func TestUsageHealth(t *testing.T) {
	for p, want := range map[float64]ui.Health{0: ui.OK, 74.9: ui.OK, 75: ui.Warning, 89.9: ui.Warning, 90: ui.Critical, 120: ui.Critical} {
		if got := ui.UsageHealth(p); got != want {
			t.Errorf("UsageHealth(%v) = %s, want %s", p, got, want)
		}
	}
}

func TestAtLeast(t *testing.T) {
	for v, want := range map[float64]ui.Health{100: ui.OK, 95: ui.OK, 94.9: ui.Warning, 80: ui.Warning, 79.9: ui.Critical, 0: ui.Critical} {
		if got := ui.AtLeast(v, 95, 80); got != want {
			t.Errorf("AtLeast(%v, 95, 80) = %s, want %s", v, got, want)
		}
	}
}

func TestAtMost(t *testing.T) {
	for v, want := range map[float64]ui.Health{-1: ui.OK, 0: ui.OK, 0.5: ui.Warning, 3: ui.Warning, 3.1: ui.Critical} {
		if got := ui.AtMost(v, 0, 3); got != want {
			t.Errorf("AtMost(%v, 0, 3) = %s, want %s", v, got, want)
		}
	}
}

func TestTableWithoutRowsShowsEmptyState(t *testing.T) {
	out := string(ui.Table([]string{"A", "B", "C"}, nil, "Findings"))
	for _, want := range []string{`<th scope="col">A</th>`, `<tr class="table-empty"><td colspan="3">`, `class="empty"`, "Nothing to show yet."} {
		if !strings.Contains(out, want) {
			t.Errorf("empty table lacks %s: %s", want, out)
		}
	}
}

// A pivot table is a table whose container says it scrolls by design.
func TestPivotTableIsATableThatScrolls(t *testing.T) {
	cols, rows := []string{"Service", "1 Nov", "2 Nov"}, [][]any{{"Storage", "1.00", "<b>2</b>"}}
	table, pivot := string(ui.Table(cols, rows, "Cost")), string(ui.PivotTable(cols, rows, "Cost"))
	if !strings.HasPrefix(pivot, `<div class="table-wrap table-wrap-pivot" `) || !strings.HasPrefix(table, `<div class="table-wrap" `) {
		t.Fatalf("containers: table %.60s, pivot %.60s", table, pivot)
	}
	if strings.Replace(pivot, "table-wrap table-wrap-pivot", "table-wrap", 1) != table {
		t.Errorf("the pivot differs from the table beyond its container:\n%s\n%s", pivot, table)
	}
}

var dAttr = regexp.MustCompile(`class="gauge-value" d="([^"]*)"`)

func TestGaugeClampsAndDrawsItsArc(t *testing.T) {
	for _, c := range []struct {
		in    float64
		label string
		arc   string
	}{
		{-20, "0%", ""},
		{math.NaN(), "0%", ""},
		{50, "50%", "M10 60 A50 50 0 0 1 60 10"},
		{100, "100%", "M10 60 A50 50 0 0 1 110 60"},
		{250, "100%", "M10 60 A50 50 0 0 1 110 60"},
		{87.25, "87.3%", ""},
	} {
		out := string(ui.Gauge(c.in, "MFA coverage", ui.OK))
		if !strings.Contains(out, `role="img" aria-label="MFA coverage: `+c.label+`"`) || !strings.Contains(out, "<title>MFA coverage: "+c.label+"</title>") {
			t.Errorf("Gauge(%v) lacks the text alternative %q: %s", c.in, c.label, out)
		}
		m := dAttr.FindStringSubmatch(out)
		switch {
		case c.in <= 0 || math.IsNaN(c.in):
			if m != nil {
				t.Errorf("Gauge(%v) draws an arc: %s", c.in, out)
			}
		case c.arc != "" && (m == nil || m[1] != c.arc):
			t.Errorf("Gauge(%v) arc = %v, want %q", c.in, m, c.arc)
		}
	}
}

func TestBarChart(t *testing.T) {
	out := string(ui.BarChart("Compute quotas", []ui.Bar{
		{Label: "vCPUs", Used: 48, Limit: 100},
		{Label: "Public IPs", Used: 19, Limit: 20},
		{Label: "Disks", Used: 300, Limit: 100, Health: ui.OK},
		{Label: "Snapshots", Used: 7},
	}))
	for _, want := range []string{
		`<ul class="bars" aria-label="Compute quotas">`,
		`<li class="health-ok">`, `48 of 100 · 48%`, `aria-label="vCPUs: OK, 48% used"`, `<rect class="bar-fill" width="48"`,
		`<li class="health-critical">`, `19 of 20 · 95%`,
		`300 of 100 · 100%`, `<rect class="bar-fill" width="100"`,
		`<li class="health-unknown">`, `7, no limit`, `aria-label="Snapshots: Unknown"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("bar chart lacks %s: %s", want, out)
		}
	}
	if strings.Contains(out, "<a ") {
		t.Errorf("bars without an Href should not be links: %s", out)
	}
	if got := ui.BarChart("x", nil); !strings.Contains(string(got), `class="empty"`) {
		t.Errorf("a bar chart without bars should be an empty state: %s", got)
	}
}

// TestBarLinks: a bar with an Href links its label alone, escaped, and
// an Href that is no URL of the page's kind is defused.
func TestBarLinks(t *testing.T) {
	out := string(ui.BarChart("Compute quotas", []ui.Bar{
		{Label: "vCPUs <b>", Used: 48, Limit: 100, Href: `/resources?subscription_id=s-1&tenant_id="t"`},
		{Label: "Disks", Used: 1, Limit: 2, Href: "javascript:alert(1)"},
		{Label: "Snapshots", Used: 7},
	}))
	for _, want := range []string{
		`<span class="bar-label"><a href="/resources?subscription_id=s-1&amp;tenant_id=%22t%22">vCPUs &lt;b&gt;</a></span>`,
		`<span class="bar-label"><a href="#ZgotmplZ">Disks</a></span>`,
		`<span class="bar-label">Snapshots</span>`,
		`aria-label="vCPUs &lt;b&gt;: OK, 48% used"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("bar chart lacks %s: %s", want, out)
		}
	}
	if n := strings.Count(out, "<a "); n != 2 {
		t.Errorf("%d links, want one for each bar with an Href: %s", n, out)
	}
}

func TestLineChart(t *testing.T) {
	labels := []string{"1 May", "2 May", "3 May", "4 May", "5 May"}
	out := string(ui.LineChart("Daily cost", labels, []ui.Series{
		{Name: "Actual", Values: []float64{10, 20, 30}},
		{Name: "Forecast", Values: []float64{30, 35, 40}, Offset: 2, Forecast: true},
	}, &ui.Band{Name: "Likely range", Low: []float64{30, 30, 32}, High: []float64{30, 40, 48}, Offset: 2}))
	for _, want := range []string{
		// The y axis runs from 0 to 50, the round number above 48.
		`<span>50</span><span>25</span><span>0</span>`,
		`<span>1 May</span><span>3 May</span><span>5 May</span>`,
		`class="chart-line series-1" d="M0 240 L250 180 L500 120"`,
		`class="chart-line series-2 chart-forecast" d="M500 120 L750 90 L1000 60"`,
		`class="chart-band" d="M500 120 L750 60 L1000 12 L1000 108 L750 120 L500 120 Z"`,
		`aria-label="Daily cost, 1 May to 5 May: Actual ends at 30; Forecast ends at 40."`,
		`<th scope="row">2 May</th><td class="num">20</td><td class="num"></td><td class="num"></td>`,
		`<th scope="row">5 May</th><td class="num"></td><td class="num">40</td><td class="num">32 – 48</td>`,
		`Forecast (forecast)`, `Likely range`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("line chart lacks %s: %s", want, out)
		}
	}
	if again := string(ui.LineChart("Daily cost", labels, []ui.Series{
		{Name: "Actual", Values: []float64{10, 20, 30}},
		{Name: "Forecast", Values: []float64{30, 35, 40}, Offset: 2, Forecast: true},
	}, &ui.Band{Name: "Likely range", Low: []float64{30, 30, 32}, High: []float64{30, 40, 48}, Offset: 2})); again != out {
		t.Error("the same chart rendered twice differs")
	}
	if got := ui.LineChart("x", nil, nil, nil); !strings.Contains(string(got), `class="empty"`) {
		t.Errorf("a chart without labels should be an empty state: %s", got)
	}
}

// TestLineChartOfOnePoint: on a fresh install a trend has one day; the
// chart draws it as a dot, says its history starts that day, and keeps its
// axis labels and data table.
func TestLineChartOfOnePoint(t *testing.T) {
	out := string(ui.LineChart("Daily cost", []string{"29 Nov"}, []ui.Series{{Name: "Actual", Values: []float64{35}}}, nil))
	for _, want := range []string{
		// The y axis runs from 0 to 40, the round number above 35.
		`class="chart-line series-1 chart-point" d="M500 37.5 l0 0"`,
		`<p class="chart-note">History starts 29 Nov.</p>`,
		`<div class="chart-x chart-x-single" aria-hidden="true"><span>29 Nov</span></div>`,
		`<span>40</span><span>20</span><span>0</span>`,
		`<th scope="row">29 Nov</th><td class="num">35</td>`,
		`aria-label="Daily cost, 29 Nov: Actual ends at 35."`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("a chart of one point lacks %s: %s", want, out)
		}
	}
	// On a longer axis, a series of one value is a dot too, and the chart
	// has history before it.
	out = string(ui.LineChart("Daily cost", []string{"1 May", "2 May", "3 May"}, []ui.Series{
		{Name: "Actual", Values: []float64{10, 20, 30}},
		{Name: "Forecast", Values: []float64{30}, Offset: 2, Forecast: true},
	}, nil))
	if !strings.Contains(out, `class="chart-line series-2 chart-point chart-forecast" d="M1000 0 l0 0"`) || !strings.Contains(out, `d="M0 200 L500 100 L1000 0"`) {
		t.Errorf("a one-value series on a longer chart: %s", out)
	}
	if strings.Contains(out, "History starts") || strings.Contains(out, "chart-x-single") {
		t.Errorf("a chart of three days says its history starts: %s", out)
	}
}

func TestFormatNumber(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 12345.5: "12,345.5", -1234567: "-1,234,567", 1.005: "1", 0.125: "0.13", 999: "999", math.Inf(1): "–"} {
		if got := ui.FormatNumber(v); got != want {
			t.Errorf("FormatNumber(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestStatesHaveTheirText(t *testing.T) {
	if got := string(ui.Unavailable("Costs are unavailable.")); !strings.Contains(got, "Retrying") || !strings.Contains(got, `class="error-state"`) {
		t.Errorf("Unavailable: %s", got)
	}
	if got := string(ui.ErrorState("Costs are unavailable.")); strings.Contains(got, "Retrying") {
		t.Errorf("ErrorState should not claim to retry: %s", got)
	}
	if got := string(ui.Loading("Loading costs")); !strings.Contains(got, `role="status"`) || !strings.Contains(got, "Loading costs") {
		t.Errorf("Loading: %s", got)
	}
}

func TestTime(t *testing.T) {
	at := time.Date(2026, 5, 4, 13, 30, 0, 0, time.FixedZone("CEST", 2*3600))
	if got, want := ui.Time(at), template.HTML(`<time class="local-time" datetime="2026-05-04T11:30:00Z">4 May 2026 11:30 UTC</time>`); got != want {
		t.Errorf("Time = %s, want %s", got, want)
	}
}

func TestWriteFragment(t *testing.T) {
	rec := httptest.NewRecorder()
	ui.WriteFragment(rec, http.StatusServiceUnavailable, ui.ErrorState("down"))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" || !strings.Contains(rec.Body.String(), "down") {
		t.Errorf("WriteFragment: %d %q %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
}

func TestNoInlineStyleOrScript(t *testing.T) {
	out := string(ui.Join(ui.Card("c", ui.Grid(ui.Stat("s", "1", "h", ui.OK))), ui.Gauge(10, "g", ui.Warning),
		ui.BarChart("b", []ui.Bar{{Label: "x", Used: 1, Limit: 3}}), ui.LineChart("l", []string{"a", "b"}, []ui.Series{{Name: "s", Values: []float64{1, 2}}}, nil)))
	if strings.Contains(out, "style=") || strings.Contains(out, "<script") || strings.Contains(out, "<style") {
		t.Errorf("kit output carries inline style or script: %s", out)
	}
}

func TestParseForm(t *testing.T) {
	if f, err := ui.ParseForm([]byte("name=a+b&amount=10"), 64); err != nil || f.Get("name") != "a b" || f.Get("amount") != "10" {
		t.Errorf("a form: %v, %v", f, err)
	}
	for raw, want := range map[string]string{strings.Repeat("a", 65): "at most 64 bytes", "name=%zz": "must be a form:"} {
		_, err := ui.ParseForm([]byte(raw), 64)
		var p *sdk.Problem
		if !errors.As(err, &p) || p.Status != 422 || len(p.Errors) != 1 || p.Errors[0].Location != "body" || !strings.Contains(p.Errors[0].Message, want) {
			t.Errorf("%.20s: %v, want a 422 naming the body: %s", raw, err, want)
		}
	}
}

func TestDescribedBy(t *testing.T) {
	for _, c := range []struct {
		hint, errors bool
		want         string
	}{{false, false, ""}, {true, false, "f-hint"}, {false, true, "f-error"}, {true, true, "f-hint f-error"}} {
		if got := ui.DescribedBy("f", c.hint, c.errors); got != c.want {
			t.Errorf("DescribedBy(f, %v, %v) = %q, want %q", c.hint, c.errors, got, c.want)
		}
	}
}
