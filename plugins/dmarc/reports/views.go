package reports

import (
	"errors"
	"html/template"
	"math"
	"net/http"
	"time"

	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// Fragment paths of the DMARC page's report sections.
const (
	RatesFragmentPath   = "/partials/dmarc-report-rates"
	SourcesFragmentPath = "/partials/dmarc-failing-sources"
	// viewDays is the window the sections show, to today.
	viewDays = 30
	// viewSources is how many failing sources the table lists.
	viewSources = 10
)

const noReports = "No aggregate reports in the last 30 days. Upload them, or set reports_dir to read a folder of them."

// Fragments are the report sections of the DMARC page, in the given slot:
// the pass-rate chart and the top failing sources.
func (h *Handlers) Fragments(slot string) []sdk.Fragment {
	return []sdk.Fragment{
		{Path: RatesFragmentPath, Title: "DMARC pass rate (aggregate reports)", Slot: slot, RefreshSeconds: 900, Handler: h.ratesFragment},
		{Path: SourcesFragmentPath, Title: "Sources failing DMARC", Slot: slot, RefreshSeconds: 900, Handler: h.sourcesFragment},
	}
}

// writeError answers a view's failure; one that is not a problem is
// logged, since the caller is told only that it was internal.
func (h *Handlers) writeError(w http.ResponseWriter, err error) {
	var p *sdk.Problem
	if !errors.As(err, &p) && h.Logger != nil {
		h.Logger.Error("dmarc report request failed", "error", err)
	}
	sdk.WriteError(w, err)
}

// window is the sections' days: the last viewDays to today.
func (h *Handlers) window() (from, to time.Time) {
	n := h.now()
	to = time.Date(n.Year(), n.Month(), n.Day(), 0, 0, 0, 0, time.UTC)
	return to.AddDate(0, 0, -(viewDays - 1)), to
}

func count(n int64) string { return sdkui.FormatNumber(float64(n)) }

func passHealth(p *float64) sdkui.Health {
	switch {
	case p == nil:
		return sdkui.Unknown
	case *p >= 98:
		return sdkui.OK
	case *p >= 90:
		return sdkui.Warning
	}
	return sdkui.Critical
}

// PassRateChart is the days' figures as stats over the whole window and
// the daily pass percentage as a line over every day from from to to; a
// day without reports is a gap.
func PassRateChart(days []DayRate, from, to time.Time) template.HTML {
	if len(days) == 0 {
		return sdkui.Empty(noReports)
	}
	var total Rate
	byDay := make(map[string]DayRate, len(days))
	for _, d := range days {
		total.Messages += d.Messages
		total.Passed += d.Passed
		byDay[d.Day] = d
	}
	var labels []string
	var values []float64
	for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
		key := d.Format(time.DateOnly)
		labels = append(labels, key)
		v := math.NaN()
		if r, ok := byDay[key]; ok && r.PassPercent != nil {
			v = *r.PassPercent
		}
		values = append(values, v)
	}
	pass := "–"
	if p := total.PassPercent(); p != nil {
		pass = sdkui.FormatNumber(*p) + " %"
	}
	stats := sdkui.Grid(
		sdkui.Stat("DMARC pass rate", pass, "of "+count(total.Messages)+" reported messages", passHealth(total.PassPercent())),
		sdkui.Stat("Failed DMARC", count(total.Failed()), "messages neither aligned DKIM nor aligned SPF passed", failHealth(total.Failed())),
		sdkui.Stat("Days reported", count(int64(len(days))), "of "+count(int64(len(labels))), sdkui.Unknown),
	)
	return sdkui.Join(stats, sdkui.LineChart("DMARC pass rate per day, percent", labels, []sdkui.Series{{Name: "Pass rate %", Values: values}}, nil))
}

func failHealth(n int64) sdkui.Health {
	if n == 0 {
		return sdkui.OK
	}
	return sdkui.Warning
}

// FailingSourcesTable lists sources by the messages they sent that failed
// DMARC, most first.
func FailingSourcesTable(sources []Source) template.HTML {
	if len(sources) == 0 {
		return sdkui.Empty("No source failed DMARC in the last 30 days.")
	}
	rows := make([][]any, len(sources))
	for i, s := range sources {
		pass := "–"
		if s.PassPercent != nil {
			pass = sdkui.FormatNumber(*s.PassPercent) + " %"
		}
		rows[i] = []any{s.SourceIP, count(s.Failed), count(s.Messages), sdkui.Badge(pass, passHealth(s.PassPercent))}
	}
	return sdkui.Table([]string{"Source IP", "Failed", "Messages", "Pass rate"}, rows, "Sources with the most messages failing DMARC, last 30 days")
}

func (h *Handlers) ratesFragment(w http.ResponseWriter, r *http.Request) {
	from, to := h.window()
	days, err := h.Store.PassRates(r.Context(), sdkui.Tenants(r), from, to)
	if err != nil {
		h.writeError(w, err)
		return
	}
	sdkui.WriteFragment(w, http.StatusOK, PassRateChart(days, from, to))
}

func (h *Handlers) sourcesFragment(w http.ResponseWriter, r *http.Request) {
	from, to := h.window()
	sources, err := h.Store.TopFailingSources(r.Context(), sdkui.Tenants(r), from, to, viewSources)
	if err != nil {
		h.writeError(w, err)
		return
	}
	sdkui.WriteFragment(w, http.StatusOK, FailingSourcesTable(sources))
}
