// Package rates serves the world's daily exchange rates on the simulated
// cloud's ARM service as the Frankfurter API serves the European Central
// Bank's reference rates: GET <Path>/<start>..<end>?from=<code> answers
// {"amount":1.0,"base":…,"start_date":…,"end_date":…,"rates":{date:{code:
// rate}}}, a rate being units of the code's currency per 1 of base, for the
// dates of the range that have rates (none on weekends and holidays). The
// end may be left out (<start>..) for every date from start on; to=EUR,GBP
// keeps only those currencies; base= is read as from=, as Frankfurter still
// does. Like Frankfurter it is public: no token.
//
// The world's rates are against one base (world.ExchangeRates.Base); a
// request from another currency is answered with cross rates, the world's
// rate of each currency divided by that of the requested one, to six
// significant digits. A world without rates answers every currency with
// none. An unknown currency is a 404, a bad range a 422,
// each with Frankfurter's {"message": …} body.
package rates

import (
	"cmp"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// Path is where the service is served on the ARM service's host.
const Path = "/exchange-rates"

// Register serves the exchange rates on the simulator's ARM service.
func Register(s *cloudsim.Sim) {
	s.Handle(cloudsim.ARM, "GET "+Path+"/{span}", func(w http.ResponseWriter, r *http.Request) {
		serve(w, r, s.World().ExchangeRates)
	})
}

// document is Frankfurter's time series answer.
type document struct {
	Amount    float64                               `json:"amount"`
	Base      string                                `json:"base"`
	StartDate string                                `json:"start_date"`
	EndDate   string                                `json:"end_date"`
	Rates     map[string]map[string]json.RawMessage `json:"rates"`
}

func serve(w http.ResponseWriter, r *http.Request, x *world.ExchangeRates) {
	start, end, ok := strings.Cut(r.PathValue("span"), "..")
	if !ok || !isDate(start) || (end != "" && !isDate(end)) || (end != "" && end < start) {
		writeMessage(w, http.StatusUnprocessableEntity, "the range must be <start>..<end> or <start>.., dates YYYY-MM-DD, start not after end")
		return
	}
	q := r.URL.Query()
	from := q.Get("from")
	if from == "" {
		from = q.Get("base")
	}
	if x == nil {
		// A world without rates publishes none, in any currency.
		x = &world.ExchangeRates{Base: cmp.Or(from, "EUR")}
	}
	from = cmp.Or(from, x.Base)
	var only []string
	if to := q.Get("to"); to != "" {
		only = strings.Split(to, ",")
	}
	doc := document{Amount: 1, Base: from, StartDate: start, EndDate: end, Rates: map[string]map[string]json.RawMessage{}}
	known := from == x.Base
	for _, date := range slices.Sorted(maps.Keys(x.Rates)) {
		if date < start || (end != "" && date > end) {
			continue
		}
		day, ok := crossRates(x.Base, x.Rates[date], from)
		if !ok {
			continue
		}
		known = true
		out := map[string]json.RawMessage{}
		for code, v := range day {
			if len(only) == 0 || slices.Contains(only, code) {
				out[code] = json.RawMessage(strconv.FormatFloat(v, 'g', -1, 64))
			}
		}
		doc.Rates[date] = out
		if len(doc.Rates) == 1 {
			doc.StartDate = date
		}
		doc.EndDate = date
	}
	if !known {
		writeMessage(w, http.StatusNotFound, "not found")
		return
	}
	if doc.EndDate == "" {
		doc.EndDate = start
	}
	cloudsim.WriteJSON(w, doc)
}

// crossRates are a day's rates against from instead of base: as given
// when from is base, else each divided by from's (and base's own, its
// inverse), to six significant digits; ok is false when the day has no
// rate of from.
func crossRates(base string, day map[string]float64, from string) (map[string]float64, bool) {
	if from == base {
		return day, true
	}
	pivot, ok := day[from]
	if !ok {
		return nil, false
	}
	out := map[string]float64{base: sig6(1 / pivot)}
	for code, v := range day {
		if code != from {
			out[code] = sig6(v / pivot)
		}
	}
	return out, true
}

func sig6(v float64) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	return f
}

func isDate(s string) bool {
	_, err := time.Parse(world.DateLayout, s)
	return err == nil
}

func writeMessage(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": message})
}
