package ui

import (
	"fmt"
	"html/template"
	"math"
	"strings"
)

// The gauge is a half circle of radius gaugeR centred on (gaugeCX, gaugeCY)
// in its SVG's user units, filled clockwise from the left.
const (
	gaugeCX = 60
	gaugeCY = 60
	gaugeR  = 50
)

// gaugeArc is the SVG path of the gauge's arc from 0 to percent (0..100).
func gaugeArc(percent float64) string {
	a := math.Pi * percent / 100
	x := gaugeCX - gaugeR*math.Cos(a)
	y := gaugeCY - gaugeR*math.Sin(a)
	return fmt.Sprintf("M%d %d A%d %d 0 0 1 %s %s", gaugeCX-gaugeR, gaugeCY, gaugeR, gaugeR, coord(x), coord(y))
}

// Gauge is a half-circle gauge of percent (clamped to 0..100) in the
// health's colour, with the label under it; the SVG's text alternative
// reads "label: N%".
func Gauge(percent float64, label string, h Health) template.HTML {
	p := clampPercent(percent)
	value := FormatNumber(math.Round(p*10)/10) + "%"
	arc := ""
	if p > 0 {
		arc = gaugeArc(p)
	}
	return render("gauge", struct {
		Label, Value, Track, Arc string
		Health                   Health
	}{label, value, gaugeArc(100), arc, h})
}

// Bar is one quota bar of a BarChart: how much of Limit is Used, in Unit
// ("vCPUs", "GB"; may be empty). An empty Health is derived from the
// usage with UsageHealth; a Limit of zero or less has no percentage and
// shows as Unknown. A non-empty Href makes the label a link to it, where
// the bar's details are.
type Bar struct {
	Label  string
	Used   float64
	Limit  float64
	Unit   string
	Health Health
	Href   string
}

// barView is a Bar's texts as BarChart writes them.
type barView struct {
	Label, Href, Value, Percent, Width string
	Health                             Health
}

// barViewOf is the bar's texts: "used of limit unit", the percentage and
// the fill's width, and the health derived from them when the bar has none.
func barViewOf(b Bar) barView {
	unit := ""
	if b.Unit != "" {
		unit = " " + b.Unit
	}
	v := barView{Label: b.Label, Href: b.Href, Health: b.Health, Width: "0"}
	if b.Limit > 0 {
		p := clampPercent(b.Used / b.Limit * 100)
		v.Value = FormatNumber(b.Used) + " of " + FormatNumber(b.Limit) + unit
		v.Percent = FormatNumber(math.Round(p)) + "%"
		v.Width = coord(p)
		if v.Health == "" {
			v.Health = UsageHealth(p)
		}
	} else {
		v.Value = FormatNumber(b.Used) + unit + ", no limit"
		if v.Health == "" {
			v.Health = Unknown
		}
	}
	return v
}

// barLink is a bar's label as a link, for html/template's handling of
// the URL: an unsafe one (javascript:…) made harmless, the rest
// normalised and escaped.
var barLink = template.Must(template.New("bar-link").Parse(`<a href="{{.Href}}">{{.Label}}</a>`))

// BarChart is a list of horizontal quota bars, labelled caption for screen
// readers. Each bar shows its label, "used of limit unit" and its
// percentage as text, which is the bar's text alternative. It is built by
// hand (a page draws hundreds of bars) to give this template's markup:
//
//	<ul class="bars" aria-label="{{.Caption}}">
//	{{- range .Bars}}<li class="{{.Health.Class}}"><div class="bar-head"><span class="bar-label">{{if .Href}}<a href="{{.Href}}">{{.Label}}</a>{{else}}{{.Label}}{{end}}</span><span class="bar-value">{{.Value}}{{if .Percent}} · {{.Percent}}{{end}}</span></div>
//	<svg class="bar" viewBox="0 0 100 8" preserveAspectRatio="none" role="img" aria-label="{{.Label}}: {{.Health.Label}}{{if .Percent}}, {{.Percent}} used{{end}}"><rect class="bar-track" width="100" height="8"/><rect class="bar-fill" width="{{.Width}}" height="8"/></svg></li>
//	{{- end -}}
//	</ul>
func BarChart(caption string, bars []Bar) template.HTML {
	if len(bars) == 0 {
		return Empty("No quotas to show.")
	}
	esc := template.HTMLEscapeString
	var b strings.Builder
	b.WriteString(`<ul class="bars" aria-label="` + esc(caption) + `">`)
	for _, bar := range bars {
		v := barViewOf(bar)
		b.WriteString(`<li class="` + esc(v.Health.Class()) + `"><div class="bar-head"><span class="bar-label">`)
		if bar.Href != "" {
			if err := barLink.Execute(&b, bar); err != nil {
				// Only a failing writer fails it, and a Builder does not.
				panic("ui.BarChart: " + err.Error())
			}
		} else {
			b.WriteString(esc(bar.Label))
		}
		b.WriteString(`</span><span class="bar-value">` + esc(v.Value))
		if v.Percent != "" {
			b.WriteString(" · " + esc(v.Percent))
		}
		b.WriteString("</span></div>\n" + `<svg class="bar" viewBox="0 0 100 8" preserveAspectRatio="none" role="img" aria-label="` + esc(bar.Label) + ": " + esc(v.Health.Label()))
		if v.Percent != "" {
			b.WriteString(", " + esc(v.Percent) + " used")
		}
		b.WriteString(`"><rect class="bar-track" width="100" height="8"/><rect class="bar-fill" width="` + esc(v.Width) + `" height="8"/></svg></li>`)
	}
	b.WriteString("</ul>")
	return template.HTML(b.String())
}

// Series is one line of a LineChart. Values[i] is the value at the
// chart's label Offset+i, so a forecast that continues the actual line
// starts at the actual line's last label. A Forecast line is dashed.
type Series struct {
	Name     string
	Values   []float64
	Offset   int
	Forecast bool
}

// Band is a shaded range under a LineChart's lines, such as a forecast's
// confidence interval: Low[i] to High[i] at label Offset+i.
type Band struct {
	Name      string
	Low, High []float64
	Offset    int
}

// The plot's SVG user space; the SVG stretches to its box, and lines keep
// their width with vector-effect="non-scaling-stroke".
const (
	plotW = 1000
	plotH = 300
)

// LineChart is a line chart of up to four colours of series over the
// labels (dates, say) with an optional band, whose axis labels, legend and
// data table are HTML. Its text alternative is a summary of each series
// for the SVG and, under a disclosure, a table of every value. Values
// outside the labels are dropped; with no labels it is an empty state. A
// series of one point is drawn as a dot, and a chart of one label says
// that its history starts there.
func LineChart(title string, labels []string, series []Series, band *Band) template.HTML {
	if len(labels) == 0 {
		return Empty("No data to chart yet.")
	}
	lo, hi := chartRange(len(labels), series, band)
	x := func(i int) float64 {
		if len(labels) == 1 {
			return plotW / 2
		}
		return float64(i) * plotW / float64(len(labels)-1)
	}
	y := func(v float64) float64 { return plotH - (v-lo)/(hi-lo)*plotH }

	type line struct {
		Name, D, Class  string
		Forecast, Point bool
	}
	view := struct {
		Title, Summary, Band, BandName string
		YTicks, XTicks, Columns        []string
		Lines                          []line
		Rows                           [][]string
		// Starts is the one label of a chart with a single point, whose
		// history starts there (a fresh install's first sync).
		Starts string
	}{Title: title, YTicks: []string{FormatNumber(hi), FormatNumber((lo + hi) / 2), FormatNumber(lo)}}
	if len(labels) == 1 {
		view.Starts = labels[0]
	}

	view.XTicks = []string{labels[0]}
	if n := len(labels); n > 2 && (n-1)%2 == 0 {
		view.XTicks = append(view.XTicks, labels[(n-1)/2])
	}
	if len(labels) > 1 {
		view.XTicks = append(view.XTicks, labels[len(labels)-1])
	}

	var summary []string
	view.Columns = []string{""}
	for i, s := range series {
		var d strings.Builder
		last, points := math.NaN(), 0
		for j, v := range s.Values {
			k := s.Offset + j
			if k < 0 || k >= len(labels) || !finite(v) {
				continue
			}
			cmd := "L"
			if d.Len() == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&d, "%s%s %s ", cmd, coord(x(k)), coord(y(v)))
			last, points = v, points+1
		}
		if points == 1 {
			// A path of one point draws nothing; a segment of no length
			// with round caps draws a dot, round however the plot is
			// stretched (a circle would be stretched with it).
			d.WriteString("l0 0")
		}
		view.Lines = append(view.Lines, line{s.Name, strings.TrimSpace(d.String()), fmt.Sprintf("series-%d", i%4+1), s.Forecast, points == 1})
		view.Columns = append(view.Columns, s.Name)
		if finite(last) {
			summary = append(summary, s.Name+" ends at "+FormatNumber(last))
		}
	}
	if band != nil {
		var upper, lower []string
		for j := range band.Low {
			k := band.Offset + j
			if k < 0 || k >= len(labels) || j >= len(band.High) || !finite(band.Low[j]) || !finite(band.High[j]) {
				continue
			}
			upper = append(upper, coord(x(k))+" "+coord(y(band.High[j])))
			lower = append([]string{coord(x(k)) + " " + coord(y(band.Low[j]))}, lower...)
		}
		if len(upper) > 0 {
			view.Band = "M" + strings.Join(append(upper, lower...), " L") + " Z"
			view.BandName = band.Name
		}
		view.Columns = append(view.Columns, band.Name)
	}

	for k, l := range labels {
		row := []string{l}
		for _, s := range series {
			row = append(row, valueAt(s.Values, k-s.Offset))
		}
		if band != nil {
			lo, hi := valueAt(band.Low, k-band.Offset), valueAt(band.High, k-band.Offset)
			if lo != "" && hi != "" {
				lo += " – " + hi
			} else {
				lo = ""
			}
			row = append(row, lo)
		}
		view.Rows = append(view.Rows, row)
	}
	view.Summary = fmt.Sprintf("%s, %s to %s", title, labels[0], labels[len(labels)-1])
	if view.Starts != "" {
		view.Summary = title + ", " + view.Starts
	}
	if len(summary) > 0 {
		view.Summary += ": " + strings.Join(summary, "; ")
	}
	view.Summary += "."
	return render("line", view)
}

// chartRange is the y axis's range: from zero, or the lowest value when
// one is negative, to a round number at or above the highest value.
func chartRange(n int, series []Series, band *Band) (lo, hi float64) {
	seen := false
	see := func(vs []float64, offset int) {
		for j, v := range vs {
			if k := offset + j; k < 0 || k >= n || !finite(v) {
				continue
			}
			if !seen {
				lo, hi, seen = v, v, true
			}
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	for _, s := range series {
		see(s.Values, s.Offset)
	}
	if band != nil {
		see(band.Low, band.Offset)
		see(band.High, band.Offset)
	}
	lo = math.Min(lo, 0)
	hi = niceCeil(hi)
	if hi <= lo {
		hi = lo + 1
	}
	return lo, hi
}

// niceCeil is the smallest of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times
// a power of ten at or above v (v itself when it is not positive), so
// that the axis's middle label is round too.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return v
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// valueAt formats vs[i], or is empty when there is none.
func valueAt(vs []float64, i int) string {
	if i < 0 || i >= len(vs) || !finite(vs[i]) {
		return ""
	}
	return FormatNumber(vs[i])
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
